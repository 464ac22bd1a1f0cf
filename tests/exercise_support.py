"""Helpers for the exercise tests of any exercise: edit copies of a solution notebook and
run that exercise's checks in-process (the same runner the grading kernel uses)."""
from __future__ import annotations

import copy
from pathlib import Path

import nbformat
import pytest

from grader.core.engine import grade
from tests import grader_support
from tests.grader_support import defining_cell, failing, namespace_of

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


def edited_definition(notebook: nbformat.NotebookNode, name: str, old: str, new: str) -> nbformat.NotebookNode:
    """``notebook`` with ``old`` replaced by ``new`` in the cell that defines ``name``."""
    cell = defining_cell(notebook, name)
    assert old in cell.source, f"{old!r} not in the {name} cell"
    cell.source = cell.source.replace(old, new)
    return notebook


def assert_fails(results: dict[str, dict], check_id: str, *words: str) -> None:
    """``check_id`` failed, and its message contains every one of ``words``."""
    failed = failing(results)
    assert check_id in failed, f"{check_id} passed; failures: {sorted(failed)}"
    for word in words:
        assert word in failed[check_id], f"{word!r} not in: {failed[check_id]}"


def run_checks(exercise: str, notebook: nbformat.NotebookNode, workdir: Path, monkeypatch,
               level: int | None = None, check_timeout: float = 10.0) -> dict[str, dict]:
    """Execute the notebook's cells into a dict, then run the exercise's checks on it."""
    namespace, problems = namespace_of(notebook, monkeypatch)
    return grader_support.run_checks(namespace, workdir, exercise=exercise, level=level,
                                     check_timeout=check_timeout, cell_problems=problems)


def solution_results_fixture(exercise: str):
    """A module-scoped fixture: the exercise's checks run once on its solution, in-process.
    Bind it in a test module as ``solution_results = solution_results_fixture(EXERCISE)``."""

    @pytest.fixture(scope="module")
    def solution_results(tmp_path_factory):
        monkeypatch = pytest.MonkeyPatch()
        try:
            yield run_checks(exercise, solution_notebook(exercise), tmp_path_factory.mktemp("solution"), monkeypatch)
        finally:
            monkeypatch.undo()

    return solution_results


def grade_file(exercise: str, path: Path):
    """One real grading run: a fresh kernel executes the notebook, then the checks run in it."""
    return grade(exercise, path)

