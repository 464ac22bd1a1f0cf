"""Apêndice 2: o loop com checkpoint da lição 2, agora atento ao lado do modelo.

Cada turno pede a resposta em streaming, com o marcador de cache, e com tentativas
limitadas (``call_with_retries``); uma resposta cortada nunca entra na conversa. Antes de
cada turno, o orçamento de tokens da cena é conferido. Falhas que repetir não resolve (um
400) param a execução em "failed"; o modelo indisponível depois de todas as tentativas a
deixa em "paused", para uma retomada mais tarde.
"""
from __future__ import annotations

import time

import anthropic

from harness.checkpoint import load_checkpoint, save_checkpoint
from harness.loop import MAX_TURNS, answer_tool_uses, has_ended, new_run_state, take_response
from harness.model import MAX_TOKENS
from harness.model_errors import ModelUnavailable, api_message, call_with_retries
from harness.model_stream import stream_model
from harness.resume import reconcile
from harness.token_budget import count_cached_tokens, over_budget, stop_for_budget


def new_budgeted_state(task, token_budget=None):
    """A cena de uma tarefa nova, com o orçamento de tokens e a lista de tentativas falhas."""
    state = new_run_state(task)
    state["token_budget"] = token_budget
    state["model_retries"] = []
    return state


def ask_model(client, state, max_tokens=MAX_TOKENS, sleep=time.sleep):
    """Uma resposta inteira do modelo para a conversa da cena, com tentativas limitadas."""
    return call_with_retries(state, lambda: stream_model(client, state["messages"], max_tokens), sleep=sleep)


def run_agent(client, state, checkpoint_path, max_turns=MAX_TURNS, sleep=time.sleep):
    """Continua ``state`` até ela terminar, parar ou o teto, gravando nos pontos A e B."""
    while state["turns"] < max_turns:
        if over_budget(state):
            stop_for_budget(state)
            save_checkpoint(state, checkpoint_path)
            break
        try:
            response = ask_model(client, state, sleep=sleep)
        except ModelUnavailable as error:
            state["status"], state["status_reason"] = "paused", f"{error}; retome mais tarde"
            save_checkpoint(state, checkpoint_path)
            break
        except anthropic.BadRequestError as error:  # repetir não resolve: o pedido está errado
            state["status"], state["status_reason"] = "failed", f"HTTP 400 da API: {api_message(error)}"
            save_checkpoint(state, checkpoint_path)
            break
        state["turns"] += 1
        count_cached_tokens(state, response)
        tool_uses = take_response(state, response)
        state["pending_tool_use"] = tool_uses or None
        save_checkpoint(state, checkpoint_path)  # ponto de gravação A: a decisão do modelo
        if tool_uses is None:
            break
        if tool_uses:
            results = answer_tool_uses(tool_uses)
            state["messages"].append({"role": "user", "content": results})
            state["pending_tool_use"] = None
            save_checkpoint(state, checkpoint_path)  # ponto de gravação B: o resultado registrado
    return state


def resume_run(client, checkpoint_path, max_turns=MAX_TURNS, token_budget=None, sleep=time.sleep):
    """Retoma do checkpoint: o orçamento e as tentativas vêm da cena; ``token_budget`` o troca."""
    state = load_checkpoint(checkpoint_path)
    if state is None:
        raise FileNotFoundError(f"não há checkpoint para retomar em {checkpoint_path}")
    if has_ended(state):
        return state
    if token_budget is not None:
        state["token_budget"] = token_budget
    state["status"], state["status_reason"] = "running", None
    if state["pending_tool_use"]:
        state = reconcile(state)
    save_checkpoint(state, checkpoint_path)
    return run_agent(client, state, checkpoint_path, max_turns, sleep)
