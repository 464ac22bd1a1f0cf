"""Bad inputs that never reach a kernel, the CLI's contract, and the report renderers."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from grader import cli
from grader.core.engine import grade
from grader.core.environment import GRADER_ENV
from grader.core.errors import UnknownExercise
from grader.core.results import CellProblem, CheckResult, GradeReport
from grader.reports import render


@pytest.mark.parametrize(
    "name, content, words",
    [
        ("texto.ipynb", b"print('oi')\n", "o conteúdo não é JSON (linha 1, coluna 1: esperava um valor)"),
        ("lista.ipynb", b"[1, 2, 3]", "é JSON, mas não é um notebook do Jupyter"),
        ("vazio.ipynb", b"", "está vazio"),
        ("binario.ipynb", bytes(range(256)), "não é texto UTF-8"),
        ("cortado.ipynb", b'{"cells": [], "nbformat": 4, "nbformat_minor": 5, "metadata": {', "não é JSON"),
        ("estranho.ipynb", b'{"cells": [{"cell_type": "foo"}], "nbformat": 4, "nbformat_minor": 5, "metadata": {}}',
         "é um notebook corrompido"),
    ],
)
def test_unusable_file_fails_every_check_with_a_portuguese_message(name, content, words, tmp_path):
    path = tmp_path / name
    path.write_bytes(content)
    before = path.stat().st_mtime_ns
    report = grade("exercise-3", path)
    assert report.notebook_error and words in report.notebook_error
    assert report.notebook_error_kind == "invalid_notebook"
    assert report.checks and all(c.status == "fail" and c.message == report.notebook_error for c in report.checks)
    assert report.score == 0.0 and not report.passed
    assert path.read_bytes() == content and path.stat().st_mtime_ns == before


@pytest.mark.parametrize("text", ["{nao", "", "[1 2]", '{"a" 1}', '"abc', '"a\\q"', '"\\u12"', "1 2", '"a\x01"'])
def test_every_json_decoder_problem_is_said_in_portuguese(text):
    """The message names the problem in Portuguese; json's English words never reach a student."""
    from grader.core.notebook_file import json_problem_words

    with pytest.raises(json.JSONDecodeError) as raised:
        json.loads(text)
    words = json_problem_words(raised.value.msg)
    assert words.startswith(": ") and len(words) > 4
    assert not any(english in words for english in ("Expecting", "Invalid", "Unterminated", "Extra"))


def test_a_json_problem_this_course_does_not_know_is_left_out_not_shown_in_english():
    from grader.core.notebook_file import json_problem_words

    assert json_problem_words("Some future message") == ""


def test_missing_notebook_and_folder(tmp_path):
    report = grade("exercise-3", tmp_path / "nao-existe.ipynb")
    assert "não foi encontrado" in report.notebook_error and report.notebook_error_kind == "notebook_unreadable"
    report = grade("exercise-3", tmp_path)
    assert "é uma pasta" in report.notebook_error and report.notebook_error_kind == "notebook_unreadable"


def test_unknown_exercise_names_the_valid_ones(tmp_path):
    with pytest.raises(UnknownExercise) as raised:
        grade("exercicio-3", tmp_path / "x.ipynb")
    message = str(raised.value)
    assert "Exercício desconhecido: 'exercicio-3'" in message and "exercise-3" in message


def test_cli_unknown_exercise_and_level_exit_2(capsys):
    assert cli.main(["exercise-99"]) == 2
    assert "Exercício desconhecido: 'exercise-99'" in capsys.readouterr().err
    assert cli.main(["exercise-3", "--level", "9"]) == 2
    assert "não tem nível 9; os níveis dele são: 1, 2" in capsys.readouterr().err


def test_cli_without_arguments_shows_help(capsys):
    assert cli.main([]) == 2
    out = capsys.readouterr().out
    assert "grade exercise-N" in out and "fixtures" in out


