"""Lição 3: retomar de um checkpoint e reconciliar a chamada órfã antes de voltar ao loop."""
from __future__ import annotations

from harness.checkpoint import load_checkpoint, save_checkpoint
from harness.checkpointed_loop import run_agent
from harness.loop import MAX_TURNS, has_ended
from harness.tools import READ_ONLY_TOOLS, execute_tool

UNKNOWN_OUTCOME = (
    "Desfecho desconhecido: o processo morreu depois de receber este pedido e antes de registrar "
    "o resultado, e nada mostra se a ferramenta chegou a agir. Antes de pedir a mesma ação de novo, "
    "confira se o efeito já existe (por exemplo, procure o e-mail na caixa de saída)."
)


def resume_action(cp):
    """O que fazer com cada chamada pendente: "rerun" ou "is_error". {} = nada a reconciliar."""
    plan = {}
    for call in cp["pending_tool_use"] or []:
        plan[call["id"]] = "rerun" if call["name"] in READ_ONLY_TOOLS else "is_error"
    return plan


def reconcile(cp):
    """Fecha as chamadas órfãs com um tool_result cada, decidindo pela natureza da ferramenta."""
    results = []
    for call in cp["pending_tool_use"] or []:
        if call["name"] in READ_ONLY_TOOLS:
            # Ler de novo não muda o mundo: reexecute e entregue o resultado real.
            output = execute_tool(call["name"], call["input"])
            results.append({"type": "tool_result", "tool_use_id": call["id"], **output})
        else:
            # Alto impacto e nenhum registro do que aconteceu: diga a verdade ao modelo.
            results.append({
                "type": "tool_result",
                "tool_use_id": call["id"],
                "content": UNKNOWN_OUTCOME,
                "is_error": True,
            })
    if results:
        cp["messages"].append({"role": "user", "content": results})
    cp["pending_tool_use"] = None
    return cp


def resume_run(client, checkpoint_path, max_turns=MAX_TURNS):
    """Carrega, reconcilia e reentra no loop; turns e tokens_used seguem do checkpoint."""
    state = load_checkpoint(checkpoint_path)
    if state is None:
        raise FileNotFoundError(f"não há checkpoint para retomar em {checkpoint_path}")
    if has_ended(state):
        return state  # a execução já tinha terminado (completed, refused ou failed) antes da queda
    if state["pending_tool_use"]:
        state = reconcile(state)
        save_checkpoint(state, checkpoint_path)
    return run_agent(client, state, checkpoint_path, max_turns)


def orphan_ids(messages: list[dict]) -> set[str]:
    """Ids de tool_use sem tool_result na mensagem seguinte (as chamadas órfãs)."""
    orphans = set()
    for index, message in enumerate(messages):
        if message.get("role") != "assistant" or isinstance(message.get("content"), str):
            continue
        ids = {b["id"] for b in message["content"] if b.get("type") == "tool_use"}
        following = messages[index + 1] if index + 1 < len(messages) else None
        answered = set()
        if following and not isinstance(following.get("content"), str):
            answered = {b.get("tool_use_id") for b in following["content"] if b.get("type") == "tool_result"}
        orphans |= ids - answered
    return orphans
