"""A fork inherits the parent's receipts for the calls pending at the copied point.

Forking from a point A whose send_email the parent already completed used to start the new line
with a blank ledger in dry-run, so the resumed fork answered "[dry-run] send_email não foi
executada: nenhum efeito no mundo externo" while the email had gone out in the shared world: the
fork told the model something false. The fork now carries the parent's record of each call still
open at the copied point (and only those), and settles them with the real recorded outcome.
"""
from __future__ import annotations

import json
import os

from harness.fake_endpoint import DRY_RUN_MARK, make_stub_client, validate_messages
from harness.loop import new_run_state
from harness.scenarios import load_scenario
from harness.timeline import EFFECTS_FILE, fork_from, run_timeline, start_timeline
from harness.tools import use_workspace
from tests.durability_checks import run_forked

SEND_ID = "toolu_01TE2"  # team-email: turn 1 reads the notes, turn 2 sends the email


def tool_result(messages, tool_use_id):
    return next(block for message in messages if isinstance(message["content"], list)
                for block in message["content"]
                if block.get("type") == "tool_result" and block.get("tool_use_id") == tool_use_id)


def finished_team_email(tmp_path):
    scenario = load_scenario("team-email")
    workspace = use_workspace(scenario.make_workspace(tmp_path / "world"))
    run_dir = tmp_path / "run"
    start_timeline(run_dir, new_run_state(scenario.task))
    run_timeline(make_stub_client(scenario.responses), run_dir)
    assert len(workspace.emails()) == 1
    return scenario, workspace, run_dir


# --- the lesson's fork_from (files) ---------------------------------------------------------

def test_a_fork_from_a_sent_email_inherits_its_receipt_and_says_the_truth(tmp_path):
    scenario, workspace, run_dir = finished_team_email(tmp_path)
    parent_ledger = json.loads((run_dir / EFFECTS_FILE).read_text(encoding="utf-8"))
    fork = tmp_path / "fork"
    fork_from(run_dir, 2, fork, "A")
    ledger = json.loads((fork / EFFECTS_FILE).read_text(encoding="utf-8"))
    assert ledger == {SEND_ID: parent_ledger[SEND_ID]}

    state = run_timeline(make_stub_client(scenario.responses), fork)
    answer = tool_result(state["messages"], SEND_ID)
    assert not answer["content"].startswith(DRY_RUN_MARK), answer["content"]
    assert answer["content"] == parent_ledger[SEND_ID]["result"]["content"]
    assert validate_messages(state["messages"]) is None
    assert len(workspace.emails()) == 1  # the fork sent nothing


def test_only_the_calls_pending_at_the_copied_point_are_inherited(tmp_path):
    _, _, run_dir = finished_team_email(tmp_path)
    # 1-A: only read_file is open; the send_email receipt belongs to a later turn of the parent.
    fork_from(run_dir, 1, tmp_path / "at-1a", "A")
    assert json.loads((tmp_path / "at-1a" / EFFECTS_FILE).read_text(encoding="utf-8")) == {}
    # 2-B: nothing is open any more.
    fork_from(run_dir, 2, tmp_path / "at-2b", "B")
    assert json.loads((tmp_path / "at-2b" / EFFECTS_FILE).read_text(encoding="utf-8")) == {}


def test_a_call_the_parent_never_started_is_still_settled_in_dry_run(tmp_path):
    scenario, workspace, run_dir = finished_team_email(tmp_path)
    (run_dir / EFFECTS_FILE).write_text("{}", encoding="utf-8")  # as if the run had stopped at 2-A
    fork = tmp_path / "fork"
    fork_from(run_dir, 2, fork, "A")
    assert json.loads((fork / EFFECTS_FILE).read_text(encoding="utf-8")) == {}
    state = run_timeline(make_stub_client(scenario.responses), fork)
    assert tool_result(state["messages"], SEND_ID)["content"].startswith(DRY_RUN_MARK)
    assert len(workspace.emails()) == 1  # the parent's one; the fork sent nothing


def test_an_intent_without_receipt_is_inherited_so_the_fork_asks_the_world(tmp_path):
    """A crash between the effect and its receipt: the email went out, only the intent is recorded.
    With the intent, the fork asks the outbox by the key and reports the email as sent."""
    scenario, workspace, run_dir = finished_team_email(tmp_path)
    ledger = json.loads((run_dir / EFFECTS_FILE).read_text(encoding="utf-8"))
    ledger[SEND_ID] = {**ledger[SEND_ID], "status": "intent", "result": None}
    (run_dir / EFFECTS_FILE).write_text(json.dumps(ledger), encoding="utf-8")
    fork = tmp_path / "fork"
    fork_from(run_dir, 2, fork, "A")
    assert json.loads((fork / EFFECTS_FILE).read_text(encoding="utf-8"))[SEND_ID]["status"] == "intent"
    state = run_timeline(make_stub_client(scenario.responses), fork)
    answer = tool_result(state["messages"], SEND_ID)["content"]
    assert not answer.startswith(DRY_RUN_MARK) and "já tinha sido concluída" in answer
    assert len(workspace.emails()) == 1


# --- the command line, on every store ----------------------------------------------------------

def fork_spec(case, into):
    if case.kind == "files":
        return []
    if case.kind == "sqlite":
        return ["--store", "sqlite"]
    return ["--store", case.dsn, "--run", into.name]


def test_a_forked_run_inherits_the_receipt_on_every_store(tmp_path, store_case):
    case, run_dir, out = store_case, tmp_path / "run", tmp_path / "out.txt"
    run = ["run", "--scenario", "team-email", "--workdir", str(run_dir), *case.cli_args(run_dir)]
    assert run_forked(run, {}, out) == 0, out.read_text()
    with case.open(run_dir) as store:
        parent_receipt = store.effects()[SEND_ID]
        assert parent_receipt["status"] == "committed" and len(store.world().emails()) == 1

    into = tmp_path / f"ramo-{os.getpid()}-{case.kind}-{tmp_path.name[-6:]}"
    fork = ["fork", "--workdir", str(run_dir), *case.cli_args(run_dir), "--to", "2-A", "--into", str(into)]
    assert run_forked(fork, {}, out) == 0, out.read_text()
    resume = ["run", "--scenario", "team-email", "--workdir", str(into), *fork_spec(case, into), "--resume"]
    assert run_forked(resume, {}, out) == 0, out.read_text()

    from harness.stores import open_store

    spec = {"files": "files", "sqlite": "sqlite"}.get(case.kind, case.dsn)
    with open_store(spec, into, run=into.name) as fork_store:
        state = fork_store.load()
        assert fork_store.timeline()["dry_run"] is True
        assert fork_store.effects()[SEND_ID] == parent_receipt
        answer = tool_result(state["messages"], SEND_ID)["content"]
        assert not answer.startswith(DRY_RUN_MARK) and answer == parent_receipt["result"]["content"]
        assert state["status"] == "completed"
    with case.open(run_dir) as store:
        assert len(store.world().emails()) == 1  # nothing was sent again
