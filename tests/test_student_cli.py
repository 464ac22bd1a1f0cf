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
from grader import cli, console
from grader.plural import quantity
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
    (["exercise-3", "--level", "x"], "grade: erro: argumento --level: valor inválido (int): 'x'"),
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


def test_course_into_a_closed_pipe_ends_quietly(tmp_path):
    finished = closed_pipe_run([str(BIN / "course"), "--help"], cwd=tmp_path)
    assert finished.stderr == ""


def test_grade_list_piped_into_head_in_a_shell(course_copy):
    shell = subprocess.run(
        f"'{BIN / 'grade'}' list | head -n 1; exit ${{PIPESTATUS[0]}}",
        shell=True, executable="/bin/bash", cwd=course_copy, capture_output=True, text=True, timeout=60,
    )
    assert shell.stdout.startswith("Progresso:") and shell.stderr == ""
