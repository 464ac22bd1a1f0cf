"""Students' progress: the local state file and `grade list`.

After every `grade exercise-N` run of the student's own exercises/exercise-N.ipynb (never a
copy, a solution or a submission graded with --notebook), the CLI calls `record(exercise, report)`, which
keeps per-level check counts in `.grade-state.json` at the project root (gitignored).
`grade list` reads it back: every exercise in manifest order, its status from the
last run, and the next one to do. `grade hint` keeps its tier counters in the same
file. Writes are atomic (temporary file + os.replace), and a damaged state file
is moved aside with a warning instead of stopping the student.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from grader.core.atomic_write import write_atomic
from grader.core.course_folder import find_project_root, is_students_notebook
from grader.core.errors import GraderError, os_reason
from grader.core.manifest import Exercise, Manifest, load_manifest
from grader.core.results import NOTEBOOK_UNREADABLE

STATE_FILE_NAME = ".grade-state.json"
STATE_VERSION = 1
STATE_PATH_ENV = "GRADE_STATE_FILE"

PASSED_STATUSES = {"passed", "pass", "ok"}


# ------------------------------------------------------------------ location


def default_state_path() -> Path | None:
    """Where progress lives: the course folder (None outside any course: nothing is written)."""
    override = os.environ.get(STATE_PATH_ENV)
    if override:
        return Path(override)
    root = find_project_root()
    return None if root is None else root / STATE_FILE_NAME


# ---------------------------------------------------------------- the file


def empty_state() -> dict[str, Any]:
    return {"version": STATE_VERSION, "exercises": {}, "hints": {}}


def warn(message: str) -> None:
    print(f"aviso: {message}", file=sys.stderr)


def _valid_counts(counts: Any) -> bool:
    numbers = [counts.get("passed"), counts.get("total")] if isinstance(counts, dict) else []
    return (len(numbers) == 2 and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in numbers)
            and numbers[0] <= numbers[1])


def load_state(path: Path | None = None) -> dict[str, Any]:
    """The saved state, or an empty one. A damaged file (not UTF-8, not JSON, nested past what
    the parser takes, the wrong shape) is set aside, never lost."""
    path = Path(path) if path is not None else default_state_path()
    if path is None:
        return empty_state()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return empty_state()
    except OSError as error:
        warn(f"não consegui ler {path.name} ({os_reason(error)}); seguindo sem o progresso salvo.")
        return empty_state()
    try:
        data = json.loads(raw.decode("utf-8"))
        if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
            raise ValueError("formato inesperado")
        if not isinstance(data.get("exercises"), dict) or not isinstance(data.get("hints"), dict):
            raise ValueError("formato inesperado")
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        backup = path.with_name(path.name + ".danificado")
        try:
            os.replace(path, backup)
            warn(f"{path.name} estava danificado; guardei uma cópia em {backup.name} e comecei um progresso novo.")
        except OSError:
            warn(f"{path.name} está danificado; seguindo sem o progresso salvo.")
        return empty_state()
    return data


def save_state(state: dict[str, Any], path: Path | None = None) -> None:
    """Write the state atomically (``grader.core.atomic_write``)."""
    path = Path(path) if path is not None else default_state_path()
    if path is None:
        raise GraderError("fora da pasta do curso não há onde guardar o progresso")
    text = json.dumps(state, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    write_atomic(path, text)


# ------------------------------------------------------------------ recording


def check_passed(check: Any) -> bool:
    status = getattr(check, "status", None)
    if isinstance(status, str):
        return status.lower() in PASSED_STATUSES
    return bool(getattr(check, "passed", False))


def _level_key(level: Any) -> str:
    text = str(level).strip().upper().lstrip("N")
    return str(int(text)) if text.isdigit() else str(level)


def level_counts(report: Any) -> dict[str, dict[str, int]]:
    """{"1": {"passed": 3, "total": 4}, ...} from a GradeReport's checks."""
    counts: dict[str, dict[str, int]] = {}
    for check in getattr(report, "checks", None) or []:
        entry = counts.setdefault(_level_key(getattr(check, "level", "?")), {"passed": 0, "total": 0})
        entry["total"] += 1
        entry["passed"] += int(check_passed(check))
    return counts


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def record(exercise: str, report: Any, *, path: Path | None = None) -> None:
    """Remember the result of one grading run. Never raises: progress is a convenience."""
    try:
        state = load_state(path)
        entry = state["exercises"].get(exercise)
        if not isinstance(entry, dict):
            entry = state["exercises"][exercise] = {}
        # A run limited to one level (`--level K`) updates that level and keeps the others.
        entry["levels"] = {**_level_entries(entry), **level_counts(report)}
        error = getattr(report, "notebook_error", None)
        entry["notebook_error"] = None if error in (None, "") else str(error)
        entry["score"] = float(getattr(report, "score", 0.0) or 0.0)
        entry["last_run"] = _now()
        save_state(state, path)
    except Exception as error:  # noqa: BLE001 - must never break a grading run
        warn(f"não consegui salvar o progresso ({error}).")


