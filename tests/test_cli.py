"""`python -m harness run` runs a shipped scenario offline and resumes it."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.warm_python import run_python


def run_cli(*args, cwd):
    return run_python(["-m", "harness", "run", *args], cwd=cwd, timeout=120)


@pytest.mark.slow
def test_run_then_resume_a_finished_run(tmp_path):
    workdir = tmp_path / "execucao"
    first = run_cli("--scenario", "team-email", "--workdir", str(workdir), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "send_email" in first.stdout
    checkpoint = json.loads((workdir / "checkpoint.json").read_text())
    assert checkpoint["turns"] == 3 and checkpoint["pending_tool_use"] is None
    outbox = (workdir / "world" / "outbox.jsonl").read_text().splitlines()
    assert len(outbox) == 1
    again = run_cli("--scenario", "team-email", "--workdir", str(workdir), "--resume", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert len((workdir / "world" / "outbox.jsonl").read_text().splitlines()) == 1


@pytest.mark.slow
def test_resume_without_checkpoint_is_a_clear_error(tmp_path):
    result = run_cli("--scenario", "team-email", "--workdir", str(tmp_path / "vazio"), "--resume", cwd=tmp_path)
    assert result.returncode != 0
    assert "checkpoint" in result.stderr


@pytest.mark.slow
def test_unknown_scenario_is_refused(tmp_path):
    result = run_cli("--scenario", "nao-existe", cwd=tmp_path)
    assert result.returncode == 2 and "nao-existe" in result.stderr


@pytest.mark.slow
def test_endpoint_latency_slows_each_model_call_and_a_bad_value_is_bad_input(tmp_path, monkeypatch):
    import time

    from harness.cli_endpoint import ENDPOINT_LATENCY_ENV, EndpointSettingError, endpoint_latency, make_run_client

    monkeypatch.setenv(ENDPOINT_LATENCY_ENV, "0.2")
    client = make_run_client([{"content": [{"type": "text", "text": "pronto"}], "stop_reason": "end_turn"}])
    started = time.monotonic()
    client.messages.create(model="claude-haiku-4-5", max_tokens=50, messages=[{"role": "user", "content": "oi"}])
    assert time.monotonic() - started >= 0.2
    for bad in ("depois", "-1", "inf", "nan"):
        monkeypatch.setenv(ENDPOINT_LATENCY_ENV, bad)
        try:
            endpoint_latency()
        except EndpointSettingError as error:
            assert ENDPOINT_LATENCY_ENV in str(error)
        else:
            raise AssertionError(f"{bad!r} was accepted as a latency")
    monkeypatch.delenv(ENDPOINT_LATENCY_ENV)
    assert endpoint_latency() == 0.0
    result = run_python(["-m", "harness", "run", "--scenario", "team-email", "--workdir", str(tmp_path / "x")],
                        cwd=tmp_path, timeout=120, env={**__import__("os").environ, ENDPOINT_LATENCY_ENV: "depois"})
    assert result.returncode == 2 and ENDPOINT_LATENCY_ENV in result.stderr and "Traceback" not in result.stderr


# --- the command line speaks Portuguese and ends quietly --------------------------------------

from harness import cli as harness_cli  # noqa: E402
from tests.test_student_cli import ENGLISH, closed_pipe_run  # noqa: E402

# Every placeholder a student may meet in `python -m harness ... --help`.
PORTUGUESE_PLACEHOLDERS = {"PASTA", "NOME", "MOTIVO", "PONTO", "TURNO", "N", "SEGUNDOS", "CENÁRIO", "COMANDO",
                           "A", "B", "DESTINO"}


def help_texts():
    parser = harness_cli.build_parser()
    yield "", parser.format_help()
    for name, sub in parser._subparsers._group_actions[0].choices.items():
        yield name, sub.format_help()


@pytest.mark.parametrize("command, text", list(help_texts()))
def test_every_help_page_is_portuguese_down_to_its_placeholders(command, text):
    assert "uso: python -m harness" in text and not ENGLISH.search(text), text
    usage = text.split("\n\n")[0]
    placeholders = set(re.findall(r"\b[A-ZÁÉÍÓÚÂÊÔÃÕÇ_]{1,}\b", usage)) - {"DRY"}
    assert placeholders <= PORTUGUESE_PLACEHOLDERS, (command, placeholders - PORTUGUESE_PLACEHOLDERS)


@pytest.mark.parametrize("argv, words", [
    (["run", "--scenario", "team-email", "--max-turns", "x"], "argumento --max-turns: valor inválido"),
    (["run", "--scenario", "team-email", "--bogus"], "argumentos não reconhecidos: --bogus"),
    (["rewind", "--workdir", "x"], "faltou informar: --to"),
    (["nada"], "opção inválida: 'nada'"),
])
def test_argument_errors_are_portuguese(argv, words, capsys):
    with pytest.raises(SystemExit) as exit_:
        harness_cli.main(argv)
    text = capsys.readouterr().err
    assert exit_.value.code == 2 and words in text and "python -m harness" in text and not ENGLISH.search(text), text


@pytest.mark.slow
def test_a_run_into_a_closed_pipe_finishes_and_keeps_its_exit_code(tmp_path):
    command = [sys.executable, "-m", "harness", "run", "--scenario", "team-email", "--workdir", "r"]
    finished = closed_pipe_run(command, cwd=tmp_path)
    assert finished.returncode == 0 and finished.stderr == "", finished.stderr
    assert len((tmp_path / "r" / "world" / "outbox.jsonl").read_text().splitlines()) == 1
    listed = closed_pipe_run([sys.executable, "-m", "harness", "timeline", "--workdir", "r"], cwd=tmp_path)
    assert listed.returncode == 0 and listed.stderr == ""
    shell = subprocess.run(f"'{sys.executable}' -m harness status --workdir r | head -n 1; exit ${{PIPESTATUS[0]}}",
                           shell=True, executable="/bin/bash", cwd=tmp_path, capture_output=True, text=True,
                           timeout=60)
    assert shell.returncode == 0 and shell.stdout.startswith("run_id=") and shell.stderr == ""


@pytest.mark.slow
def test_live_mode_without_a_key_is_a_clean_refusal_that_touches_nothing(tmp_path):
    assert run_cli("--scenario", "team-email", "--workdir", "r", cwd=tmp_path).returncode == 0
    before = (tmp_path / "r" / "checkpoint.json").read_bytes()
    env = {key: value for key, value in os.environ.items() if key != "ANTHROPIC_API_KEY"}
    result = run_python(["-m", "harness", "run", "--scenario", "meeting-notes", "--workdir", "r", "--live"],
                        cwd=tmp_path, timeout=120, env=env)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "ANTHROPIC_API_KEY" in result.stderr
    assert (tmp_path / "r" / "checkpoint.json").read_bytes() == before


# --- the README's command lines work as written -------------------------------------------------

REPO = Path(__file__).resolve().parent.parent


def readme_harness_commands() -> list[str]:
    """The shell lines of the README's harness section, in order (PostgreSQL ones need a server)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("### O harness na linha de comando", 1)[1].split("\n## ", 1)[0]
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", section, re.S):
        lines += [line.split("  #", 1)[0].strip() for line in block.splitlines()]
    return [line for line in lines if line and "postgresql://" not in line]


