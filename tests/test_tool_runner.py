"""run_tool_uses: order ledger -> approval -> execute -> record, keys, dry-run, the loop around it."""
from __future__ import annotations

import json

import pytest

import harness.effects as effects
import harness.tool_runner as tool_runner
from harness.approval import PENDING, WaitingForApproval, approve, record_decision
from harness.crash import SimulatedCrash
from harness.effects import load_effects, make_receipt, record_intent, save_effect
from harness.fake_endpoint import make_stub_client, validate_messages
from harness.loop import new_run_state
from harness.scenarios import load_scenario
from harness.tool_runner import (
    ToolContext,
    close_pending,
    resume_with_effects,
    run_agent_with_effects,
    run_tool_uses,
)
from harness.tools import Workspace, execute_tool, use_workspace
from tests.tool_calls import EMAIL, READ, TICKET, notes_world


@pytest.fixture
def world(tmp_path):
    return notes_world(tmp_path, "conclusões\n")


def test_several_tool_uses_in_one_turn_answered_in_order(tmp_path, world):
    ctx = ToolContext(tmp_path / "effects.json")
    results = run_tool_uses([READ, EMAIL, TICKET], ctx)
    assert [r["tool_use_id"] for r in results] == [READ["id"], EMAIL["id"], TICKET["id"]]
    assert all(r["type"] == "tool_result" and r["is_error"] is False for r in results)
    assert results[0]["content"] == "conclusões\n"
    assert len(world.emails()) == 1 and len(world.tickets()) == 1
    assert {k: v["status"] for k, v in load_effects(ctx.effects_path).items()} == {
        EMAIL["id"]: "committed", TICKET["id"]: "committed"}


def test_order_is_ledger_then_approval_then_execute_then_record(tmp_path, world, monkeypatch):
    steps = []

    def spy(module, name, label):
        original = getattr(module, name)

        def wrapper(*args, **kwargs):
            call_id = next((a["id"] for a in args if isinstance(a, dict) and "id" in a), None)
            if label == "record":
                if args[2]["status"] == "intent":  # the intent's own write, already logged
                    return original(*args, **kwargs)
                call_id = args[1]
            steps.append((label, call_id) if call_id else (label,))
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, wrapper)

    spy(tool_runner, "load_effects", "ledger")
    spy(tool_runner, "check_approval", "approval")
    spy(effects, "record_intent", "intent")
    spy(effects, "execute_tool", "execute")
    spy(tool_runner, "execute_tool", "execute")
    spy(effects, "save_effect", "record")

    ctx = ToolContext(tmp_path / "effects.json", approver=lambda call: approve())
    run_tool_uses([EMAIL, READ, TICKET], ctx)
    assert steps == [
        ("ledger",), ("approval", EMAIL["id"]), ("intent", EMAIL["id"]), ("execute",),
        ("record", EMAIL["id"]),
        ("ledger",), ("execute",),
        ("ledger",), ("approval", TICKET["id"]), ("intent", TICKET["id"]), ("execute",),
        ("record", TICKET["id"]),
    ]


def test_high_impact_tools_get_the_tool_use_id_as_idempotency_key(tmp_path, world, monkeypatch):
    keys = []

    def keyed(name, input, idempotency_key=None):
        keys.append((name, idempotency_key))
        return execute_tool(name, input, idempotency_key=idempotency_key)

    monkeypatch.setattr(effects, "execute_tool", keyed)
    monkeypatch.setattr(tool_runner, "execute_tool", keyed)
    run_tool_uses([READ, EMAIL, TICKET], ToolContext(tmp_path / "effects.json"))
    assert keys == [("read_file", None), ("send_email", EMAIL["id"]), ("create_ticket", TICKET["id"])]
    assert world.emails()[0]["idempotency_key"] == EMAIL["id"]
    assert world.tickets()[0]["idempotency_key"] == TICKET["id"]


def test_ledger_hit_reuses_without_executing(tmp_path, world, monkeypatch):
    ctx = ToolContext(tmp_path / "effects.json")
    recorded = {"content": "e-mail enviado antes da queda", "is_error": False}
    save_effect(ctx.effects_path, EMAIL["id"], make_receipt(EMAIL, recorded))
    calls = []
    monkeypatch.setattr(effects, "execute_tool", lambda *a, **k: calls.append(a))
    [result] = run_tool_uses([EMAIL], ctx)
    assert calls == [] and result["content"] == recorded["content"]
    assert world.emails() == []


def test_dry_run_leaves_the_outbox_and_ticket_store_untouched(tmp_path, world):
    execute_tool("send_email", {"to": "a@example.com", "subject": "antes"}, idempotency_key="toolu_old")
    outbox_before = world.outbox_path.read_bytes()
    ctx = ToolContext(tmp_path / "effects.json", dry_run=True)
    results = run_tool_uses([READ, EMAIL, TICKET], ctx)
    assert world.outbox_path.read_bytes() == outbox_before
    assert not world.tickets_path.exists()
    assert results[0]["content"] == "conclusões\n"  # reading is real even in dry-run
    assert results[1]["content"].startswith("[dry-run]") and results[2]["content"].startswith("[dry-run]")
    assert load_effects(ctx.effects_path) == {}  # nothing happened, so nothing is recorded


