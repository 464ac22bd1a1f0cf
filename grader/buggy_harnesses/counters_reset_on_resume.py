"""Defect: the resume starts turns and tokens_used again from zero."""
from __future__ import annotations

from harness import runner

NAME = "counters-reset-on-resume"
COMPLETES = True
DESCRIPTION = "A retomada zera turns e tokens_used: a execução retomada perde a conta do que já gastou."
SYMPTOM = (
    "Compare turns e tokens_used de uma execução derrubada e retomada com os de uma execução sem queda "
    "do mesmo cenário: devem ser iguais."
)

ORIGINAL_REOPEN = runner.reopen


def reopen_resetting_counters(store, lease, max_recovery_attempts):
    state = ORIGINAL_REOPEN(store, lease, max_recovery_attempts)
    if state["status"] == "running":
        state["turns"] = 0
        state["tokens_used"] = 0
    return state


def patches() -> dict:
    return {"harness.runner:reopen": reopen_resetting_counters}
