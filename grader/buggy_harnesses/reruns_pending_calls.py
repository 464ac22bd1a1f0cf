"""Defect: the resume answers pending calls by running them again, without the ledger and
without the idempotency key (the production reconcile of lesson 3's incident)."""
from __future__ import annotations

from harness import runner
from harness.tools import execute_tool, workspace_in_use

NAME = "reruns-pending-calls"
COMPLETES = True
DESCRIPTION = (
    "A retomada responde às chamadas pendentes executando-as de novo, sem consultar o "
    "livro-razão nem passar a chave de idempotência (o reconcile de produção do incidente da lição 3)."
)
SYMPTOM = (
    "Derrube a execução depois de o e-mail sair (after-tool-run:1 ou after-effect-write:1), retome "
    "e conte os e-mails na caixa de saída: devem continuar sendo exatamente 1."
)

ORIGINAL_REOPEN = runner.reopen


def reopen_rerunning_pending(store, lease, max_recovery_attempts):
    state = ORIGINAL_REOPEN(store, lease, max_recovery_attempts)
    if state["status"] == "running" and state["pending_tool_use"]:
        with workspace_in_use(store.world()):
            results = [{"type": "tool_result", "tool_use_id": call["id"], **execute_tool(call["name"], call["input"])}
                       for call in state["pending_tool_use"]]
        state["messages"].append({"role": "user", "content": results})
        state["pending_tool_use"] = None
        runner.save_progress(store, state, lease, "B")
    return state


def patches() -> dict:
    return {"harness.runner:reopen": reopen_rerunning_pending}
