"""Apêndice 2: um orçamento de tokens que mora na cena e para a execução com um status claro.

Como o teto de turnos, o orçamento precisa sobreviver à queda: se ele vivesse só numa
variável, cada retomada ganharia um orçamento novo e uma execução que cai e volta nunca
pararia de gastar. Ele vai na cena (``token_budget``) ao lado de ``tokens_used``.
"""
from __future__ import annotations


def over_budget(state):
    """A execução já gastou o orçamento? Sem orçamento na cena, nunca."""
    budget = state.get("token_budget")
    return budget is not None and state["tokens_used"] >= budget


def stop_for_budget(state):
    """Para a execução em "paused", dizendo quanto gastou e como seguir."""
    state["status"] = "paused"
    state["status_reason"] = (f"orçamento de tokens esgotado: {state['tokens_used']} usados de "
                              f"{state['token_budget']}; retome com um orçamento maior")


def count_cached_tokens(state, response):
    """Soma a ``tokens_used`` os tokens de entrada que passaram pelo cache (lidos e gravados).

    ``take_response`` (lição 1) soma ``input_tokens`` e ``output_tokens``; com cache de prompt,
    a maior parte da entrada vem em ``cache_read_input_tokens`` e ``cache_creation_input_tokens``,
    que também são tokens processados e precisam entrar na conta do orçamento.
    """
    usage = response.usage
    state["tokens_used"] += (usage.cache_read_input_tokens or 0) + (usage.cache_creation_input_tokens or 0)
