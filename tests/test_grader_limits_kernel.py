"""A cell limit given on the command line reaches the kernel, through a real one.

``grade exercise-N --cell-timeout 2``, ``grade watch --cell-timeout 2`` and ``grade batch
--timeout 4`` (a cell gets half the budget) each grade a notebook whose cell sleeps for 30 s.
The kernel itself writes when the sleep began and when the next cell ran: with the limit
applied that is about 2 s; with the default (60 s) it would be the whole 30 s. Few tests on
purpose: each one starts kernels.
"""
from __future__ import annotations

import contextlib
import csv
import io
import json
from pathlib import Path

import pytest

from grader import cli
from tests.grader_support import make_notebook, write

pytestmark = pytest.mark.slow  # every test here grades in real kernels

SLEEP = 30  # far above the 2 s limit and far below the 60 s default
LIMIT = 2.0
SLACK = 6.0  # a shared, busy machine: the interrupt lands late, never early


def _sleeping_notebook(folder: Path, name: str) -> tuple[Path, Path, Path]:
    """A notebook whose second cell sleeps; the kernel stamps the sleep's start and the next cell's."""
    began, after = folder / f"{name}-inicio.txt", folder / f"{name}-depois.txt"
    sleeps = f"import time\nopen({str(began)!r}, 'w').write(repr(time.monotonic()))\ntime.sleep({SLEEP})"
    next_cell = f"import time\nopen({str(after)!r}, 'w').write(repr(time.monotonic()))"
    notebook = write(make_notebook("x = 1", sleeps, next_cell), folder / f"{name}.ipynb")
    return notebook, began, after


def _slept(began: Path, after: Path) -> float:
    assert began.exists(), "the sleeping cell never ran"
    assert after.exists(), "the cell after the sleeping one never ran"
    return float(after.read_text()) - float(began.read_text())


@pytest.fixture(autouse=True)
def _own_state_file(monkeypatch, tmp_path):
    monkeypatch.setenv("GRADE_STATE_FILE", str(tmp_path / "estado.json"))


def test_grade_s_cell_timeout_interrupts_a_sleeping_cell_at_its_limit(tmp_path):
    notebook, began, after = _sleeping_notebook(tmp_path, "entrega")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        cli.main(["exercise-3", "--level", "1", "--json", "--notebook", str(notebook), "--cell-timeout", "2"])
    report = json.loads(out.getvalue())
    slept = _slept(began, after)
    print(f"\ngrade --cell-timeout 2: the sleeping cell ended after {slept:.2f} s")
    assert LIMIT - 0.2 <= slept < LIMIT + SLACK, slept
    [problem] = report["cell_problems"]
    assert problem["cell"] == 2 and "não terminou em 2 s e foi interrompida" in problem["message"], problem


def test_watch_s_cell_timeout_interrupts_a_sleeping_cell_at_its_limit(tmp_path, monkeypatch):
    from grader.reports import console
    from grader.student import watch as watch_module

    notebook, began, after = _sleeping_notebook(tmp_path, "entrega")
    monkeypatch.setattr(watch_module, "watch", lambda path, grade_once, **options: grade_once())  # one save
    parser = console.ArgumentParser(prog="grade watch")
    watch_module.add_arguments(parser)
    args = parser.parse_args(["exercise-3", "--level", "1", "--notebook", str(notebook), "--cell-timeout", "2"])
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert watch_module.run(args) == 0
    slept = _slept(began, after)
    print(f"\ngrade watch --cell-timeout 2: the sleeping cell ended after {slept:.2f} s")
    assert LIMIT - 0.2 <= slept < LIMIT + SLACK, slept
    assert "não terminou em 2 s e foi interrompida" in out.getvalue(), out.getvalue()


def test_batch_s_timeout_gives_each_cell_half_of_it_in_the_worker_s_kernel(tmp_path):
    entregas = tmp_path / "entregas"
    entregas.mkdir()
    _, began, after = _sleeping_notebook(entregas, "ana")
    gradebook = tmp_path / "notas.csv"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert cli.main(["batch", str(entregas), "exercise-3", "--timeout", "4", "--csv", str(gradebook),
                         "--no-report"]) == 0
    slept = _slept(began, after)
    print(f"\ngrade batch --timeout 4: the sleeping cell ended after {slept:.2f} s")
    assert LIMIT - 0.2 <= slept < LIMIT + SLACK, slept
    [row] = csv.DictReader(gradebook.open(encoding="utf-8"))
    assert "A célula 2 (`import time`) não terminou em 2 s e foi interrompida" in row["mensagem"], row