@pytest.mark.slow
def test_the_readme_harness_commands_run_as_written_in_an_activated_venv(tmp_path):
    """`python` is the course's interpreter, as in the Lab terminal or an activated .venv."""
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (shims / "python").chmod(0o755)
    env = {**os.environ, "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}"}
    env.pop("CRASH_AFTER", None)
    commands = readme_harness_commands()
    assert len(commands) >= 10
    last_code = None
    for command in commands:
        if command == "echo $?":
            assert last_code == 137
            continue
        done = subprocess.run(command, shell=True, executable="/bin/bash", cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
        last_code = done.returncode
        expected = 137 if command.startswith("CRASH_AFTER=") else 0
        assert done.returncode == expected and "Traceback" not in done.stderr, (command, done.stdout, done.stderr)
    assert len((tmp_path / "runs" / "email" / "world" / "outbox.jsonl").read_text().splitlines()) == 1


@pytest.mark.slow
def test_bootstrap_runs_the_harness_from_any_terminal(tmp_path):
    """A relative --workdir counts from the caller's folder, as the README says, never the course's."""
    def bootstrap(*args):
        return subprocess.run(["python3", str(REPO / "bootstrap.py"), "python", "-m", "harness", *args],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300)

    relative = f"runs/fora-{tmp_path.name}"
    done = bootstrap("run", "--scenario", "meeting-notes", "--workdir", relative)
    assert done.returncode == 0 and "status=completed" in done.stdout, done.stderr
    assert (tmp_path / relative / "checkpoint.json").exists() and not (REPO / relative).exists()
    status = bootstrap("status", "--workdir", relative)
    assert status.returncode == 0 and "completed" in status.stdout, status.stderr
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    paragraph = " ".join(readme.split("### O harness na linha de comando", 1)[1].split("```", 1)[0].split())
    assert "python3 bootstrap.py python -m harness" in paragraph
    assert "as pastas relativas contam a partir da pasta em que você está" in paragraph, paragraph
    assert "a partir da pasta do curso" not in paragraph, paragraph


def test_bench_and_extra_commands_in_the_docs_say_how_to_run_them():
    """A bare `python bench/...` or `pip install` fails in an ordinary shell (no course packages)."""
    texts = [(path.name, path.read_text(encoding="utf-8")) for path in
             [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "lessons").glob("*.ipynb"))]]
    for name, text in texts:
        for match in re.finditer(r"(?<![\w/.-])(?<!RUN )(python bench/|pip install)", text):
            written = text[max(0, match.start() - 40):match.end()]
            paragraph = text[max(0, match.start() - 600):match.end() + 600]
            assert re.search(r"bootstrap\.py python (-m pip install|bench/)", written) or ("bootstrap.py" in paragraph and ".venv" in paragraph), \
                (name, text[match.start() - 80:match.end() + 40])


