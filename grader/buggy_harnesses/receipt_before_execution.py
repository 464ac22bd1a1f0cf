"""Defect: the receipt is written before the tool runs ("record first, execute later")."""
from __future__ import annotations

from harness.crash import crash_point
from harness.effects import make_receipt, save_effect
from harness.tools import execute_tool

NAME = "receipt-before-execution"
COMPLETES = True
DESCRIPTION = (
    "O recibo committed é gravado ANTES de a ferramenta rodar, com o resultado que se espera dela: "
    "registrar primeiro, executar depois."
)
SYMPTOM = (
    "Derrube a execução logo depois da gravação no livro-razão (after-effect-write:1) e retome: o recibo "
    "diz que o e-mail saiu, mas a caixa de saída fica vazia. Confira também se o resultado no livro-razão "
    "é o mesmo que o modelo recebeu."
)


def record_then_execute(call, effects_path):
    presumed = {"content": f"{call['name']} executada", "is_error": False}
    save_effect(effects_path, call["id"], make_receipt(call, presumed))
    crash_point("after-effect-write")
    output = execute_tool(call["name"], call["input"], idempotency_key=call["id"])
    crash_point("after-tool-run")
    return output


def patches() -> dict:
    return {"harness.tool_runner:execute_and_record": record_then_execute,
            "harness.effects:execute_and_record": record_then_execute}
