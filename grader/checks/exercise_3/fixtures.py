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
# Level 3: what reconcile_sms does with each pending call of the SMS agent.
SMS_ACTIONS = ("rerun", "is_error", "confirmed", "send")


_MESSAGE = closed(["sid", "to", "text", "reference"], {
    "sid": TEXT, "to": TEXT, "text": TEXT, "reference": {"type": ["string", "null"]},
}, messages={"type": "deveria ser um objeto com sid, to, text e reference"})

GATEWAY_SCHEMA = closed(["messages", "lookup"], {
    "messages": {"type": "array", "items": _MESSAGE, "x-mensagens": {"*": "deveria ser uma lista de mensagens"}},
    "lookup": {"enum": ["up", "down"], "x-mensagens": {"*": "deveria ser \"up\" ou \"down\""}},
}, messages={"type": "deveria ser um objeto com messages e lookup"})


# A crash scene: the checkpoint at the crash, the world, and what reconcile does with each
# pending call. With a "gateway", the scene is level 3's SMS agent, and "expect" says what
# reconcile_sms does with each pending call instead.
FIXTURE_SCHEMA = closed(["description", "checkpoint", "expect"], {
    "description": TEXT,
    "checkpoint": CHECKPOINT_SCHEMA,
    "workspace": WORKSPACE_SCHEMA,
    "gateway": GATEWAY_SCHEMA,
    "expect": closed([], {
        "resume_action": {"type": "object", "additionalProperties": {"enum": list(ACTIONS)}, "x-mensagens": {
            "*": "deveria mapear tool_use_id -> \"rerun\" ou \"is_error\" ({} quando nada está pendente)"}},
        "reconcile_sms": {"type": "object", "additionalProperties": {"enum": list(SMS_ACTIONS)}, "x-mensagens": {
            "*": "deveria mapear tool_use_id -> \"rerun\", \"is_error\", \"confirmed\" ou \"send\""}},
        "outbox_after": COUNT,
        "tickets_after": COUNT,
    }, messages={"type": "deveria ser um objeto com resume_action (ou reconcile_sms, com gateway)"}),
})
FIXTURE_SCHEMAS = (FIXTURE_SCHEMA,)


def sms_action(call: dict, gateway: dict) -> str:
    """What reconcile_sms must do with one pending call, from the scene itself."""
    from grader.checks.reference import READ_ONLY_TOOLS

    if call["name"] in READ_ONLY_TOOLS:
        return "rerun"
    if call["name"] != "send_sms" or gateway["lookup"] == "down":
        return "is_error"
    found = [m for m in gateway["messages"] if m.get("reference") == call["id"]]
    return "confirmed" if found else "send"


@EXERCISE.fixture_validator
def validate_fixture(data: dict) -> list[str]:
    problems = schema_problems(FIXTURE_SCHEMA, data) + workspace_problems(data)
    if problems:
        return problems
    checkpoint, expect = data["checkpoint"], data["expect"]
    key = "reconcile_sms" if "gateway" in data else "resume_action"
    other = "resume_action" if key == "reconcile_sms" else "reconcile_sms"
    if key not in expect:
        what = "com gateway (o agente de SMS)" if key == "reconcile_sms" else "sem gateway"
        return [problem(f"expect.{key}", f"obrigatório numa fixture {what}")]
    if other in expect:
        return [problem(f"expect.{other}", "só vale numa fixture " + ("com" if other == "reconcile_sms" else "sem")
                        + " gateway")]
    actions = expect[key]
    problems = checkpoint_problems(checkpoint, "checkpoint")
    ids = pending_ids(checkpoint)
    if not problems and sorted(actions) != sorted(ids):  # ids the checkpoint itself gets wrong: said above
        problems.append(problem(
            f"expect.{key}",
            f"as chaves deveriam ser exatamente os ids pendentes {ids} (são {list(actions)})",
        ))
    if not problems and key == "reconcile_sms":
        for call in checkpoint["pending_tool_use"] or []:
            derived = sms_action(call, data["gateway"])
            if actions[call["id"]] != derived:
                problems.append(problem(
                    f"expect.reconcile_sms.{call['id']}",
                    f"o gateway e a ferramenta ({call['name']}) dizem {derived!r}, não {actions[call['id']]!r}",
                ))
    return problems


def is_sms(fixture: Fixture) -> bool:
    """Level 3's scenes: the SMS agent, with a gateway."""
    return "gateway" in fixture.data


def crash_scene(fixture: Fixture) -> bool:
    """Levels 1 and 2's scenes: the team agent's crashes, without a gateway."""
    return not is_sms(fixture)


def pending_calls(fixture: Fixture) -> list[dict]:
    return list(fixture.data["checkpoint"].get("pending_tool_use") or [])


def ids_expecting(fixture: Fixture, action: str) -> list[str]:
    actions = fixture.expect.get("reconcile_sms" if is_sms(fixture) else "resume_action", {})
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
