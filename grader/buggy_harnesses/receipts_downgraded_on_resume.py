"""Defect: the resume rewrites every committed receipt as "unknown". The email is still sent
once and the run completes; only the ledger no longer tells the same story as the checkpoint,
and only after a crash that comes once the email's turn is over."""
from __future__ import annotations

from pathlib import Path

from harness import runner
from harness.checkpoint import write_json_atomic
from harness.effects import EFFECTS_FILE, load_effects

NAME = "receipts-downgraded-on-resume"
COMPLETES = True
DESCRIPTION = (
    "A retomada regrava todo recibo committed do livro-razão como unknown: o e-mail saiu uma vez, mas o "
    "livro-razão deixa de contar a mesma história que o checkpoint e a caixa de saída."
)
SYMPTOM = (
    "Derrube a execução depois do turno do e-mail (after-save-B:2, por exemplo), retome e confira se o "
    "livro-razão, o checkpoint e a caixa de saída concordam (run_outcome(...).disagreements vazio)."
)

ORIGINAL_REOPEN = runner.reopen


def reopen_downgrading_receipts(store, lease, max_recovery_attempts):
    state = ORIGINAL_REOPEN(store, lease, max_recovery_attempts)
    ledger = Path(store.run_dir) / EFFECTS_FILE  # the harness under test keeps its run in files
    if state["status"] == "running" and ledger.exists():
        effects = load_effects(ledger)
        for record in effects.values():
            if record["status"] == "committed":
                record["status"] = "unknown"
        write_json_atomic(ledger, effects)
    return state


def patches() -> dict:
    return {"harness.runner:reopen": reopen_downgrading_receipts}
