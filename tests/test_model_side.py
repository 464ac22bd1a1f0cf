"""The model's side of a long run: errors to retry, cut streams, thinking blocks, the prompt cache, a budget.

The offline endpoint scripts each failure per response (``fail_first``, ``cut_stream``,
thinking blocks, cache accounting) and the real ``anthropic`` client meets them over HTTP;
the harness (harness/model_errors.py, model_stream.py, token_budget.py, resilient_loop.py)
handles them. Each test names the wrong implementation it would catch.
"""
from __future__ import annotations

import json

import anthropic
import httpx2
import pytest

import harness.loop as loop
import harness.resilient_loop as resilient_loop
from harness.checkpoint import load_checkpoint
from harness.crash import SimulatedCrash
from harness.endpoint_thinking import sign
from harness.fake_endpoint import ScriptedEndpoint
from harness.model_errors import MAX_MODEL_ATTEMPTS, MAX_RETRY_WAIT, ModelUnavailable, call_with_retries
from harness.model_stream import stream_model, with_cache_breakpoint
from harness.resilient_loop import new_budgeted_state, resume_run, run_agent
from harness.scenarios import load_scenario
from harness.tools import TOOL_SCHEMAS, execute_tool, use_workspace

TASK = "Quais anotações existem na pasta notes?"
LIST = {"type": "tool_use", "id": "toolu_01LS1", "name": "list_dir", "input": {"path": "notes"}}
THOUGHT = {"type": "thinking", "thinking": "Preciso ver a pasta antes de responder."}
DONE = {"content": [{"type": "text", "text": "Há duas anotações."}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 30, "output_tokens": 12}}


def tool_turn(**extra):
    return {"content": [THOUGHT, LIST], "stop_reason": "tool_use", "usage": {"input_tokens": 20, "output_tokens": 40},
            **extra}


@pytest.fixture
def notes(tmp_path):
    use_workspace(load_scenario("meeting-notes").make_workspace(tmp_path / "mundo"))
    return tmp_path


def raw_client(endpoint):
    return endpoint.client()  # max_retries=0: the SDK itself never retries here


def create(client, messages=None, **extra):
    return client.messages.create(model="claude-haiku-4-5", max_tokens=512, tools=TOOL_SCHEMAS,
                                  messages=messages or [{"role": "user", "content": TASK}], **extra)


# --- The endpoint scripts each failure ---------------------------------------------------------

@pytest.mark.parametrize("status, error", [(429, anthropic.RateLimitError), (529, anthropic.OverloadedError),
                                           (500, anthropic.InternalServerError)])
def test_scripted_errors_are_served_n_times_with_retry_after_then_the_answer(status, error):
    endpoint = ScriptedEndpoint([{**DONE, "fail_first": [{"status": status, "retry_after": 3, "times": 2}]}])
    client = raw_client(endpoint)
    for _ in range(2):
        with pytest.raises(error) as raised:
            create(client)
        assert raised.value.status_code == status
        assert raised.value.response.headers["retry-after"] == "3"
    assert create(client).stop_reason == "end_turn"
    assert len(endpoint.requests) == 3


def test_an_unknown_scripted_status_is_refused_when_loaded():
    with pytest.raises(ValueError, match="fail_first"):
        ScriptedEndpoint([{**DONE, "fail_first": [{"status": 418}]}])


def test_a_cut_stream_drops_inside_the_tool_use_before_message_stop():
    endpoint = ScriptedEndpoint([tool_turn(cut_stream=True)])
    client = raw_client(endpoint)
    events = []
    # Newer 2.x SDKs wrap the transport error in APIConnectionError; older ones let it through.
    with pytest.raises((httpx2.TransportError, anthropic.APIConnectionError)) as raised:
        with client.messages.stream(model="claude-haiku-4-5", max_tokens=512, tools=TOOL_SCHEMAS,
                                    messages=[{"role": "user", "content": TASK}]) as stream:
            for event in stream:
                events.append(event.type)
    drop = raised.value if isinstance(raised.value, httpx2.TransportError) else raised.value.__cause__
    assert isinstance(drop, httpx2.RemoteProtocolError) and "cortado pelo roteiro" in str(drop)
    assert "content_block_start" in events and "message_stop" not in events
    # The same request again gets the whole answer (stream=True through create, too).
    kinds = [event.type for event in create(client, stream=True)]
    assert kinds[-1] == "message_stop"


