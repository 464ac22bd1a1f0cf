"""Helpers for the grader tests: edit copies of the solution notebook, run checks in-process.

Running checks in-process (the notebook's code cells executed into a plain dict, then
the same runner the kernel uses) keeps the many wrong-answer tests fast; the engine
tests prove the same runner behaves the same inside a real kernel.
"""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import nbformat

from grader.checks.framework import CellProblemInfo, Fixture, Session
from grader.checks.runner import run_plan
from grader.core.engine import load_exercise
from grader.core.environment import GRADER_ENV
from grader.core.execution import skipped_cell_problem
from grader.core.results import SKIPPED_CELL
from grader.core.fixture_loader import load_fixtures

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = ROOT / "solutions" / "exercise-3.ipynb"
FIXTURES = ROOT / "grader" / "fixtures" / "exercise-3"
KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}


def solution_notebook() -> nbformat.NotebookNode:
    return nbformat.read(str(SOLUTION), as_version=4)


def defining_cell(notebook: nbformat.NotebookNode, name: str) -> nbformat.NotebookNode:
    pattern = re.compile(rf"^(def {name}\(|{name}\s*=|### BEGIN SOLUTION\n{name}\s*=)", re.M)
    cells = [c for c in notebook.cells if c.cell_type == "code" and pattern.search(c.source)]
    assert len(cells) == 1, f"expected exactly one cell defining {name}"
    return cells[0]


def with_definition(name: str, source: str, notebook: nbformat.NotebookNode | None = None) -> nbformat.NotebookNode:
    """A copy of the solution whose cell defining ``name`` now holds ``source``."""
    notebook = copy.deepcopy(notebook or solution_notebook())
    defining_cell(notebook, name).source = source
    return notebook


def with_edit(name: str, old: str, new: str, notebook: nbformat.NotebookNode | None = None) -> nbformat.NotebookNode:
    """A copy of the solution with ``old`` replaced by ``new`` in the cell defining ``name``."""
    notebook = copy.deepcopy(notebook or solution_notebook())
    cell = defining_cell(notebook, name)
    assert old in cell.source, f"{old!r} not found in the {name} cell"
    cell.source = cell.source.replace(old, new)
    return notebook


def write(notebook: nbformat.NotebookNode, path: Path) -> Path:
    nbformat.write(notebook, str(path))
    return path


def make_notebook(*sources: str) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook(metadata={"kernelspec": KERNELSPEC})
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    return notebook


def namespace_of(notebook: nbformat.NotebookNode, monkeypatch) -> tuple[dict, list[CellProblemInfo]]:
    """Execute the notebook's code cells in a fresh dict, as the grading kernel would (errors
    noted, the cells nbclient skips skipped)."""
    monkeypatch.setenv(GRADER_ENV, "1")
    namespace: dict = {"__name__": "__main__"}
    problems = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        if SKIPPED_CELL in cell.metadata.get("tags", []):  # nbclient never runs these in the kernel
            skipped = skipped_cell_problem(cell, index)
            if skipped is not None:
                problems.append(CellProblemInfo(skipped.cell, skipped.first_line, skipped.ename, skipped.evalue,
                                                skipped.names))
            continue
        try:
            exec(compile(cell.source, f"<célula {index + 1}>", "exec"), namespace)
        except Exception as error:  # noqa: BLE001 - the grader reports it, so do we
            problems.append(CellProblemInfo(index + 1, cell.source.splitlines()[0], type(error).__name__, str(error)))
    return namespace, problems


def run_checks(
    namespace: dict,
    workdir: Path,
    *,
    exercise: str = "exercise-3",
    fixture_dirs=(),
    fixtures: list[Fixture] | None = None,
    level: int | None = None,
    check_timeout: float = 10.0,
    cell_problems: list[CellProblemInfo] | None = None,
) -> dict[str, dict]:
    """Plan and run an exercise's checks in this process; results by check id."""
    spec = load_exercise(exercise)
    if fixtures is None:
        fixtures = load_fixtures(exercise, fixture_dirs, spec.validate_fixture)
    plan = spec.plan(fixtures, level)
    Path(workdir).mkdir(parents=True, exist_ok=True)
    session = Session(namespace=namespace, workdir=Path(workdir), check_timeout=check_timeout,
                      cell_problems=cell_problems or [])
    results = run_plan(exercise, plan, fixtures, session)
    return {result["id"]: result for result in results}


def failing(results: dict[str, dict]) -> dict[str, str]:
    return {id_: r["message"] for id_, r in results.items() if r["status"] != "pass"}


def fixture_data(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def with_pending_call(base: str, call: dict, action: str, **expect_extra) -> dict:
    """A new fixture: ``base`` with its pending call replaced by ``call``."""
    data = fixture_data(base)
    checkpoint = data["checkpoint"]
    last = checkpoint["messages"][-1]
    last["content"] = [b for b in last["content"] if b["type"] != "tool_use"] + [
        {"type": "tool_use", **call}
    ]
    checkpoint["pending_tool_use"] = [call]
    data["description"] = f"{base} com {call['name']} pendente"
    data["expect"] = {"resume_action": {call["id"]: action}, **expect_extra}
    return data


PENDING_GREP = {"id": "toolu_01G", "name": "grep", "input": {"pattern": "Pendência", "path": "notes"}}
PENDING_TICKET = {"id": "toolu_01T", "name": "create_ticket",
                  "input": {"title": "Revisar contrato do fornecedor", "body": "Ana revisa até sexta."}}


def write_new_fixtures(folder: Path) -> Path:
    """Two fixtures an instructor might add: a pending grep and a pending create_ticket."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pending-grep.json").write_text(
        json.dumps(with_pending_call("cpB", PENDING_GREP, "rerun"), ensure_ascii=False), encoding="utf-8")
    (folder / "pending-create-ticket.json").write_text(
        json.dumps(with_pending_call("cpC", PENDING_TICKET, "is_error", tickets_after=0), ensure_ascii=False),
        encoding="utf-8")
    return folder


def leftovers(temp: Path) -> list[str]:
    """Grading and template folders left in ``temp`` (the per-user folder that holds them may stay)."""
    found = []
    for entry in temp.iterdir():
        if entry.name.startswith("grade-tmp-"):
            found += [f"{entry.name}/{inner.name}" for inner in entry.iterdir()]
        elif entry.name.startswith("grade-"):
            found.append(entry.name)
    return found
