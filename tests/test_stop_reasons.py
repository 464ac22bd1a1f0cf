"""Every stop_reason the Messages API documents, through the offline endpoint and every loop.

end_turn and stop_sequence complete the task; tool_use runs the tools; pause_turn sends the
assistant content back and the model continues; refusal ends with its own status; max_tokens
(and model_context_window_exceeded) never executes a cut tool_use: the loops of lessons 1-5
end as failed with the reason, the durable runner pauses so that a resume with a larger
--max-tokens sends the same request again.
"""
from __future__ import annotations

import copy

import anthropic
import pytest

from harness import checkpointed_loop, cli
from harness.checkpoint import save_checkpoint
from harness.effects import EFFECTS_FILE
from harness.exit_codes import EXIT_CODES
from harness.fake_endpoint import cut_at_limit, expand_response, make_stub_client, validate_messages
from harness.lifecycle import CHECKPOINT_FILE, load_run_checkpoint
from harness.loop import call_model, new_run_state, run_agent
from harness.model import MAX_TOKENS
from harness.resume import resume_run
from harness.runner import WORLD_DIR, run_durable
from harness.scenarios import load_scenario
from harness.timeline import list_points, run_timeline, start_timeline
from harness.tool_runner import ToolContext, run_agent_with_effects
from harness.tools import Workspace, workspace_in_use

TEAM_EMAIL = load_scenario("team-email")
READ, SEND, DONE = copy.deepcopy(TEAM_EMAIL.responses)
USAGE = {"input_tokens": 100, "output_tokens": 20}


def cut_send(stop_reason="max_tokens"):
    """The send_email turn cut off mid-input: the body never arrived."""
    response = copy.deepcopy(SEND)
    response["content"][1]["input"] = {"to": "team@example.com"}
    response.update(stop_reason=stop_reason, usage={"input_tokens": 611, "output_tokens": MAX_TOKENS})
    return response


def text(words, stop_reason, **extra):
    return {"content": [{"type": "text", "text": words}], "stop_reason": stop_reason, "usage": dict(USAGE), **extra}


PAUSED = text("Ainda reunindo o que preciso; continuo em seguida.", "pause_turn")
REFUSED = {"content": [{"type": "text", "text": "Não posso ajudar com isso."},
                       {"type": "tool_use", "id": "toolu_01RF", "name": "send_email",
                        "input": {"to": "todos@example.com", "subject": "x", "body": "y"}}],
           "stop_reason": "refusal", "usage": dict(USAGE)}
STOPPED = text("Conclusões enviadas. FIM", "stop_sequence", stop_sequence="FIM")


@pytest.fixture
def world(tmp_path):
    workspace = TEAM_EMAIL.make_workspace(tmp_path / "world")
    with workspace_in_use(workspace):
        yield workspace


# --- the endpoint scripts each stop reason ---------------------------------------------------

@pytest.mark.parametrize("response", [READ, DONE, STOPPED, PAUSED, REFUSED, cut_send(),
                                      cut_send("model_context_window_exceeded")],
                         ids=["tool_use", "end_turn", "stop_sequence", "pause_turn", "refusal", "max_tokens",
                              "model_context_window_exceeded"])
def test_the_endpoint_serves_each_stop_reason_through_the_real_sdk(response):
    reply = call_model(make_stub_client([response]), [{"role": "user", "content": "oi"}])
    assert isinstance(reply, anthropic.types.Message)
    assert reply.stop_reason == response["stop_reason"]
    assert [block.type for block in reply.content] == [block["type"] for block in response["content"]]


def test_a_response_longer_than_the_requests_limit_arrives_cut_with_half_a_tool_use():
    long_send = copy.deepcopy(SEND)
    long_send["usage"]["output_tokens"] = 3000
    conversation = [{"role": "user", "content": "oi"}]
    cut = call_model(make_stub_client([long_send]), conversation, max_tokens=1024)
    assert cut.stop_reason == "max_tokens" and cut.usage.output_tokens == 1024
    block = cut.content[-1]
    assert block.type == "tool_use" and "body" not in block.input  # the body was cut off
    assert block.input.items() <= long_send["content"][1]["input"].items()
    whole = call_model(make_stub_client([long_send]), conversation, max_tokens=4096)
    assert whole.stop_reason == "tool_use" and whole.content[-1].input == long_send["content"][1]["input"]


