"""Exercise 3 and the shape of its fixtures (crash scenes with a pending call), as ``grade fixtures`` checks them, with what each scene expects."""
from __future__ import annotations

from grader.checks.fixture_shape import (
    CHECKPOINT_SCHEMA,
    COUNT,
    TEXT,
    WORKSPACE_SCHEMA,
    checkpoint_problems,
    closed,
    pending_ids,
    problem,
    schema_problems,
    workspace_problems,
)
from grader.checks.framework import Exercise, Fixture


EXERCISE = Exercise("exercise-3")


ACTIONS = ("rerun", "is_error")


# A crash scene: the checkpoint at the crash, the world, and what reconcile does with each
# pending call.
FIXTURE_SCHEMA = closed(["description", "checkpoint", "expect"], {
    "description": TEXT,
    "checkpoint": CHECKPOINT_SCHEMA,
    "workspace": WORKSPACE_SCHEMA,
    "expect": closed(["resume_action"], {
        "resume_action": {"type": "object", "additionalProperties": {"enum": list(ACTIONS)}, "x-mensagens": {
            "*": "deveria mapear tool_use_id -> \"rerun\" ou \"is_error\" ({} quando nada está pendente)"}},
        "outbox_after": COUNT,
        "tickets_after": COUNT,
    }, messages={"type": "deveria ser um objeto com resume_action"}),
})
FIXTURE_SCHEMAS = (FIXTURE_SCHEMA,)


@EXERCISE.fixture_validator
def validate_fixture(data: dict) -> list[str]:
    problems = schema_problems(FIXTURE_SCHEMA, data) + workspace_problems(data)
    if problems:
        return problems
    checkpoint, actions = data["checkpoint"], data["expect"]["resume_action"]
    problems = checkpoint_problems(checkpoint, "checkpoint")
    ids = pending_ids(checkpoint)
    if not problems and sorted(actions) != sorted(ids):  # ids the checkpoint itself gets wrong: said above
        problems.append(problem(
            "expect.resume_action",
            f"as chaves deveriam ser exatamente os ids pendentes {ids} (são {list(actions)})",
        ))
    return problems


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