def test_the_readme_test_command_splits_the_whole_suite_and_leaves_a_chosen_run_as_asked(monkeypatch):
    import bootstrap

    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)

    whole = bootstrap.test_command([])
    assert whole[1:4] == ["-m", "pytest", "-n"] and whole[4:] == ["3", "--dist", "worksteal"]
    one_file = bootstrap.test_command(["tests/test_stores.py", "-x", "-q"])
    assert one_file[3:] == ["tests/test_stores.py", "-x", "-q"]  # as asked, serially
    one_test = bootstrap.test_command(["tests/test_cli.py::test_bootstrap_help"])
    assert one_test[3:] == ["tests/test_cli.py::test_bootstrap_help"]
    fast_tier = bootstrap.test_command(["-m", "not slow and not browser"])  # a filter, no path: still the suite
    assert fast_tier[3:] == ["-n", "3", "--dist", "worksteal", "-m", "not slow and not browser"]
    assert bootstrap.test_command(["-k", "tests"])[3:5] == ["-n", "3"]  # a -k word that is also a folder's name
    assert bootstrap.test_command(["--ignore", "tests/test_browser.py"])[3:5] == ["-n", "3"]  # a path left out
    assert bootstrap.test_command(["-x", "tests"])[3:] == ["-x", "tests"]  # a folder named after a flag
    for chosen in (["-n", "3"], ["-n0"], ["--numprocesses=4"], ["--dist=each"], ["--pdb"], ["-p", "no:xdist"],
                   ["-pno:xdist"], ["-s", "-k", "stores"], ["--capture=no"]):
        assert bootstrap.test_command(chosen)[3:] == chosen  # the contributor's own choice, untouched
    # From inside tests/, a file is named from there, as every other command reads a relative path.
    inside = bootstrap.test_command(["test_stores.py::test_x", "-q"], cwd=REPO / "tests")
    assert inside[3:] == [f"{REPO / 'tests' / 'test_stores.py'}::test_x", "-q"]
    from_the_root = bootstrap.test_command(["tests/test_stores.py"], cwd=REPO / "tests")  # named from the project
    assert from_the_root[3:] == ["tests/test_stores.py"]
    monkeypatch.setenv("PYTEST_ADDOPTS", "--pdb")  # xdist refuses it wherever it comes from
    assert bootstrap.test_command([])[3:] == []
