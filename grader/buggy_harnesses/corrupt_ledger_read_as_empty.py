"""Defect: a corrupt effects ledger is read as an empty one (fails open)."""
from __future__ import annotations

from harness import effects
from harness.effects import EffectsLedgerError

NAME = "corrupt-ledger-read-as-empty"
COMPLETES = True
DESCRIPTION = (
    "Um effects.json corrompido é lido como vazio ({}) e a retomada segue em frente, como se nada "
    "tivesse acontecido no mundo."
)
SYMPTOM = (
    "Derrube a execução com um recibo já gravado, estrague o effects.json (por exemplo, corte o "
    "arquivo ao meio) e retome: a retomada precisa parar (código de saída diferente de 0, execução "
    "não concluída) em vez de continuar."
)

ORIGINAL_LOAD_EFFECTS = effects.load_effects


def load_effects_failing_open(path):
    try:
        return ORIGINAL_LOAD_EFFECTS(path)
    except EffectsLedgerError:
        return {}


def patches() -> dict:
    return {"harness.effects:load_effects": load_effects_failing_open,
            "harness.tool_runner:load_effects": load_effects_failing_open}
