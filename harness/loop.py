"""Lição 1: o loop do agente, com todo o estado de execução só na memória do processo."""
from __future__ import annotations

from harness.model import MAX_TOKENS, MODEL
from harness.tools import TOOL_SCHEMAS, execute_tool

MAX_TURNS = 40

# O que cada stop_reason da API pede ao loop (documentação da API: "Stop reasons and fallback").
STOP_REASON_ACTIONS = {
    "tool_use": "run_tools",        # executar as ferramentas e devolver os resultados
    "pause_turn": "continue",       # mandar o conteúdo de volta como está: o modelo continua o turno
    "end_turn": "completed",        # o modelo terminou
    "stop_sequence": "completed",   # terminou numa sequência de parada pedida no request
    "refusal": "refused",           # o modelo recusou: nada do que a resposta traz é executado
    "max_tokens": "failed",         # cortada no limite de saída: um tool_use pode estar pela metade
    "model_context_window_exceeded": "failed",  # cortada porque a janela de contexto acabou
}
CUT_OFF_STOP_REASONS = ("max_tokens", "model_context_window_exceeded")
ENDED_STATUSES = ("completed", "refused", "failed")


def new_run_state(task):
    """O estado de execução de uma tarefa que começa do zero."""
    return {
        "version": 1,
        "task": task,
        "turns": 0,
        "tokens_used": 0,
        "messages": [{"role": "user", "content": task}],
        "pending_tool_use": None,
        "status": "running",
        "status_reason": None,
    }


def call_model(client, messages, max_tokens=MAX_TOKENS):
    """Uma chamada ao modelo; a conversa inteira vai em cada pedido."""
    return client.messages.create(
        model=MODEL, max_tokens=max_tokens, tools=TOOL_SCHEMAS, messages=messages
    )


def tool_uses_in(content):
    """Os blocos tool_use de uma resposta, como dicionários {id, name, input}."""
    return [
        {"id": block["id"], "name": block["name"], "input": block["input"]}
        for block in content
        if block["type"] == "tool_use"
    ]


def answer_tool_uses(tool_uses):
    """Executa cada chamada e devolve um tool_result por tool_use, na mesma ordem."""
    results = []
    for call in tool_uses:
        output = execute_tool(call["name"], call["input"])
        results.append({"type": "tool_result", "tool_use_id": call["id"], **output})
    return results


def take_response(state, response):
    """Aplica a regra do stop_reason: devolve os tool_use a executar ([] se não há), ou None se a execução parou.

    Só entra na conversa uma resposta a partir da qual dá para seguir. Uma resposta recusada
    ou cortada fica de fora (e nada dela roda): a conversa continua aceitável pela API, e
    quem repetir o pedido (com um limite maior, ou com outro modelo) repete o mesmo pedido.
    """
    state["tokens_used"] += response.usage.input_tokens + response.usage.output_tokens
    action = STOP_REASON_ACTIONS.get(response.stop_reason, "failed")  # um valor novo? pare, não adivinhe
    if action in ("refused", "failed"):
        state["status"], state["status_reason"] = action, stop_reason_text(response)
        return None
    content = [block.model_dump(exclude_none=True) for block in response.content]
    state["messages"].append({"role": "assistant", "content": content})
    if action == "completed":
        state["status"], state["status_reason"] = action, stop_reason_text(response)
        return None
    return tool_uses_in(content) if action == "run_tools" else []


def stop_reason_text(response):
    """O motivo da parada, em palavras, para quem for ler o estado depois."""
    reason = response.stop_reason
    if reason == "stop_sequence":
        return f"o modelo encerrou na sequência de parada {response.stop_sequence!r} (stop_sequence)"
    if reason == "end_turn":
        return "o modelo encerrou (end_turn)"
    if reason == "refusal":
        return "o modelo recusou o pedido (refusal); nada do que a resposta trazia foi executado"
    if reason in CUT_OFF_STOP_REASONS:
        cut = [block.name for block in response.content if block.type == "tool_use"]
        half = f"; o tool_use {cut[-1]} ficou pela metade e não foi executado" if cut else ""
        return f"a resposta foi cortada ({reason}, {response.usage.output_tokens} tokens de saída){half}"
    return f"stop_reason desconhecido ({reason!r}); nada do que a resposta trazia foi executado"


def has_ended(state):
    """A execução já terminou? O status gravado diz. Numa cena sem status (gravada antes de ele
    existir), terminou se a última mensagem é do modelo e não deixou chamada pendente."""
    if "status" in state:
        return state["status"] in ENDED_STATUSES
    return state["messages"][-1]["role"] == "assistant" and not state["pending_tool_use"]


def run_agent(client, task, max_turns=MAX_TURNS):
    """Roda a tarefa até ela terminar (completed, refused ou failed) ou o teto de turnos chegar."""
    state = new_run_state(task)
    while state["turns"] < max_turns:
        state["turns"] += 1
        response = call_model(client, state["messages"])
        tool_uses = take_response(state, response)
        if tool_uses is None:
            break
        if tool_uses:
            # Todos os resultados do turno vão juntos, primeiro, na próxima mensagem do usuário.
            results = answer_tool_uses(tool_uses)
            state["messages"].append({"role": "user", "content": results})
    return state
