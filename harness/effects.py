"""Lição 4: o livro-razão de efeitos (effects.json) e o reconcile em três vias.

O checkpoint guarda a cena da decisão; o livro-razão guarda o que de fato mudou no
mundo. Cada registro é indexado pelo tool_use_id e tem um ``status``:

- ``intent``: gravado ANTES de uma ferramenta de alto impacto rodar. Sem ele, a
  chamada nunca começou; com ele e sem recibo, começou e o desfecho é incerto;
- ``committed``: o efeito aconteceu (recibo);
- ``rejected``: a ação foi recusada (pela válvula ou pelo sistema externo) e não
  teve efeito;
- ``unknown``: perguntamos ao sistema externo e não deu para saber.
"""
from __future__ import annotations

import os
from datetime import datetime, timezone

from harness.approval import input_hash
from harness.checkpoint import write_json_atomic
from harness.crash import crash_point
from harness.state_json import StateFileError, read_state_json
from harness.tools import READ_ONLY_TOOLS, execute_tool, find_effect

EFFECTS_FILE = "effects.json"
RECEIPT_STATUSES = ("intent", "committed", "rejected", "unknown")
SETTLED_STATUSES = ("committed", "rejected")  # desfecho conhecido: reaproveite, não execute

UNKNOWN_EFFECT = (
    "Desfecho desconhecido: esta chamada começou antes da queda e não foi possível "
    "confirmar no sistema externo se o efeito aconteceu. Não repita a ação às cegas: "
    "verifique por outro meio antes de decidir."
)


class EffectsLedgerError(Exception):
    """effects.json existe, mas não dá para confiar nele: a retomada para aqui (falha fechada)."""

    def __init__(self, path, reason):
        super().__init__(
            f"{os.fspath(path)}: livro-razão de efeitos ilegível ({reason}). A retomada parou "
            "para não repetir efeitos que talvez já tenham acontecido; restaure o arquivo ou "
            "confira o mundo externo à mão antes de continuar."
        )


def validate_record(path, tool_use_id, record):
    """Um registro só vale se disser a ferramenta, um status conhecido e, no recibo, o resultado."""
    if not isinstance(record, dict):
        raise EffectsLedgerError(path, f"o registro de {tool_use_id} não é um objeto")
    if record.get("status") not in RECEIPT_STATUSES:
        raise EffectsLedgerError(path, f"status inválido em {tool_use_id}: {record.get('status')!r}")
    if not isinstance(record.get("tool"), str):
        raise EffectsLedgerError(path, f"o registro de {tool_use_id} não diz qual ferramenta rodou")
    if record["status"] != "intent":
        result = record.get("result")
        if not isinstance(result, dict) or not isinstance(result.get("content"), str) \
                or not isinstance(result.get("is_error"), bool):
            raise EffectsLedgerError(path, f"o recibo de {tool_use_id} não traz um resultado válido")


def load_effects(path):
    """Lê o livro-razão. Ausente = {} (nada foi feito ainda); corrompido = erro, nunca {}."""
    try:
        effects = read_state_json(path)  # UTF-8 estrito, profundidade e números limitados
    except StateFileError as error:
        raise EffectsLedgerError(path, error.problem) from None
    if effects is None:
        return {}
    if not isinstance(effects, dict):
        raise EffectsLedgerError(path, f"esperava um objeto JSON, encontrei {type(effects).__name__}")
    for tool_use_id, record in effects.items():
        validate_record(path, tool_use_id, record)
    return effects


def save_effect(path, tool_use_id, record):
    """Grava (ou atualiza) o registro de ``tool_use_id`` com a mesma escrita atômica do checkpoint."""
    effects = load_effects(path)
    effects[tool_use_id] = record
    write_json_atomic(path, effects)


def utc_now():
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def make_receipt(call, result, status=None):
    """O recibo de uma chamada: committed se deu certo, rejected se o sistema recusou."""
    if status is None:
        status = "rejected" if result["is_error"] else "committed"
    return {
        "tool": call["name"],
        "input_hash": input_hash(call["name"], call["input"]),
        "status": status,
        "result": result,
        "recorded_at": utc_now(),
    }


def record_intent(path, call):
    """Antes de um efeito: "vou fazer isto". Separa "nunca começou" de "começou, não sei"."""
    save_effect(path, call["id"], {
        "tool": call["name"],
        "input_hash": input_hash(call["name"], call["input"]),
        "status": "intent",
        "result": None,
        "recorded_at": utc_now(),
    })


def execute_and_record(call, effects_path):
    """Intenção, execução com a chave de idempotência, recibo: executar primeiro, registrar depois."""
    record_intent(effects_path, call)
    output = execute_tool(call["name"], call["input"], idempotency_key=call["id"])
    crash_point("after-tool-run")
    save_effect(effects_path, call["id"], make_receipt(call, output))
    crash_point("after-effect-write")
    return output


def confirmed_effect(call, record, effects_path):
    """Para uma chamada de alto impacto sem recibo: o resultado, se der para provar; senão None.

    - sem registro de intenção: nunca começou -> None (é seguro rodar, uma vez);
    - intenção sem recibo: pergunta ao sistema externo pela chave (o tool_use_id).
      Achou -> recibo committed. Não achou -> None (rodar com a MESMA chave é seguro:
      o sistema externo não repete um efeito já feito com ela). Não deu para
      perguntar -> recibo unknown e um is_error honesto.
    """
    if record is None:
        return None
    try:
        found = find_effect(call["name"], call["id"])
    except (OSError, ValueError, RuntimeError) as error:
        output = {"content": f"{UNKNOWN_EFFECT} (consulta falhou: {error})", "is_error": True}
        save_effect(effects_path, call["id"], make_receipt(call, output, "unknown"))
        return output
    if found is None:
        return None
    output = {
        "content": f"{call['name']} já tinha sido concluída antes da queda "
                   f"(confirmado no sistema externo pela chave {call['id']})",
        "is_error": False,
    }
    save_effect(effects_path, call["id"], make_receipt(call, output, "committed"))
    return output


def reconcile(cp, effects_path):
    """Fecha cada chamada pendente pela divisão em três vias e limpa pending_tool_use."""
    effects = load_effects(effects_path)  # corrompido? a exceção para tudo aqui
    results = []
    for call in cp["pending_tool_use"] or []:
        record = effects.get(call["id"])
        if record is not None and record["status"] in SETTLED_STATUSES:
            # Via 1: o livro-razão sabe o desfecho. Reaproveite, sem executar nada.
            output = record["result"]
        elif call["name"] in READ_ONLY_TOOLS:
            # Via 2: sem registro, mas ler de novo não muda o mundo.
            output = execute_tool(call["name"], call["input"])
        else:
            # Via 3: alto impacto sem recibo. Prove antes de agir; rode só o que nunca aconteceu.
            output = confirmed_effect(call, record, effects_path)
            if output is None:
                output = execute_and_record(call, effects_path)
        results.append({"type": "tool_result", "tool_use_id": call["id"], **output})
    if results:
        cp["messages"].append({"role": "user", "content": results})
    cp["pending_tool_use"] = None
    return cp
