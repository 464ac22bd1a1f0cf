"""Level 3's probe: the student's ``repair_run`` run once per crashed run folder on instrumented tools.

The folder holds the scene's ``checkpoint.json`` and ``effects.json``; the repaired checkpoint is
read back from disk, so every check judges what a new process would find there."""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass

from grader.checks.exercise_4.probes import read_ledger
from grader.checks.framework import Context, Fixture, StudentProblem, content_blocks


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
    diagnosis: object = None


def reconciled(ctx: Context, fixture: Fixture) -> ReconcileRun:
    """The student's repair_run, run once per fixture on instrumented tools (memoized)."""
    from harness.checkpoint import CheckpointError, load_checkpoint

    def run() -> ReconcileRun:
        repair_run = ctx.student_function("repair_run")
        ctx.student_function("reconcile")  # repair_run closes the calls with it: named here if still a stub
        ledger_before = copy.deepcopy(fixture.data.get("effects") or {})
        with ctx.tools(fixture, "reconcile") as spy:
            run_dir = ctx.fresh_dir(f"execucao-{fixture.name}")
            checkpoint_path, path = run_dir / "checkpoint.json", run_dir / "effects.json"
            checkpoint_path.write_text(json.dumps(fixture.checkpoint(), ensure_ascii=False, indent=1), encoding="utf-8")
            if "effects" in fixture.data:
                path.write_text(json.dumps(ledger_before, ensure_ascii=False, indent=1), encoding="utf-8")
            emails_before = len(spy.emails())
            returned = ctx.call(repair_run, run_dir)
            emails_after, tickets_after = len(spy.emails()), len(spy.tickets())
            ledger_after = read_ledger(path) if path.exists() else {}
            try:
                repaired = load_checkpoint(checkpoint_path)
            except (CheckpointError, OSError, ValueError) as error:
                raise StudentProblem(f"Depois de repair_run, checkpoint.json não se deixa ler ({error}): grave o "
                                     "checkpoint reparado com save_checkpoint.") from None
        before = copy.deepcopy(fixture.data["checkpoint"])
        if repaired is None:
            raise StudentProblem("Depois de repair_run, a pasta não tem mais checkpoint.json: grave o checkpoint "
                                 "reparado no mesmo lugar, com save_checkpoint.")
        if before.get("pending_tool_use") and repaired == before:
            raise StudentProblem(
                "checkpoint.json continua igual ao da queda, com as chamadas pendentes: repair_run precisa gravar "
                "o checkpoint reparado (save_checkpoint) para que a retomada o encontre.")
        return ReconcileRun(before, copy.deepcopy(repaired), list(spy.calls), ledger_before, ledger_after,
                            emails_before, emails_after, tickets_after, copy.deepcopy(returned))

    return ctx.memo(f"repair_run:{fixture.name}", run)


def answer_block(run: ReconcileRun, tool_use_id: str) -> dict | None:
    before, after = run.before["messages"], run.after["messages"]
    if len(after) != len(before) + 1 or after[: len(before)] != before:
        return None
    return next((b for b in content_blocks(after[-1], "tool_result") if b.get("tool_use_id") == tool_use_id), None)


def executions_of(run: ReconcileRun, call: dict) -> list:
    return [c for c in run.calls if c.name == call["name"] and c.input == call["input"]]
