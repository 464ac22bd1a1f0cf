"""The offline endpoint: the real anthropic SDK over httpx2.MockTransport, validating like the API."""
from __future__ import annotations

import anthropic
import pytest

from harness.fake_endpoint import ScriptedEndpoint, expand_response, make_stub_client, validate_messages
from harness.loop import call_model
from harness.scenarios import load_scenario


def tool_use(id_, name="read_file", input_=None):
    return {"type": "tool_use", "id": id_, "name": name, "input": input_ or {"path": "a.md"}}


def tool_result(id_, content="ok"):
    return {"type": "tool_result", "tool_use_id": id_, "content": content}


ORPHAN = [
    {"role": "user", "content": "leia a.md"},
    {"role": "assistant", "content": [tool_use("toolu_01A")]},
]


def test_client_is_the_real_sdk_client():
    client = make_stub_client(load_scenario("team-email").responses)
    assert type(client) is anthropic.Anthropic
    response = call_model(client, [{"role": "user", "content": "oi"}])
    assert isinstance(response, anthropic.types.Message)
    assert response.stop_reason == "tool_use"
    assert client.stub_endpoint.requests[0]["messages"] == [{"role": "user", "content": "oi"}]


def test_orphan_tool_use_is_rejected_with_the_api_text():
    client = make_stub_client(load_scenario("team-email").responses)
    with pytest.raises(anthropic.BadRequestError) as caught:
        call_model(client, ORPHAN)
    assert caught.value.status_code == 400
    message = caught.value.body["error"]["message"]
    assert message.startswith("messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01A.")
    assert caught.value.body["error"]["type"] == "invalid_request_error"


def test_same_conversation_accepted_after_reconcile(tmp_path):
    from harness.resume import reconcile
    from harness.tools import Workspace, use_workspace

    workspace = Workspace(tmp_path)
    workspace.add_files({"a.md": "conteúdo"})
    use_workspace(workspace)
    cp = {"version": 1, "task": "t", "turns": 1, "tokens_used": 10, "messages": [dict(m) for m in ORPHAN],
          "pending_tool_use": [{"id": "toolu_01A", "name": "read_file", "input": {"path": "a.md"}}]}
    reconcile(cp)
    client = make_stub_client(load_scenario("team-email").responses)
    response = call_model(client, cp["messages"])
    assert response.content


@pytest.mark.parametrize(
    "messages, expected",
    [
        (ORPHAN, "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01A"),
        ([{"role": "user", "content": [tool_result("toolu_09")]}],
         "messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_09"),
        ([{"role": "user", "content": "x"}, {"role": "assistant", "content": [tool_use("toolu_01A")]},
          {"role": "user", "content": [{"type": "text", "text": "antes"}, tool_result("toolu_01A")]}],
         "messages.2: Did not find 1 `tool_result` block(s) at the beginning of this message"),
        ([{"role": "user", "content": "x"}, {"role": "assistant", "content": [tool_use("toolu_01A")]},
          {"role": "user", "content": [tool_result("toolu_01A"), tool_result("toolu_01A")]}],
         "messages.2.content.1: each tool_use must have a single result. Found multiple `tool_result` blocks with id: toolu_01A"),
        ([{"role": "user", "content": "x"}, {"role": "assistant", "content": [tool_use("toolu_01A"), tool_use("toolu_01B")]},
          {"role": "user", "content": [tool_result("toolu_01A")]}],
         "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01B"),
    ],
    ids=["orphan", "result-without-use", "results-not-first", "duplicate-result", "one-of-two-missing"],
)
def test_validation_rules(messages, expected):
    problem = validate_messages(messages)
    assert problem is not None and problem.startswith(expected)


def test_valid_conversation_with_two_tools_in_one_turn():
    messages = [
        {"role": "user", "content": "x"},
        {"role": "assistant", "content": [{"type": "text", "text": "vou ler"}, tool_use("toolu_01A"), tool_use("toolu_01B")]},
        {"role": "user", "content": [tool_result("toolu_01A"), tool_result("toolu_01B"), {"type": "text", "text": "depois"}]},
    ]
    assert validate_messages(messages) is None


def test_invalid_scripted_response_is_refused_when_loaded():
    with pytest.raises(ValueError, match="resposta roteirizada nº 0 é inválida"):
        ScriptedEndpoint([{"content": [{"type": "tool_use", "id": "x"}], "stop_reason": "tool_use"}])
    with pytest.raises(ValueError):
        expand_response({"content": "não é lista", "stop_reason": "end_turn"}, 0)


def test_running_out_of_responses_is_a_clear_error_not_a_hang():
    client = make_stub_client([{"content": [{"type": "text", "text": "fim"}], "stop_reason": "end_turn"}])
    messages = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "fim"}, {"role": "user", "content": "b"}]
    with pytest.raises(anthropic.InternalServerError) as caught:
        call_model(client, messages)
    assert "fila de respostas esgotada" in caught.value.body["error"]["message"]


def test_response_is_chosen_by_conversation_position_so_a_new_process_continues():
    responses = load_scenario("team-email").responses
    first = make_stub_client(responses)
    r1 = call_model(first, [{"role": "user", "content": "t"}])
    content = [b.model_dump(exclude_none=True) for b in r1.content]
    messages = [{"role": "user", "content": "t"}, {"role": "assistant", "content": content},
                {"role": "user", "content": [tool_result(content[-1]["id"])]}]
    second = make_stub_client(responses)  # a brand new "process"
    r2 = call_model(second, messages)
    assert r2.content[-1].name == "send_email"


def test_live_mode_requires_a_key(monkeypatch):
    from harness.model import make_client

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(RuntimeError, match="ANTHROPIC_API_KEY"):
        make_client(live=True)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    assert isinstance(make_client(live=True), anthropic.Anthropic)


def test_a_system_message_gets_the_apis_own_text():
    messages = [{"role": "system", "content": "Seja breve."}, {"role": "user", "content": "oi"}]
    expected = ('messages: Unexpected role "system". The Messages API accepts a top-level `system` parameter, '
                'not "system" as an input message role.')
    assert validate_messages(messages) == expected
    with pytest.raises(anthropic.BadRequestError) as caught:
        call_model(make_stub_client(load_scenario("team-email").responses), messages)
    assert caught.value.body["error"]["message"] == expected


def test_other_unknown_roles_are_still_refused():
    assert validate_messages([{"role": "tool", "content": "x"}]) == "messages.0.role: Input should be 'user' or 'assistant'"
