"""An approval's lifetime is measured on the clock of the side that executes it.

The person approving may sit at a machine whose clock is wrong. A decision dated in the
future (beyond a small tolerance) or one whose recorded lifetime is longer than the lifetime
the executing side allows must not let the effect through: the gate asks again.
"""
from __future__ import annotations

import pytest

from harness.approval import (
    APPROVAL_CLOCK_TOLERANCE,
    PENDING,
    WaitingForApproval,
    approve,
    check_approval,
    record_decision,
)
from harness.tool_runner import ToolContext, run_tool_uses
from harness.tools import Workspace, use_workspace
from tests.tool_calls import EMAIL

YEAR = 365 * 24 * 3600.0
TTL = 15 * 60.0


class Asked:
    def __init__(self, decision):
        self.decision, self.count = decision, 0

    def __call__(self, call):
        self.count += 1
        return self.decision


@pytest.fixture
def world(tmp_path):
    return use_workspace(Workspace(tmp_path / "world"))


def test_an_approval_recorded_a_year_ahead_is_not_valid_for_a_year(tmp_path, world):
    now = 1_000_000.0
    ctx = ToolContext(tmp_path / "effects.json", approver=Asked(PENDING), clock=lambda: now + 3600, approval_ttl=TTL)
    # The approver's clock ran a year ahead: decided_at and expires_at both sit a year away.
    record_decision(ctx.approvals_path, EMAIL, approve(), now=now + YEAR, ttl_seconds=TTL, decided_by="ana")
    with pytest.raises(WaitingForApproval):
        run_tool_uses([EMAIL], ctx)   # an hour later on the executing side: asked again, not sent
    assert world.emails() == []


def test_a_lifetime_longer_than_the_executing_side_allows_is_cut_to_its_own(tmp_path, world):
    now = 1_000_000.0
    ctx = ToolContext(tmp_path / "effects.json", approver=Asked(PENDING), clock=lambda: now + TTL + 1, approval_ttl=TTL)
    record_decision(ctx.approvals_path, EMAIL, approve(), now=now, ttl_seconds=YEAR, decided_by="ana")
    with pytest.raises(WaitingForApproval):
        run_tool_uses([EMAIL], ctx)
    assert world.emails() == []


def test_a_small_skew_within_the_tolerance_still_counts(tmp_path, world):
    now = 1_000_000.0
    asked = Asked(PENDING)
    path = tmp_path / "approvals.json"
    record_decision(path, EMAIL, approve(), now=now + APPROVAL_CLOCK_TOLERANCE / 2, ttl_seconds=TTL)
    assert check_approval(EMAIL, path, asked, now, ttl_seconds=TTL).verdict == "approved"
    assert check_approval(EMAIL, path, asked, now + TTL - 1, ttl_seconds=TTL).verdict == "approved"
    assert asked.count == 0
    assert check_approval(EMAIL, path, asked, now + TTL + APPROVAL_CLOCK_TOLERANCE, ttl_seconds=TTL).verdict == "pending"


def test_a_decision_dated_just_past_the_tolerance_is_asked_again(tmp_path, world):
    now = 1_000_000.0
    asked = Asked(PENDING)
    path = tmp_path / "approvals.json"
    record_decision(path, EMAIL, approve(), now=now + APPROVAL_CLOCK_TOLERANCE + 1, ttl_seconds=TTL)
    assert check_approval(EMAIL, path, asked, now, ttl_seconds=TTL).verdict == "pending"
    assert asked.count == 1
