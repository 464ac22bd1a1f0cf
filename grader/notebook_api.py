"""Where exercise notebooks saved before the grader was grouped by role import ``check`` from.

Its home is now ``grader.student.notebook_api``, and notebooks write ``from grader import check``;
this name stays so such a notebook (a student's work in progress, a submission in a batch) still
runs and grades.
"""
from grader.student.notebook_api import check, fixture_checkpoint, fixture_workspace

__all__ = ["check", "fixture_checkpoint", "fixture_workspace"]
