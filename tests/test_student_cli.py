"""The `grade` and `course` command lines as a student meets them: Portuguese help and errors,
progress that belongs to the student's own notebooks, and a quiet end in a pipe."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from authoring import cli as course_cli
from grader import cli
from grader.core.plural import quantity
from grader.reports import console
from tests.glossary_fixtures import REPO

BIN = Path(sys.executable).parent
# argparse's English words, and the error prefix, that must never reach a student.
ENGLISH = re.compile(
    r"usage:|options:|optional arguments|positional arguments|show this help|error:|"
    r"the following arguments|unrecognized arguments|invalid choice|invalid \w+ value|"
    r"expected one argument|choose from|ambiguous option",
)


def run_main(main, argv, capsys) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize("argv", [
    ["--help"], ["exercise-3", "--help"], ["list", "--help"], ["hint", "--help"], ["watch", "--help"],
    ["fixtures", "--help"], ["batch", "--help"],
])
def test_grade_help_is_portuguese(argv, capsys):
    code, text = run_main(cli.main, argv, capsys)
    assert code == 0
    assert "uso:" in text and not ENGLISH.search(text), text
    if argv != ["--help"]:
        assert "opções:" in text and "mostra esta ajuda e sai" in text


@pytest.mark.parametrize("argv, words", [
    (["exercise-3", "--level", "x"], "grade: erro: argumento --level: esperava um número inteiro, veio 'x'"),
    (["exercise-3", "--nivel", "2"], "grade: erro: argumentos não reconhecidos: --nivel 2"),
    (["hint"], "grade hint: erro: faltou informar: exercise-N"),
    (["hint", "exercise-3", "--level"], "grade hint: erro: argumento --level: esperava um valor"),
])
def test_grade_argument_errors_are_portuguese(argv, words, capsys):
    code, text = run_main(cli.main, argv, capsys)
    assert code == 2
    assert words in text and not ENGLISH.search(text), text


@pytest.mark.parametrize("argv, words", [
    (["--help"], "mostra esta ajuda e sai"),
    (["build", "--help"], "mostra esta ajuda e sai"),
    (["check", "--help"], "mostra esta ajuda e sai"),
    (["nada"], "course: erro: argumento COMANDO: opção inválida: 'nada' (escolha entre 'build'"),
    ([], "course: erro: faltou informar: COMANDO"),
])
def test_course_help_and_errors_are_portuguese(argv, words, capsys):
    code, text = run_main(course_cli.main, argv, capsys)
    assert code in (0, 2)
    assert words in text and "uso: course" in text and not ENGLISH.search(text), text


def test_other_parsers_in_the_process_keep_their_own_words():
    import argparse

    console.ArgumentParser(prog="x").format_help()
    assert "usage:" in argparse.ArgumentParser(prog="y").format_help()


def test_plural_agrees_with_the_number():
    assert quantity(1, "gravação", "gravações") == "1 gravação"
    assert quantity(3, "gravação", "gravações") == "3 gravações"
    assert quantity(0, "e-mail", "e-mails") == "0 e-mails"


def test_no_message_in_grader_or_authoring_hedges_the_plural():
    hedged = re.compile(r"\w\((?:s|es|ões|ns)\)")
    offenders = [
        f"{path.relative_to(REPO)}:{number}"
        for folder in ("grader", "authoring")
        for path in sorted((REPO / folder).rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if hedged.search(line) and "http(s)" not in line
    ]
    assert offenders == []


# ------------------------------------------------------------------ progress


@pytest.fixture
def course_copy(tmp_path, monkeypatch) -> Path:
    """A student's folder: the solution saved as exercises/exercise-1.ipynb, a blank copy beside it."""
    root = tmp_path / "curso"
    (root / "exercises").mkdir(parents=True)
    (root / "pyproject.toml").write_text("", encoding="utf-8")
    shutil.copy(REPO / "solutions" / "exercise-1.ipynb", root / "exercises" / "exercise-1.ipynb")
    shutil.copy(REPO / "exercises" / "exercise-1.ipynb", tmp_path / "copia.ipynb")
    monkeypatch.chdir(root / "exercises")
    monkeypatch.delenv("GRADE_STATE_FILE", raising=False)
    return root


def grade_list_line(capsys, exercise: str) -> str:
    assert cli.main(["list"]) == 0
    return next(line for line in capsys.readouterr().out.splitlines() if f" {exercise} " in line)


