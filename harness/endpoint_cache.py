"""O cache de prompt do endpoint offline: acertos e faltas em ``usage``, pelo prefixo do pedido.

Na API, um bloco marcado com ``cache_control`` fecha um prefixo (ferramentas, depois
``system``, depois as mensagens, nessa ordem) que fica guardado por alguns minutos; um
pedido seguinte que começa pelo mesmo prefixo lê esses tokens do cache
(``cache_read_input_tokens``), e o trecho novo até o marcador é gravado
(``cache_creation_input_tokens``). Qualquer mudança no prefixo desfaz o acerto dali em
diante (Prompt caching — https://docs.claude.com/en/docs/build-with-claude/prompt-caching).

Aqui o cache é uma simplificação honesta: vive enquanto o endpoint vive, não expira, não
tem tamanho mínimo, e conta tokens por uma estimativa (4 caracteres de JSON por token).
"""
from __future__ import annotations

import hashlib
import json


def estimate_tokens(block) -> int:
    return max(1, len(json.dumps(block, ensure_ascii=False, sort_keys=True)) // 4)


def _without_marker(block):
    return {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) else block


def prefix_blocks(body: dict) -> list[tuple[object, bool]]:
    """O pedido como a sequência que o cache vê: (bloco sem marcador, tinha marcador?)."""
    sequence = []
    for tool in body.get("tools") or []:
        sequence.append((_without_marker(tool), "cache_control" in tool))
    system = body.get("system")
    if isinstance(system, str):
        sequence.append(({"system": system}, False))
    for block in system if isinstance(system, list) else []:
        sequence.append((_without_marker(block), "cache_control" in block))
    for message in body.get("messages") or []:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        for block in blocks:
            marked = isinstance(block, dict) and "cache_control" in block
            sequence.append(({"role": message.get("role"), **_without_marker(block)}, marked))
    return sequence


class PromptCache:
    """Os prefixos já gravados (pelo hash) e a conta de um pedido novo."""

    def __init__(self):
        self.stored: set[str] = set()

    def usage_for(self, body: dict) -> dict | None:
        """input_tokens, cache_read_input_tokens e cache_creation_input_tokens deste pedido.

        None quando o pedido não marca nenhum bloco com cache_control (sem cache, a conta do
        roteiro vale). Grava os prefixos marcados, para os pedidos seguintes.
        """
        sequence = prefix_blocks(body)
        marks = [i + 1 for i, (_, marked) in enumerate(sequence) if marked]
        if not marks:
            return None
        hashes, digest = [], hashlib.sha256()
        for block, _ in sequence:
            digest.update(json.dumps(block, ensure_ascii=False, sort_keys=True).encode())
            hashes.append(digest.copy().hexdigest())
        read_until = max((length for length in range(1, marks[-1] + 1) if hashes[length - 1] in self.stored),
                         default=0)
        sizes = [estimate_tokens(block) for block, _ in sequence]
        for length in marks:
            self.stored.add(hashes[length - 1])
        return {
            "cache_read_input_tokens": sum(sizes[:read_until]),
            "cache_creation_input_tokens": sum(sizes[read_until:marks[-1]]),
            "input_tokens": sum(sizes[marks[-1]:]),
        }
