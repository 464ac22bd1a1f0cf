"""Lição 4: a válvula de aprovação. Pergunta "isto DEVE ser feito?" antes de um efeito.

O livro-razão de efeitos responde outra pergunta ("isto JÁ foi feito?"). A aprovação
fica presa ao hash da entrada exata que a pessoa (ou a política) examinou e tem
validade: se a entrada mudar, ou o prazo vencer, pergunta-se de novo. As decisões
ficam em ``approvals.json`` (mesma escrita atômica do checkpoint), então um pedido
pendente sobrevive a um reinício do processo.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass

from harness.run_paths import write_json
from harness.state_json import StateFileError, read_state_json
from harness.tools import HIGH_IMPACT_TOOLS

APPROVALS_FILE = "approvals.json"
DEFAULT_APPROVAL_TTL = 15 * 60  # segundos: uma aprovação não é um passe permanente
VERDICTS = ("approved", "rejected", "pending")
# Segundos de diferença tolerados entre o relógio de quem aprova e o de quem executa: uma
# decisão datada mais adiante que isso veio de um relógio errado e não vale.
APPROVAL_CLOCK_TOLERANCE = 60.0


@dataclass(frozen=True)
class Decision:
    """O que a política de aprovação respondeu: approved, rejected (com motivo) ou pending."""

    verdict: str
    reason: str = ""


APPROVED = Decision("approved")
PENDING = Decision("pending")


def approve():
    return APPROVED


def reject(reason):
    return Decision("rejected", reason)


class ApprovalError(Exception):
    """approvals.json existe, mas não dá para confiar nele: a mensagem diz por quê."""


class WaitingForApproval(Exception):
    """Uma chamada de alto impacto aguarda decisão. ``pending_approval`` é o que se grava."""

    def __init__(self, pending_approval):
        self.pending_approval = pending_approval
        super().__init__(
            f"{pending_approval['name']} ({pending_approval['id']}) aguarda aprovação"
        )


def input_hash(name, input):
    """sha256 do JSON canônico de (ferramenta, entrada): a ordem das chaves não muda o hash."""
    canonical = json.dumps(
        {"name": name, "input": input}, sort_keys=True, ensure_ascii=False, separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def load_approvals(path):
    """Lê approvals.json: ausente = {}; ilegível ou com forma errada = ApprovalError."""
    try:
        data = read_state_json(path)  # UTF-8 estrito, profundidade e números limitados
    except StateFileError as error:
        raise ApprovalError(str(error)) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ApprovalError(f"{os.fspath(path)}: esperava um objeto JSON, encontrei {type(data).__name__}")
    for tool_use_id, record in data.items():
        validate_decision(path, tool_use_id, record)
    return data


def validate_decision(where, tool_use_id, record):
    """Uma decisão só vale com um veredito conhecido e o hash da entrada que foi examinada."""
    if not isinstance(record, dict) or record.get("verdict") not in VERDICTS \
            or not isinstance(record.get("input_hash"), str):
        raise ApprovalError(f"{os.fspath(where)}: registro de aprovação inválido para {tool_use_id}")
    # Os campos que check_approval compara: uma aprovação sem prazo numérico não vale como aprovação.
    expires_at = record.get("expires_at")
    if record["verdict"] == "approved" and (isinstance(expires_at, bool) or not isinstance(expires_at, (int, float))
                                            or not math.isfinite(expires_at)):
        raise ApprovalError(f"{os.fspath(where)}: registro de {tool_use_id}: campo 'expires_at' vale "
                            f"{expires_at!r}; uma aprovação precisa de um prazo (segundos desde a época)")
    if not isinstance(record.get("reason", ""), str):
        raise ApprovalError(f"{os.fspath(where)}: registro de {tool_use_id}: campo 'reason' precisa ser texto")


def decision_record(call, decision, now, ttl_seconds=DEFAULT_APPROVAL_TTL, decided_by=""):
    """O registro de uma decisão sobre ``call``, preso ao hash da entrada; aprovação ganha prazo."""
    return {
        "name": call["name"],
        "input": call["input"],
        "input_hash": input_hash(call["name"], call["input"]),
        "verdict": decision.verdict,
        "reason": decision.reason,
        "decided_by": decided_by,
        "decided_at": now,
        "expires_at": now + ttl_seconds if decision.verdict == "approved" else None,
    }


def record_decision(path, call, decision, now, ttl_seconds=DEFAULT_APPROVAL_TTL, decided_by=""):
    """Grava a decisão sobre ``call`` presa ao hash da entrada; aprovação ganha prazo de validade."""
    approvals = load_approvals(path)
    approvals[call["id"]] = decision_record(call, decision, now, ttl_seconds, decided_by)
    write_json(path, approvals)  # temporário de nome único, sem seguir links (harness.run_paths)
    return approvals[call["id"]]


def pending_approval_for(call, now):
    """O pedido que fica gravado enquanto ninguém decide: a entrada exata e o seu hash."""
    return {
        "id": call["id"],
        "name": call["name"],
        "input": call["input"],
        "input_hash": input_hash(call["name"], call["input"]),
        "requested_at": now,
    }


def approval_in_force(stored, now, ttl_seconds=DEFAULT_APPROVAL_TTL):
    """A aprovação ainda vale no relógio de QUEM EXECUTA (``now``), não no de quem aprovou.

    Uma decisão datada no futuro (além da tolerância) veio de um relógio adiantado e não vale;
    e o prazo nunca passa do que este lado concede (``ttl_seconds``), seja qual for o
    ``expires_at`` gravado. Um relógio atrasado só encurta o prazo: pergunta-se de novo.
    """
    decided_at, expires_at = stored.get("decided_at"), stored.get("expires_at")
    if not all(isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
               for value in (decided_at, expires_at)):
        return False
    if decided_at > now + APPROVAL_CLOCK_TOLERANCE:
        return False
    return now < min(expires_at, decided_at + ttl_seconds)


def check_approval(call, approvals_path, approver, now, ttl_seconds=DEFAULT_APPROVAL_TTL):
    """A válvula: vale uma decisão gravada para ESTA entrada e ainda no prazo; senão, pergunta.

    Sem política (``approver=None``) ou para ferramentas sem efeito, não há o que aprovar.
    """
    if approver is None or call["name"] not in HIGH_IMPACT_TOOLS:
        return APPROVED
    stored = load_approvals(approvals_path).get(call["id"])
    if stored is not None and stored["input_hash"] == input_hash(call["name"], call["input"]):
        if stored["verdict"] == "rejected":
            return Decision("rejected", stored["reason"])
        if stored["verdict"] == "approved" and approval_in_force(stored, now, ttl_seconds):
            return APPROVED
    # Nenhuma decisão para esta entrada exata, ou a aprovação venceu: pergunte de novo.
    decision = approver(call)
    if not isinstance(decision, Decision) or decision.verdict not in VERDICTS:
        raise ApprovalError(f"a política de aprovação devolveu {decision!r}; use approve(), reject(motivo) ou PENDING")
    record_decision(approvals_path, call, decision, now, ttl_seconds)
    return decision
