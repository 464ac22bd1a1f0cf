"""The agent loop (lessons 1-2) and resuming from a checkpoint with reconcile (lesson 3)."""
from __future__ import annotations

import pytest

import harness.checkpointed_loop as checkpointed_loop
import harness.loop as loop
import harness.resume as resume
from harness.checkpoint import load_checkpoint
from harness.crash import SimulatedCrash
from harness.fake_endpoint import make_stub_client, validate_messages
from harness.loop import new_run_state, run_agent
from harness.resume import reconcile, resume_action, resume_run
from harness.scenarios import load_scenario, reading_loop_responses
from harness.tools import execute_tool, use_workspace


@pytest.fixture
def world(tmp_path):
    def make(name):
        scenario = load_scenario(name)
        workspace = use_workspace(scenario.make_workspace(tmp_path / "mundo"))
        return scenario, workspace
    return make


def spy_tools(monkeypatch, crash_after=None):
    """Count executions per tool; optionally crash right after a given tool has run."""
    calls = []

    def spy(name, input_, idempotency_key=None):
        calls.append(name)
        result = execute_tool(name, input_, idempotency_key)
        if name == crash_after:
            raise SimulatedCrash(f"queda depois de {name}")
        return result

    monkeypatch.setattr(loop, "execute_tool", spy)
    monkeypatch.setattr(resume, "execute_tool", spy)
    return calls


def test_in_memory_loop_answers_every_tool_use_results_first(world):
    scenario, _ = world("meeting-notes")
    client = make_stub_client(scenario.responses)
    state = run_agent(client, scenario.task)
    assert state["turns"] == 3
    assert state["tokens_used"] == sum(r["usage"]["input_tokens"] + r["usage"]["output_tokens"] for r in scenario.responses)
    two_tools_answer = state["messages"][4]["content"]
    assert [b["tool_use_id"] for b in two_tools_answer] == ["toolu_01MN2", "toolu_01MN3"]
    assert all(validate_messages(request["messages"]) is None for request in client.stub_endpoint.requests)


def test_max_turns_stops_a_model_that_never_ends(world):
    world("meeting-notes")
    client = make_stub_client(reading_loop_responses(100))
    state = run_agent(client, "olhe a pasta", max_turns=7)
    assert state["turns"] == 7 and len(client.stub_endpoint.requests) == 7


def test_save_points_a_and_b(world, tmp_path, monkeypatch):
    scenario, _ = world("team-email")
    snapshots = []
    real_save = checkpointed_loop.save_checkpoint
    monkeypatch.setattr(checkpointed_loop, "save_checkpoint",
                        lambda state, path: (snapshots.append(load_after(real_save, state, path))))
    checkpointed_loop.run_agent(make_stub_client(scenario.responses), new_run_state(scenario.task), tmp_path / "cp.json")
    kinds = [(s["messages"][-1]["role"], bool(s["pending_tool_use"])) for s in snapshots]
    assert kinds == [("assistant", True), ("user", False), ("assistant", True), ("user", False), ("assistant", False)]


def load_after(real_save, state, path):
    real_save(state, path)
    return load_checkpoint(path)


def crash_then_resume(world, tmp_path, monkeypatch, scenario_name, crash_after_tool):
    scenario, workspace = world(scenario_name)
    checkpoint = tmp_path / "checkpoint.json"
    calls = spy_tools(monkeypatch, crash_after=crash_after_tool)
    with pytest.raises(SimulatedCrash):
        checkpointed_loop.run_agent(make_stub_client(scenario.responses), new_run_state(scenario.task), checkpoint)
    crashed = load_checkpoint(checkpoint)
    calls_before = list(calls)
    spy_tools(monkeypatch)  # the resumed process does not crash
    calls_after = []
    monkeypatch.setattr(resume, "execute_tool", lambda n, i, k=None: (calls_after.append(n), execute_tool(n, i, k))[1])
    client = make_stub_client(scenario.responses)
    final = resume_run(client, checkpoint)
    return crashed, calls_before, calls_after, final, client, workspace


