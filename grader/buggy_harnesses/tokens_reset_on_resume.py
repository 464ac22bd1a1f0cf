"""Defect: the resume starts tokens_used again from zero (turns is kept, so only a verification
that compares both counters catches it)."""
from __future__ import annotations

from harness import runner

NAME = "tokens-reset-on-resume"
COMPLETES = True
DESCRIPTION = "A retomada zera tokens_used (turns continua certo): a execução retomada esquece o que já gastou."
SYMPTOM = (
    "Compare turns E tokens_used de uma execução derrubada e retomada com os de uma execução sem queda "
    "do mesmo cenário: os dois precisam ser iguais."
)

ORIGINAL_REOPEN = runner.reopen


def reopen_resetting_tokens(store, lease, max_recovery_attempts):
    state = ORIGINAL_REOPEN(store, lease, max_recovery_attempts)
    if state["status"] == "running":
        state["tokens_used"] = 0
    return state


def patches() -> dict:
    return {"harness.runner:reopen": reopen_resetting_tokens}
