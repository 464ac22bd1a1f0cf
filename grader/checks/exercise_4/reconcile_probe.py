"""Level 3's probe: the student's ``reconcile`` run once per crash scene on instrumented tools."""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path

from grader.checks.exercise_4.probes import read_ledger
from grader.checks.framework import Context, Fixture, StudentProblem, content_blocks, show


def pending_calls(fixture: Fixture) -> list[dict]:
    return list(fixture.data["checkpoint"].get("pending_tool_use") or [])


def ways(fixture: Fixture) -> dict:
    return fixture.expect.get("ways", {})


@dataclass
class ReconcileRun:
    before: dict
    after: dict
    calls: list
    ledger_before: dict
    ledger_after: dict | None
    emails_before: int
    emails_after: int
    tickets_after: int


def reconciled(ctx: Context, fixture: Fixture) -> ReconcileRun:
    """The student's reconcile, run once per fixture on instrumented tools (memoized)."""

    def run() -> ReconcileRun:
        reconcile = ctx.student_function("reconcile")
        checkpoint = fixture.checkpoint()
        ledger_before = copy.deepcopy(fixture.data.get("effects") or {})
        with ctx.tools(fixture, "reconcile") as spy:
            path = Path(spy.workspace.root) / "effects.json"
            if "effects" in fixture.data:
                path.write_text(json.dumps(ledger_before, ensure_ascii=False, indent=1), encoding="utf-8")
            emails_before = len(spy.emails())
            returned = ctx.call(reconcile, checkpoint, path)
            emails_after, tickets_after = len(spy.emails()), len(spy.tickets())
            ledger_after = read_ledger(path) if path.exists() else {}
        if returned is None:
            raise StudentProblem("reconcile devolveu None: devolva o checkpoint reconciliado (return cp).")
        if not isinstance(returned, dict) or not isinstance(returned.get("messages"), list):
            raise StudentProblem(f"reconcile deveria devolver o checkpoint, mas devolveu {show(returned, 120)}.")
        return ReconcileRun(copy.deepcopy(fixture.data["checkpoint"]), copy.deepcopy(returned), list(spy.calls),
                            ledger_before, ledger_after, emails_before, emails_after, tickets_after)

    return ctx.memo(f"reconcile:{fixture.name}", run)


def answer_block(run: ReconcileRun, tool_use_id: str) -> dict | None:
    before, after = run.before["messages"], run.after["messages"]
    if len(after) != len(before) + 1 or after[: len(before)] != before:
        return None
    return next((b for b in content_blocks(after[-1], "tool_result") if b.get("tool_use_id") == tool_use_id), None)


def executions_of(run: ReconcileRun, call: dict) -> list:
    return [c for c in run.calls if c.name == call["name"] and c.input == call["input"]]
