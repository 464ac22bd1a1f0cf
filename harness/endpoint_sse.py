"""O endpoint offline responde em streaming (SSE), como a API faz com ``"stream": true``.

A sequência de eventos segue a documentação de streaming (Streaming Messages —
https://docs.claude.com/en/docs/build-with-claude/streaming): ``message_start`` com o
conteúdo vazio; para cada bloco, ``content_block_start``, os deltas e ``content_block_stop``;
``message_delta`` com o ``stop_reason``; e ``message_stop``. A entrada de um ``tool_use``
chega em pedaços de JSON (``input_json_delta``) e só fica inteira no ``content_block_stop``.

Um stream pode ser cortado: a conexão cai no meio da entrada do último ``tool_use``, antes
do ``message_stop``, e o cliente recebe o erro de transporte que uma queda de rede daria.
"""
from __future__ import annotations

import json
from collections.abc import Iterator

import httpx2

CUT_MESSAGE = "peer closed connection without sending complete message body (stream cortado pelo roteiro)"


def _event(kind: str, data: dict) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data}, ensure_ascii=False)}\n\n".encode()


def _block_events(index: int, block: dict, cut: bool) -> Iterator[bytes]:
    """Os eventos de um bloco; com ``cut``, só até a metade da entrada (e sem content_block_stop)."""
    kind = block["type"]
    if kind == "text":
        yield _event("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}})
        yield _event("content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": block["text"]}})
    elif kind == "thinking":
        yield _event("content_block_start", {"index": index,
                                             "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
        yield _event("content_block_delta", {"index": index,
                                             "delta": {"type": "thinking_delta", "thinking": block["thinking"]}})
        yield _event("content_block_delta", {"index": index,
                                             "delta": {"type": "signature_delta", "signature": block["signature"]}})
    elif kind == "tool_use":
        yield _event("content_block_start", {"index": index, "content_block": {**block, "input": {}}})
        text = json.dumps(block["input"], ensure_ascii=False)
        if cut:
            yield _event("content_block_delta", {"index": index,
                                                 "delta": {"type": "input_json_delta", "partial_json": text[:len(text) // 2]}})
            return
        yield _event("content_block_delta", {"index": index, "delta": {"type": "input_json_delta", "partial_json": text}})
    else:
        yield _event("content_block_start", {"index": index, "content_block": block})
    yield _event("content_block_stop", {"index": index})


def sse_events(response: dict, cut: bool = False) -> Iterator[bytes]:
    """Os bytes do stream de ``response``; com ``cut``, a conexão cai no meio do último tool_use."""
    start = {**response, "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": {**response["usage"], "output_tokens": 1}}
    yield _event("message_start", {"message": start})
    blocks = response["content"]
    last_tool = max((i for i, b in enumerate(blocks) if b["type"] == "tool_use"), default=None)
    for index, block in enumerate(blocks):
        cutting = cut and index == last_tool
        yield from _block_events(index, block, cutting)
        if cutting:
            raise httpx2.RemoteProtocolError(CUT_MESSAGE)
    if cut:  # nada para cortar no meio: a conexão cai antes do fim, do mesmo jeito
        raise httpx2.RemoteProtocolError(CUT_MESSAGE)
    yield _event("message_delta", {"delta": {"stop_reason": response["stop_reason"],
                                             "stop_sequence": response.get("stop_sequence")},
                                   "usage": {"output_tokens": response["usage"]["output_tokens"]}})
    yield _event("message_stop", {})


class _EventStream(httpx2.SyncByteStream):
    def __init__(self, events: Iterator[bytes]):
        self._events = events

    def __iter__(self):
        yield from self._events


def streamed_response(response: dict, cut: bool = False) -> httpx2.Response:
    """A resposta HTTP 200 de um pedido com ``stream: true``."""
    return httpx2.Response(200, headers={"content-type": "text/event-stream"},
                           stream=_EventStream(sse_events(response, cut)))
