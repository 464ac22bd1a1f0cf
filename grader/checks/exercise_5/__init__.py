"""Checks for exercise-5: rewind and fork over a per-turn checkpoint sequence.

Level 1 grades ``latest_step(run_dir, step=None)`` on the fixtures written with another agent's
names (``steps/step-2-post.json``), level 2 ``undo_decision(run_dir, tool_name)`` (rewind to
the point before the first decision to call the tool), level 3 ``fork_at_decision(run_dir,
tool_name, new_run_dir)`` (fork from that decision's point A), level 4 ``finish_rewind(run_dir)``
(finish a rewind a crash cut short, from the ``rewind.json`` intent written before it). Each
fixture is a run folder written out file by file (``grader/fixtures/exercise-5/*.json``):

    {
      "description": "...",
      "run_dir": {"checkpoints/turn-001-A.json": {...checkpoint...},   # JSON values are
                  "checkpoints/turn-002-B.json.tmp": "{\"vers",        # dumped, strings are
                  "effects.json": {...}, "timeline.json": {...}},       # written as they are
      "mtimes": {"checkpoints/turn-001-A.json": 1900000500},            # optional
      "workspace": {"files": {...}, "outbox": [...], "tickets": [...]}, # the shared world
      "expect": {
        "latest": "turn-003-A.json" | null,
        "latest_by_turn": {"1": "turn-001-B.json", "4": null},
        "undo": {"tool": "send_email", "turn": 1, "point": "B"},      # optional: level 2
        "undo_missing_tool": "create_ticket",                        # optional: level 2
        "fork": {"tool": "send_email", "turn": 2, "point": "A",
                 "parent_timeline_id": "tl-..."},                     # optional: level 3
        "finish": null | {"to": "turn-001-B.json", "folder": "rewound-001"}
                  | {"refused": true}                                 # optional: level 4
      }
    }

What a rewind or a fork must produce is derived from the files (the chosen point, the
ledger's receipts), so an instructor adds a case by dropping a recorded run folder in.
"""
from __future__ import annotations

# importing each level declares its checks on EXERCISE, in level order
from grader.checks.exercise_5 import level_1, level_2, level_3, level_4  # noqa: F401
from grader.checks.exercise_5.fixtures import EXERCISE, fixture_run_dir, fixture_steps_dir, validate_fixture

__all__ = ["EXERCISE", "validate_fixture", "fixture_run_dir", "fixture_steps_dir"]