def test_thinking_blocks_come_signed_and_must_come_back_unchanged():
    endpoint = ScriptedEndpoint([tool_turn(), DONE])
    client = raw_client(endpoint)
    first = create(client)
    thought = first.content[0].model_dump()
    assert thought["signature"] == sign(THOUGHT["thinking"])
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": LIST["id"], "content": "a.md"}]}

    def ask(assistant_content):
        return create(client, [{"role": "user", "content": TASK}, {"role": "assistant", "content": assistant_content},
                               result])

    altered = {**thought, "thinking": thought["thinking"] + " "}
    with pytest.raises(anthropic.BadRequestError, match="Invalid `signature`"):
        ask([altered, LIST])
    with pytest.raises(anthropic.BadRequestError, match="must start with a thinking block"):
        ask([LIST])  # the harness that keeps only text and tool_use
    assert ask([thought, LIST]).stop_reason == "end_turn"


def test_only_the_last_tool_turn_must_keep_its_thinking():
    second = {"content": [THOUGHT, {**LIST, "id": "toolu_01LS2"}], "stop_reason": "tool_use",
              "usage": {"input_tokens": 1, "output_tokens": 1}}
    endpoint = ScriptedEndpoint([tool_turn(), second, DONE])
    client = raw_client(endpoint)
    signed_thought = {**THOUGHT, "signature": sign(THOUGHT["thinking"])}

    def result(call_id):
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "a.md"}]}
    messages = [{"role": "user", "content": TASK}, {"role": "assistant", "content": [LIST]}, result(LIST["id"]),
                {"role": "assistant", "content": [signed_thought, {**LIST, "id": "toolu_01LS2"}]}, result("toolu_01LS2")]
    assert create(client, messages).stop_reason == "end_turn"


def usage_of(client, messages):
    return create(client, with_cache_breakpoint(messages)).usage


def test_the_cache_hits_a_repeated_prefix_and_misses_a_changed_one():
    endpoint = ScriptedEndpoint([DONE] * 3)
    client = raw_client(endpoint)
    start = [{"role": "user", "content": TASK}]
    first = usage_of(client, start)
    assert first.cache_read_input_tokens == 0 and first.cache_creation_input_tokens > 0
    again = usage_of(client, start)  # a resume that sends the same conversation
    assert again.cache_read_input_tokens == first.cache_creation_input_tokens
    assert again.cache_creation_input_tokens == 0
    forked = usage_of(client, [{"role": "user", "content": TASK + " E na pasta drafts?"}])  # a fork with a new task
    assert forked.cache_read_input_tokens == 0 and forked.cache_creation_input_tokens > 0