def test_ensure_ticket_twice_makes_one_ticket(tmp_path, world):
    first = execute_tool("ensure_ticket", {"title": "Migrar job noturno"})
    second = execute_tool("ensure_ticket", {"title": "Migrar job noturno", "body": "de novo"})
    assert len(world.tickets()) == 1
    assert "criado" in first["content"] and "já existia" in second["content"]
    # Even through the runner, with two different tool_use ids (no key can help here).
    ctx = ToolContext(tmp_path / "effects.json")
    run_tool_uses([{"id": "toolu_e1", "name": "ensure_ticket", "input": {"title": "Outro"}},
                   {"id": "toolu_e2", "name": "ensure_ticket", "input": {"title": "Outro"}}], ctx)
    assert [t["title"] for t in world.tickets()] == ["Migrar job noturno", "Outro"]


def test_create_ticket_twice_with_different_ids_makes_two(tmp_path, world):
    # The contrast that motivates ensure_ticket: create is an append.
    ctx = ToolContext(tmp_path / "effects.json")
    run_tool_uses([{"id": "toolu_c1", "name": "create_ticket", "input": {"title": "Outro"}},
                   {"id": "toolu_c2", "name": "create_ticket", "input": {"title": "Outro"}}], ctx)
    assert len(world.tickets()) == 2


def test_close_pending_never_bypasses_the_gate(tmp_path, world):
    cp = {"version": 1, "task": "t", "turns": 2, "tokens_used": 10,
          "messages": [{"role": "user", "content": "t"},
                       {"role": "assistant", "content": [{"type": "tool_use", **EMAIL}]}],
          "pending_tool_use": [EMAIL]}
    ctx = ToolContext(tmp_path / "effects.json", approver=lambda call: PENDING)
    with pytest.raises(WaitingForApproval):
        close_pending(cp, ctx)
    assert world.emails() == [] and cp["pending_tool_use"] == [EMAIL]


def test_close_pending_with_intent_and_effect_present_does_not_ask_or_send(tmp_path, world):
    ctx = ToolContext(tmp_path / "effects.json", approver=lambda call: PENDING)
    record_intent(ctx.effects_path, EMAIL)
    execute_tool(EMAIL["name"], EMAIL["input"], idempotency_key=EMAIL["id"])
    cp = {"version": 1, "task": "t", "turns": 2, "tokens_used": 10,
          "messages": [{"role": "user", "content": "t"},
                       {"role": "assistant", "content": [{"type": "tool_use", **EMAIL}]}],
          "pending_tool_use": [EMAIL]}
    close_pending(cp, ctx)
    assert len(world.emails()) == 1 and cp["pending_tool_use"] is None
    assert validate_messages(cp["messages"]) is None


# --- the loop around it: team-email, crash, resume -------------------------------------

def run_team_email(tmp_path, ctx=None):
    scenario = load_scenario("team-email")
    world = use_workspace(scenario.make_workspace(tmp_path / "world"))
    ctx = ctx or ToolContext(tmp_path / "effects.json")
    state = run_agent_with_effects(make_stub_client(scenario.responses), new_run_state(scenario.task),
                                   tmp_path / "checkpoint.json", ctx)
    return scenario, world, ctx, state


def test_team_email_runs_to_completion_with_one_email(tmp_path):
    _, world, ctx, state = run_team_email(tmp_path)
    assert state["status"] == "completed" and len(world.emails()) == 1
    assert load_effects(ctx.effects_path)["toolu_01TE2"]["status"] == "committed"


@pytest.mark.parametrize("label", ["after-tool-run", "after-effect-write"])
def test_crash_then_resume_leaves_exactly_one_email(tmp_path, monkeypatch, label):
    monkeypatch.setenv("CRASH_AFTER", f"{label}:1")
    with pytest.raises(SimulatedCrash):
        run_team_email(tmp_path)
    monkeypatch.delenv("CRASH_AFTER")
    scenario = load_scenario("team-email")
    world = use_workspace(Workspace(tmp_path / "world"))
    assert len(world.emails()) == 1  # the email left before the crash
    client = make_stub_client(scenario.responses)
    state = resume_with_effects(client, tmp_path / "checkpoint.json", ToolContext(tmp_path / "effects.json"))
    assert state["status"] == "completed"
    assert len(world.emails()) == 1
    assert load_effects(tmp_path / "effects.json")["toolu_01TE2"]["status"] == "committed"
    for request in client.stub_endpoint.requests:
        assert validate_messages(request["messages"]) is None


def test_waiting_for_approval_is_saved_in_the_checkpoint_and_resumes(tmp_path):
    ctx = ToolContext(tmp_path / "effects.json", approver=lambda call: PENDING)
    scenario, world, ctx, state = run_team_email(tmp_path, ctx)
    saved = json.loads((tmp_path / "checkpoint.json").read_text(encoding="utf-8"))
    assert saved["status"] == "waiting_for_approval"
    assert saved["pending_approval"]["id"] == "toolu_01TE2"
    assert saved["pending_tool_use"][0]["id"] == "toolu_01TE2"
    assert world.emails() == []

    # A person approves exactly what was shown; a fresh context (as after a restart) resumes.
    record_decision(ctx.approvals_path, saved["pending_approval"], approve(), now=ctx.clock(), decided_by="ana")
    fresh = ToolContext(tmp_path / "effects.json", approver=lambda call: PENDING)
    state = resume_with_effects(make_stub_client(scenario.responses), tmp_path / "checkpoint.json", fresh)
    assert state["status"] == "completed" and state["pending_approval"] is None
    assert len(world.emails()) == 1
