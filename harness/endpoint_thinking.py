"""Blocos de raciocínio (thinking) no endpoint offline: a assinatura e a regra da volta.

Com raciocínio estendido, a resposta traz blocos ``thinking`` com uma ``signature`` que a
API confere quando o bloco volta num pedido seguinte. Numa conversa com ferramentas, o
último turno do assistente que usou ferramentas precisa voltar com os seus blocos de
raciocínio intactos (Building with extended thinking —
https://docs.claude.com/en/docs/build-with-claude/extended-thinking). Aqui a assinatura é
um HMAC do texto: mudar um caractere do raciocínio, ou a assinatura, dá o HTTP 400.
"""
from __future__ import annotations

import base64
import hashlib
import hmac

_KEY = b"endpoint offline: chave das assinaturas de raciocinio"


def sign(thinking: str) -> str:
    """A assinatura que o endpoint põe num bloco de raciocínio com este texto."""
    digest = hmac.new(_KEY, thinking.encode("utf-8"), hashlib.sha256).digest()
    return base64.b64encode(digest).decode("ascii")


def signed(content: list[dict]) -> list[dict]:
    """O conteúdo de uma resposta roteirizada com cada bloco thinking assinado."""
    return [{**block, "signature": sign(block["thinking"])} if block.get("type") == "thinking" and
            "signature" not in block else block for block in content]


def _blocks(message: dict) -> list[dict]:
    content = message.get("content")
    return [] if isinstance(content, str) else list(content or [])


def thinking_problem(messages: list[dict], served: list[list[dict]]) -> str | None:
    """O texto do 400 que a API daria para os blocos de raciocínio da conversa, ou None.

    ``served[i]`` são os blocos de raciocínio que o endpoint mandou na resposta i (a i-ésima
    mensagem do assistente). Toda assinatura precisa bater com o texto; e o último turno do
    assistente com tool_use, se o endpoint mandou raciocínio nele, precisa começar por esses
    mesmos blocos.
    """
    assistant_turns = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    for index in assistant_turns:
        for position, block in enumerate(_blocks(messages[index])):
            if block.get("type") == "thinking" and block.get("signature") != sign(block.get("thinking", "")):
                return f"messages.{index}.content.{position}: Invalid `signature` in `thinking` block"
    with_tools = [i for i in assistant_turns if any(b.get("type") == "tool_use" for b in _blocks(messages[i]))]
    if not with_tools:
        return None
    index = with_tools[-1]
    number = assistant_turns.index(index)
    expected = served[number] if number < len(served) else []
    if not expected:
        return None
    blocks = _blocks(messages[index])
    if blocks[:len(expected)] != expected:
        found = blocks[0].get("type") if blocks else "nothing"
        return (f"messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
                f"`{found}`. When `thinking` is enabled, a final `assistant` message must start with a "
                f"thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We "
                f"recommend you include thinking blocks from previous turns.")
    return None
