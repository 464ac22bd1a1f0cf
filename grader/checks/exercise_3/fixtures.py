"""Exercise 3 and the shape of its fixtures (crash scenes with a pending call), as ``grade fixtures`` checks them, with what each scene expects."""
from __future__ import annotations

from grader.checks.fixture_shape import (
    checkpoint_problems,
    count_problems,
    pending_ids,
    problem,
    required_text,
    unknown_keys,
    workspace_problems,
)
from grader.checks.framework import Exercise, Fixture


EXERCISE = Exercise("exercise-3")


ACTIONS = ("rerun", "is_error")


@EXERCISE.fixture_validator
def validate_fixture(data: dict) -> list[str]:
    problems = unknown_keys(data, {"description", "checkpoint", "workspace", "expect"})
    problems += required_text(data, "description", "description")
    problems += checkpoint_problems(data.get("checkpoint"))
    problems += workspace_problems(data.get("workspace"))
    expect = data.get("expect")
    if not isinstance(expect, dict):
        return problems + [problem("expect", "obrigatório, deveria ser um objeto com resume_action")]
    problems += unknown_keys(expect, {"resume_action", "outbox_after", "tickets_after"}, "expect")
    actions = expect.get("resume_action")
    if not isinstance(actions, dict):
        problems.append(problem("expect.resume_action", "obrigatório, deveria mapear tool_use_id -> \"rerun\" ou \"is_error\" ({} quando nada está pendente)"))
    else:
        for key, action in actions.items():
            if action not in ACTIONS:
                problems.append(problem(f"expect.resume_action.{key}", f"deveria ser \"rerun\" ou \"is_error\" (é {action!r})"))
        ids = pending_ids(data.get("checkpoint"))
        if ids is not None and sorted(map(str, actions)) != sorted(map(str, ids)):
            problems.append(problem(
                "expect.resume_action",
                f"as chaves deveriam ser exatamente os ids pendentes {ids} (são {list(actions)})",
            ))
    return problems + count_problems(expect, ("outbox_after", "tickets_after"), "expect")


def pending_calls(fixture: Fixture) -> list[dict]:
    return list(fixture.data["checkpoint"].get("pending_tool_use") or [])


def ids_expecting(fixture: Fixture, action: str) -> list[str]:
    actions = fixture.expect.get("resume_action", {})
    return [call["id"] for call in pending_calls(fixture) if actions.get(call["id"]) == action]


def call_by_id(fixture: Fixture, tool_use_id: str) -> dict:
    return next(call for call in pending_calls(fixture) if call["id"] == tool_use_id)


def high_impact_tools() -> frozenset:
    from grader.checks.reference import HIGH_IMPACT_TOOLS

    return HIGH_IMPACT_TOOLS


def checks_world(fixture: Fixture) -> bool:
    expect = fixture.expect
    return bool(ids_expecting(fixture, "is_error")) or "outbox_after" in expect or "tickets_after" in expect
