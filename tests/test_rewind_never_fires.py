"""A rewind only moves state: the pending send_email of a turn that stopped at point A is
never executed by the rewind itself; the resumed run settles it through the ledger and the
approval gate, exactly as after a crash."""
from __future__ import annotations

import pytest

from harness.crash import SimulatedCrash, reset_crash_counts
from harness.effects import EFFECTS_FILE
from harness.fake_endpoint import make_stub_client
from harness.lifecycle import CHECKPOINT_FILE, load_run_checkpoint
from harness.runner import WORLD_DIR, ask_a_person, decide_pending_approval, run_durable
from harness.scenarios import load_scenario
from harness.timeline import list_points, rewind_to
from harness.tools import Workspace

TEAM_EMAIL = load_scenario("team-email")


def crash_right_after_point_a_of_the_send_turn(run_dir, monkeypatch, approver=None):
    monkeypatch.setenv("CRASH_AFTER", "after-save-A:2")
    with pytest.raises(SimulatedCrash):
        run_durable(make_stub_client(TEAM_EMAIL.responses), run_dir, TEAM_EMAIL, approver=approver)
    monkeypatch.delenv("CRASH_AFTER")
    reset_crash_counts()


def resume(run_dir):
    return run_durable(make_stub_client(TEAM_EMAIL.responses), run_dir, resume=True)


def outbox(run_dir):
    return Workspace(run_dir / WORLD_DIR)


@pytest.mark.parametrize("gate", [False, True], ids=["without-gate", "with-gate"])
def test_rewind_to_a_pending_send_email_sends_nothing(tmp_path, monkeypatch, gate):
    crash_right_after_point_a_of_the_send_turn(tmp_path, monkeypatch, ask_a_person if gate else None)
    assert [p.name for p in list_points(tmp_path)][-1] == "turn-002-A.json"
    ledger = (tmp_path / EFFECTS_FILE).read_bytes() if (tmp_path / EFFECTS_FILE).exists() else None
    state = rewind_to(tmp_path, 2)
    assert outbox(tmp_path).emails() == []
    assert [call["name"] for call in state["pending_tool_use"]] == ["send_email"]
    assert state["status"] == "paused" and state["requires_approval"] is gate
    after = (tmp_path / EFFECTS_FILE).read_bytes() if (tmp_path / EFFECTS_FILE).exists() else None
    assert after == ledger  # no intent record either


def test_without_the_gate_the_resumed_run_sends_exactly_one(tmp_path, monkeypatch):
    crash_right_after_point_a_of_the_send_turn(tmp_path, monkeypatch)
    rewind_to(tmp_path, 2)
    state = resume(tmp_path)
    assert state["status"] == "completed" and len(outbox(tmp_path).emails()) == 1
    state = resume(tmp_path)  # resuming again changes nothing
    assert len(outbox(tmp_path).emails()) == 1


def test_with_the_gate_the_resumed_run_asks_for_approval_and_sends_only_after_it(tmp_path, monkeypatch):
    crash_right_after_point_a_of_the_send_turn(tmp_path, monkeypatch, ask_a_person)
    rewind_to(tmp_path, 2)
    state = resume(tmp_path)  # no approver passed: the rule travels with the run
    assert state["status"] == "waiting_for_approval"
    assert state["pending_approval"]["name"] == "send_email"
    assert outbox(tmp_path).emails() == []
    decide_pending_approval(tmp_path, approved=True, decided_by="ana")
    state = resume(tmp_path)
    assert state["status"] == "completed" and len(outbox(tmp_path).emails()) == 1


def test_with_the_gate_a_rejection_after_the_rewind_sends_nothing(tmp_path, monkeypatch):
    crash_right_after_point_a_of_the_send_turn(tmp_path, monkeypatch, ask_a_person)
    rewind_to(tmp_path, 2)
    resume(tmp_path)
    decide_pending_approval(tmp_path, approved=False, reason="destinatário errado")
    state = resume(tmp_path)
    assert state["status"] == "completed" and outbox(tmp_path).emails() == []
    rejected = state["messages"][4]["content"][0]
    assert rejected["is_error"] is True and "destinatário errado" in rejected["content"]


def test_rewinding_a_waiting_run_to_its_own_turn_asks_again(tmp_path):
    state = run_durable(make_stub_client(TEAM_EMAIL.responses), tmp_path, TEAM_EMAIL, approver=ask_a_person)
    assert state["status"] == "waiting_for_approval"
    rewind_to(tmp_path, 2)
    assert load_run_checkpoint(tmp_path / CHECKPOINT_FILE)["pending_approval"] is None
    assert resume(tmp_path)["status"] == "waiting_for_approval"
    assert outbox(tmp_path).emails() == []


def test_rewind_to_point_a_of_a_sent_email_reuses_the_receipt(tmp_path):
    run_durable(make_stub_client(TEAM_EMAIL.responses), tmp_path, TEAM_EMAIL)
    assert len(outbox(tmp_path).emails()) == 1
    rewind_to(tmp_path, 2, "A")
    state = resume(tmp_path)
    assert state["status"] == "completed" and len(outbox(tmp_path).emails()) == 1