def test_cli_default_notebook_is_found_from_the_project_root(tmp_path, monkeypatch, capsys):
    (tmp_path / "exercises").mkdir()
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")  # a course folder: both
    (tmp_path / "exercises" / "exercise-3.ipynb").write_text("não é json", encoding="utf-8")
    (tmp_path / "lessons").mkdir()
    monkeypatch.chdir(tmp_path / "lessons")
    monkeypatch.setenv("GRADE_STATE_FILE", str(tmp_path / "state.json"))
    assert cli.main(["exercise-3", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["notebook"].endswith("exercises/exercise-3.ipynb")
    assert "não é JSON" in report["notebook_error"] and report["notebook_error_kind"] == "invalid_notebook"


def test_cli_writes_junit_and_exits_1_on_failure(tmp_path, monkeypatch, capsys):
    bad = tmp_path / "bad.ipynb"
    bad.write_text("[]", encoding="utf-8")
    monkeypatch.setenv("GRADE_STATE_FILE", str(tmp_path / "state.json"))
    junit = tmp_path / "out" / "junit.xml"
    assert cli.main(["exercise-3", "--notebook", str(bad), "--junit", str(junit)]) == 1
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("failures") == suite.get("tests") != "0"
    assert "não é um notebook do Jupyter" in capsys.readouterr().out


# ------------------------------------------------------------------ renderers


def sample_report() -> GradeReport:
    checks = [
        CheckResult("n1.a[cpA]", 1, "cpA", "Decide a ação", "critério 1", "pass", hint_ref="grade hint exercise-3 --level 1"),
        CheckResult("n2.b[cpC]", 2, "cpC", "Não reenvia <e-mail>", "critério & 2", "fail",
                    expected="0 envios", observed="1 envio", message="reexecutou `send_email`",
                    hint_ref="grade hint exercise-3 --level 2", output="olá\n"),
    ]
    return GradeReport("exercise-3", checks, notebook="exercises/exercise-3.ipynb", title="Retomando",
                       level_titles={1: "Nível um", 2: "Nível dois"},
                       cell_problems=[CellProblem(4, "import sys", "SystemExit", "", "A célula 4 chamou sys.exit()")])


def test_text_report_shows_levels_expectations_score_and_hint():
    text = render.text_report(sample_report())
    assert "Nível 1 — Nível um  (1/1)" in text and "Nível 2 — Nível dois  (0/1)" in text
    assert "  FALHOU  Não reenvia <e-mail>  [cpC]\n" in text and "  ✓ 1 verificação passou\n" in text
    assert "Esperado: 0 envios" in text and "Obtido: 1 envio" in text
    assert "Problema: reexecutou `send_email`" in text and "Critério: critério & 2" in text
    assert "A célula 4 chamou sys.exit()" in text
    assert "Pontuação: 1/2 verificações (50%)." in text
    assert "grade hint exercise-3 --level 2" in text


def test_html_report_escapes_and_marks_status():
    page = render.html_report(sample_report())
    assert "Não reenvia &lt;e-mail&gt;" in page and "critério &amp; 2" in page
    assert page.count('class="ok"') == 1 and page.count('class="no"') == 1
    assert "<details><summary>1 verificação passou</summary>" in page


def test_json_and_junit_reports():
    report = sample_report()
    data = json.loads(render.json_report(report))
    assert data["score"] == 0.5 and data["passed"] is False
    assert data["levels"]["2"] == {"title": "Nível dois", "score": 0.0, "passed": False, "points": 0.0, "max_points": 1.0}
    assert GradeReport.from_dict(data).to_dict() == data
    assert data["notebook_error_kind"] is None
    stopped = GradeReport("exercise-3", report.checks, notebook_error_kind="kernel_died")
    assert GradeReport.from_dict(stopped.to_dict()).notebook_error_kind == "kernel_died"
    suite = ET.fromstring(render.junit_report(report)).find("testsuite")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["n1.a[cpA]", "n2.b[cpC]"]
    failure = cases[1].find("failure")
    assert failure.get("message") == "reexecutou `send_email`" and "Esperado: 0 envios" in failure.text
    assert cases[1].find("system-out").text == "olá\n"


# ------------------------------------------------------------------ the in-notebook API


def test_check_is_a_no_op_while_the_grader_runs_the_notebook(monkeypatch, capsys):
    from grader.student import notebook_api

    monkeypatch.setenv(GRADER_ENV, "1")
    monkeypatch.setattr(notebook_api.subprocess, "run", lambda *a, **k: pytest.fail("must not grade"))
    assert notebook_api.check("exercise-3") is None
    assert "não roda enquanto o corretor executa" in capsys.readouterr().out


def test_check_explains_a_grader_error(monkeypatch, capsys, tmp_path):
    from grader.student import notebook_api

    monkeypatch.delenv(GRADER_ENV, raising=False)
    monkeypatch.setenv("GRADE_STATE_FILE", str(tmp_path / "state.json"))
    notebook_api.check("exercise-42", notebook=tmp_path / "x.ipynb")
    assert "Não consegui corrigir: grade: Exercício desconhecido: 'exercise-42'" in capsys.readouterr().out


def test_notebooks_import_from_grader_and_old_notebooks_from_the_old_paths():
    # New notebooks write `from grader import ...`; a notebook saved before the grader was grouped
    # by role (a student's work in progress, a submission in a batch) still imports the old paths.
    import grader
    from grader.core import fixture_loader
    from grader.student import notebook_api

    for name in ("check", "fixture_checkpoint", "fixture_workspace"):
        old = __import__("grader.notebook_api", fromlist=[name])
        assert getattr(grader, name) is getattr(notebook_api, name) is getattr(old, name), name
    old_loader = __import__("grader.fixture_loader", fromlist=["FIXTURES_ROOT"])
    assert grader.FIXTURES_ROOT == fixture_loader.FIXTURES_ROOT == old_loader.FIXTURES_ROOT
    assert (grader.FIXTURES_ROOT / "exercise-4").is_dir()
    with pytest.raises(AttributeError, match="no attribute 'load_fixtures'"):
        grader.load_fixtures  # noqa: B018 - only the notebooks' names are public


def test_fixture_helpers_give_fresh_copies(tmp_path):
    from grader.student.notebook_api import fixture_checkpoint, fixture_workspace

    first = fixture_checkpoint("exercise-3", "cpB")
    first["messages"].clear()
    assert fixture_checkpoint("exercise-3", "cpB")["messages"]
    world = fixture_workspace("exercise-3", "incident-duplicate-email", tmp_path)
    assert len(world.emails()) == 1
    assert (world.sandbox / "notes" / "conclusoes.md").is_file()


def test_check_shows_an_html_table_inside_jupyter(monkeypatch):
    import IPython.display

    from grader.student import notebook_api

    shown = []
    monkeypatch.setattr(notebook_api, "_in_jupyter", lambda: True)
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(obj))
    notebook_api._show(sample_report())
    assert len(shown) == 1 and isinstance(shown[0], IPython.display.HTML)
    assert '<table class="grade-report"' in shown[0].data and "reexecutou `send_email`" in shown[0].data


def test_check_grades_the_duplicated_notebook_it_runs_in(monkeypatch, tmp_path):
    from grader.core.course_folder import course_root
    from grader.student import notebook_api

    copy = tmp_path / "exercise-3-Copy1.ipynb"
    copy.write_text("{}", encoding="utf-8")
    monkeypatch.setenv("JPY_SESSION_NAME", str(copy))  # what the Jupyter server gives the kernel
    assert notebook_api.notebook_to_grade("exercise-3") == (copy, "")
    own = course_root() / "exercises" / "exercise-3.ipynb"
    path, warning = notebook_api.notebook_to_grade("exercise-30")  # not a copy of exercise-3's sibling
    assert path == course_root() / "exercises" / "exercise-30.ipynb"
    assert "este notebook é exercise-3-Copy1.ipynb" in warning
    other = tmp_path / "rascunho.ipynb"
    other.write_text("{}", encoding="utf-8")
    monkeypatch.setenv("JPY_SESSION_NAME", str(other))
    assert notebook_api.notebook_to_grade("exercise-3") == (
        own, "Atenção: este notebook é rascunho.ipynb, mas check('exercise-3') corrige exercises/exercise-3.ipynb.")
    monkeypatch.delenv("JPY_SESSION_NAME")
    assert notebook_api.notebook_to_grade("exercise-3") == (own, "")


@pytest.mark.parametrize("wrong", [3, "3", "exercicio-3", None])
def test_check_with_a_wrong_exercise_name_says_how_to_write_it(wrong, monkeypatch, capsys):
    from grader.student import notebook_api

    monkeypatch.delenv(GRADER_ENV, raising=False)
    monkeypatch.setattr(notebook_api.subprocess, "run", lambda *a, **k: pytest.fail("must not grade"))
    assert notebook_api.check(wrong) is None
    assert 'check espera o nome do exercício entre aspas, por exemplo check("exercise-3")' in capsys.readouterr().out


def test_the_table_says_which_notebook_it_graded():
    page = render.html_report(sample_report())
    assert "Notebook: <code>" in page


def test_a_fixture_world_is_written_without_fsync_and_holds_what_the_harness_would_write(tmp_path, monkeypatch):
    """The world a check (or a notebook helper) builds is thrown away with its folder: its files need
    no fsync, which cost two per file on every check. The files are the harness's own, byte for byte."""
    import os

    from grader.checks.instrumented import build_workspace
    from harness.tools import Workspace

    files = {"notes/conclusoes.md": "# Conclusões\nção\n", "a/b/c.txt": "x", "topo.txt": ""}
    expected = Workspace(tmp_path / "harness")
    expected.add_files(files)
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    world = build_workspace(tmp_path / "grader", {"files": files, "outbox": [{"to": "a@b"}]})
    assert synced == []
    for relative in files:
        made, wanted = world.sandbox / relative, expected.sandbox / relative
        assert made.read_bytes() == wanted.read_bytes(), relative
        assert made.stat().st_mode == wanted.stat().st_mode, relative
    assert sorted(p.relative_to(world.sandbox) for p in world.sandbox.rglob("*")) == \
        sorted(p.relative_to(expected.sandbox) for p in expected.sandbox.rglob("*"))
    assert world.emails() == [{"to": "a@b"}]


def test_a_fixture_world_never_writes_through_a_link_planted_where_a_file_goes(tmp_path):
    """Student code runs in the grading folder and may plant a link where a check's world puts a file."""
    from grader.checks.instrumented import build_workspace
    from harness.run_paths import RunPathError

    outside = tmp_path / "fora.txt"
    outside.write_text("intocado", encoding="utf-8")
    root = tmp_path / "mundo"
    (root / "sandbox" / "notes").mkdir(parents=True)
    (root / "sandbox" / "notes" / "conclusoes.md").symlink_to(outside)
    world = build_workspace(root, {"files": {"notes/conclusoes.md": "novo"}})
    assert outside.read_text(encoding="utf-8") == "intocado"
    assert (world.sandbox / "notes" / "conclusoes.md").read_text(encoding="utf-8") == "novo"
    assert not (world.sandbox / "notes" / "conclusoes.md").is_symlink()
    (root / "sandbox" / "pasta-link").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(RunPathError):
        build_workspace(root, {"files": {"pasta-link/dentro.txt": "x"}})
    assert not (tmp_path / "dentro.txt").exists()
    with pytest.raises(RunPathError):
        build_workspace(root, {"files": {"../fuga.txt": "x"}})
    assert not (root / "fuga.txt").exists()
