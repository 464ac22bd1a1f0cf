"""Level 4's probe: one turn of the student's ``run_tool_uses`` on a fresh world, every execution and approval recorded."""
from __future__ import annotations

import copy
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from grader.checks.exercise_4.probes import capturing, read_ledger, status_in, world
from grader.checks.framework import CheckFailed, Context, show


NOTES = {"notes/conclusoes.md": "# Conclusões\n\n1. Job noturno migra para a fila nova.\n"}


EMAIL = {"id": "toolu_04N1", "name": "send_email",
         "input": {"to": "team@example.com", "subject": "Conclusões", "body": "Oi, time!"}}


READ = {"id": "toolu_04N2", "name": "read_file", "input": {"path": "notes/conclusoes.md"}}


ENSURE = {"id": "toolu_04N3", "name": "ensure_ticket", "input": {"title": "Migrar o job noturno"}}


class Clock:
    def __init__(self, now: float = 10_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


@contextmanager
def observed_executions(ledger: Path, events: list) -> Iterator[None]:
    """Records every real tool execution with the ledger status of that call at that instant."""
    from harness import tools

    real_run = tools._run

    def run(name, input, idempotency_key):
        ledger_status = status_in(ledger, idempotency_key) if idempotency_key else None
        events.append(("execute", name, idempotency_key, ledger_status))
        return real_run(name, input, idempotency_key)

    tools._run = run
    try:
        yield
    finally:
        tools._run = real_run


def tool_context(path: Path, approver=None, clock=None, dry_run=False, ttl=600):
    from harness.tool_runner import ToolContext

    return ToolContext(path, approver=approver, approvals_path=path.with_name("approvals.json"),
                       approval_ttl=ttl, dry_run=dry_run, clock=clock or Clock())


def recording_approver(events: list, decide):
    def approver(call):
        events.append(("approval", call["name"], call["id"], None))
        return decide(call)

    return approver


def run_turn(ctx: Context, label: str, tool_uses: list, *, approver=None, clock=None, dry_run=False,
             setup=None, waiting_ok=False, ttl=600) -> dict:
    """Runs the student's run_tool_uses once on a fresh world; returns what was observed."""
    from harness.approval import WaitingForApproval

    run_tool_uses = ctx.student_function("run_tool_uses")
    events: list = []
    with ctx.tools(world(label, files=NOTES)) as spy:
        ledger = Path(spy.workspace.root) / "effects.json"
        if setup:
            setup(spy.workspace, ledger)
        outbox_before = spy.workspace.outbox_path.read_bytes() if spy.workspace.outbox_path.exists() else b""
        context = tool_context(ledger, recording_approver(events, approver) if approver else None, clock, dry_run, ttl)
        function = capturing(run_tool_uses, WaitingForApproval) if waiting_ok else run_tool_uses
        with observed_executions(ledger, events):
            returned = ctx.call(function, copy.deepcopy(tool_uses), context)
        outbox_after = spy.workspace.outbox_path.read_bytes() if spy.workspace.outbox_path.exists() else b""
        approvals = read_ledger(ledger.with_name("approvals.json")) or {}
        return {"returned": returned, "events": events, "ledger": read_ledger(ledger) or {}, "approvals": approvals,
                "emails": len(spy.emails()), "tickets": len(spy.tickets()),
                "outbox_same": outbox_before == outbox_after, "calls": list(spy.calls)}


def results_by_id(observed: dict, tool_uses: list) -> dict:
    returned = observed["returned"]
    ids = [call["id"] for call in tool_uses]
    if not isinstance(returned, list):
        raise CheckFailed(f"run_tool_uses deveria devolver uma lista de tool_result, mas devolveu {show(returned, 120)}.",
                          expected="lista de tool_result", observed=returned)
    got = [b.get("tool_use_id") if isinstance(b, dict) else None for b in returned]
    if got != ids or not all(isinstance(b, dict) and b.get("type") == "tool_result" for b in returned):
        raise CheckFailed("run_tool_uses deveria devolver um tool_result por tool_use, na mesma ordem, ids casados.",
                          expected=ids, observed=got)
    return {b["tool_use_id"]: b for b in returned}


def approve_all(call):
    from harness.approval import approve

    return approve()
