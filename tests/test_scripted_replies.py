"""Scripted model replies agree with what the tools returned: after a tool_result with
is_error, the scenario's model never claims the effect happened."""
from __future__ import annotations

import copy

import pytest

from grader.notebook_api import fixture_checkpoint, fixture_workspace
from harness.checkpointed_loop import run_agent
from harness.fake_endpoint import ON_TOOL_ERROR, ScriptedEndpoint, make_stub_client
from harness.model import MAX_TOKENS, MODEL
from harness.resume import reconcile
from harness.scenarios import list_scenarios, load_scenario
from harness.tools import TOOL_SCHEMAS, workspace_in_use

SUCCESS_CLAIM = "foi enviado"


def conversation_until_the_email(result: dict) -> list[dict]:
    """team-email up to the send_email call, answered by ``result``."""
    responses = load_scenario("team-email").responses
    read, send = responses[0]["content"][1], responses[1]["content"][1]
    return [
        {"role": "user", "content": load_scenario("team-email").task},
        {"role": "assistant", "content": responses[0]["content"]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": read["id"], "content": "notas"}]},
        {"role": "assistant", "content": responses[1]["content"]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": send["id"], **result}]},
    ]


def final_text(messages: list[dict]) -> str:
    client = make_stub_client(load_scenario("team-email").responses)
    reply = client.messages.create(model=MODEL, max_tokens=MAX_TOKENS, messages=messages, tools=TOOL_SCHEMAS)
    return reply.content[0].text


def test_the_model_says_sent_only_when_the_tool_said_so():
    sent = final_text(conversation_until_the_email({"content": "e-mail enviado para team@example.com"}))
    unknown = final_text(conversation_until_the_email({
        "content": "Estado desconhecido: o processo caiu antes de registrar o resultado.", "is_error": True}))
    assert SUCCESS_CLAIM in sent
    assert SUCCESS_CLAIM not in unknown and "não" in unknown.lower() and "erro" in unknown


def test_resuming_the_incident_with_a_correct_reconcile_ends_without_claiming_the_email(tmp_path):
    """What exercise 3's last cell shows a student whose reconcile is right."""
    world = fixture_workspace("exercise-3", "incident-duplicate-email", tmp_path / "world")
    with workspace_in_use(world):
        state = reconcile(fixture_checkpoint("exercise-3", "incident-duplicate-email"))
        assert state["messages"][-1]["content"][0]["is_error"] is True
        state = run_agent(make_stub_client(load_scenario("team-email").responses), state, tmp_path / "cp.json")
    last = state["messages"][-1]["content"][0]["text"]
    assert len(world.emails()) == 1
    assert SUCCESS_CLAIM not in last and "team@example.com" in last


@pytest.mark.parametrize("name", list_scenarios())
def test_every_reply_after_a_tool_turn_has_a_version_for_a_failed_tool(name):
    responses = load_scenario(name).responses
    for index in range(1, len(responses)):
        asked_tools = any(block["type"] == "tool_use" for block in responses[index - 1]["content"])
        if asked_tools:
            assert ON_TOOL_ERROR in responses[index], f"{name}: reply {index} has no {ON_TOOL_ERROR}"


def test_the_failed_tool_version_is_validated_when_the_script_loads():
    responses = copy.deepcopy(load_scenario("team-email").responses)
    responses[2][ON_TOOL_ERROR] = {"content": "não é lista", "stop_reason": "end_turn"}
    with pytest.raises(ValueError, match="resposta roteirizada nº 2 é inválida"):
        ScriptedEndpoint(responses)
