"""Helpers for the exercise tests of any exercise: edit copies of a solution notebook and
run that exercise's checks in-process (the same runner the grading kernel uses)."""
from __future__ import annotations

import copy
from pathlib import Path

import nbformat

from grader.checks.framework import Session
from grader.checks.runner import run_plan
from grader.engine import grade, load_exercise
from grader.fixture_loader import load_fixtures
from tests.grader_support import namespace_of

ROOT = Path(__file__).resolve().parent.parent


def solution_path(exercise: str) -> Path:
    return ROOT / "solutions" / f"{exercise}.ipynb"


def exercise_path(exercise: str) -> Path:
    return ROOT / "exercises" / f"{exercise}.ipynb"


def solution_notebook(exercise: str) -> nbformat.NotebookNode:
    return nbformat.read(str(solution_path(exercise)), as_version=4)


def cell_with(notebook: nbformat.NotebookNode, marker: str) -> nbformat.NotebookNode:
    cells = [c for c in notebook.cells if c.cell_type == "code" and marker in c.source]
    assert len(cells) == 1, f"expected exactly one code cell containing {marker!r}"
    return cells[0]


def replaced(exercise: str, marker: str, source: str) -> nbformat.NotebookNode:
    """A copy of the solution whose cell containing ``marker`` now holds ``source``."""
    notebook = copy.deepcopy(solution_notebook(exercise))
    cell_with(notebook, marker).source = source
    return notebook


def edited(exercise: str, marker: str, old: str, new: str) -> nbformat.NotebookNode:
    """A copy of the solution with ``old`` replaced by ``new`` in the cell containing ``marker``."""
    notebook = copy.deepcopy(solution_notebook(exercise))
    cell = cell_with(notebook, marker)
    assert old in cell.source, f"{old!r} not found in the cell containing {marker!r}"
    cell.source = cell.source.replace(old, new)
    return notebook


def run_checks(exercise: str, notebook: nbformat.NotebookNode, workdir: Path, monkeypatch,
               level: int | None = None, check_timeout: float = 10.0) -> dict[str, dict]:
    """Execute the notebook's cells into a dict, then run the exercise's checks on it."""
    namespace, problems = namespace_of(notebook, monkeypatch)
    spec = load_exercise(exercise)
    fixtures = load_fixtures(exercise, (), spec.validate_fixture)
    plan = spec.plan(fixtures, level)
    session = Session(namespace=namespace, workdir=Path(workdir), check_timeout=check_timeout,
                      cell_problems=problems)
    return {result["id"]: result for result in run_plan(exercise, plan, fixtures, session)}


def failing(results: dict[str, dict]) -> dict[str, str]:
    return {id_: r["message"] for id_, r in results.items() if r["status"] != "pass"}


def grade_file(exercise: str, path: Path):
    """One real grading run: a fresh kernel executes the notebook, then the checks run in it."""
    return grade(exercise, path)
