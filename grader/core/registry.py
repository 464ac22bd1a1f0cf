"""Which exercises the grader knows: one ``grader/checks/exercise_N`` package (or module) each."""
from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path
from types import ModuleType

from grader.core.errors import UnknownExercise

CHECKS_DIR = Path(__file__).parents[1] / "checks"  # grader/checks
_MODULE_NAME = re.compile(r"^exercise_(\d+)$")


def known_exercises() -> list[str]:
    """Every exercise with a checks module, in numeric order (exercise-2 before exercise-10)."""
    numbers = []
    for module in pkgutil.iter_modules([str(CHECKS_DIR)]):
        match = _MODULE_NAME.match(module.name)
        if match:
            numbers.append(int(match.group(1)))
    return [f"exercise-{n}" for n in sorted(numbers)]


def load_exercise(name: str) -> ModuleType:
    """The checks module of ``name``; UnknownExercise (Portuguese, listing names) otherwise."""
    known = known_exercises()
    if name not in known:
        raise UnknownExercise(name, known)
    module = importlib.import_module("grader.checks." + name.replace("-", "_"))
    if not hasattr(module, "EXERCISE"):
        raise UnknownExercise(name, [n for n in known if n != name])
    return module
