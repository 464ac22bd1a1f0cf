"""Defect: the resume closes pending calls with lesson 3's reconcile (a read runs again, a
high-impact call gets an is_error) even when the ledger could tell: a call that never started
never happens. Only a crash before the email leaves shows it."""
from __future__ import annotations

from harness import runner
from harness.resume import reconcile as reconcile_without_ledger
from harness.tools import workspace_in_use

NAME = "pending-answered-without-ledger"
COMPLETES = True
DESCRIPTION = (
    "A retomada fecha as chamadas pendentes com o reconcile da lição 3 (is_error \"estado desconhecido\" "
    "para o send_email), sem consultar o livro-razão: um e-mail que nunca começou nunca sai."
)
SYMPTOM = (
    "Derrube a execução ANTES de o e-mail sair (after-model-response:2 ou after-save-A:2), retome e conte "
    "os e-mails: precisa haver exatamente 1, como sem queda."
)

ORIGINAL_REOPEN = runner.reopen


def reopen_closing_without_ledger(store, lease, max_recovery_attempts):
    state = ORIGINAL_REOPEN(store, lease, max_recovery_attempts)
    if state["status"] == "running" and state["pending_tool_use"]:
        with workspace_in_use(store.world()):
            reconcile_without_ledger(state)
        runner.save_progress(store, state, lease, "B")
    return state


def patches() -> dict:
    return {"harness.runner:reopen": reopen_closing_without_ledger}
