"""The student's loop: `grade watch`, `grade`, `grade list` and the notebook's look in git,
as a student walking the course in JupyterLab meets them."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.grader_support import ROOT, make_notebook, write

# Runs `grade watch` in this process and presses Ctrl-C (SIGINT to itself) at a moment chosen
# by argv[1]: "start" as soon as the kernel's connection file exists (the kernel is starting),
# "cell" once the notebook's long cell is running. Then lists the children still alive.
_CTRL_C_DURING_A_GRADING = textwrap.dedent("""
    import glob, json, os, signal, sys, threading, time
    from pathlib import Path
    moment, marker, notebook = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    pattern = os.path.join(os.environ["TMPDIR"], "**", "kernel-*-connection.json")

    seen = []

    def press_ctrl_c():
        deadline = time.monotonic() + 60  # never waits out the subprocess's own timeout
        while time.monotonic() < deadline:
            if glob.glob(pattern, recursive=True) if moment == "start" else marker.exists():
                seen.append(moment)
                break
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=press_ctrl_c, daemon=True).start()
    from grader import cli
    code = cli.main(["watch", "exercise-3", "--notebook", notebook, "--polling"])

    def alive():
        found = []
        for task in glob.glob(f"/proc/{os.getpid()}/task/*/children"):
            for child in Path(task).read_text().split():
                try:
                    status = Path(f"/proc/{child}/status").read_text()
                except OSError:
                    continue
                if status.split("State:")[1].split()[0] != "Z":
                    found.append(Path(f"/proc/{child}/cmdline").read_text().replace("\\0", " ")[:120])
        return found

    for _ in range(10):  # a SIGKILLed process takes a moment to become a zombie
        if not alive():
            break
        time.sleep(0.1)
    print(json.dumps({"code": code, "alive": alive(), "seen": seen}))
