"""Points per check, from the manifest's ``points`` and ``check_points`` of each level.

Without either, every check run is worth one point, so a report's points are its
passed checks and the percentage is the one graded before points existed. A level's
``points`` is split equally between its check runs; ``check_points`` gives a named
check its own points, split between the fixtures it runs on, and the level's other
runs share what is left of ``points`` (or keep one point each when the level has none).
"""
from __future__ import annotations

from typing import Sequence

from grader.core.declarations import PlannedCheck
from grader.core.errors import GraderError

DEFAULT_POINTS = 1.0


def _level_entry(exercise: str, level: int):
    from grader.core import manifest

    try:
        entry = manifest.get_exercise(exercise)
    except manifest.UnknownExerciseError:
        return None  # an exercise the manifest does not list keeps one point per check
    return next((item for item in entry.levels if item.number == level), None)


def _level_points(exercise: str, level: int, runs: list[PlannedCheck]) -> dict[str, float]:
    entry = _level_entry(exercise, level)
    if entry is None or (entry.points is None and not entry.check_points):
        return {run.id: DEFAULT_POINTS for run in runs}
    where = f"manifest.yaml, {exercise} nível {level}"
    names = sorted({run.name for run in runs})
    named = dict(entry.check_points)
    unknown = sorted(set(named) - set(names))
    if unknown:
        raise GraderError(
            f"{where}: check_points cita {unknown[0]!r}, que não é uma verificação deste nível "
            f"(as verificações dele são: {', '.join(names)})."
        )
    points: dict[str, float] = {}
    for name, total in named.items():
        of_check = [run for run in runs if run.name == name]
        points.update({run.id: total / len(of_check) for run in of_check})
    others = [run for run in runs if run.name not in named]
    if entry.points is None:
        points.update({run.id: DEFAULT_POINTS for run in others})
        return points
    left = entry.points - sum(named.values())
    if left < -1e-9 or (not others and abs(left) > 1e-9):
        raise GraderError(
            f"{where}: as verificações em check_points somam {sum(named.values()):g} pontos, "
            f"mas o nível vale {entry.points:g}."
        )
    points.update({run.id: max(left, 0.0) / len(others) for run in others})
    return points


def points_for(exercise: str, plan: Sequence[PlannedCheck]) -> dict[str, float]:
    """Points each planned check is worth, by check id; GraderError for a manifest that
    names a check the level does not have or gives it more than the level is worth."""
    by_level: dict[int, list[PlannedCheck]] = {}
    for run in plan:
        by_level.setdefault(run.level, []).append(run)
    points: dict[str, float] = {}
    for level, runs in by_level.items():
        points.update(_level_points(exercise, level, runs))
    return points


def shown(points: float) -> str:
    """Points as people write them: 2, 2.5, 3.33."""
    return f"{round(points, 2):g}"
