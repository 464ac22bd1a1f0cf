"""Defect: the resume ignores the cancelled status and runs the run again."""
from __future__ import annotations

from harness.lifecycle import RunNotResumable

NAME = "cancelled-run-resumes"
COMPLETES = True
DESCRIPTION = "A retomada ignora o status cancelled: uma execução cancelada volta a rodar e termina o que faltava."
SYMPTOM = (
    "Pause uma execução (max_turns=1), cancele-a e retome: a retomada precisa recusar (código 12), o "
    "status continua cancelled e nenhum e-mail sai."
)


def check_resumable_ignoring_cancel(state):
    if state["status"] == "completed":
        return False
    if state["status"] == "failed":
        raise RunNotResumable(f"a execução {state['run_id']} está 'failed'", "failed")
    return True


def patches() -> dict:
    return {"harness.runner:check_resumable": check_resumable_ignoring_cancel}
