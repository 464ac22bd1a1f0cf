"""The check-authoring API: declare an exercise, its checks, and what a check may do.

Read ``grader/checks/README.md`` for the walkthrough. In short, an exercise package
``grader/checks/exercise_N/`` creates ``EXERCISE = Exercise(...)`` and decorates
plain functions with ``@EXERCISE.check(...)``. A check passes by returning and fails
by raising ``CheckFailed``; everything it learns about the student's code goes through
the ``Context`` it receives, which never lets a student's mistake become a grader crash.

This package is imported both by the grading process (to plan checks and validate
fixtures) and inside the student's kernel (to run them), so it stays light: no
nbclient, no harness import at module level. Its parts: ``declarations`` (Exercise,
Fixture, the plan), ``context`` (running a check: Session, Context), ``outcomes``
(CheckFailed, StudentProblem, how values and errors are shown), ``student_code`` (stubs
and names the student has not written) and ``content`` (reading message content).
"""
from __future__ import annotations

from grader.checks.framework.content import block_text, content_blocks, plain_text, response_tokens
from grader.checks.framework.context import Context, Session
from grader.core.declarations import Exercise, Fixture, PlannedCheck, is_kind
from grader.checks.framework.outcomes import (
    NOT_IMPLEMENTED_PREFIX,
    CheckFailed,
    CheckTimeout,
    StudentProblem,
    describe_error,
    error_text,
    nothing_observed,
    show,
)
from grader.checks.framework.student_code import CellProblemInfo, stub_text

__all__ = [
    "NOT_IMPLEMENTED_PREFIX",
    "CellProblemInfo",
    "CheckFailed",
    "CheckTimeout",
    "Context",
    "Exercise",
    "Fixture",
    "PlannedCheck",
    "Session",
    "StudentProblem",
    "block_text",
    "content_blocks",
    "describe_error",
    "error_text",
    "is_kind",
    "nothing_observed",
    "plain_text",
    "response_tokens",
    "show",
    "stub_text",
]
