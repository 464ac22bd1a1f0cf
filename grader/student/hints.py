"""`grade hint exercise-N [--level K] [--all]`: tiered hints from the manifest.

Each call reveals one more tier of the chosen level (the first level not passed
in the last run, unless `--level` says otherwise); the count of tiers already
shown lives in the progress state file, so asking again moves on. `--all` shows
every tier of the level at once.
"""
from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path
from typing import Any

from grader.core.errors import GraderError, os_reason
from grader.core.manifest import Exercise, Level, UnknownExerciseError, load_manifest
from grader.reports import console
from grader.student.progress import first_unpassed_level, load_state, save_state, warn

def _counters(state: dict[str, Any], exercise: str) -> dict[str, Any]:
    """The exercise's tier counters, repaired if a hand edit left something else there."""
    every = state.get("hints")
    if not isinstance(every, dict):
        every = state["hints"] = {}
    counters = every.get(exercise)
    if not isinstance(counters, dict):
        counters = every[exercise] = {}
    return counters


def hints_shown(state: dict[str, Any], exercise: str, level: int) -> int:
    value = _counters(state, exercise).get(str(level), 0)
    return value if isinstance(value, int) and value >= 0 else 0


def _remember(state: dict[str, Any], exercise: str, level: int, shown: int) -> None:
    _counters(state, exercise)[str(level)] = shown


def _header(exercise: Exercise, level: Level) -> str:
    return f"{exercise.name} — nível {level.number}: {level.title}"


def _format_tier(level: Level, tier: int) -> str:
    body = textwrap.fill(
        level.hints[tier - 1], width=88, initial_indent="  ", subsequent_indent="  ",
        break_long_words=False, break_on_hyphens=False,
    )
    return f"Dica {tier} de {len(level.hints)}:\n{body}"


def hint_text(
    exercise: Exercise,
    level: Level,
    state: dict[str, Any],
    *,
    show_all: bool = False,
) -> str:
    """The text to print; updates the tier counter inside `state`."""
    lines = [_header(exercise, level), ""]
    if not level.hints:
        lines.append(f"Ainda não há dicas para este nível. Releia os critérios de conclusão do nível {level.number} no notebook.")
        return "\n".join(lines)
    total = len(level.hints)
    if show_all:
        lines.extend(_format_tier(level, tier) + "\n" for tier in range(1, total + 1))
        _remember(state, exercise.name, level.number, total)
        return "\n".join(lines).rstrip()
    already = hints_shown(state, exercise.name, level.number)
    tier = min(already + 1, total)
    lines.append(_format_tier(level, tier))
    lines.append("")
    if already >= total:
        lines.append(f"Você já viu todas as dicas deste nível. Para rever todas juntas: grade hint {exercise.name} --level {level.number} --all")
    elif tier < total:
        lines.append(f"Ainda travado? Rode de novo para a dica {tier + 1}: grade hint {exercise.name} --level {level.number}")
    else:
        lines.append("Esta é a última dica deste nível.")
    _remember(state, exercise.name, level.number, tier)
    return "\n".join(lines)


def choose_level(exercise: Exercise, state: dict[str, Any], requested: int | None) -> Level | None:
    """The requested level, or the first one not passed (None when all passed)."""
    if requested is not None:
        return exercise.level(requested)
    number = first_unpassed_level(state, exercise)
    return None if number is None else exercise.level(number)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("exercise", metavar="exercise-N", help="o exercício, por exemplo exercise-3")
    parser.add_argument("--level", type=console.whole_number(1), default=None, metavar="K", help="nível (padrão: o primeiro que ainda não passou)")
    parser.add_argument("--all", dest="show_all", action="store_true", help="mostra todas as dicas do nível de uma vez")


def show_hint(name: str, level: int | None = None, *, show_all: bool = False, state_path: Path | None = None) -> tuple[int, str]:
    """(exit code, text) for one `grade hint` call; saves the tier counter."""
    manifest = load_manifest()
    try:
        exercise = manifest.exercise(name)
        state = load_state(state_path)
        chosen = choose_level(exercise, state, level)
    except UnknownExerciseError as error:
        return 2, str(error)
    if chosen is None:
        return 0, (
            f"Todos os níveis do {exercise.name} passaram na última correção. "
            f"Para rever uma dica, escolha o nível: grade hint {exercise.name} --level 1"
        )
    text = hint_text(exercise, chosen, state, show_all=show_all)
    if chosen.hints:
        try:
            save_state(state, state_path)
        except OSError as error:
            warn(f"não consegui guardar qual dica você já viu ({os_reason(error)}).")
        except GraderError as error:
            warn(f"não guardei qual dica você já viu: {error}.")
    return 0, text


def run(args: argparse.Namespace) -> int:
    code, text = show_hint(args.exercise, args.level, show_all=args.show_all)
    if code:
        print(f"grade hint: {text}", file=sys.stderr)
    else:
        print(text)
    return code
