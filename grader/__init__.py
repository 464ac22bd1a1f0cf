"""The course's grader: ``grade exercise-N`` and the in-notebook ``check()``.

The package is grouped by role (docs/arquitetura.md):
- ``grader.core``: grading one notebook (kernels, sandbox, checks' plumbing, manifest, results);
- ``grader.checks``: each exercise's checks, run inside the grading kernel;
- ``grader.reports``: what a grading shows (terminal text, HTML, JSON, JUnit, feedback pages)
  and what the command lines share with the terminal;
- ``grader.student``: the student's commands (list, hint, watch) and ``check()`` for notebooks;
- ``grader.instructor``: the instructor's commands (batch, fixtures, Gradescope);
- ``grader.cli``: the ``grade`` command, which dispatches to the others.

What notebooks use is importable from ``grader`` itself. Names are imported lazily so that
code running inside the grading kernel (which imports ``grader.checks``) does not pay for nbclient.
"""
from __future__ import annotations

import sys
from typing import Any

__all__ = ["check", "fixture_checkpoint", "fixture_workspace", "FIXTURES_ROOT", "grade", "GradeReport",
           "CheckResult", "UnknownExercise", "FixtureError", "GraderError"]

# the module each public name comes from, imported on first use
MODULE_OF = {
    "check": "grader.student.notebook_api",
    "fixture_checkpoint": "grader.student.notebook_api",
    "fixture_workspace": "grader.student.notebook_api",
    "FIXTURES_ROOT": "grader.core.fixture_loader",
    "grade": "grader.core.engine",
    "GradeReport": "grader.core.results",
    "CheckResult": "grader.core.results",
    "UnknownExercise": "grader.core.errors",
    "FixtureError": "grader.core.errors",
    "GraderError": "grader.core.errors",
}

# what a notebook helper imports on its first call (a kernel template imports it ahead of the notebook)
FIRST_CALL_IMPORTS = {
    "fixture_checkpoint": ("grader.core.fixture_loader", "encodings.utf_8_sig"),
    "fixture_workspace": ("grader.core.fixture_loader", "encodings.utf_8_sig", "grader.checks.instrumented"),
}


def _skip_slow_optional_imports() -> None:
    """Keep jsonschema (imported by nbformat) from loading its optional IRI checker.

    `rfc3987_syntax` compiles a grammar at import time: seconds of CPU on every
    `grade` or `course` start (and most of the test suite's collection). Notebook schemas
    never use the IRI formats it checks. A ``None`` in ``sys.modules`` makes that import raise
    ImportError at once (https://docs.python.org/3/reference/import.html#the-module-cache),
    and jsonschema then leaves the two IRI formats out, as it does where the package is not
    installed. `authoring/__init__.py` and `tests/conftest.py` import grader first for this.
    """
    if "rfc3987_syntax" not in sys.modules and "jsonschema" not in sys.modules:
        sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]  # import now fails fast


_skip_slow_optional_imports()


def __getattr__(name: str) -> Any:
    if name in MODULE_OF:
        import importlib

        return getattr(importlib.import_module(MODULE_OF[name]), name)
    raise AttributeError(f"module 'grader' has no attribute {name!r}")
