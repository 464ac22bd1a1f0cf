"""Level 2's probe: the student's ``reconcile`` run once per crash scene on instrumented tools, and what its answer says."""
from __future__ import annotations

import copy
from dataclasses import dataclass

from grader.checks.framework import Context, Fixture, StudentProblem, content_blocks, show
from grader.core.plural import quantity


@dataclass
class ReconcileRun:
    before: dict
    after: dict
    calls: list  # ToolCall records from the spy
    emails_before: int
    emails_after: int
    tickets_before: int
    tickets_after: int


def reconciled(ctx: Context, fixture: Fixture) -> ReconcileRun:
    """The student's reconcile, run once per fixture on instrumented tools (memoized)."""

    def run() -> ReconcileRun:
        reconcile = ctx.student_function("reconcile")
        checkpoint = fixture.checkpoint()
        with ctx.tools(fixture, "reconcile") as spy:
            emails_before, tickets_before = len(spy.emails()), len(spy.tickets())
            returned = ctx.call(reconcile, checkpoint)
            emails_after, tickets_after = len(spy.emails()), len(spy.tickets())
        if returned is None:
            raise StudentProblem(
                "reconcile devolveu None: ela deve devolver o checkpoint reconciliado (return cp)."
            )
        if not isinstance(returned, dict) or not isinstance(returned.get("messages"), list):
            raise StudentProblem(
                f"reconcile deveria devolver o checkpoint (um dict com messages), mas devolveu {show(returned, 120)}."
            )
        return ReconcileRun(
            before=copy.deepcopy(fixture.data["checkpoint"]),
            after=copy.deepcopy(returned),
            calls=list(spy.calls),
            emails_before=emails_before,
            emails_after=emails_after,
            tickets_before=tickets_before,
            tickets_after=tickets_after,
        )

    return ctx.memo(f"reconcile:{fixture.name}", run)


def answer_message(run: ReconcileRun) -> tuple[dict | None, int]:
    """(the message right after the original last message, how many messages were added),
    when the original history is still there as a prefix."""
    before, after = run.before["messages"], run.after["messages"]
    if after[: len(before)] != before:
        return None, len(after) - len(before)
    added = after[len(before):]
    return (added[0] if added else None), len(added)


def result_for(run: ReconcileRun, tool_use_id: str) -> dict | None:
    message, _ = answer_message(run)
    if message is None:
        return None
    return next((b for b in content_blocks(message, "tool_result") if b.get("tool_use_id") == tool_use_id), None)


def missing_result_message(run: ReconcileRun, tool_use_id: str) -> str:
    before, after = run.before["messages"], run.after["messages"]
    later = after[len(before) + 1:] if after[: len(before)] == before else []
    if any(b.get("tool_use_id") == tool_use_id for m in later for b in content_blocks(m, "tool_result")):
        return (f"O tool_result de {tool_use_id} está numa mensagem separada: os resultados de todas as "
                "chamadas pendentes vão juntos na mensagem logo depois da do assistente.")
    return f"Não achei o tool_result de {tool_use_id} logo depois da mensagem do assistente."


def world_changes(run: ReconcileRun) -> list[str]:
    """What reconcile did to the outbox and the tickets, in words ([] when nothing)."""
    changes = []
    if run.emails_after != run.emails_before:
        changes.append(f"a caixa de saída passou de {run.emails_before} para {quantity(run.emails_after, 'e-mail', 'e-mails')}")
    if run.tickets_after != run.tickets_before:
        changes.append(f"os chamados passaram de {run.tickets_before} para {run.tickets_after}")
    return changes


def _effect_note(run: ReconcileRun) -> str:
    notes = world_changes(run)
    return (" Resultado: " + "; ".join(notes) + ".") if notes else ""
