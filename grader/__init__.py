"""The course's grader: ``grade exercise-N`` and the in-notebook ``check()``.

Names are imported lazily so that code running inside the grading kernel (which
imports ``grader.checks``) does not pay for nbclient.
"""
from __future__ import annotations

from typing import Any

__all__ = ["grade", "GradeReport", "CheckResult", "UnknownExercise", "FixtureError", "GraderError"]

_LOCATIONS = {
    "grade": "grader.engine",
    "GradeReport": "grader.results",
    "CheckResult": "grader.results",
    "UnknownExercise": "grader.errors",
    "FixtureError": "grader.errors",
    "GraderError": "grader.errors",
}


def __getattr__(name: str) -> Any:
    if name in _LOCATIONS:
        import importlib

        return getattr(importlib.import_module(_LOCATIONS[name]), name)
    raise AttributeError(f"module 'grader' has no attribute {name!r}")
