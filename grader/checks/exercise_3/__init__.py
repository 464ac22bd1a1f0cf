"""Checks for exercise-3: resuming from a checkpoint.

Level 1 grades ``resume_action(cp)`` on every fixture. Level 2 grades the root cause
of the duplicate-email incident (``ROOT_CAUSE``) and the fixed ``reconcile(cp)`` on
every fixture. What a fixture expects is data (``grader/fixtures/exercise-3/*.json``):

    {
      "description": "...",
      "checkpoint": {version, task, turns, tokens_used, messages, pending_tool_use},
      "workspace": {"files": {...}, "outbox": [...], "tickets": [...]},   # optional
      "expect": {
        "resume_action": {"<tool_use_id>": "rerun" | "is_error", ...},   # {} = nothing pending
        "outbox_after": 1,     # optional: emails in the outbox after reconcile
        "tickets_after": 0     # optional: tickets in the store after reconcile
      }
    }

Level 2 derives what ``reconcile`` must do from ``expect.resume_action``: "rerun" ids
must run exactly once and carry the real result; "is_error" ids must never run and get
an ``is_error`` tool_result.

Level 3 (the transfer case) grades ``reconcile_mcp(cp, server)`` on the calendar agent's scenes:
fixtures with a ``calendar`` (``{"events": [...], "invites": [...]}``, the state of
``calendar_server.CalendarServer``, whose tools declare MCP annotations) and
``expect.reconcile_mcp`` instead of ``expect.resume_action``: ``{"<tool_use_id>": "rerun" |
"is_error"}``, which the validator derives from the server's declarations too (readOnlyHint or
idempotentHint true → "rerun"; anything else, undeclared or unknown → "is_error"). Levels 1
and 2 skip these scenes; level 3 runs only on them.
"""
from __future__ import annotations

# importing each level declares its checks on EXERCISE, in level order
from grader.checks.exercise_3 import level_1, level_2, level_3  # noqa: F401
from grader.checks.exercise_3.fixtures import EXERCISE, validate_fixture

__all__ = ["EXERCISE", "validate_fixture"]