@pytest.mark.slow
def test_grading_another_notebook_never_changes_the_students_progress(course_copy, capsys):
    assert cli.main(["exercise-1"]) == 0  # the student's own notebook, found from exercises/
    capsys.readouterr()
    assert grade_list_line(capsys, "exercise-1").rstrip().endswith("passou")

    assert cli.main(["exercise-1", "--notebook", "../../copia.ipynb"]) == 1  # a blank copy fails...
    assert "o progresso do `grade list` não mudou" in capsys.readouterr().err
    assert grade_list_line(capsys, "exercise-1").rstrip().endswith("passou")  # ...and changes nothing
    state_before = (course_copy / ".grade-state.json").read_bytes()
    assert cli.main(["exercise-1", "--notebook", str(REPO / "solutions" / "exercise-1.ipynb")]) == 0
    assert (course_copy / ".grade-state.json").read_bytes() == state_before


@pytest.mark.slow
def test_the_students_notebook_named_another_way_still_counts(course_copy, capsys):
    blank = course_copy / "exercises" / "exercise-1.ipynb"
    shutil.copy(REPO / "exercises" / "exercise-1.ipynb", blank)
    assert cli.main(["exercise-1", "--notebook", "../exercises/./exercise-1.ipynb"]) == 1
    capsys.readouterr()
    assert "0 de" in grade_list_line(capsys, "exercise-1")


# ------------------------------------------------------------------ pipes