def test_a_rewind_keeps_the_hit_only_up_to_where_the_conversation_changes():
    endpoint = ScriptedEndpoint([tool_turn(), {**DONE, "stop_reason": "end_turn"}, DONE, DONE])
    client = raw_client(endpoint)
    assistant = {"role": "assistant", "content": [{**THOUGHT, "signature": sign(THOUGHT["thinking"])}, LIST]}
    turn_one = [{"role": "user", "content": TASK}]
    usage_of(client, turn_one)
    original = [*turn_one, assistant,
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": LIST["id"], "content": "a.md"}]}]
    full = usage_of(client, original)
    branch = [*turn_one, assistant, {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": LIST["id"], "content": "a.md, b.md"}]}]
    rewound = usage_of(client, branch)
    assert 0 < rewound.cache_read_input_tokens < full.cache_read_input_tokens + full.cache_creation_input_tokens
    assert rewound.cache_creation_input_tokens > 0


def test_without_a_cache_marker_the_scripted_usage_stands():
    client = raw_client(ScriptedEndpoint([DONE]))
    usage = create(client).usage
    assert usage.input_tokens == 30 and not usage.cache_read_input_tokens


# --- The harness handles them ------------------------------------------------------------------

def test_retries_are_bounded_recorded_and_honour_retry_after_under_a_ceiling():
    endpoint = ScriptedEndpoint([{**DONE, "fail_first": [{"status": 429, "retry_after": 2},
                                                        {"status": 529, "retry_after": 600}, {"status": 500}]}])
    state, waits = new_budgeted_state(TASK), []
    client = endpoint.client()
    message = call_with_retries(state, lambda: stream_model(client, state["messages"]), sleep=waits.append)
    assert message.stop_reason == "end_turn"
    assert waits == [2.0, MAX_RETRY_WAIT, 2.0]  # the header, the ceiling, then doubling without a header
    assert [(r["status"], r["retry_after"], r["waited"]) for r in state["model_retries"]] == [
        (429, "2", 2.0), (529, "600", MAX_RETRY_WAIT), (500, None, 2.0)]


def test_an_endless_overload_stops_the_run_paused_after_the_last_attempt(notes):
    endpoint = ScriptedEndpoint([{**DONE, "fail_first": [{"status": 529, "times": 50}]}])
    checkpoint = notes / "checkpoint.json"
    state = run_agent(endpoint.client(), new_budgeted_state(TASK), checkpoint, sleep=lambda s: None)
    assert len(endpoint.requests) == MAX_MODEL_ATTEMPTS
    assert state["status"] == "paused" and "4 tentativas" in state["status_reason"]
    saved = load_checkpoint(checkpoint)
    assert saved["status"] == "paused" and len(saved["model_retries"]) == MAX_MODEL_ATTEMPTS
    assert saved["turns"] == 0  # no answer came: the turn never happened


def test_a_400_is_never_retried(notes):
    endpoint = ScriptedEndpoint([tool_turn(), DONE])
    state = new_budgeted_state(TASK)
    state["messages"].append({"role": "assistant", "content": [LIST]})  # an orphan tool_use: the API says 400
    state["messages"].append({"role": "user", "content": "continue"})
    result = run_agent(endpoint.client(), state, notes / "checkpoint.json", sleep=lambda s: None)
    assert len(endpoint.requests) == 1 and result["model_retries"] == []
    assert result["status"] == "failed" and "400" in result["status_reason"]
    with pytest.raises(anthropic.BadRequestError):
        call_with_retries({"turns": 0}, lambda: create(endpoint.client(), state["messages"]))


def test_a_cut_streams_partial_tool_use_never_runs_and_the_turn_is_asked_again(notes, monkeypatch):
    ran = []

    def spy(name, input_, idempotency_key=None):
        ran.append((name, input_))
        return execute_tool(name, input_, idempotency_key)
    monkeypatch.setattr(loop, "execute_tool", spy)
    endpoint = ScriptedEndpoint([tool_turn(cut_stream=True), DONE])
    state = run_agent(endpoint.client(), new_budgeted_state(TASK), notes / "checkpoint.json", sleep=lambda s: None)
    assert state["status"] == "completed"
    assert ran == [("list_dir", {"path": "notes"})]  # once, with the whole input
    assert [r["status"] for r in state["model_retries"]] == ["stream_cut"]
    assert state["turns"] == 2 and len(endpoint.requests) == 3
    assert json.dumps(endpoint.requests[0]["messages"]) == json.dumps(endpoint.requests[1]["messages"])


def test_thinking_blocks_survive_the_checkpoint_byte_for_byte_and_go_back(notes, monkeypatch):
    checkpoint = notes / "checkpoint.json"

    def crash(tool_uses):
        raise SimulatedCrash("queda depois do ponto A")
    monkeypatch.setattr(resilient_loop, "answer_tool_uses", crash)
    with pytest.raises(SimulatedCrash):
        run_agent(ScriptedEndpoint([tool_turn(), DONE]).client(), new_budgeted_state(TASK), checkpoint)
    saved = load_checkpoint(checkpoint)
    block = saved["messages"][1]["content"][0]
    assert block == {"type": "thinking", "thinking": THOUGHT["thinking"], "signature": sign(THOUGHT["thinking"])}
    monkeypatch.undo()
    fresh = ScriptedEndpoint([tool_turn(), DONE])  # a new process, a new endpoint, the same script
    state = resume_run(fresh.client(), checkpoint)
    assert state["status"] == "completed"
    sent = fresh.requests[-1]["messages"][1]["content"][0]
    assert sent == block


def test_the_checkpoint_never_keeps_the_cache_marker(notes):
    checkpoint = notes / "checkpoint.json"
    endpoint = ScriptedEndpoint([tool_turn(), DONE])
    run_agent(endpoint.client(), new_budgeted_state(TASK), checkpoint)
    assert "cache_control" not in checkpoint.read_text(encoding="utf-8")
    assert "cache_control" in json.dumps(endpoint.requests[-1]["messages"][-1])
    assert endpoint.requests[-1]["stream"] is True


def test_the_token_budget_stops_the_run_and_survives_a_crash_and_resume(notes, monkeypatch):
    checkpoint = notes / "checkpoint.json"
    script = [tool_turn(), tool_turn(), DONE]
    script[1] = {**script[1], "content": [{**THOUGHT}, {**LIST, "id": "toolu_01LS2"}]}
    first_cost = None

    def crash(tool_uses):
        raise SimulatedCrash("queda no turno 1")
    monkeypatch.setattr(resilient_loop, "answer_tool_uses", crash)
    with pytest.raises(SimulatedCrash):
        run_agent(ScriptedEndpoint(script).client(), new_budgeted_state(TASK, token_budget=1), checkpoint)
    monkeypatch.undo()
    first_cost = load_checkpoint(checkpoint)["tokens_used"]
    assert first_cost >= 1
    # A resume that forgets the budget still has it: it lives in the checkpoint.
    endpoint = ScriptedEndpoint(script)
    state = resume_run(endpoint.client(), checkpoint)
    assert state["status"] == "paused" and "orçamento de tokens esgotado" in state["status_reason"]
    assert len(endpoint.requests) == 0 and state["token_budget"] == 1
    assert load_checkpoint(checkpoint)["status"] == "paused"
    # A larger budget, given on purpose, lets it finish.
    done = resume_run(ScriptedEndpoint(script).client(), checkpoint, token_budget=100_000)
    assert done["status"] == "completed" and done["tokens_used"] > first_cost


def test_cache_tokens_count_against_the_budget(notes):
    endpoint = ScriptedEndpoint([DONE])
    state = run_agent(endpoint.client(), new_budgeted_state(TASK), notes / "checkpoint.json")
    usage = load_checkpoint(notes / "checkpoint.json")["tokens_used"]
    assert usage > DONE["usage"]["output_tokens"]  # the cache write counted, not only input_tokens
    assert state["tokens_used"] == usage


def test_model_unavailable_names_the_last_status():
    with pytest.raises(ModelUnavailable, match="529"):
        endpoint = ScriptedEndpoint([{**DONE, "fail_first": [{"status": 529, "times": 9}]}])
        client = endpoint.client()
        call_with_retries({"turns": 0}, lambda: stream_model(client, [{"role": "user", "content": TASK}]),
                          sleep=lambda s: None)


def test_the_durable_runner_keeps_thinking_blocks_across_a_crash_too(tmp_path, monkeypatch):
    # Lesson 6's loop stores each block with model_dump as well: a resume in a new process sends it back.
    from harness.crash import reset_crash_counts
    from harness.runner import run_durable
    from harness.scenarios import Scenario
    scenario = Scenario("pensando", TASK, [tool_turn(), DONE], {"notes/a.md": "uma nota"})
    monkeypatch.setenv("CRASH_AFTER", "after-save-A:1")
    reset_crash_counts()
    with pytest.raises(SimulatedCrash):
        run_durable(ScriptedEndpoint(scenario.responses).client(), tmp_path / "run", scenario)
    monkeypatch.delenv("CRASH_AFTER")
    reset_crash_counts()
    fresh = ScriptedEndpoint(scenario.responses)
    state = run_durable(fresh.client(), tmp_path / "run", scenario, resume=True)
    assert state["status"] == "completed"
    assert fresh.requests[-1]["messages"][1]["content"][0] == {**THOUGHT, "signature": sign(THOUGHT["thinking"])}


def test_the_durable_runner_stops_at_the_budget_in_its_scene_and_a_resume_keeps_it(tmp_path):
    from harness.runner import run_durable
    from harness.scenarios import Scenario
    scenario = Scenario("orcamento", TASK, [tool_turn(), tool_turn(), DONE], {"notes/a.md": "uma nota"})
    scenario.responses[1] = {**scenario.responses[1], "content": [THOUGHT, {**LIST, "id": "toolu_01LS2"}]}
    run_dir = tmp_path / "run"
    state = run_durable(ScriptedEndpoint(scenario.responses).client(), run_dir, scenario, token_budget=60)
    assert state["status"] == "paused" and "orçamento de tokens esgotado: 60 usados de 60" in state["status_reason"]
    assert state["turns"] == 1  # 20 + 40 tokens: the second turn was never asked for
    # A resume that says nothing about the budget finds it in the scene and stops before any request.
    again = ScriptedEndpoint(scenario.responses)
    state = run_durable(again.client(), run_dir, scenario, resume=True)
    assert state["status"] == "paused" and len(again.requests) == 0 and state["recovery_attempts"] == 0
    # A larger budget, given on purpose, lets it go on to the end.
    done = run_durable(ScriptedEndpoint(scenario.responses).client(), run_dir, scenario, resume=True,
                       token_budget=10_000)
    assert done["status"] == "completed" and done["token_budget"] == 10_000 and done["turns"] == 3


def test_a_run_without_a_budget_is_never_stopped_by_one(tmp_path):
    from harness.runner import run_durable
    from harness.scenarios import Scenario
    scenario = Scenario("sem-orcamento", TASK, [tool_turn(), DONE], {"notes/a.md": "uma nota"})
    state = run_durable(ScriptedEndpoint(scenario.responses).client(), tmp_path / "run", scenario)
    assert state["status"] == "completed" and "token_budget" not in state


def test_the_command_line_takes_a_token_budget_and_exits_paused(tmp_path, capsys):
    from harness import cli
    from harness.exit_codes import EXIT_CODES
    run_dir = str(tmp_path / "notas")
    code = cli.main(["run", "--scenario", "meeting-notes", "--workdir", run_dir, "--token-budget", "100"])
    out = capsys.readouterr().out
    assert code == EXIT_CODES["paused"] and "orçamento de tokens esgotado" in out, out
    assert cli.main(["run", "--workdir", run_dir, "--resume", "--token-budget", "100000"]) == EXIT_CODES["completed"]
