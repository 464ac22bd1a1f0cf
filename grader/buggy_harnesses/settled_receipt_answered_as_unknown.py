"""Defect: on resume, a pending call that already has a committed receipt is answered as an
unknown outcome (lesson 3's is_error) instead of with the recorded result. The email still
leaves once and the run completes; only a crash that falls between the receipt and point B
(after-effect-write) reaches that state, and only the ledger and the checkpoint disagree."""
from __future__ import annotations

from harness import runner
from harness.effects import load_effects
from harness.resume import UNKNOWN_OUTCOME

NAME = "settled-receipt-answered-as-unknown"
COMPLETES = True
DESCRIPTION = (
    "Na retomada, uma chamada pendente que já tem recibo committed é respondida como desfecho desconhecido "
    "(is_error, a regra da lição 3) em vez de com o resultado registrado: o e-mail saiu uma vez, mas o "
    "modelo ouve que não se sabe, e o livro-razão e o checkpoint deixam de contar a mesma história."
)
SYMPTOM = (
    "Derrube a execução logo depois de o recibo ser gravado (after-effect-write:1), retome e confira se o "
    "livro-razão e o checkpoint concordam (run_outcome(...).disagreements vazio)."
)

ORIGINAL_RUN_TOOL_USES = runner.run_tool_uses


def run_tool_uses_ignoring_receipts(tool_uses, ctx):
    ledger = load_effects(ctx.effects_path)
    results = []
    for call in tool_uses:
        record = ledger.get(call["id"])
        if record is not None and record["status"] == "committed":
            results.append({"type": "tool_result", "tool_use_id": call["id"], "content": UNKNOWN_OUTCOME,
                            "is_error": True})
        else:
            results += ORIGINAL_RUN_TOOL_USES([call], ctx)
    return results


def patches() -> dict:
    return {"harness.runner:run_tool_uses": run_tool_uses_ignoring_receipts}