def record_progress(exercise: str, report: Any, notebook: Path) -> None:
    """Remember the result for `grade list`, but only when ``notebook`` is the student's own
    exercises/exercise-N.ipynb: grading a copy, a solution or a submission changes nothing there."""
    if not is_students_notebook(exercise, notebook):
        print(f"(o progresso do `grade list` não mudou: ele acompanha só exercises/{exercise}.ipynb)",
              file=sys.stderr)
        return
    if getattr(report, "notebook_error_kind", None) == NOTEBOOK_UNREADABLE:
        # Nothing of the student's was graded (the file is missing or renamed): the last real result stays.
        print(f"(o progresso do `grade list` não mudou: exercises/{exercise}.ipynb não pôde ser lido)",
              file=sys.stderr)
        return
    try:
        record(exercise, report)
    except Exception as error:  # noqa: BLE001 - progress must never hide a grade
        print(f"aviso: não consegui guardar o progresso ({error}).", file=sys.stderr)


# ------------------------------------------------------------------ status


@dataclass(frozen=True)
class ExerciseStatus:
    name: str
    title: str
    run: bool
    passed: bool
    passed_checks: int
    total_checks: int
    ungraded_levels: tuple[int, ...]
    notebook_error: str | None

    def describe(self) -> str:
        if not self.run:
            return "nunca rodado"
        if self.passed:
            return "passou"
        text = f"{self.passed_checks} de {self.total_checks} verificações"
        if self.notebook_error:
            text += " (o notebook não rodou até o fim)"
        if self.ungraded_levels:
            levels = ", ".join(str(level) for level in self.ungraded_levels)
            text += f"; nível {levels} ainda não corrigido" if len(self.ungraded_levels) == 1 else f"; níveis {levels} ainda não corrigidos"
        return text


def _level_entries(entry: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Per-level counts, skipping anything a hand edit may have left malformed."""
    levels = entry.get("levels")
    if not isinstance(levels, dict):
        return {}
    return {key: counts for key, counts in levels.items() if _valid_counts(counts)}


def exercise_status(state: dict[str, Any], exercise: Exercise) -> ExerciseStatus:
    entry = state.get("exercises", {}).get(exercise.name)
    if not isinstance(entry, dict):
        return ExerciseStatus(exercise.name, exercise.title, False, False, 0, 0, (), None)
    levels = _level_entries(entry)
    passed_checks = sum(int(counts.get("passed", 0)) for counts in levels.values())
    total_checks = sum(int(counts.get("total", 0)) for counts in levels.values())
    ungraded = tuple(level.number for level in exercise.levels if str(level.number) not in levels)
    all_passed = (
        not ungraded
        and total_checks > 0
        and passed_checks == total_checks
        and not entry.get("notebook_error")
    )
    return ExerciseStatus(
        exercise.name, exercise.title, True, all_passed, passed_checks, total_checks, ungraded,
        entry.get("notebook_error"),
    )


def first_unpassed_level(state: dict[str, Any], exercise: Exercise) -> int | None:
    """The first level of `exercise` whose last result was not a full pass (None: all passed)."""
    entry = state.get("exercises", {}).get(exercise.name)
    levels = _level_entries(entry) if isinstance(entry, dict) else {}
    for level in exercise.levels:
        counts = levels.get(str(level.number))
        if not counts or counts.get("total", 0) == 0 or counts.get("passed") != counts.get("total"):
            return level.number
    return None


def next_exercise(state: dict[str, Any], manifest: Manifest) -> Exercise | None:
    for exercise in manifest.exercises:
        if not exercise_status(state, exercise).passed:
            return exercise
    return None


def render_list(state: dict[str, Any], manifest: Manifest) -> str:
    statuses = [exercise_status(state, exercise) for exercise in manifest.exercises]
    upcoming = next_exercise(state, manifest)
    done = sum(status.passed for status in statuses)
    lines = [f"Progresso: {done} de {len(statuses)} exercícios concluídos", ""]
    title_width = max(len(status.title) for status in statuses)
    for status in statuses:
        if status.passed:
            mark = "✓"
        elif upcoming is not None and status.name == upcoming.name:
            mark = "→"
        elif status.run:
            mark = "◐"
        else:
            mark = "·"
        lines.append(f"  {mark} {status.name:<11} {status.title:<{title_width}}  {status.describe()}")
    lines.append("")
    if upcoming is None:
        lines.append("Parabéns: todos os exercícios passaram na última correção.")
    else:
        lines.append(f"Próximo: {upcoming.name} — {upcoming.title}")
        lines.append(f"  corrigir: grade {upcoming.name}    dica: grade hint {upcoming.name}")
    return "\n".join(lines)


# ------------------------------------------------------------------ command


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`grade list` takes no arguments of its own."""


def run(args: argparse.Namespace) -> int:
    print(render_list(load_state(), load_manifest()))
    return 0