@pytest.mark.parametrize("limit", [1, 40, 300, 1000, 5000, 9999])
def test_a_cut_answer_is_a_prefix_of_the_whole_one(limit):
    whole = expand_response({**copy.deepcopy(SEND), "usage": {"input_tokens": 1, "output_tokens": 10_000}}, 0)
    cut = cut_at_limit(whole, limit)
    assert cut == cut_at_limit(whole, limit)  # deterministic
    assert cut["stop_reason"] == "max_tokens" and cut["usage"]["output_tokens"] == limit
    blocks = cut["content"]
    assert len(blocks) <= len(whole["content"])
    assert blocks[:-1] == whole["content"][: max(len(blocks) - 1, 0)]  # only the last block may be partial
    if blocks:
        last, original = blocks[-1], whole["content"][len(blocks) - 1]
        if last["type"] == "text":
            assert original["text"].startswith(last["text"])
        else:
            assert last["input"].items() <= original["input"].items() and "body" not in last["input"]
    assert cut_at_limit(whole, 10_000) is whole


def test_a_request_without_a_valid_max_tokens_is_refused():
    client = make_stub_client([DONE])
    with pytest.raises(anthropic.BadRequestError, match="max_tokens"):
        client.messages.create(model="claude-haiku-4-5", max_tokens=0, messages=[{"role": "user", "content": "oi"}])


# --- lesson 1: the loop in memory ---------------------------------------------------------------

def test_end_turn_completes(world):
    state = run_agent(make_stub_client([READ, SEND, DONE]), TEAM_EMAIL.task)
    assert (state["status"], state["turns"], len(world.emails())) == ("completed", 3, 1)
    assert state["status_reason"] == "o modelo encerrou (end_turn)"


def test_stop_sequence_completes_and_says_which_sequence(world):
    state = run_agent(make_stub_client([READ, STOPPED]), TEAM_EMAIL.task)
    assert state["status"] == "completed" and "'FIM'" in state["status_reason"]
    assert state["messages"][-1]["content"][0]["text"].endswith("FIM")


def test_pause_turn_sends_the_content_back_and_the_model_continues(world):
    client = make_stub_client([READ, PAUSED, SEND, DONE])
    state = run_agent(client, TEAM_EMAIL.task)
    assert state["status"] == "completed" and state["turns"] == 4 and len(world.emails()) == 1
    after_pause = client.stub_endpoint.requests[2]["messages"]
    assert after_pause[-1] == {"role": "assistant", "content": PAUSED["content"]}  # sent back as it came
    assert validate_messages(state["messages"]) is None


def test_refusal_ends_with_its_own_status_and_runs_nothing(world):
    client = make_stub_client([READ, REFUSED])
    state = run_agent(client, TEAM_EMAIL.task)
    assert state["status"] == "refused" and "refusal" in state["status_reason"]
    assert world.emails() == []
    assert state["messages"] == client.stub_endpoint.requests[-1]["messages"]  # the refused answer stays out
    assert validate_messages(state["messages"]) is None


@pytest.mark.parametrize("stop_reason", ["max_tokens", "model_context_window_exceeded"])
def test_a_cut_tool_use_is_never_executed(world, stop_reason):
    client = make_stub_client([READ, cut_send(stop_reason), DONE])
    state = run_agent(client, TEAM_EMAIL.task)
    assert world.emails() == []
    assert state["status"] == "failed"
    assert stop_reason in state["status_reason"] and "send_email ficou pela metade" in state["status_reason"]
    assert len(client.stub_endpoint.requests) == 2  # nothing after the cut
    assert state["messages"] == client.stub_endpoint.requests[-1]["messages"]  # the cut answer stays out
    assert state["tokens_used"] == 398 + 41 + 611 + MAX_TOKENS  # the cut call still cost its tokens


def test_an_unknown_stop_reason_stops_without_running_anything(world, monkeypatch):
    client = make_stub_client([SEND])
    served = client.messages.create

    def from_a_newer_api(**request):
        return served(**request).model_copy(update={"stop_reason": "novidade"})

    monkeypatch.setattr(client.messages, "create", from_a_newer_api)
    state = run_agent(client, TEAM_EMAIL.task)
    assert state["status"] == "failed" and "novidade" in state["status_reason"]
    assert world.emails() == [] and state["messages"] == [{"role": "user", "content": TEAM_EMAIL.task}]


def test_the_turn_ceiling_leaves_the_run_running(world):
    state = run_agent(make_stub_client([READ, SEND, DONE]), TEAM_EMAIL.task, max_turns=1)
    assert state["status"] == "running" and state["turns"] == 1  # the ceiling, not the model, stopped it


