"""Reading a conversation's content: content blocks, their text, a response's tokens."""
from __future__ import annotations

import unicodedata
from typing import Any


def response_tokens(response: dict) -> int:
    """What a scripted response adds to tokens_used: its input_tokens + output_tokens, as lesson 1's loop sums."""
    usage = response.get("usage") or {}
    return int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))


def content_blocks(message: dict, block_type: str) -> list[dict]:
    """The blocks of ``block_type`` ("tool_use", "tool_result"...) in a message's content;
    [] when the content is plain text."""
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [block for block in content if isinstance(block, dict) and block.get("type") == block_type]


def plain_text(text: str) -> str:
    """``text`` in lower case, without accents and with single spaces, to compare words a
    student may type with or without accents ("Memória", "memoria ")."""
    ascii_only = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return " ".join(ascii_only.lower().split())


def block_text(content: Any) -> str | None:
    """The text of a tool_result's content (a string or a list of text blocks); None otherwise."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(b, dict) and b.get("type") == "text" for b in content):
        return "".join(str(b.get("text", "")) for b in content)
    return None
