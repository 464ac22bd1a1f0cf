"""Code in the student's notebook that patches the grader's modules changes no result.

The checks run in the student's kernel; before they start, the grading cell drops the
grader's modules and json (which writes the results) and imports them fresh. Deeper
patches (builtins, gc) are beyond this: docs/instrutores.md says so.
"""
from __future__ import annotations

import nbformat
import pytest

from grader.engine import grade
from tests.grader_support import ROOT

PATCH_THE_RUNNER = '''import grader.checks.runner as _r
_original = _r.run_check
def _sempre_passa(exercise, planned, fixtures, session):
    resultado = _original(exercise, planned, fixtures, session)
    resultado.update(status="pass", message="", expected="", observed="")
    return resultado
_r.run_check = _sempre_passa'''

PATCH_JSON = '''import json as _json
_dumps = _json.dumps
def _dumps_que_aprova(obj, *args, **kwargs):
    if isinstance(obj, dict) and isinstance(obj.get("result"), dict):
        obj["result"].update(status="pass", message="", expected="", observed="")
    return _dumps(obj, *args, **kwargs)
_json.dumps = _dumps_que_aprova'''


@pytest.mark.parametrize("patch", [PATCH_THE_RUNNER, PATCH_JSON], ids=["runner", "json"])
def test_a_blank_exercise_that_patches_the_grader_still_fails_every_check(patch, tmp_path):
    notebook = nbformat.read(str(ROOT / "exercises" / "exercise-3.ipynb"), as_version=4)
    notebook.cells.insert(0, nbformat.v4.new_code_cell(patch))
    path = tmp_path / "exercise-3.ipynb"
    nbformat.write(notebook, str(path))
    report = grade("exercise-3", path)
    assert all(problem.cell != 1 for problem in report.cell_problems)  # the patch itself ran
    assert report.checks and report.passed_count == 0
