"""Lição 1: o loop do agente, com todo o estado de execução só na memória do processo."""
from __future__ import annotations

from harness.model import MAX_TOKENS, MODEL
from harness.tools import TOOL_SCHEMAS, execute_tool

MAX_TURNS = 40


def new_run_state(task):
    """O estado de execução de uma tarefa que começa do zero."""
    return {
        "version": 1,
        "task": task,
        "turns": 0,
        "tokens_used": 0,
        "messages": [{"role": "user", "content": task}],
        "pending_tool_use": None,
    }


def call_model(client, messages):
    """Uma chamada ao modelo; a conversa inteira vai em cada pedido."""
    return client.messages.create(
        model=MODEL, max_tokens=MAX_TOKENS, tools=TOOL_SCHEMAS, messages=messages
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


def run_agent(client, task, max_turns=MAX_TURNS):
    """Roda a tarefa até o modelo encerrar (end_turn) ou o teto de turnos chegar."""
    state = new_run_state(task)
    while state["turns"] < max_turns:
        state["turns"] += 1
        response = call_model(client, state["messages"])
        state["tokens_used"] += response.usage.input_tokens + response.usage.output_tokens
        content = [block.model_dump(exclude_none=True) for block in response.content]
        state["messages"].append({"role": "assistant", "content": content})
        if response.stop_reason != "tool_use":
            break
        # Todos os resultados do turno vão juntos, primeiro, na próxima mensagem do usuário.
        results = answer_tool_uses(tool_uses_in(content))
        state["messages"].append({"role": "user", "content": results})
    return state
