"""Checks for exercise-5: rewind and fork over a per-turn checkpoint sequence.

Level 1 grades ``pick_latest_point(run_dir, turn=None)``, level 2 ``rewind_to(run_dir,
turn)``, level 3 ``fork_from(run_dir, turn, new_run_dir)``. Each fixture is a run folder
written out file by file (``grader/fixtures/exercise-5/*.json``):

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
        "rewind": {"turn": 2, "point": "A"},                 # optional: level 2
        "rewind_missing_turn": 9,                            # optional: level 2
        "fork": {"turn": 1, "point": "B", "parent_timeline_id": "tl-..."}   # optional: level 3
      }
    }

What a rewind or a fork must produce is derived from the files (the chosen point, the
ledger's receipts), so an instructor adds a case by dropping a recorded run folder in.
"""
from __future__ import annotations

# importing each level declares its checks on EXERCISE, in level order
from grader.checks.exercise_5 import level_1, level_2, level_3  # noqa: F401
from grader.checks.exercise_5.fixtures import EXERCISE, fixture_run_dir, validate_fixture

__all__ = ["EXERCISE", "validate_fixture", "fixture_run_dir"]
