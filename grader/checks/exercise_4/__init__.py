"""Checks for exercise-4: side effects and idempotence.

Level 1 grades a structured answer (``ANSWERS``: operation -> "idempotente" /
"não idempotente"). Level 2 grades ``load_effects(path)`` and
``save_effect(path, tool_use_id, record)``; ``level_2_states`` holds ``save_effect`` to the
ledger's state machine (a settled receipt is never replaced, no outcome without an intent);
``level_2_crashes`` runs ``save_effect`` under the
crash-state explorer (grader/checks/crash_states.py), every state read back with the student's
``load_effects``, and makes its swap fail. Level 3 grades
``repair_run(run_dir)`` on every fixture: the crash scene is written as a run folder
(checkpoint.json, effects.json), repair_run returns its diagnosis (the way of each pending call,
judged against ``expect.ways``) and leaves the repaired checkpoint on disk, closed by the
student's three-way ``reconcile(cp, effects_path)``. Level 4 grades
``run_tool_uses(tool_uses, ctx)`` with the approval gate, on worlds the checks build;
``level_4_turn`` requires the whole turn to pass the gate before any effect runs. Level 5
(transfer) grades ``send_sms_once(call, effects_path, sms)`` against ``harness.sms.SmsGateway``,
a provider with no idempotency key, only a lookup by the sender's ``client_ref``.

A level-3 fixture (``grader/fixtures/exercise-4/*.json``) is a crash scene:

    {
      "description": "...",
      "checkpoint": {version, task, turns, tokens_used, messages, pending_tool_use},
      "effects": {"<tool_use_id>": {tool, input_hash, status, result, recorded_at}},  # optional
      "workspace": {"files": {...}, "outbox": [...], "tickets": [...]},              # optional
      "expect": {
        "ways": {"<tool_use_id>": "reuse" | "rerun" | "run" | "confirm"},   # {} = nothing pending
        "outbox_after": 1,    # optional
        "tickets_after": 0    # optional
      }
    }

"reuse": a receipt is in the ledger, the recorded result comes back and nothing runs.
"rerun": a read-only call runs again once. "run": a high-impact call that never took
effect runs exactly once with idempotency_key == tool_use_id and leaves a receipt.
"confirm": an intent whose effect the external system already holds: nothing runs and
the receipt becomes committed.
"""
from __future__ import annotations

# importing each level declares its checks on EXERCISE, in level order
from grader.checks.exercise_4 import (  # noqa: F401
    level_1,
    level_2,
    level_2_states,
    level_2_crashes,
    level_3,
    level_4,
    level_4_turn,
    level_5,
)
from grader.checks.exercise_4.fixtures import EXERCISE, validate_fixture

__all__ = ["EXERCISE", "validate_fixture"]
