"""The wrong-answer suite (tests/wrong_answers/): every plausible mistake, kept as data, is
spliced into the solution and graded on its own; each must lose points on the levels it
names, with a message that names the mistake, in a check the solution passes. The
right-answer suite (tests/right_answers/) splices answers that are right but written
differently, which must keep every point."""
from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from tests.exercise_support import cell_with, run_checks, solution_notebook

SUITE = Path(__file__).resolve().parent / "wrong_answers"
RIGHT_ANSWERS = Path(__file__).resolve().parent / "right_answers"
EXERCISES = [f"exercise-{n}" for n in range(1, 7)]
MINIMUM_PER_EXERCISE = 8
KEYS = {"mistake", "cell", "function", "edit", "source", "levels", "check", "message", "check_timeout"}
RIGHT_ANSWER_KEYS = {"answer", "cell", "function", "edit", "source"}
CHECK_TIMEOUT = 60.0  # generous: the machine is shared; a mistake that loops forever says check_timeout
NEGATIVE_COUNT = re.compile(r"(?:^|\s)-\d+\s+[^\W\d]")  # "-2 delas": arithmetic gone wrong in a sentence
DOUBLED_PERIOD = re.compile(r"(?<![.])\.\.(?![.])")  # "declara.. Esta": two texts glued, one period too many
RUN_ON = re.compile(r"\)\s+[A-ZÁÉÍÓÚÂÊÔÃÕÀÇ][a-zà-ú]")  # "(...) Há gravações": a sentence missing its period


def mistake_files() -> list[Path]:
    return sorted(SUITE.glob("exercise-*/*.yaml"))


def right_answer_files() -> list[Path]:
    return sorted(RIGHT_ANSWERS.glob("exercise-*/*.yaml"))


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def spliced(exercise: str, mistake: dict):
    """The solution notebook with the mistake in the cell that defines its function."""
    notebook = copy.deepcopy(solution_notebook(exercise))
    cell = cell_with(notebook, mistake.get("cell") or f"def {mistake['function']}(")
    if "source" in mistake:
        cell.source = mistake["source"]
    for change in mistake.get("edit", []):
        assert change["old"] in cell.source, f"{change['old']!r} is not in the cell any more"
        cell.source = cell.source.replace(change["old"], change["new"])
    return notebook


_solution_results: dict[tuple[str, int], dict] = {}


def solution_results(exercise: str, level: int, tmp_path_factory) -> dict:
    """The untouched solution's results for one level (once per test process)."""
    key = (exercise, level)
    if key not in _solution_results:
        with pytest.MonkeyPatch.context() as monkeypatch:
            _solution_results[key] = run_checks(exercise, solution_notebook(exercise),
                                                 tmp_path_factory.mktemp("solution"), monkeypatch,
                                                 level=level, check_timeout=CHECK_TIMEOUT)
    return _solution_results[key]


def test_the_suite_has_enough_well_formed_mistakes_per_exercise():
    counts = {exercise: 0 for exercise in EXERCISES}
    for path in mistake_files():
        mistake = load(path)
        assert set(mistake) <= KEYS, (path.name, set(mistake) - KEYS)
        assert {"mistake", "function", "levels", "message"} <= set(mistake), path.name
        assert ("edit" in mistake) != ("source" in mistake), f"{path.name}: edit or source, not both"
        counts[path.parent.name] += 1
    assert all(count >= MINIMUM_PER_EXERCISE for count in counts.values()), counts
    assert sum(counts.values()) >= 48, counts


@pytest.mark.slow  # each case grades a notebook in a real kernel
@pytest.mark.parametrize("path", mistake_files(), ids=lambda path: f"{path.parent.name}/{path.stem}")
def test_each_mistake_loses_points_with_a_message_that_names_it(path, tmp_path, tmp_path_factory, monkeypatch):
    exercise, mistake = path.parent.name, load(path)
    notebook = spliced(exercise, mistake)
    results: dict[str, dict] = {}
    for level in mistake["levels"]:
        graded = run_checks(exercise, notebook, tmp_path / f"level-{level}", monkeypatch, level=level,
                            check_timeout=mistake.get("check_timeout", CHECK_TIMEOUT))
        assert any(r["status"] != "pass" for r in graded.values()), \
            f"{mistake['mistake']}: level {level} kept every point"
        results.update(graded)
    prefixes = tuple(f"n{level}.{mistake['check']}" for level in mistake["levels"]) if "check" in mistake else ("n",)
    naming = [check_id for check_id, r in results.items()
              if r["status"] != "pass" and check_id.startswith(prefixes) and mistake["message"] in r["message"]]
    failures = {check_id: r["message"] for check_id, r in results.items() if r["status"] != "pass"}
    assert naming, f"{mistake['mistake']}: no failed check says {mistake['message']!r}; failures: {failures}"
    counted_below_zero = {check_id: text for check_id, text in failures.items() if NEGATIVE_COUNT.search(text)}
    assert not counted_below_zero, f"{mistake['mistake']}: a message counts below zero: {counted_below_zero}"
    glued = {check_id: text for check_id, text in failures.items() if DOUBLED_PERIOD.search(text) or RUN_ON.search(text)}
    assert not glued, f"{mistake['mistake']}: a message glues two sentences badly: {glued}"
    for check_id in naming:  # the control: the same check passes on the solution
        level = int(check_id[1:check_id.index(".")])
        assert solution_results(exercise, level, tmp_path_factory)[check_id]["status"] == "pass", check_id


@pytest.mark.slow  # each case grades a notebook in a real kernel
@pytest.mark.parametrize("path", right_answer_files(), ids=lambda path: f"{path.parent.name}/{path.stem}")
def test_each_right_answer_keeps_every_point(path, tmp_path, monkeypatch):
    exercise, answer = path.parent.name, load(path)
    assert set(answer) <= RIGHT_ANSWER_KEYS and {"answer", "function"} <= set(answer), path.name
    assert ("edit" in answer) != ("source" in answer), f"{path.name}: edit or source, not both"
    graded = run_checks(exercise, spliced(exercise, answer), tmp_path, monkeypatch, check_timeout=CHECK_TIMEOUT)
    assert graded, f"{answer['answer']}: no check ran"
    lost = {check_id: r["message"] for check_id, r in graded.items() if r["status"] != "pass"}
    assert not lost, f"{answer['answer']}: a right answer lost points: {lost}"
