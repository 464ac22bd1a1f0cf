"""What a report shows: failures first, passes folded, the short form for unwritten code,
and the same content in the terminal and in Jupyter's table."""
from __future__ import annotations

import ast
import html
import re
import shutil
from pathlib import Path

import nbformat
import pytest

from grader.core.engine import grade
from grader.core.results import CellProblem, CheckResult, GradeReport
from grader.reports import render
from grader.reports.report_view import report_view
from tests.glossary_fixtures import REPO

HINT = "grade hint exercise-9 --level {}"


def check(level, name, status="fail", fixture=None, message="", unwritten="", expected="", observed=""):
    return CheckResult(f"n{level}.{name}[{fixture}]", level, fixture, f"Título {name}", f"critério {name}", status,
                       expected=expected, observed=observed or message, message=message,
                       hint_ref=HINT.format(level), unwritten=unwritten)


def report(checks, **kwargs) -> GradeReport:
    return GradeReport("exercise-9", checks, notebook="exercises/exercise-9.ipynb", title="Nove",
                       level_titles={1: "Um", 2: "Dois"}, **kwargs)


def blank_report(fixtures: int) -> GradeReport:
    """Two unwritten functions; every check fails because of them."""
    checks = [check(1, "decide", fixture=f"f{i}", message="Ainda não implementado: `decide` ...", unwritten="decide")
              for i in range(fixtures)]
    checks += [check(2, f"fix{k}", fixture=f"f{i}", message="Ainda não implementado: `fix` ...", unwritten="fix")
               for k in range(5) for i in range(fixtures)]
    return report(checks)


def test_a_blank_exercise_report_does_not_grow_with_the_number_of_checks():
    small, large = render.text_report(blank_report(2)), render.text_report(blank_report(40))
    assert len(small.splitlines()) == len(large.splitlines()) < 25
    assert "  - `decide`: trava o nível 1 (40 verificações)" in large
    assert "  - `fix`: trava o nível 2 (200 verificações)" in large
    assert large.count("Ainda não implementado") == 1  # the first failing check, once, in full
    assert "e mais 200 verificações que não passaram" in large


def test_the_short_form_shows_the_first_failure_of_code_that_was_written():
    checks = [
        check(1, "decide", "pass", fixture="a"),
        check(1, "decide", fixture="b", message="devolveu 'rerun' para send_email", expected="is_error"),
        check(2, "fix", fixture="a", message="Ainda não implementado: `fix` ...", unwritten="fix"),
    ]
    text = render.text_report(report(checks))
    assert "Ainda por escrever:\n  - `fix`: trava o nível 2 (1 verificação)\n" in text
    assert "Primeira verificação que falhou (nível 1):\n  FALHOU  Título decide  [b]\n" in text
    assert "Esperado: is_error" in text and "Ainda não implementado" not in text


def test_a_complete_attempt_lists_failures_first_and_folds_the_passes():
    checks = [check(1, "a", "pass", fixture="x"), check(1, "a", fixture="y", message="m1"),
              check(1, "a", fixture="z", message="m1"), check(1, "b", message="m2"),
              check(2, "c", "pass"), check(2, "d", "pass")]
    text = render.text_report(report(checks))
    level_one = text.split("Nível 1 — Um")[1].split("Nível 2")[0]
    assert level_one.index("FALHOU  Título a  [y] [z]") < level_one.index("FALHOU  Título b") \
        < level_one.index("✓ 1 verificação passou")
    assert level_one.count("Problema: m1") == 1  # two fixtures failing the same way: one entry
    assert "Nível 2 — Dois  (2/2)\n  ✓ 2 verificações passaram\n" in text
    assert "Nível 1 — Um  (1/4)  · dica: grade hint exercise-9 --level 1" in text
    assert "Ainda por escrever" not in text and "Título c" not in text
    verbose = render.text_report(report(checks), verbose=True)
    assert "PASSOU  Título c" in verbose and "Critério: critério c" in verbose


def test_notebook_warnings_about_unwritten_stubs_are_not_repeated():
    stub = CellProblem(3, "def fix():", "NotImplementedError", "x", "A célula 3 parou em NotImplementedError.")
    other = CellProblem(5, "import nada", "ModuleNotFoundError", "x", "A célula 5 falhou ao importar.")
    text = render.text_report(report(blank_report(1).checks, cell_problems=[stub, other]))
    assert "A célula 5 falhou ao importar." in text and "A célula 3" not in text


def visible_text(page: str) -> str:
    """The words a reader sees in the HTML (tags and the style element removed)."""
    page = re.sub(r"<style>.*?</style>", "", page)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