def test_resume_with_read_file_pending_reruns_it_exactly_once(world, tmp_path, monkeypatch):
    crashed, before, after, final, client, _ = crash_then_resume(world, tmp_path, monkeypatch, "team-email", "read_file")
    assert [c["name"] for c in crashed["pending_tool_use"]] == ["read_file"]
    assert before == ["read_file"] and after == ["read_file"]
    assert final["turns"] == 3 and final["messages"][-1]["role"] == "assistant"
    assert all(validate_messages(r["messages"]) is None for r in client.stub_endpoint.requests)


def test_resume_with_send_email_pending_keeps_one_email_and_tells_the_model(world, tmp_path, monkeypatch):
    crashed, _, after, final, client, workspace = crash_then_resume(world, tmp_path, monkeypatch, "team-email", "send_email")
    assert [c["name"] for c in crashed["pending_tool_use"]] == ["send_email"]
    assert after == []  # send_email is never re-run
    assert len(workspace.emails()) == 1
    first_request_after_resume = client.stub_endpoint.requests[0]["messages"]
    answer = first_request_after_resume[-1]["content"][0]
    assert answer["tool_use_id"] == crashed["pending_tool_use"][0]["id"] and answer["is_error"] is True
    assert final["turns"] == 3 and final["tokens_used"] > crashed["tokens_used"]


def test_resume_action_and_reconcile_by_tool_nature(world):
    world("team-email")
    cp = {"version": 1, "task": "t", "turns": 4, "tokens_used": 99, "pending_tool_use": [
        {"id": "toolu_R", "name": "read_file", "input": {"path": "notes/conclusoes.md"}},
        {"id": "toolu_S", "name": "send_email", "input": {"to": "a@example.com", "subject": "s"}}],
        "messages": [{"role": "user", "content": "t"}, {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_R", "name": "read_file", "input": {"path": "notes/conclusoes.md"}},
            {"type": "tool_use", "id": "toolu_S", "name": "send_email", "input": {"to": "a@example.com", "subject": "s"}}]}]}
    assert resume_action(cp) == {"toolu_R": "rerun", "toolu_S": "is_error"}
    reconcile(cp)
    assert cp["pending_tool_use"] is None and (cp["turns"], cp["tokens_used"]) == (4, 99)
    read, send = cp["messages"][-1]["content"]
    assert read["is_error"] is False and "Conclusões" in read["content"]
    assert send["is_error"] is True and "desconhecido" in send["content"]
    assert validate_messages(cp["messages"]) is None
    assert resume_action({"pending_tool_use": None}) == {}


def test_turns_survive_repeated_crashes_so_max_turns_still_stops(world, tmp_path, monkeypatch):
    world("meeting-notes")
    checkpoint = tmp_path / "checkpoint.json"
    responses = reading_loop_responses(100)
    spy_tools(monkeypatch, crash_after="list_dir")  # every loop turn crashes after its tool ran
    monkeypatch.setattr(resume, "execute_tool", execute_tool)  # reconcile's re-run itself succeeds
    with pytest.raises(SimulatedCrash):
        checkpointed_loop.run_agent(make_stub_client(responses), new_run_state("olhe"), checkpoint, max_turns=6)
    resumes = 0
    while True:
        try:
            final = resume_run(make_stub_client(responses), checkpoint, max_turns=6)
            break
        except SimulatedCrash:
            resumes += 1
            assert resumes < 20, "the run never stopped: turns were reset on resume"
    assert final["turns"] == 6 and resumes == 5


def test_resume_of_a_finished_run_does_not_call_the_model(world, tmp_path):
    scenario, _ = world("team-email")
    checkpoint = tmp_path / "checkpoint.json"
    checkpointed_loop.run_agent(make_stub_client(scenario.responses), new_run_state(scenario.task), checkpoint)
    client = make_stub_client(scenario.responses)
    assert resume_run(client, checkpoint)["turns"] == 3
    assert client.stub_endpoint.requests == []
