"""Defect: the resume asks the model first, with the pending calls still unanswered, and only
closes them when the API refuses the request (400). The run completes with one email and the
same counters; only the requests log shows a conversation the API refused."""
from __future__ import annotations

import anthropic

from harness import runner

NAME = "model-asked-before-closing-pending"
COMPLETES = True
DESCRIPTION = (
    "A retomada pergunta primeiro ao modelo, com as chamadas pendentes ainda sem tool_result, e só as fecha "
    "quando a API recusa o pedido (400): a execução conclui com um e-mail, mas mandou à API uma conversa "
    "com tool_use órfão."
)
SYMPTOM = (
    "Derrube a execução com chamadas pendentes (after-save-A:2, por exemplo), retome e confira os pedidos "
    "que a API recusaria (run_outcome(...).orphans vazio)."
)

ORIGINAL_DRIVE = runner.drive


def drive_asking_first(client, store, state, *args, **kwargs):
    if state["pending_tool_use"]:
        try:
            runner.call_model(client, state["messages"])
        except anthropic.BadRequestError:
            pass  # the defect: the refusal is taken as "close the pending calls now"
    return ORIGINAL_DRIVE(client, store, state, *args, **kwargs)


def patches() -> dict:
    return {"harness.runner:drive": drive_asking_first}
