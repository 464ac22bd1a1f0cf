"""Scripted model replies agree with what the tools returned: after a tool_result with
is_error, the scenario's model never claims the effect happened."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest

from grader.student.notebook_api import fixture_checkpoint, fixture_workspace
from harness.checkpointed_loop import run_agent
from harness.fake_endpoint import (
    ON_TOOL_DRY_RUN,
    ON_TOOL_EMPTY,
    ON_TOOL_ERROR,
    ON_TOOL_REFUSED,
    ON_TOOL_UNKNOWN,
    ScriptedEndpoint,
    make_stub_client,
    tool_outcome,
)
from harness.model import MAX_TOKENS, MODEL
from harness.resume import reconcile
from harness.runner import run_durable
from harness.scenarios import Scenario, list_scenarios, load_scenario
from harness.stores.files import FileStore
from harness.tools import HIGH_IMPACT_TOOLS, READ_ONLY_TOOLS, TOOL_SCHEMAS, Workspace, workspace_in_use

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
    failed = final_text(conversation_until_the_email({"content": "o campo 'to' é obrigatório", "is_error": True}))
    assert SUCCESS_CLAIM in sent
    assert SUCCESS_CLAIM not in unknown and "não" in unknown.lower() and "desconhecido" in unknown
    assert SUCCESS_CLAIM not in failed and "voltou com erro" in failed


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


# --- replies follow what the tools returned: refused, unknown, error, dry-run, empty -------------

REFUSED_WORDS = "recusad"
HEDGES = ("não sei", "não posso garantir", "confira se", "desconhecid")


def final_reply(state: dict) -> str:
    return state["messages"][-1]["content"][0]["text"]


def rejected_run(tmp_path, scenario: str, decisions: list[str]) -> tuple[dict, Workspace]:
    """`run --approval`, then approve/reject each high-impact call in turn, resuming after each."""
    from harness import cli

    folder = str(tmp_path / "run")
    assert cli.main(["run", "--scenario", scenario, "--workdir", folder, "--approval"]) == 11
    for decision in decisions:
        extra = ["--reason", "não agora"] if decision == "reject" else []
        assert cli.main([decision, "--workdir", folder, *extra]) == 0
        code = cli.main(["run", "--resume", "--workdir", folder])
    assert code == 0
    return FileStore(folder).load(), Workspace(Path(folder) / "world")


@pytest.mark.parametrize("scenario, decisions", [
    ("team-email", ["reject"]),
    ("ticket-triage", ["reject"]),
    ("team-email-variant", ["reject"]),
    ("team-email-variant", ["approve", "reject"]),
])
def test_after_a_human_rejection_the_model_says_it_was_refused_not_unknown(tmp_path, scenario, decisions):
    state, world = rejected_run(tmp_path, scenario, decisions)
    reply = final_reply(state)
    assert REFUSED_WORDS in reply and not any(hedge in reply.lower() for hedge in HEDGES), reply
    assert SUCCESS_CLAIM not in reply and "aberto para" not in reply
    assert len(world.emails()) == decisions.count("approve") and world.tickets() == []


def run_scenario(tmp_path, scenario: Scenario) -> tuple[dict, Workspace]:
    store = FileStore(tmp_path / "run")
    state = run_durable(make_stub_client(scenario.responses), tmp_path / "run", scenario, store=store)
    return state, store.world()


def test_grep_on_a_missing_folder_is_an_error_and_no_ticket_is_opened(tmp_path):
    scenario = load_scenario("ticket-triage")
    scenario.files = {"outros/app.log": "08:05 ERROR timeout\n"}
    state, world = run_scenario(tmp_path, scenario)
    assert state["messages"][2]["content"][0]["is_error"] is True
    assert world.tickets() == [] and "voltou com erro" in final_reply(state)


def test_a_search_that_finds_nothing_opens_no_ticket(tmp_path):
    scenario = load_scenario("ticket-triage")
    scenario.files = {"logs/app-08-28.log": "08:00 INFO start\n08:06 INFO retry ok\n"}
    state, world = run_scenario(tmp_path, scenario)
    reply = final_reply(state)
    assert world.tickets() == [] and "não há" in reply.lower() and "dois timeouts" not in reply.lower(), reply


class EmptyNotes(Scenario):
    """meeting-notes in a world whose notes/ folder exists and holds nothing."""

    def make_workspace(self, root, boundary=None):
        workspace = super().make_workspace(root, boundary)
        (workspace.sandbox / "notes").mkdir()
        return workspace


def test_an_empty_notes_folder_is_not_summarised(tmp_path):
    scenario = EmptyNotes(**{**vars(load_scenario("meeting-notes")), "files": {}})
    state, _ = run_scenario(tmp_path, scenario)
    assert state["messages"][2]["content"][0]["content"] == "(pasta vazia)"
    assert "Resumo da semana" not in final_reply(state) and "não há anotações" in final_reply(state).lower()


def test_a_dry_run_fork_never_claims_an_email_the_original_never_sent(tmp_path):
    from harness import cli

    source, into = str(tmp_path / "email"), str(tmp_path / "ramo")
    assert cli.main(["run", "--scenario", "team-email", "--workdir", source, "--approval"]) == 11
    assert cli.main(["fork", "--workdir", source, "--to", "2-A", "--into", into]) == 0
    assert cli.main(["run", "--resume", "--workdir", into]) == 11  # the fork keeps the gate
    assert cli.main(["approve", "--workdir", into]) == 0  # approved, it still only rehearses
    assert cli.main(["run", "--resume", "--workdir", into]) == 0
    reply = final_reply(FileStore(into).load())
    assert "dry-run" in reply and SUCCESS_CLAIM not in reply, reply
    assert Workspace(Path(into) / "world").emails() == []


def test_a_fork_past_a_sent_email_answers_with_the_real_receipt_and_sends_nothing_more(tmp_path):
    """The original already sent it: the fork inherits the receipt, so claiming it is true."""
    from harness import cli

    source, into = str(tmp_path / "email"), str(tmp_path / "ramo")
    assert cli.main(["run", "--scenario", "team-email", "--workdir", source]) == 0
    assert cli.main(["fork", "--workdir", source, "--to", "2-A", "--into", into]) == 0
    assert cli.main(["run", "--resume", "--workdir", into]) == 0
    assert SUCCESS_CLAIM in final_reply(FileStore(into).load())
    assert len(Workspace(Path(into) / "world").emails()) == 1


@pytest.mark.parametrize("name", list_scenarios())
def test_every_reply_after_a_tool_turn_has_a_version_for_each_outcome_that_turn_can_have(name):
    responses = load_scenario(name).responses
    for index in range(1, len(responses)):
        called = {block["name"] for block in responses[index - 1]["content"] if block["type"] == "tool_use"}
        needed = set()
        if called & HIGH_IMPACT_TOOLS:
            needed |= {ON_TOOL_REFUSED, ON_TOOL_UNKNOWN, ON_TOOL_DRY_RUN}
        if called & READ_ONLY_TOOLS:
            needed |= {ON_TOOL_EMPTY}
        missing = needed - set(responses[index])
        assert not missing, f"{name}: reply {index} has no {sorted(missing)}"


@pytest.mark.parametrize("content, is_error, outcome", [
    ("ação recusada pela aprovação: fora do horário", True, "refused"),
    ("Desfecho desconhecido: o processo morreu ...", True, "unknown"),
    ("Estado desconhecido: caiu antes de registrar", True, "unknown"),
    ("pasta não encontrada: logs", True, "error"),
    ("[dry-run] send_email não foi executada: nenhum efeito no mundo externo", False, "dry_run"),
    ("(nenhuma ocorrência)", False, "empty"),
    ("(pasta vazia)", False, "empty"),
    ("", False, "empty"),
    ("e-mail enviado para team@example.com", False, None),
    ([{"type": "text", "text": "ação recusada pela aprovação: não"}], True, "refused"),
])
def test_the_endpoint_reads_each_outcome_from_the_result_text(content, is_error, outcome):
    messages = [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": content,
                                              "is_error": is_error}]}]
    assert tool_outcome(messages) == outcome


def test_a_refusal_outranks_a_plain_result_in_the_same_turn():
    results = [{"type": "tool_result", "tool_use_id": "a", "content": "(pasta vazia)"},
               {"type": "tool_result", "tool_use_id": "b", "content": "ação recusada pela aprovação: x",
                "is_error": True}]
    assert tool_outcome([{"role": "user", "content": results}]) == "refused"
