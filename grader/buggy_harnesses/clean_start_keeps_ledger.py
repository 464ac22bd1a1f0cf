"""Defect: a clean start (no --resume) removes the checkpoint but keeps the old effects ledger."""
from __future__ import annotations

from pathlib import Path

from harness.effects import EFFECTS_FILE
from harness.stores import files

NAME = "clean-start-keeps-ledger"
COMPLETES = True
DESCRIPTION = (
    "Um começo limpo (sem --resume) apaga o checkpoint e o mundo, mas guarda o effects.json da "
    "execução anterior."
)
SYMPTOM = (
    "Rode uma execução até o fim e depois rode de novo, sem --resume, na mesma pasta: a execução nova "
    "precisa mandar o seu e-mail (exatamente 1 na caixa de saída do mundo novo)."
)

ORIGINAL_REMOVE = files.remove_run_files


def remove_run_files_keeping_ledger(run_dir):
    ledger = Path(run_dir) / EFFECTS_FILE
    kept = ledger.read_bytes() if ledger.exists() else None
    ORIGINAL_REMOVE(run_dir)
    if kept is not None:
        ledger.write_bytes(kept)


def patches() -> dict:
    return {"harness.stores.files:remove_run_files": remove_run_files_keeping_ledger}
