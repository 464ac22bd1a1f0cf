"""No exercise is passed by pasting the lessons: each function an exercise asks for, replaced by
the function of the same name from lessons 1 to N (with what it reads from its lesson), earns
at most a third of the exercise's points; and importing those functions from `harness` instead
of writing them earns nothing."""
from __future__ import annotations

import nbformat
import pytest

from tests.exercise_support import grade_file
from tests.paste_from_lessons import asked_functions, imported_from_harness_notebook, pasted_notebook

EXERCISES = [f"exercise-{n}" for n in range(1, 7)]
PASTE_SHARE = 1 / 3


def graded(exercise: str, notebook, tmp_path):
    path = tmp_path / f"{exercise}.ipynb"
    nbformat.write(notebook, path)
    return grade_file(exercise, path)


@pytest.mark.slow  # one real grading per exercise
@pytest.mark.parametrize("exercise", EXERCISES)
def test_the_lessons_own_functions_earn_at_most_a_third(exercise, tmp_path):
    notebook, found = pasted_notebook(exercise)
    result = graded(exercise, notebook, tmp_path)
    assert result.points_possible > 0
    share = result.points_earned / result.points_possible
    levels = {level: f"{result.level_score(level):.0%}" for level in sorted(result.levels())}
    assert share <= PASTE_SHARE, (
        f"{exercise}: pasting the lessons' {sorted(n for n, ok in found.items() if ok)} earns "
        f"{result.points_earned:g} of {result.points_possible:g} points ({share:.0%}); by level: {levels}")


@pytest.mark.slow
@pytest.mark.parametrize("exercise", EXERCISES)
def test_functions_imported_from_harness_earn_nothing(exercise, tmp_path):
    notebook, names = imported_from_harness_notebook(exercise)
    result = graded(exercise, notebook, tmp_path)
    assert result.points_earned == 0, (exercise, names, [c.id for c in result.checks if c.passed])


def test_every_exercise_asks_for_a_function():
    assert all(asked_functions(exercise) for exercise in EXERCISES)


def test_a_pasted_function_brings_the_constants_and_helpers_it_reads():
    """The splice itself: lesson 2's save brings its helper and leaves the solution's own stubs
    where no lesson shows the function."""
    notebook, found = pasted_notebook("exercise-2")
    source = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    assert found.get("save_checkpoint") and "def save_checkpoint(" in source
    assert source.count("def save_checkpoint(") == 1