def closed_pipe_run(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run `command` with stdout a pipe whose reader is already gone, as `| head` leaves it."""
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()  # before the command writes anything
    _, stderr = process.communicate(timeout=300)
    return subprocess.CompletedProcess(command, process.returncode, "", stderr.decode())


@pytest.mark.slow
@pytest.mark.parametrize("args", [
    ["list"], ["--help"], ["exercise-1", "--help"], ["hint", "exercise-1", "--all"],
    ["exercise-1", "--json"], ["exercise-1"], ["fixtures", "exercise-1"],
])
def test_grade_into_a_closed_pipe_ends_quietly(args, course_copy):
    finished = closed_pipe_run([str(BIN / "grade"), *args], cwd=course_copy)
    assert "Traceback" not in finished.stderr and "BrokenPipeError" not in finished.stderr, finished.stderr
    assert "Exception ignored" not in finished.stderr


@pytest.mark.slow
def test_course_into_a_closed_pipe_ends_quietly(tmp_path):
    finished = closed_pipe_run([str(BIN / "course"), "--help"], cwd=tmp_path)
    assert finished.stderr == ""


def test_grade_list_piped_into_head_in_a_shell(course_copy):
    shell = subprocess.run(
        f"'{BIN / 'grade'}' list | head -n 1; exit ${{PIPESTATUS[0]}}",
        shell=True, executable="/bin/bash", cwd=course_copy, capture_output=True, text=True, timeout=60,
    )
    assert shell.stdout.startswith("Progresso:") and shell.stderr == ""


# ------------------------------------------------------------------ bad option values


@pytest.mark.parametrize("argv, words", [
    (["exercise-1", "--junit", "/tmp"], "é uma pasta; indique um arquivo para o relatório JUnit"),
    (["exercise-1", "--junit", "/proc/nada/x.xml"], "não consigo gravar o relatório JUnit em /proc/nada/x.xml"),
    (["exercise-1", "--memory-mb", "-1"], "argumento --memory-mb: -1 é pouco"),
    (["exercise-1", "--memory-mb", "1"], "1 MB não dá nem para o kernel começar"),
    (["exercise-1", "--level", "0"], "argumento --level: 0 é pouco: o mínimo é 1"),
    (["watch", "exercise-1", "--interval", "nan"], "argumento --interval: 'nan' segundos"),
    (["watch", "exercise-1", "--interval", "inf"], "argumento --interval: 'inf' segundos"),
    (["watch", "exercise-1", "--interval", "1e300"], "argumento --interval: '1e300' segundos"),
    (["watch", "exercise-1", "--fixtures", "/nada/aqui"], "grade watch: Fixture com problema"),
    (["batch", "/tmp", "exercise-1", "--timeout", "-5"], "argumento --timeout: '-5' segundos"),
    (["hint", "exercise-99"], "grade hint: Exercício desconhecido: 'exercise-99'"),
    (["fixtures", "exercise-99"], "grade fixtures: Exercício desconhecido: 'exercise-99'"),
])
def test_bad_option_values_get_a_portuguese_reason_and_exit_2_before_any_grading(argv, words, capsys, monkeypatch):
    from grader.core import engine

    monkeypatch.setattr(engine, "grade_with_fixtures", lambda *a, **k: pytest.fail("must not grade"))
    code, text = run_main(cli.main, argv, capsys)
    assert code == 2, text
    assert words in text and "Traceback" not in text and not ENGLISH.search(text), text


def test_help_placeholders_are_portuguese(capsys):
    for argv in (["watch", "--help"], ["batch", "--help"], ["exercise-1", "--help"]):
        _, text = run_main(cli.main, argv, capsys)
        for english in ("NOTEBOOK", " DIR", "SUBMISSIONS_DIR"):
            assert english not in text, (argv, text)
    _, text = run_main(course_cli.main, ["site", "--help"], capsys)
    assert "OUT" not in text
    _, text = run_main(course_cli.main, ["originality", "--help"], capsys)
    assert "WORDS" not in text


def test_course_names_an_unknown_option_as_such(capsys):
    code, text = run_main(course_cli.main, ["--bogus"], capsys)
    assert code == 2 and "course: erro: argumentos não reconhecidos: --bogus" in text, text


def test_os_errors_are_explained_in_portuguese(tmp_path):
    from grader.core.errors import os_reason

    with pytest.raises(OSError) as caught:
        tmp_path.read_text()
    assert os_reason(caught.value) == "é uma pasta, não um arquivo"


def test_a_notebook_without_cell_ids_reads_without_an_english_warning(tmp_path):
    import json
    import warnings

    from grader.core.notebook_file import read_notebook

    data = json.loads((REPO / "exercises" / "exercise-1.ipynb").read_text(encoding="utf-8"))
    for cell in data["cells"]:
        cell.pop("id", None)
    path = tmp_path / "sem-ids.ipynb"
    path.write_text(json.dumps(data), encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        notebook, problem = read_notebook(path)
    assert problem is None and notebook.cells


def test_an_exercise_without_any_fixture_is_an_error_naming_the_folder(tmp_path, monkeypatch, capsys):
    from grader.core import fixture_loader

    monkeypatch.setattr(fixture_loader, "FIXTURES_ROOT", tmp_path / "fixtures")
    monkeypatch.setenv("GRADE_STATE_FILE", str(tmp_path / "state.json"))
    code, text = run_main(cli.main, ["exercise-1", "--notebook", str(REPO / "solutions" / "exercise-1.ipynb")], capsys)
    assert code == 2 and "não tem nenhuma verificação para rodar" in text and "exercise-1" in text, text
    assert not (tmp_path / "state.json").exists()


# ------------------------------------------------------------------ the course folder


def test_the_course_is_found_from_the_installed_package_anywhere(tmp_path, monkeypatch):
    from grader.core import course_folder
    from grader.student import progress

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GRADE_STATE_FILE", raising=False)
    assert course_folder.find_project_root() == REPO.resolve()
    assert progress.default_state_path() == REPO.resolve() / ".grade-state.json"
    assert course_folder.is_students_notebook("exercise-1", REPO / "exercises" / "exercise-1.ipynb")


def test_outside_any_course_nothing_is_written(tmp_path, monkeypatch, capsys):
    from grader.core import course_folder
    from grader.student import progress
    from tests.test_grader_tools import check, report

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GRADE_STATE_FILE", raising=False)
    monkeypatch.setattr(course_folder, "installed_course_root", lambda: None)
    (tmp_path / ".grade-state.json").write_text("de outra pessoa", encoding="utf-8")
    progress.record("exercise-1", report("exercise-1", check(1, "pass")))
    assert (tmp_path / ".grade-state.json").read_text(encoding="utf-8") == "de outra pessoa"
    assert list(tmp_path.iterdir()) == [tmp_path / ".grade-state.json"]
    code, text = run_main(cli.main, ["exercise-1"], capsys)
    assert code == 2 and "não encontrei a pasta do curso" in text, text
    code, text = run_main(cli.main, ["list"], capsys)
    assert code == 0 and "Progresso: 0 de 6" in text


@pytest.mark.slow
def test_bootstrap_runs_commands_in_the_callers_folder(tmp_path):
    finished = subprocess.run(
        [sys.executable, str(REPO / "bootstrap.py"), "python", "-c", "import os; print(os.getcwd())"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert finished.returncode == 0, finished.stderr
    assert Path(finished.stdout.strip()).resolve() == tmp_path.resolve()


@pytest.mark.slow
def test_bootstrap_with_an_unknown_command_says_so(tmp_path):
    finished = subprocess.run([sys.executable, str(REPO / "bootstrap.py"), "nada-disso"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert finished.returncode == 2 and "Traceback" not in finished.stderr
    assert "comando desconhecido: 'nada-disso'" in finished.stdout + finished.stderr


# ------------------------------------------------------------------ signals


def wait_for(path: Path, timeout: float = 60.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.1)


def test_bootstrap_passes_sigterm_to_its_child_and_waits(tmp_path):
    import signal

    child = ("import pathlib, signal, sys, time\n"
             "def bye(*_):\n    pathlib.Path('terminado').write_text('sim'); sys.exit(0)\n"
             "signal.signal(signal.SIGTERM, bye)\npathlib.Path('pronto').write_text('sim')\ntime.sleep(120)\n")
    process = subprocess.Popen([sys.executable, str(REPO / "bootstrap.py"), "python", "-c", child],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(tmp_path / "pronto")
    process.send_signal(signal.SIGTERM)  # to bootstrap.py only, as `kill <pid>` does
    _, stderr = process.communicate(timeout=60)
    assert (tmp_path / "terminado").read_text() == "sim"  # the child got it and ended its own way
    assert process.returncode == 0 and "Traceback" not in stderr, stderr


@pytest.mark.slow
def test_ctrl_c_during_a_grading_ends_in_one_line_with_exit_130(tmp_path):
    import json
    import os
    import signal

    import nbformat

    notebook = nbformat.read(REPO / "solutions" / "exercise-1.ipynb", as_version=4)
    notebook.cells.insert(0, nbformat.v4.new_code_cell(
        f"import os, pathlib, time\npathlib.Path({str(tmp_path / 'rodando')!r}).write_text(str(os.getpid()))\n"
        "while True:\n    time.sleep(0.1)"))
    path = tmp_path / "laco.ipynb"
    nbformat.write(notebook, path)
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"version": 1, "exercises": {}, "hints": {}}), encoding="utf-8")
    process = subprocess.Popen([str(BIN / "grade"), "exercise-1", "--notebook", str(path)], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                               env={**os.environ, "GRADE_STATE_FILE": str(state)})
    wait_for(tmp_path / "rodando")
    os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C in the terminal does: the whole group
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert stderr.strip() == "interrompido (Ctrl-C).", stderr
    assert json.loads(state.read_text(encoding="utf-8"))["exercises"] == {}
    kernel = int((tmp_path / "rodando").read_text())
    assert not kernel_alive(kernel), "the kernel outlived the grading"


def kernel_alive(pid: int, grace: float = 5.0) -> bool:
    """Whether ``pid`` still runs after ``grace`` seconds (a dying process may need a moment)."""
    import os
    import time

    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        time.sleep(0.1)
    return True


def test_a_symlink_to_the_students_notebook_is_the_same_file_and_a_copy_is_not(course_copy):
    from grader.core.course_folder import is_students_notebook

    own = course_copy / "exercises" / "exercise-1.ipynb"
    link = course_copy / "atalho.ipynb"
    link.symlink_to(own)
    copy = course_copy / "copia-1.ipynb"
    shutil.copy(own, copy)
    assert is_students_notebook("exercise-1", link)  # grading it updates `grade list`
    assert not is_students_notebook("exercise-1", copy)
    assert not is_students_notebook("exercise-2", link)


@pytest.mark.parametrize("text", ["[" * 100000 + "]" * 100000,
                                  '{"cells": [], "nbformat": 4, "metadata": ' + "{\"a\": " * 50000 + "1" + "}" * 50000 + "}"],
                         ids=["nested-lists", "nested-metadata"])
def test_hostile_deeply_nested_json_is_an_invalid_notebook_not_a_grader_error(text, tmp_path):
    from grader.core.engine import grade
    from grader.core.notebook_file import read_notebook
    from grader.core.results import INVALID_NOTEBOOK
    from grader.instructor import batch

    path = tmp_path / "fundo.ipynb"
    path.write_text(text, encoding="utf-8")
    notebook, problem = read_notebook(path)
    assert notebook is None and problem.kind == INVALID_NOTEBOOK
    assert "profundidade demais" in problem.message and "RecursionError" not in problem.message
    report = grade("exercise-1", path)
    assert report.notebook_error_kind == INVALID_NOTEBOOK and report.score == 0
    assert batch.status_for_error_kind(report.notebook_error_kind) == batch.INVALID_NOTEBOOK
