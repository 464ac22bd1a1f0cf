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
# Level 3: what reconcile_mcp does with each pending call of the calendar agent.
MCP_ACTIONS = ACTIONS

_EVENT = closed(["id", "title", "day", "time", "status"], {
    "id": TEXT, "title": TEXT, "day": TEXT, "time": TEXT, "status": {"enum": ["confirmado", "cancelado"]},
}, messages={"type": "deveria ser um objeto com id, title, day, time e status"})

CALENDAR_SCHEMA = closed(["events"], {
    "events": {"type": "array", "items": _EVENT, "x-mensagens": {"*": "deveria ser uma lista de eventos"}},
    "invites": {"type": "array", "items": closed(["event_id", "email"], {"event_id": TEXT, "email": TEXT}),
                "x-mensagens": {"*": "deveria ser uma lista de convites"}},
}, messages={"type": "deveria ser um objeto com events (e invites)"})


# A crash scene: the checkpoint at the crash, the world, and what reconcile does with each
# pending call. With a "calendar", the scene is level 3's calendar agent, and "expect" says what
# reconcile_mcp does with each pending call instead.
FIXTURE_SCHEMA = closed(["description", "checkpoint", "expect"], {
    "description": TEXT,
    "checkpoint": CHECKPOINT_SCHEMA,
    "workspace": WORKSPACE_SCHEMA,
    "calendar": CALENDAR_SCHEMA,
    "expect": closed([], {
        "resume_action": {"type": "object", "additionalProperties": {"enum": list(ACTIONS)}, "x-mensagens": {
            "*": "deveria mapear tool_use_id -> \"rerun\" ou \"is_error\" ({} quando nada está pendente)"}},
        "reconcile_mcp": {"type": "object", "additionalProperties": {"enum": list(MCP_ACTIONS)}, "x-mensagens": {
            "*": "deveria mapear tool_use_id -> \"rerun\" ou \"is_error\""}},
        "outbox_after": COUNT,
        "tickets_after": COUNT,
    }, messages={"type": "deveria ser um objeto com resume_action (ou reconcile_mcp, com calendar)"}),
})
FIXTURE_SCHEMAS = (FIXTURE_SCHEMA,)


def mcp_action(call: dict) -> str:
    """What reconcile_mcp must do with one pending call: the server's own declaration decides."""
    from grader.checks.exercise_3.calendar_server import safe_to_repeat

    return "rerun" if safe_to_repeat(call["name"]) else "is_error"


@EXERCISE.fixture_validator
def validate_fixture(data: dict) -> list[str]:
    problems = schema_problems(FIXTURE_SCHEMA, data) + workspace_problems(data)
    if problems:
        return problems
    checkpoint, expect = data["checkpoint"], data["expect"]
    key = "reconcile_mcp" if "calendar" in data else "resume_action"
    other = "resume_action" if key == "reconcile_mcp" else "reconcile_mcp"
    if key not in expect:
        what = "com calendar (o agente de agenda)" if key == "reconcile_mcp" else "sem calendar"
        return [problem(f"expect.{key}", f"obrigatório numa fixture {what}")]
    if other in expect:
        return [problem(f"expect.{other}", "só vale numa fixture " + ("com" if other == "reconcile_mcp" else "sem")
                        + " calendar")]
    actions = expect[key]
    problems = checkpoint_problems(checkpoint, "checkpoint")
    ids = pending_ids(checkpoint)
    if not problems and sorted(actions) != sorted(ids):  # ids the checkpoint itself gets wrong: said above
        problems.append(problem(
            f"expect.{key}",
            f"as chaves deveriam ser exatamente os ids pendentes {ids} (são {list(actions)})",
        ))
    if not problems and key == "reconcile_mcp":
        for call in checkpoint["pending_tool_use"] or []:
            derived = mcp_action(call)
            if actions[call["id"]] != derived:
                problems.append(problem(
                    f"expect.reconcile_mcp.{call['id']}",
                    f"as annotations de {call['name']} no servidor dizem {derived!r}, não {actions[call['id']]!r}",
                ))
    return problems


def is_mcp(fixture: Fixture) -> bool:
    """Level 3's scenes: the calendar agent, with its tool server."""
    return "calendar" in fixture.data


def crash_scene(fixture: Fixture) -> bool:
    """Levels 1 and 2's scenes: the team agent's crashes, without a calendar server."""
    return not is_mcp(fixture)


def pending_calls(fixture: Fixture) -> list[dict]:
    return list(fixture.data["checkpoint"].get("pending_tool_use") or [])


def ids_expecting(fixture: Fixture, action: str) -> list[str]:
    actions = fixture.expect.get("reconcile_mcp" if is_mcp(fixture) else "resume_action", {})
    return [call["id"] for call in pending_calls(fixture) if actions.get(call["id"]) == action]


def call_by_id(fixture: Fixture, tool_use_id: str) -> dict:
    return next(call for call in pending_calls(fixture) if call["id"] == tool_use_id)


def high_impact_tools() -> frozenset:
    from grader.checks.reference import HIGH_IMPACT_TOOLS

    return HIGH_IMPACT_TOOLS


def checks_world(fixture: Fixture) -> bool:
    expect = fixture.expect
    return crash_scene(fixture) and (
        bool(ids_expecting(fixture, "is_error")) or "outbox_after" in expect or "tickets_after" in expect)
