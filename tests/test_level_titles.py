"""Exercise and level titles are written once, in grader/core/manifest.yaml; the check modules read them."""
from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from grader.checks.framework import Exercise
from grader.core import manifest
from grader.core.engine import grade_with_fixtures, load_exercise
from grader.core.manifest import UnknownExerciseError

ROOT = Path(__file__).resolve().parent.parent
# each exercise's checks: one module, exercise_N.py, or a package, exercise_N/
CHECK_MODULES = sorted(path for path in (ROOT / "grader" / "checks").glob("exercise_*")
                       if path.suffix == ".py" or (path / "__init__.py").is_file())


def source_of(checks: Path) -> str:
    paths = sorted(checks.rglob("*.py")) if checks.is_dir() else [checks]
    return "".join(path.read_text(encoding="utf-8") for path in paths)


def test_no_check_module_writes_titles_of_its_own():
    assert len(CHECK_MODULES) == 6
    for path in CHECK_MODULES:
        number = path.stem.split("_")[1]
        assert f'EXERCISE = Exercise("exercise-{number}")\n' in source_of(path), path.name


def test_every_exercise_reads_its_titles_from_the_manifest():
    for name in manifest.exercise_names():
        exercise, entry = load_exercise(name), manifest.get_exercise(name)
        assert exercise.title == entry.title
        assert exercise.levels == {level.number: level.title for level in entry.levels}
        assert {spec.level for spec in exercise.checks} == set(exercise.levels), name


def test_the_report_shows_what_the_manifest_says(monkeypatch, tmp_path):
    # Edit the manifest's entry in memory: the report must follow it, with nothing else to update.
    entry = manifest.get_exercise("exercise-3")
    renamed = dataclasses.replace(entry, title="Título novo", levels=tuple(
        dataclasses.replace(level, title=f"Nível renomeado {level.number}") for level in entry.levels))
    real_get = manifest.get_exercise
    monkeypatch.setattr(manifest, "get_exercise", lambda name: renamed if name == "exercise-3" else real_get(name))
    missing = tmp_path / "nao-existe.ipynb"  # a notebook problem ends the grading before any kernel starts
    report = grade_with_fixtures(load_exercise("exercise-3"), [], missing, level=2)
    assert report.title == "Título novo"
    assert report.level_titles == {2: "Nível renomeado 2"}


def test_a_check_at_a_level_the_manifest_lacks_stops_the_plan():
    exercise = Exercise("exercise-1")

    @exercise.check(level=9, title="t", criterion="c")
    def stray(ctx):
        pass

    with pytest.raises(ValueError, match=r"exercise-1: checks of level \[9\]"):
        exercise.plan([])


def test_an_exercise_the_manifest_does_not_list_is_refused_in_portuguese():
    with pytest.raises(UnknownExerciseError, match="exercise-9"):
        Exercise("exercise-9").levels


def test_the_grading_kernel_imports_the_checks_without_reading_the_manifest():
    # The kernel imports the check modules to run them; titles are only needed outside it.
    code = ("import sys\n"
            "for n in range(1, 7):\n"
            "    __import__(f'grader.checks.exercise_{n}')\n"
            "print(sorted(m for m in ('grader.core.manifest', 'yaml') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"
