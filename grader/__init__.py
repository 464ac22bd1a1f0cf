"""The course's grader: ``grade exercise-N`` and the in-notebook ``check()``.

Names are imported lazily so that code running inside the grading kernel (which
imports ``grader.checks``) does not pay for nbclient.
"""
from __future__ import annotations

import sys
from typing import Any

__all__ = ["check", "grade", "GradeReport", "CheckResult", "UnknownExercise", "FixtureError", "GraderError"]

_LOCATIONS = {
    "check": "grader.notebook_api",
    "grade": "grader.engine",
    "GradeReport": "grader.results",
    "CheckResult": "grader.results",
    "UnknownExercise": "grader.errors",
    "FixtureError": "grader.errors",
    "GraderError": "grader.errors",
}


def _skip_slow_optional_imports() -> None:
    """Keep jsonschema (imported by nbformat) from loading its optional IRI checker.

    `rfc3987_syntax` compiles a grammar at import time: seconds of CPU on every
    `grade` or `course` start. Notebook schemas never use the IRI formats it checks.
    """
    if "rfc3987_syntax" not in sys.modules and "jsonschema" not in sys.modules:
        sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]  # import now fails fast


_skip_slow_optional_imports()


def __getattr__(name: str) -> Any:
    if name in _LOCATIONS:
        import importlib

        return getattr(importlib.import_module(_LOCATIONS[name]), name)
    raise AttributeError(f"module 'grader' has no attribute {name!r}")
