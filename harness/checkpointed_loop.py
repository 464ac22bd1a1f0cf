"""Lição 2: o mesmo loop, agora gravando a cena nos pontos de gravação A e B."""
from __future__ import annotations

from harness.checkpoint import save_checkpoint
from harness.loop import MAX_TURNS, answer_tool_uses, call_model, tool_uses_in


def run_agent(client, state, checkpoint_path, max_turns=MAX_TURNS):
    """Continua ``state`` até end_turn ou o teto, gravando o checkpoint duas vezes por turno."""
    while state["turns"] < max_turns:
        state["turns"] += 1
        response = call_model(client, state["messages"])
        state["tokens_used"] += response.usage.input_tokens + response.usage.output_tokens
        content = [block.model_dump(exclude_none=True) for block in response.content]
        state["messages"].append({"role": "assistant", "content": content})
        tool_uses = tool_uses_in(content)
        state["pending_tool_use"] = tool_uses or None
        save_checkpoint(state, checkpoint_path)  # ponto de gravação A: a decisão do modelo
        if response.stop_reason != "tool_use":
            break
        results = answer_tool_uses(tool_uses)
        state["messages"].append({"role": "user", "content": results})
        state["pending_tool_use"] = None
        save_checkpoint(state, checkpoint_path)  # ponto de gravação B: o resultado registrado
    return state
