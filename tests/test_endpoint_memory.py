"""The offline endpoint's memory per request does not grow with the conversation.

Every request carries the whole conversation, so keeping each full body is quadratic in turns
(a 1,000-turn run peaked at ~900 MiB). The endpoint keeps, per request, only what that request
added to the one before it; what the readers see (``endpoint.requests[i]`` as the body that was
sent, ``len``, iteration, slices, ``==``) is unchanged. Measured with tracemalloc on the
endpoint's own allocations: deterministic, no timings.
"""
from __future__ import annotations

import gc
import json
import tracemalloc

import httpx2
import pytest

from harness.fake_endpoint import ScriptedEndpoint

NOTE = ("# Ata\n\n- Migrar o job noturno para a fila nova até sexta.\n- Congelar features na semana do "
        "lançamento.\n- Ana cuida do contrato; Bruno, do rollback.\n") * 4
USAGE = {"input_tokens": 10, "output_tokens": 5}


def script(turns):
    reads = [{"content": [{"type": "text", "text": f"Vou reler a ata ({turn})."},
                          {"type": "tool_use", "id": f"toolu_mem{turn:05d}", "name": "read_file",
                           "input": {"path": "atas/ata.md"}}],
              "stop_reason": "tool_use", "usage": USAGE} for turn in range(turns)]
    return reads + [{"content": [{"type": "text", "text": "Li tudo."}], "stop_reason": "end_turn", "usage": USAGE}]


def post(endpoint, messages):
    body = {"model": "claude-haiku-4-5", "max_tokens": 1024, "messages": messages}
    request = httpx2.Request("POST", "https://api.anthropic.com/v1/messages", content=json.dumps(body).encode())
    response = endpoint.handle(request)
    assert response.status_code == 200, response.content
    return json.loads(response.content)


def converse(endpoint, turns):
    """The loop's conversation: each turn the model reads the note and the tool answers."""
    messages = [{"role": "user", "content": "Leia a ata até o fim."}]
    for _ in range(turns):
        reply = post(endpoint, messages)
        messages.append({"role": "assistant", "content": reply["content"]})
        call = reply["content"][1]
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"],
                                                      "content": NOTE}]})
    post(endpoint, messages)
    return messages


def retained_per_request(turns):
    """Bytes the endpoint still holds after a run of ``turns`` turns, divided by its requests."""
    endpoint = ScriptedEndpoint(script(turns))
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        messages = converse(endpoint, turns)
        del messages  # the caller's conversation is not the endpoint's memory
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(endpoint.requests) == turns + 1
    return retained / (turns + 1)


@pytest.mark.slow
def test_memory_per_request_does_not_grow_with_the_conversation():
    short, long = retained_per_request(30), retained_per_request(240)
    # Full bodies: the 240-turn run holds ~8x more per request than the 30-turn one.
    assert long < 1.5 * short, f"{short:.0f} B/request at 30 turns, {long:.0f} B/request at 240 turns"


def test_every_reader_still_sees_each_body_as_it_was_sent():
    endpoint = ScriptedEndpoint(script(6))
    sent = []
    messages = [{"role": "user", "content": "Leia a ata até o fim."}]
    for _ in range(3):
        sent.append(json.loads(json.dumps(messages)))
        reply = post(endpoint, messages)
        messages.append({"role": "assistant", "content": reply["content"]})
        messages.append({"role": "user", "content": [{"type": "tool_result",
                                                      "tool_use_id": reply["content"][1]["id"], "content": NOTE}]})
    # A conversation that is not the last one plus more (a resume from an older point, a rewind).
    older = messages[:3]
    sent.append(json.loads(json.dumps(older)))
    post(endpoint, older)
    other = [{"role": "user", "content": "outra tarefa"}]
    sent.append(other)
    post(endpoint, other)

    requests = endpoint.requests
    assert len(requests) == 5
    assert [body["messages"] for body in requests] == sent
    assert requests[0]["messages"] == sent[0] and requests[-1]["messages"] == other
    assert requests[3]["max_tokens"] == 1024 and requests[3]["model"] == "claude-haiku-4-5"
    assert [body["messages"] for body in requests[1:3]] == sent[1:3]
    assert requests == [{"model": "claude-haiku-4-5", "max_tokens": 1024, "messages": m} for m in sent]
    assert ScriptedEndpoint(script(1)).requests == []
    malformed = ScriptedEndpoint(script(1))
    malformed.handle(httpx2.Request("POST", "https://api.anthropic.com/v1/messages", content=b'{"max_tokens": 5}'))
    assert malformed.requests == [{"max_tokens": 5}] and "messages" not in malformed.requests[0]
    requests[0]["messages"].append("mudado")  # a reader's copy: the history is not changed by it
    assert requests[0]["messages"] == sent[0]


def test_two_endpoints_that_received_the_same_requests_compare_equal():
    first, second = ScriptedEndpoint(script(4)), ScriptedEndpoint(script(4))
    converse(first, 4)
    converse(second, 4)
    assert first.requests == second.requests and first.requests[1:] == second.requests[1:]
    assert list(first.requests) == list(second.requests)