# --- lessons 2-5: the same rule in every loop ---------------------------------------------------

def lesson2(client, tmp_path):
    return checkpointed_loop.run_agent(client, new_run_state(TEAM_EMAIL.task), tmp_path / CHECKPOINT_FILE)


def lesson4(client, tmp_path):
    context = ToolContext(effects_path=tmp_path / EFFECTS_FILE)
    return run_agent_with_effects(client, new_run_state(TEAM_EMAIL.task), tmp_path / CHECKPOINT_FILE, context)


def lesson5(client, tmp_path):
    start_timeline(tmp_path / "run", new_run_state(TEAM_EMAIL.task))
    return run_timeline(client, tmp_path / "run")


LOOPS = pytest.mark.parametrize("loop", [lesson2, lesson4, lesson5], ids=["lesson2", "lesson4", "lesson5"])


@LOOPS
def test_every_loop_refuses_to_run_a_cut_tool_use(loop, world, tmp_path):
    state = loop(make_stub_client([READ, cut_send(), DONE]), tmp_path)
    assert state["status"] == "failed" and world.emails() == []
    assert state["pending_tool_use"] is None and validate_messages(state["messages"]) is None


@LOOPS
def test_every_loop_continues_a_paused_turn(loop, world, tmp_path):
    state = loop(make_stub_client([READ, PAUSED, SEND, DONE]), tmp_path)
    assert state["status"] == "completed" and state["turns"] == 4 and len(world.emails()) == 1


@LOOPS
def test_every_loop_stops_on_a_refusal(loop, world, tmp_path):
    state = loop(make_stub_client([READ, REFUSED, DONE]), tmp_path)
    assert state["status"] == "refused" and world.emails() == [] and state["turns"] == 2


def test_lesson5_points_of_a_paused_turn_have_no_pending_call(world, tmp_path):
    lesson5(make_stub_client([READ, PAUSED, SEND, DONE]), tmp_path)
    names = [path.name for path in list_points(tmp_path / "run")]
    assert names == ["turn-001-A.json", "turn-001-B.json", "turn-002-A.json", "turn-003-A.json",
                     "turn-003-B.json", "turn-004-A.json"]


def test_resume_continues_a_paused_turn_instead_of_calling_the_task_finished(world, tmp_path):
    """Lesson 3: a crash right after the pause_turn answer was saved is not the end of the task."""
    checkpoint = tmp_path / CHECKPOINT_FILE
    state = checkpointed_loop.run_agent(make_stub_client([READ, PAUSED]), new_run_state(TEAM_EMAIL.task),
                                        checkpoint, max_turns=2)
    assert state["messages"][-1]["role"] == "assistant" and state["pending_tool_use"] is None
    resumed = resume_run(make_stub_client([READ, PAUSED, SEND, DONE]), checkpoint)
    assert resumed["status"] == "completed" and resumed["turns"] == 4 and len(world.emails()) == 1


@pytest.mark.parametrize("status", ["completed", "refused", "failed"])
def test_resume_leaves_an_ended_run_alone(world, tmp_path, status):
    checkpoint = tmp_path / CHECKPOINT_FILE
    save_checkpoint({**new_run_state(TEAM_EMAIL.task), "status": status}, checkpoint)
    client = make_stub_client([SEND, DONE])
    assert resume_run(client, checkpoint)["status"] == status
    assert client.stub_endpoint.requests == [] and world.emails() == []


def test_resume_of_a_scene_without_status_uses_the_conversation(world, tmp_path):
    """Checkpoints written before the status field existed still resume as before."""
    checkpoint = tmp_path / CHECKPOINT_FILE
    state = run_agent(make_stub_client([READ, SEND, DONE]), TEAM_EMAIL.task)
    for field in ("status", "status_reason"):
        del state[field]
    save_checkpoint(state, checkpoint)
    client = make_stub_client([])
    assert resume_run(client, checkpoint)["turns"] == 3 and client.stub_endpoint.requests == []


# --- lesson 6: the durable runner ---------------------------------------------------------------

def durable(tmp_path, responses, **options):
    return run_durable(make_stub_client(responses), tmp_path, TEAM_EMAIL, **options)


