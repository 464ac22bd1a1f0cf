"""Code in the student's notebook that patches the grader's modules changes no result.

The checks run in the student's kernel; before they start, the grading cell drops the
grader's modules and json (which writes the results) and imports them fresh. Deeper
patches (builtins, gc) are beyond this: docs/instrutores.md says so.
"""
from __future__ import annotations

import nbformat
import pytest

from grader.core.engine import grade
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


@pytest.mark.slow
@pytest.mark.parametrize("patch", [PATCH_THE_RUNNER, PATCH_JSON], ids=["runner", "json"])
def test_a_blank_exercise_that_patches_the_grader_still_fails_every_check(patch, tmp_path):
    notebook = nbformat.read(str(ROOT / "exercises" / "exercise-3.ipynb"), as_version=4)
    notebook.cells.insert(0, nbformat.v4.new_code_cell(patch))
    path = tmp_path / "exercise-3.ipynb"
    nbformat.write(notebook, str(path))
    report = grade("exercise-3", path)
    assert all(problem.cell != 1 for problem in report.cell_problems)  # the patch itself ran
    assert report.checks and report.passed_count == 0


def spliced_wrong_answer(exercise: str, mistake_file: str, patch: str, tmp_path):
    """The solution with a mistake from the wrong-answer suite, and a first cell that patches the harness."""
    import yaml

    from tests.test_wrong_answers import SUITE, spliced

    notebook = spliced(exercise, yaml.safe_load((SUITE / exercise / mistake_file).read_text(encoding="utf-8")))
    notebook.cells.insert(0, nbformat.v4.new_code_cell(patch))
    path = tmp_path / f"{exercise}.ipynb"
    nbformat.write(notebook, str(path))
    return path


PATCH_THE_API_CHECK = "import harness.fake_endpoint as _fe; _fe.validate_messages = lambda m: None"
PATCH_THE_STOP_RULE = 'import harness.loop as _l; _l.STOP_REASON_ACTIONS["model_context_window_exceeded"] = "continue"'


@pytest.mark.slow
@pytest.mark.parametrize(
    "exercise, mistake_file, patch, check_id, words",
    [
        ("exercise-3", "one-user-message-per-tool-result.yaml", PATCH_THE_API_CHECK,
         "n2.api_accepts_resumed_conversation[duas-leituras]", "HTTP 400"),
        ("exercise-1", "context-window-full-goes-on.yaml", PATCH_THE_STOP_RULE,
         "n2.returned_state_is_complete[context-window-full]", "a tarefa termina na 2ª"),
    ],
    ids=["validate-messages", "stop-reason-actions"],
)
def test_a_wrong_answer_that_patches_the_harness_the_checks_judge_by_still_fails(
        exercise, mistake_file, patch, check_id, words, tmp_path):
    report = grade(exercise, spliced_wrong_answer(exercise, mistake_file, patch, tmp_path))
    assert report.notebook_error is None and all(problem.cell != 1 for problem in report.cell_problems)
    failed = {check.id: check.message for check in report.checks if not check.passed}
    assert check_id in failed and words in failed[check_id], failed
