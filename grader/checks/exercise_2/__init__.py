"""Checks for exercise-2: writing and reading checkpoint.json, and the save points A and B.

Level 1 grades ``save_checkpoint(state, path)`` by observation: the file it leaves, the
folder around it, spies on the swaps (``os.replace``, ``os.rename``, ``os.link``,
``shutil.move``, ``Path.rename``, ``Path.replace``) and ``os.fsync``, two crashes in the
middle of a write (every file opened for writing stops accepting bytes after a few hundred
characters; and a state that ``json`` cannot serialize past its middle), a save of the same
state after each of them, and a relative path.

``level_1_crashes`` adds the crash-state explorer (grader/checks/crash_states.py): every disk
state a power loss can leave during the save, read back with the student's
``load_checkpoint``; a failed ``os.replace``; two writers at once; a state JSON cannot write.

Level 2 runs ``load_checkpoint(path)`` on every ``load`` fixture; level 3 runs the
student's ``run_agent(client, state, checkpoint_path, max_turns=...)`` on every ``run``
fixture with ``save_checkpoint`` swapped for a spy that records each saved state; each saved
state must say which point it is (``save_point``: "A" or "B"), and the grader finds the points
by what the checkpoint declares, checking it against what the saved conversation holds.

Level 4, a transfer case, runs ``run_agent_within_budget(client, state, checkpoint_path,
max_turns=...)`` on every ``budget`` fixture, resumed from a checkpoint holding exercise 1's
``token_budget`` and ``tokens_already_used`` tokens already spent: the model is called only
while the state's tokens_used is below its token_budget, and the checkpoint left is the state
returned, budget included.

Fixture shapes (``grader/fixtures/exercise-2/*.json``)::

    {"description": "...", "kind": "load",
     "file": {"absent": true} | {"folder": true} | {"json": <any>} | {"text": "...", "drop_last_bytes": 1},
     "expect": {"load_checkpoint": "None" | "checkpoint" | "CheckpointError",
                "mentions": ["2", "1"]}}          # texts the error message must contain

    {"description": "...", "kind": "run", "task": "...", "workspace": {"files": {...}},
     "responses": [<compact scripted responses>], "max_turns": 5,   # optional
     "expect": {"saves": 5,                         # 2 per tool turn, 1 per pause_turn and the final turn
                "status": "completed"}}             # what the state records at the end

    {"description": "...", "kind": "budget", "task": "...", "workspace": {...}, "responses": [...],
     "token_budget": 1000, "tokens_already_used": 700, "max_turns": 5,   # the last two optional
     "expect": {"calls": 1, "status": "running"}}  # checked against the script and the budget
"""
from __future__ import annotations

# importing each level declares its checks on EXERCISE, in level order
from grader.checks.exercise_2 import level_1, level_1_crashes, level_2, level_3, level_4  # noqa: F401
from grader.checks.exercise_2.fixtures import EXERCISE, validate_fixture

__all__ = ["EXERCISE", "validate_fixture"]
