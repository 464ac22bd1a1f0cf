"""Lição 4: executar os tool_use de um turno na ordem livro-razão -> aprovação -> executar -> registrar."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from harness.approval import (
    APPROVALS_FILE,
    DEFAULT_APPROVAL_TTL,
    Decision,
    WaitingForApproval,
    check_approval,
    pending_approval_for,
)
from harness.effects import (
    SETTLED_STATUSES,
    confirmed_effect,
    execute_and_record,
    load_effects,
    make_receipt,
    save_effect,
)
from harness.checkpoint import load_checkpoint, save_checkpoint
from harness.loop import MAX_TURNS, call_model, has_ended, take_response
from harness.tools import READ_ONLY_TOOLS, execute_tool


@dataclass
class ToolContext:
    """Tudo o que run_tool_uses precisa saber além das chamadas.

    - ``effects_path``: o livro-razão (effects.json);
    - ``approver``: a política da válvula, ``approver(call) -> Decision``; None = sem válvula;
    - ``approvals_path``: onde as decisões ficam gravadas (padrão: approvals.json ao lado);
    - ``dry_run``: ferramentas de alto impacto não tocam o mundo (usado em bifurcações);
    - ``clock``: de onde vem a hora (segundos), para testar o prazo das aprovações.
    """

    effects_path: str | os.PathLike
    approver: Callable[[dict], Decision] | None = None
    approvals_path: str | os.PathLike | None = None
    approval_ttl: float = DEFAULT_APPROVAL_TTL
    dry_run: bool = False
    clock: Callable[[], float] = time.time

    def __post_init__(self):
        if self.approvals_path is None:
            self.approvals_path = Path(self.effects_path).with_name(APPROVALS_FILE)


def dry_run_output(call):
    """Resultado simulado: a ferramenta NÃO rodou e o texto diz isso ao modelo."""
    return {
        "content": f"[dry-run] {call['name']} não foi executada: nenhum efeito no mundo externo",
        "is_error": False,
    }


def run_tool_uses(tool_uses, ctx):
    """Um tool_result por tool_use, na mesma ordem. Para cada chamada:

    1. livro-razão: já foi feito? (recibo -> reaproveita; intenção -> pergunta ao sistema externo)
    2. aprovação: deve ser feito? (pendente -> WaitingForApproval; recusada -> is_error)
    3. executar, com o tool_use_id como chave de idempotência
    4. registrar o recibo
    """
    results = []
    for call in tool_uses:
        record = load_effects(ctx.effects_path).get(call["id"])  # 1. livro-razão
        if record is not None and record["status"] in SETTLED_STATUSES:
            output = record["result"]
        elif call["name"] in READ_ONLY_TOOLS:
            output = execute_tool(call["name"], call["input"])
        else:
            output = confirmed_effect(call, record, ctx.effects_path)
            if output is None:
                now = ctx.clock()
                decision = check_approval(call, ctx.approvals_path, ctx.approver, now, ctx.approval_ttl)  # 2.
                if decision.verdict == "pending":
                    raise WaitingForApproval(pending_approval_for(call, now))
                if decision.verdict == "rejected":
                    output = {"content": f"ação recusada pela aprovação: {decision.reason}", "is_error": True}
                    save_effect(ctx.effects_path, call["id"], make_receipt(call, output, "rejected"))
                elif ctx.dry_run:
                    output = dry_run_output(call)
                else:
                    output = execute_and_record(call, ctx.effects_path)  # 3. executar, 4. registrar
        results.append({"type": "tool_result", "tool_use_id": call["id"], **output})
    return results


def close_pending(cp, ctx):
    """A retomada com válvula: as chamadas pendentes passam por run_tool_uses.

    O primeiro passo de run_tool_uses é a mesma divisão em três vias do reconcile;
    a diferença é que uma chamada que nunca começou ainda precisa de aprovação.
    """
    pending = cp["pending_tool_use"] or []
    if pending:
        cp["messages"].append({"role": "user", "content": run_tool_uses(pending, ctx)})
    cp["pending_tool_use"] = None
    return cp


def run_agent_with_effects(client, state, checkpoint_path, ctx, max_turns=MAX_TURNS):
    """O loop da lição 2 (pontos A e B) com run_tool_uses no lugar de answer_tool_uses.

    Se a válvula deixar uma chamada pendente, o estado vai para "waiting_for_approval"
    com o pedido em ``pending_approval`` e é gravado: a espera sobrevive a um reinício.
    """
    try:
        if state["pending_tool_use"]:
            close_pending(state, ctx)  # retomada: livro-razão e válvula antes de tudo
            save_checkpoint(state, checkpoint_path)
        state["status"], state["pending_approval"] = "running", None
        while state["turns"] < max_turns:
            state["turns"] += 1
            response = call_model(client, state["messages"])
            tool_uses = take_response(state, response)  # a regra do stop_reason (lição 1)
            state["pending_tool_use"] = tool_uses or None
            save_checkpoint(state, checkpoint_path)  # ponto de gravação A
            if tool_uses is None:
                break
            if tool_uses:
                results = run_tool_uses(tool_uses, ctx)
                state["messages"].append({"role": "user", "content": results})
                state["pending_tool_use"] = None
                save_checkpoint(state, checkpoint_path)  # ponto de gravação B
    except WaitingForApproval as waiting:
        state["status"] = "waiting_for_approval"
        state["pending_approval"] = waiting.pending_approval
    save_checkpoint(state, checkpoint_path)
    return state


def resume_with_effects(client, checkpoint_path, ctx, max_turns=MAX_TURNS):
    """Retoma do checkpoint: chamadas pendentes passam pelo livro-razão e pela válvula."""
    state = load_checkpoint(checkpoint_path)
    if state is None:
        raise FileNotFoundError(f"não há checkpoint para retomar em {checkpoint_path}")
    if has_ended(state):
        return state  # a execução já tinha terminado antes da queda
    return run_agent_with_effects(client, state, checkpoint_path, ctx, max_turns)
