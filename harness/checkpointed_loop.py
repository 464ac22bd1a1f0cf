"""Lição 2: o mesmo loop, agora gravando a cena nos pontos de gravação A e B."""
from __future__ import annotations

from harness.checkpoint import save_checkpoint
from harness.loop import MAX_TURNS, answer_tool_uses, call_model, take_response


def run_agent(client, state, checkpoint_path, max_turns=MAX_TURNS):
    """Continua ``state`` até ela terminar ou o teto, gravando o checkpoint duas vezes por turno."""
    while state["turns"] < max_turns:
        state["turns"] += 1
        response = call_model(client, state["messages"])
        tool_uses = take_response(state, response)
        state["pending_tool_use"] = tool_uses or None
        save_checkpoint(state, checkpoint_path)  # ponto de gravação A: a decisão do modelo
        if tool_uses is None:
            break
        if tool_uses:  # num pause_turn não há o que executar: a próxima chamada continua o turno
            results = answer_tool_uses(tool_uses)
            state["messages"].append({"role": "user", "content": results})
            state["pending_tool_use"] = None
            save_checkpoint(state, checkpoint_path)  # ponto de gravação B: o resultado registrado
    return state
