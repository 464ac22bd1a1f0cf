"""Apêndice 2: pedir a resposta em streaming e nunca usar uma resposta cortada.

No streaming (Streaming Messages — https://docs.claude.com/en/docs/build-with-claude/streaming)
a entrada de um ``tool_use`` chega aos pedaços e só está completa no fim do bloco; a resposta
só está completa no ``message_stop``. Se a conexão cai antes, o que chegou é metade de uma
decisão: o harness joga fora e pede o turno de novo (``StreamCut`` é uma falha que se repete).
"""
from __future__ import annotations

import anthropic
import httpx2

from harness.model import MAX_TOKENS, MODEL
from harness.model_errors import StreamCut
from harness.tools import TOOL_SCHEMAS

CACHE_MARK = {"type": "ephemeral"}


def with_cache_breakpoint(messages):
    """Uma cópia da conversa com o marcador de cache no último bloco; a cena fica sem marcador."""
    if not messages:
        return messages
    last = messages[-1]
    content = last["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
    blocks[-1] = {**blocks[-1], "cache_control": CACHE_MARK}
    return [*messages[:-1], {**last, "content": blocks}]


def stream_model(client, messages, max_tokens=MAX_TOKENS):
    """Uma chamada em streaming; devolve a Message inteira, ou levanta StreamCut se ela não chegou inteira."""
    try:
        with client.messages.stream(model=MODEL, max_tokens=max_tokens, tools=TOOL_SCHEMAS,
                                    messages=with_cache_breakpoint(messages)) as stream:
            for _event in stream:
                pass
            message = stream.get_final_message()
    except (httpx2.TransportError, anthropic.APIConnectionError) as error:
        raise StreamCut(f"a conexão caiu no meio da resposta: {error}") from error
    if message.stop_reason is None:  # o stream acabou sem message_delta/message_stop
        raise StreamCut("o stream terminou sem message_stop")
    return message
