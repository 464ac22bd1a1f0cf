"""The approval gate: bound to the exact input, re-checked at execution, expiring, persisted."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from harness.approval import (
    PENDING,
    ApprovalError,
    WaitingForApproval,
    approve,
    check_approval,
    input_hash,
    load_approvals,
    record_decision,
    reject,
)
from harness.effects import load_effects
from harness.tool_runner import ToolContext, run_tool_uses
from harness.tools import Workspace, use_workspace
from tests.tool_calls import EMAIL


class Clock:
    def __init__(self, now=1_000.0):
        self.now = now

    def __call__(self):
        return self.now


class CountingApprover:
    """An approval policy that answers a fixed decision and counts how often it was asked."""

    def __init__(self, decision):
        self.decision = decision
        self.asked = []

    def __call__(self, call):
        self.asked.append(input_hash(call["name"], call["input"]))
        return self.decision


@pytest.fixture
def world(tmp_path):
    return use_workspace(Workspace(tmp_path / "world"))


def context(tmp_path, approver, clock=None, ttl=600):
    return ToolContext(tmp_path / "effects.json", approver=approver, clock=clock or Clock(), approval_ttl=ttl)


def test_input_hash_is_canonical():
    reordered = {"body": "oi", "subject": "Conclusões", "to": "team@example.com"}
    assert input_hash("send_email", EMAIL["input"]) == input_hash("send_email", reordered)
    assert input_hash("send_email", EMAIL["input"]) != input_hash("send_email", {**reordered, "to": "all@example.com"})
    assert input_hash("send_email", EMAIL["input"]) != input_hash("create_ticket", EMAIL["input"])
    assert len(input_hash("send_email", {})) == 64


def test_approval_is_reused_for_the_same_input(tmp_path, world):
    approver = CountingApprover(approve())
    ctx = context(tmp_path, approver)
    assert check_approval(EMAIL, ctx.approvals_path, approver, 1_000.0, ttl_seconds=600).verdict == "approved"
    assert check_approval(EMAIL, ctx.approvals_path, approver, 1_001.0, ttl_seconds=600).verdict == "approved"
    assert len(approver.asked) == 1
    stored = load_approvals(ctx.approvals_path)[EMAIL["id"]]
    assert stored["input_hash"] == input_hash(EMAIL["name"], EMAIL["input"])
    assert stored["expires_at"] == 1_000.0 + 600


def test_changed_input_asks_again_at_execution_time(tmp_path, world):
    approver = CountingApprover(approve())
    ctx = context(tmp_path, approver)
    check_approval(EMAIL, ctx.approvals_path, approver, 1_000.0)
    changed = {**EMAIL, "input": {**EMAIL["input"], "to": "everyone@example.com"}}
    run_tool_uses([changed], ctx)
    assert len(approver.asked) == 2
    assert approver.asked[1] == input_hash("send_email", changed["input"])
    assert [e["to"] for e in world.emails()] == ["everyone@example.com"]


def test_approval_of_one_input_never_lets_another_through(tmp_path, world):
    # A person approved the email they saw; the input that reaches execution differs.
    ctx = context(tmp_path, CountingApprover(PENDING))
    record_decision(ctx.approvals_path, EMAIL, approve(), now=1_000.0, ttl_seconds=600, decided_by="ana")
    changed = {**EMAIL, "input": {**EMAIL["input"], "to": "all-company@example.com"}}
    with pytest.raises(WaitingForApproval):
        run_tool_uses([changed], ctx)
    assert world.emails() == []


def test_expired_approval_asks_again(tmp_path, world):
    approver = CountingApprover(approve())
    clock = Clock(1_000.0)
    ctx = context(tmp_path, approver, clock=clock, ttl=60)
    check_approval(EMAIL, ctx.approvals_path, approver, clock(), ttl_seconds=60)
    clock.now = 1_000.0 + 61
    run_tool_uses([EMAIL], ctx)
    assert len(approver.asked) == 2
    assert len(world.emails()) == 1


def test_expired_approval_with_a_pending_policy_waits_instead_of_sending(tmp_path, world):
    ctx = context(tmp_path, CountingApprover(PENDING), clock=Clock(5_000.0))
    record_decision(ctx.approvals_path, EMAIL, approve(), now=1_000.0, ttl_seconds=60)
    with pytest.raises(WaitingForApproval):
        run_tool_uses([EMAIL], ctx)
    assert world.emails() == []


def test_rejection_becomes_an_is_error_result_with_the_reason(tmp_path, world):
    ctx = context(tmp_path, CountingApprover(reject("destinatário fora da empresa")))
    [result] = run_tool_uses([EMAIL], ctx)
    assert result["is_error"] is True and result["tool_use_id"] == EMAIL["id"]
    assert "destinatário fora da empresa" in result["content"]
    assert world.emails() == []
    assert load_effects(ctx.effects_path)[EMAIL["id"]]["status"] == "rejected"


def test_read_only_tools_never_ask(tmp_path, world):
    world.add_files({"a.md": "x"})
    approver = CountingApprover(reject("não"))
    [result] = run_tool_uses([{"id": "toolu_r", "name": "read_file", "input": {"path": "a.md"}}],
                             context(tmp_path, approver))
    assert approver.asked == [] and result["content"] == "x"


def test_no_approver_means_no_gate(tmp_path, world):
    assert check_approval(EMAIL, tmp_path / "approvals.json", None, 0.0).verdict == "approved"
    assert not (tmp_path / "approvals.json").exists()


def test_pending_is_persisted_and_survives_a_fresh_load(tmp_path, world):
    ctx = context(tmp_path, CountingApprover(PENDING))
    with pytest.raises(WaitingForApproval) as waiting:
        run_tool_uses([EMAIL], ctx)
    request = waiting.value.pending_approval
    assert request["id"] == EMAIL["id"] and request["input"] == EMAIL["input"]
    assert request["input_hash"] == input_hash(EMAIL["name"], EMAIL["input"])
    reloaded = load_approvals(ctx.approvals_path)  # a fresh read from disk
    assert reloaded[EMAIL["id"]]["verdict"] == "pending"
    assert world.emails() == [] and load_effects(ctx.effects_path) == {}


@pytest.mark.slow
def test_waiting_for_approval_survives_a_restart_in_a_new_process(tmp_path):
    script = textwrap.dedent("""
        import json, sys
        from pathlib import Path
        from harness.approval import PENDING, WaitingForApproval, approve, record_decision
        from harness.tool_runner import ToolContext, run_tool_uses
        from harness.tools import Workspace, use_workspace

        root = Path(sys.argv[1])
        call = json.loads(sys.argv[3])
        world = use_workspace(Workspace(root / "world"))
        ctx = ToolContext(root / "effects.json", approver=lambda c: PENDING)
        if sys.argv[2] == "first":
            try:
                run_tool_uses([call], ctx)
            except WaitingForApproval as waiting:
                (root / "pending.json").write_text(json.dumps(waiting.pending_approval))
                sys.exit(0)
            sys.exit("did not wait")
        request = json.loads((root / "pending.json").read_text())
        record_decision(ctx.approvals_path, request, approve(), now=ctx.clock(), decided_by="ana")
        results = run_tool_uses([call], ctx)
        print(json.dumps({"results": results, "emails": len(world.emails())}))
    """)
    runner = tmp_path / "gate.py"
    runner.write_text(script, encoding="utf-8")
    call = json.dumps(EMAIL)
    first = subprocess.run([sys.executable, str(runner), str(tmp_path), "first", call],
                           capture_output=True, text=True, timeout=60)
    assert first.returncode == 0, first.stderr
    assert json.loads((tmp_path / "approvals.json").read_text())[EMAIL["id"]]["verdict"] == "pending"
    second = subprocess.run([sys.executable, str(runner), str(tmp_path), "second", call],
                            capture_output=True, text=True, timeout=60)
    assert second.returncode == 0, second.stderr
    report = json.loads(second.stdout)
    assert report["emails"] == 1 and report["results"][0]["is_error"] is False


def test_corrupt_approvals_file_fails_closed(tmp_path):
    path = tmp_path / "approvals.json"
    path.write_text('{"toolu_mail1": {"verdict": "appr', encoding="utf-8")
    with pytest.raises(ApprovalError, match="truncado"):
        load_approvals(path)
    path.write_text('{"toolu_mail1": {"verdict": "maybe", "input_hash": "x"}}', encoding="utf-8")
    with pytest.raises(ApprovalError, match="inválido"):
        check_approval(EMAIL, path, lambda c: approve(), 0.0)


def test_a_policy_must_answer_a_decision(tmp_path, world):
    with pytest.raises(ApprovalError, match="approve"):
        check_approval(EMAIL, tmp_path / "approvals.json", lambda call: True, 0.0)
