"""A hang costs one time limit, not one per check.

A student function that loops forever is entered by the grading once: the checks after the
first timeout (or after a notebook cell stuck in it at its limit) say so without calling it
again. Counted through a side-effect file the function appends to on every entry, so the
tests assert on the number of calls, never on a time; the wall time of a real grading is
printed (run with -s) for the record.
"""
from __future__ import annotations

import time

import nbformat
import pytest

from grader.core.engine import grade
from grader.core.limits import Limits
try:
    from grader.core.execution import hung_function
except ImportError:
    hung_function = None
from tests.grader_support import failing, make_notebook, namespace_of, run_checks, write
from tests.test_grader_engine import SETUP


def looping_resume_action(counter) -> str:
    return (
        "import time\n"
        "def resume_action(cp):\n"
        f"    with open({str(counter)!r}, 'a') as entries:\n"
        "        entries.write('x\\n')\n"
        "    while True:\n"
        "        time.sleep(0.05)\n"
    )


def entries(counter) -> int:
    return len(counter.read_text().splitlines()) if counter.exists() else 0


@pytest.mark.slow
def test_in_the_kernel_a_function_that_timed_out_is_not_called_by_the_later_checks(tmp_path, monkeypatch):
    counter = tmp_path / "entries.txt"
    namespace, problems = namespace_of(make_notebook(SETUP, looping_resume_action(counter)), monkeypatch)
    # 2 s, not less: on a busy machine a check that never calls the hung function must still finish in time.
    results = run_checks(namespace, tmp_path / "work", level=1, check_timeout=2.0, cell_problems=problems)
    failed = failing(results)
    assert len(failed) == len(results) >= 3  # every level-1 check needs resume_action
    assert entries(counter) == 1
    first, *later = list(failed.values())
    assert "`resume_action` não terminou em 2 s e foi interrompida" in first
    for message in later:
        assert message.startswith("`resume_action` não foi chamada de novo: na verificação n1.") and \
            "não terminou em 2 s" in message


@pytest.mark.slow
def test_a_function_called_by_a_stuck_cell_and_by_every_check_of_its_level_is_entered_once(tmp_path):
    counter = tmp_path / "entries.txt"
    notebook = make_notebook(SETUP, looping_resume_action(counter),
                             'resume_action({"pending_tool_use": []})', 'ROOT_CAUSE = "B"')
    started = time.monotonic()
    report = grade("exercise-3", write(notebook, tmp_path / "hang.ipynb"), level=1,
                   limits=Limits(cell_seconds=3, check_seconds=2))
    seconds = time.monotonic() - started
    print(f"\nhung resume_action, cell limit 3 s, check limit 2 s, {len(report.checks)} checks: {seconds:.1f} s")
    assert entries(counter) == 1  # the cell's call; no check called it again
    assert report.cell_problems[0].cell == 3 and "não terminou em 3 s" in report.cell_problems[0].message
    assert report.checks and not any(check.passed for check in report.checks)
    for check in report.checks:
        assert check.message.startswith("`resume_action` não foi chamada de novo: na célula 3 ela não terminou em 3 s"), \
            check.message


@pytest.mark.slow
def test_a_function_that_swallows_the_interrupt_is_refused_in_the_fresh_kernel_after_the_kill(tmp_path):
    counter = tmp_path / "entries.txt"
    swallows = (
        "import time\n"
        "def resume_action(cp):\n"
        f"    with open({str(counter)!r}, 'a') as entries:\n"
        "        entries.write('x\\n')\n"
        "    while True:\n"
        "        try:\n"
        "            time.sleep(0.05)\n"
        "        except BaseException:\n"
        "            pass\n"
    )
    report = grade("exercise-3", write(make_notebook(SETUP, swallows), tmp_path / "hang.ipynb"), level=1,
                   limits=Limits(check_seconds=3))
    assert entries(counter) == 1
    # on a loaded machine other checks may be cut too and use up the restarts; one refusal is enough
    assert any("`resume_action` não foi chamada de novo" in check.message for check in report.checks)


def test_the_hung_function_is_read_from_the_interrupted_cells_traceback():
    defined = {"resume_action", "helper"}
    cell = nbformat.v4.new_code_cell("resume_action(cp)")
    cell.outputs = [nbformat.v4.new_output("error", ename="KeyboardInterrupt", evalue="", traceback=[
        "\x1b[0;31mKeyboardInterrupt\x1b[0m Traceback (most recent call last)",
        "Cell \x1b[0;32mIn[5], line 1\x1b[0m\n----> 1 resume_action(cp)",
        "Cell \x1b[0;32mIn[3], line 4, in \x1b[0;36mresume_action\x1b[0;34m(cp)\x1b[0m\n      3 while True:",
        "Cell \x1b[0;32mIn[2], line 2, in \x1b[0;36mhelper\x1b[0;34m()\x1b[0m",
        "File /usr/lib/python3/time.py:10, in sleep()",
    ])]
    assert hung_function(cell, defined) == "helper"
    assert hung_function(cell, {"resume_action"}) == "resume_action"
    assert hung_function(cell, {"other"}) is None
    assert hung_function(nbformat.v4.new_code_cell("x = 1"), defined) is None