@pytest.mark.parametrize("make", [
    lambda: blank_report(3),
    lambda: report([check(1, "a", "pass", fixture="x"), check(1, "a", fixture="y", message="m1 <b>",
                    expected="e", observed="o"), check(2, "c", message="m2")]),
])
def test_the_table_carries_the_same_content_as_the_text(make):
    text, page = render.text_report(make()), render.html_report(make())
    shown = visible_text(page)
    for line in text.splitlines():
        # every value line of the text appears in the table (labels and wrapping aside)
        value = line.split(": ", 1)[1] if re.match(r"\s+(Critério|Esperado|Obtido|Problema): ", line) else ""
        if value:
            assert " ".join(value.split()) in shown, value
    view = report_view(make())
    for level in view.levels:
        assert level.heading in shown
    assert view.score in shown


def test_the_table_is_left_aligned_even_without_its_style_element():
    page = render.html_report(report([check(1, "a", message="m")]))
    cells = re.findall(r"<t[dh]\b[^>]*>", page)
    assert cells and all('text-align:left' in cell for cell in cells)


@pytest.mark.slow
def test_the_blank_exercise_3_report_has_one_line_per_unwritten_function(tmp_path):
    blank = tmp_path / "exercise-3.ipynb"
    shutil.copy(REPO / "exercises" / "exercise-3.ipynb", blank)
    text = render.text_report(grade("exercise-3", blank))
    lines = text.splitlines()
    listed = lines[lines.index("Ainda por escrever:") + 1:]
    listed = listed[:next(i for i, line in enumerate(listed) if not line.startswith("  - "))]
    assert [line.split("`")[1] for line in listed] == ["resume_action", "ROOT_CAUSE", "reconcile", "reconcile_mcp"]
    assert text.count("Ainda não implementado") == 1
    assert len(lines) <= 25, text


def stubs_and_blank_answers(notebook: Path) -> set[str]:
    """What a generated exercise leaves to write: functions whose body raises the stub's
    NotImplementedError, and answers assigned None (read from the file, not from the grader)."""
    names = set()
    for cell in nbformat.read(notebook, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.FunctionDef) and any(
                    isinstance(statement, ast.Raise) and "NotImplementedError" in ast.unparse(statement)
                    for statement in node.body):
                names.add(node.name)
        for node in ast.parse(cell.source).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value is None:
                names.update(target.id for target in node.targets if target.id.isupper())
    return names


@pytest.mark.slow
@pytest.mark.parametrize("number", range(1, 7))
def test_a_blank_generated_exercise_lists_every_stub_and_fails_only_as_unwritten(number, tmp_path):
    exercise = f"exercise-{number}"
    blank = tmp_path / f"{exercise}.ipynb"
    shutil.copy(REPO / "exercises" / f"{exercise}.ipynb", blank)
    report_ = grade(exercise, blank)
    not_unwritten = [f"{c.id}: {c.message}" for c in report_.checks if not c.passed and not c.unwritten]
    assert not_unwritten == []  # every check of every level fails only as "not written yet"
    text = render.text_report(report_)
    lines = text.splitlines()
    listed = lines[lines.index("Ainda por escrever:") + 1:]
    listed = listed[:next(i for i, line in enumerate(listed) if not line.startswith("  - "))]
    assert {line.split("`")[1] for line in listed} == stubs_and_blank_answers(blank)
    assert len(listed) == len(set(listed))
    focus = lines[lines.index(next(line for line in lines if line.startswith("Primeira verificação"))) + 1:]
    assert "Ainda não implementado" in "\n".join(focus[:8]) and ".." not in text.replace("...", "")


def test_one_check_failing_on_many_fixtures_shows_its_criterion_once_and_a_line_per_fixture():
    checks = [check(2, "load", fixture=f"f{i:02d}", message=f"devolveu None para o arquivo {i}, que existe",
                    expected="CheckpointError", observed="None") for i in range(15)]
    checks.append(check(2, "load", "pass", fixture="ok"))
    text = render.text_report(report(checks))
    assert text.count("critério load") == 1 and text.count("Problema:") == 1
    assert "FALHOU  Título load  (em 15 fixtures)" in text and "Em [f00]:" in text
    for i in range(1, 15):
        assert f"        [f{i:02d}]: esperado CheckpointError; obtido None\n" in text
    assert len(text.splitlines()) < 35
    page = visible_text(render.html_report(report(checks)))
    assert page.count("critério load") == 1 and "[f14]: esperado CheckpointError; obtido None" in page


def test_values_are_shown_as_python_spells_them():
    from grader.checks.framework import show

    assert (show(None), show(True), show(False)) == ("None", "True", "False")