def test_the_runner_pauses_on_a_cut_answer_and_a_larger_limit_finishes_the_task(tmp_path):
    long_send = copy.deepcopy(SEND)
    long_send["usage"]["output_tokens"] = 3000
    script = [READ, long_send, DONE]
    state = durable(tmp_path, script)
    outbox = Workspace(tmp_path / WORLD_DIR)
    assert state["status"] == "paused" and outbox.emails() == []
    assert "--max-tokens maior que 1024" in state["status_reason"]
    assert state["pending_tool_use"] is None and validate_messages(state["messages"]) is None
    again = run_durable(make_stub_client(script), tmp_path, resume=True)  # the same limit: cut again
    assert again["status"] == "paused" and outbox.emails() == []
    done = run_durable(make_stub_client(script), tmp_path, resume=True, max_tokens=4096)
    assert done["status"] == "completed" and len(outbox.emails()) == 1
    assert done["tokens_used"] == 398 + 41 + 611 + 1024 + 611 + 1024 + 611 + 3000 + sum(DONE["usage"].values())


def test_a_full_context_window_is_not_met_with_a_larger_max_tokens(tmp_path):
    state = durable(tmp_path, [READ, cut_send("model_context_window_exceeded"), DONE])
    assert state["status"] == "paused" and Workspace(tmp_path / WORLD_DIR).emails() == []
    assert "--max-tokens maior que" not in state["status_reason"]
    assert "janela de contexto" in state["status_reason"] and "não resolve" in state["status_reason"]


def test_the_runner_never_executes_a_scripted_cut_tool_use(tmp_path):
    state = durable(tmp_path, [READ, cut_send(), DONE])
    assert state["status"] == "paused" and Workspace(tmp_path / WORLD_DIR).emails() == []
    assert load_run_checkpoint(tmp_path / CHECKPOINT_FILE)["status"] == "paused"


def test_the_runner_ends_a_refused_run_with_its_own_status_and_exit_code(tmp_path, capsys):
    scenario_dir = tmp_path / "run"
    state = durable(scenario_dir, [READ, REFUSED, DONE])
    assert state["status"] == "refused" and Workspace(scenario_dir / WORLD_DIR).emails() == []
    assert EXIT_CODES["refused"] == 14
    again = run_durable(make_stub_client([READ, REFUSED, DONE]), scenario_dir, resume=True)
    assert again["status"] == "refused" and again["turns"] == 2  # final: nothing more is asked


def test_the_runner_continues_a_paused_turn_after_a_crash(tmp_path, monkeypatch):
    from harness.crash import SimulatedCrash, reset_crash_counts

    script = [READ, PAUSED, SEND, DONE]
    reset_crash_counts()
    monkeypatch.setenv("CRASH_AFTER", "after-save-A:2")  # right after the pause_turn answer was saved
    with pytest.raises(SimulatedCrash):
        durable(tmp_path, script)
    monkeypatch.delenv("CRASH_AFTER")
    state = run_durable(make_stub_client(script), tmp_path, resume=True)
    assert state["status"] == "completed" and state["turns"] == 4
    assert len(Workspace(tmp_path / WORLD_DIR).emails()) == 1


def test_the_command_line_takes_a_larger_max_tokens(tmp_path, monkeypatch):
    from harness import scenarios

    long_send = copy.deepcopy(SEND)
    long_send["usage"]["output_tokens"] = 3000
    scenario = copy.copy(TEAM_EMAIL)
    scenario.responses = [READ, long_send, DONE]
    monkeypatch.setattr("harness.cli_run.load_scenario", lambda name: scenario)
    monkeypatch.setattr("harness.cli_args.list_scenarios", lambda: scenarios.list_scenarios())
    workdir = str(tmp_path / "run")
    assert cli.main(["run", "--scenario", "team-email", "--workdir", workdir]) == EXIT_CODES["paused"]
    assert cli.main(["run", "--scenario", "team-email", "--workdir", workdir, "--resume",
                     "--max-tokens", "4096"]) == EXIT_CODES["completed"]
    assert len(Workspace(tmp_path / "run" / WORLD_DIR).emails()) == 1


def test_a_v1_scene_cut_or_refused_migrates_to_paused_not_completed(tmp_path):
    from harness.lifecycle import migrate_v1_to_v2

    for status in ("failed", "refused", "running"):
        scene = {**new_run_state(TEAM_EMAIL.task), "status": status, "turns": 2,
                 "messages": [{"role": "user", "content": "t"}, {"role": "assistant", "content": "pausa"}]}
        assert migrate_v1_to_v2(scene)["status"] == "paused"
    done = {**new_run_state(TEAM_EMAIL.task), "status": "completed", "turns": 1,
            "messages": [{"role": "user", "content": "t"}, {"role": "assistant", "content": "fim"}]}
    assert migrate_v1_to_v2(done)["status"] == "completed"
