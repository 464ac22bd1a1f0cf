"""Checks for exercise-6: the verification apparatus.

Level 1 grades ``parse_crash_plan(spec)`` (CRASH_AFTER as a plan: ``label:n`` points separated by
commas) and ``crash_point(label)``, which crashes at every point of the plan (the notebook gives
the counter ``_passes`` with ``crash_counts()`` and ``reset_crash_counts()``). Level 2 runs
the student's ``verify_resume(harness) -> list[str]`` against the reference harness (it must
approve it) and against seeded defective harnesses (it must reject each one); a verification
that rejects none of the defects under which every run still ends ``completed`` earns
nothing on the level. Level 3 grades a lease with a fencing token: ``acquire_lease``,
``check_fence`` and ``fenced_save``; ``level_3_crashes`` runs ``acquire_lease`` and
``fenced_save`` under the crash-state explorer (grader/checks/crash_states.py). Level 4 (a
new case) grades ``renew_lease``: a renewal is one more write behind the fence.

Fixtures (``grader/fixtures/exercise-6/*.json``) are data, one of three kinds:

    {"description": "...", "spec": "after-save-A:2,after-tool-run:1",       # level 1, parsing
     "expect": {"parsed": [["after-save-A", 2], ["after-tool-run", 1]]} | {"error_mentions": ["..."]}}

    {"description": "...", "crash_after": "after-save-A:2,..." | null,     # level 1, crash_point
     "calls": ["after-model-response", "after-save-A", ...],
     "expect": {"crashes_at": [5]} | {"error_at": 1, "error_mentions": ["..."]}}

    {"description": "...", "harness": "reference" | "<defect name>",        # level 2
     "expect": {"verdict": "aprovar" | "reprovar"}}

The defects themselves are code, in ``grader/buggy_harnesses/`` (one module each).
"""
from __future__ import annotations

# importing each level declares its checks on EXERCISE, in level order
from grader.checks.exercise_6 import level_1, level_2, level_3, level_3_crashes, level_4  # noqa: F401
from grader.checks.exercise_6.fixtures import EXERCISE, validate_fixture
from grader.checks.exercise_6.level_2 import CANNOT_FAIL
from grader.checks.exercise_6.notebook_harnesses import buggy_harness, defect_names, reference_harness

__all__ = ["EXERCISE", "validate_fixture", "CANNOT_FAIL", "buggy_harness", "defect_names", "reference_harness"]