""")


@pytest.mark.slow
@pytest.mark.parametrize("moment", ["start", "cell"])
def test_ctrl_c_during_a_grading_in_watch_leaves_no_kernel_running(tmp_path, moment):
    marker = tmp_path / "kernel-pid"
    long_cell = f"import os, time\nopen({str(marker)!r}, 'w').write(str(os.getpid()))\ntime.sleep(120)"
    notebook = write(make_notebook("x = 1", long_cell), tmp_path / "exercise-3.ipynb")
    (tmp_path / "tmp").mkdir()
    done = subprocess.run([sys.executable, "-c", _CTRL_C_DURING_A_GRADING, moment, str(marker), str(notebook)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "GRADE_STATE_FILE": str(tmp_path / "state.json"),
                               "TMPDIR": str(tmp_path / "tmp")})
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome["seen"] == [moment], ("the moment to press Ctrl-C never came", done.stderr[-2000:])
    assert "grade watch encerrado." in done.stdout
    assert outcome["alive"] == [], (outcome, done.stderr[-2000:])  # the kernel died with the grading


def test_a_deleted_cell_is_named_as_the_missing_definition_not_as_the_cell_that_uses_it():
    from grader.checks.framework.student_code import CellProblemInfo, missing_name_message

    using = CellProblemInfo(6, 'for nome, cp in [("cpA", cpA)]:', "NameError", "name 'resume_action' is not defined")
    message = missing_name_message("resume_action", [using])
    assert "nenhuma célula tem `def resume_action(...)`" in message
    assert "antes da célula 6, que a usa" in message
    assert "Atenção: a célula 6 falhou" not in message
    other = CellProblemInfo(2, "import x", "ModuleNotFoundError", "No module named 'x'")
    assert "Atenção: a célula 2 falhou" in missing_name_message("resume_action", [other])


def test_a_renamed_notebook_is_said_missing_with_no_hint_and_grade_list_keeps_passou(tmp_path, monkeypatch, capsys):
    from grader import cli

    course = tmp_path / "curso"
    (course / "exercises").mkdir(parents=True)
    (course / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text(encoding="utf-8"), encoding="utf-8")
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"version": 1, "hints": {}, "exercises": {"exercise-3": {
        "last_run": "2026-01-01T00:00:00+00:00", "notebook_error": None, "score": 1.0,
        "levels": {"1": {"passed": 12, "total": 12}, "2": {"passed": 72, "total": 72},
                   "3": {"passed": 8, "total": 8}}}}}), encoding="utf-8")
    monkeypatch.setenv("GRADE_STATE_FILE", str(state))
    monkeypatch.chdir(course)
    assert cli.main(["exercise-3"]) == 1
    out = capsys.readouterr()
    assert "não foi encontrado" in out.out
    assert "dica" not in out.out.lower()
    assert cli.main(["list"]) == 0
    listed = next(line for line in capsys.readouterr().out.splitlines() if "exercise-3" in line and "✓" in line)
    assert listed.rstrip().endswith("passou") and "não rodou até o fim" not in listed


class _Stream:
    def __init__(self, tty: bool):
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize("env, tty, expected", [
    ({"TERM": "xterm-256color"}, True, True),  # what JupyterLab's terminal (terminado) sets
    ({"TERM": "xterm-256color"}, False, False),  # a pipe, a file
    ({"TERM": "dumb"}, True, False),
    ({}, True, False),
    ({"TERM": "xterm-256color", "NO_COLOR": "1"}, True, False),
    ({"FORCE_COLOR": "1"}, False, True),
    ({"FORCE_COLOR": "0", "TERM": "xterm"}, False, False),
])
def test_the_report_is_coloured_on_a_terminal_and_as_the_colour_variables_say(env, tty, expected):
    from grader.reports.console import wants_color

    assert wants_color(_Stream(tty), env) is expected


def test_the_coloured_report_marks_failures_red_and_passes_green():
    from grader.reports.render import colored

    text = "  FALHOU  resume_action decide\n  ✓ 3 verificações passaram\nPontuação: 3/4\nTudo certo."
    shown = colored(text)
    assert "\x1b[31m\x1b[1mFALHOU\x1b[0m" in shown and "\x1b[32m  ✓ 3" in shown and "\x1b[1mPontuação" in shown
    assert __import__("re").sub(r"\x1b\[[0-9;]*m", "", shown) == text


@pytest.mark.parametrize("inherited", ["", "dumb"])
def test_the_lab_terminal_gets_a_colour_terminal_type(tmp_path, inherited):
    done = subprocess.run(["bash", "--norc", "-c", f". {ROOT / '.lab' / 'terminal.bashrc'}; echo \"$TERM $COLORTERM\""],
                          capture_output=True, text=True, env={"HOME": str(tmp_path), "PATH": os.environ["PATH"],
                                                              "TERM": inherited}, timeout=30)
    assert done.stdout.split() == ["xterm-256color", "truecolor"]


def test_grade_colours_its_report_when_forced(tmp_path, monkeypatch, capsys):
    from grader import cli

    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("GRADE_STATE_FILE", str(tmp_path / "state.json"))
    cli.main(["exercise-3", "--notebook", str(tmp_path / "nenhum.ipynb")])
    assert "\x1b[1mPontuação" in capsys.readouterr().out


def test_check_knows_when_the_kernel_ran_a_definition_the_saved_file_does_not_have():
    from grader.student.notebook_api import unsaved_definitions

    saved = ["import json", "def resume_action(cp):\n    return {}\n", "def reconcile(cp):\n    return cp"]
    ran_saved = ["", "import json", "def resume_action(cp):\n    return {}", "check('exercise-3')"]
    assert unsaved_definitions(ran_saved, saved) == []
    edited = ran_saved + ["def resume_action(cp):\n    return {'x': 'rerun'}"]
    assert unsaved_definitions(edited, saved) == ["resume_action"]
    # an old version run before the saved one is no warning: only the latest run counts
    assert unsaved_definitions(["def reconcile(cp):\n    pass", "def reconcile(cp):\n    return cp  "], saved) == []
