"""Exercise 4 and the shape of its fixtures (the crash scenes of level 3), as ``grade fixtures`` checks them."""
from __future__ import annotations

from grader.checks.fixture_shape import (
    CHECKPOINT_SCHEMA,
    COUNT,
    TEXT,
    WORKSPACE_SCHEMA,
    closed,
    pending_ids,
    pending_problems,
    problem,
    schema_problems,
)
from grader.checks.framework import Exercise


EXERCISE = Exercise("exercise-4")


WAYS = ("reuse", "rerun", "run", "confirm")


HIGH_IMPACT = ("send_email", "create_ticket", "ensure_ticket")


LEDGER_STATUSES = ("intent", "committed", "rejected", "unknown")


RECEIPT = "um recibo precisa de {content: texto, is_error: bool}"
# One record of the ledger at the crash (harness/effects.py writes them).
EFFECT_SCHEMA = closed(["tool", "status"], {
    "tool": {"type": "string"},
    "input_hash": {"type": "string"},
    "status": {"enum": list(LEDGER_STATUSES)},
    "result": {"type": ["object", "null"], "required": ["content", "is_error"],
               "properties": {"content": {"type": "string"}, "is_error": {"type": "boolean"}},
               "x-mensagens": {"type": RECEIPT}},
    "recorded_at": {"type": "string"},
}, messages={"type": "deveria ser um registro {tool, input_hash, status, result, recorded_at}"}, **{
    # a receipt (any status but intent) has a result; an intent's is null
    "if": {"required": ["status"], "properties": {"status": {"not": {"const": "intent"}}}},
    "then": {"required": ["result"], "properties": {"result": {"type": "object", "x-mensagens": dict.fromkeys(
        ("type", "required"), RECEIPT)}}},
})
# A crash scene: the checkpoint, the ledger, the world, and the way each pending call is resumed.
FIXTURE_SCHEMA = closed(["description", "checkpoint", "expect"], {
    "description": TEXT,
    "checkpoint": CHECKPOINT_SCHEMA,
    "effects": {"type": "object", "additionalProperties": EFFECT_SCHEMA,
                "x-mensagens": {"type": "deveria ser um objeto tool_use_id -> registro"}},
    "workspace": WORKSPACE_SCHEMA,
    "expect": closed(["ways"], {
        "ways": {"type": "object", "additionalProperties": {"enum": list(WAYS)},
                 "x-mensagens": {"type": "deveria mapear tool_use_id -> " + " | ".join(WAYS)}},
        "outbox_after": COUNT,
        "tickets_after": COUNT,
    }, messages={"type": "deveria ser um objeto com ways"}),
})
FIXTURE_SCHEMAS = (FIXTURE_SCHEMA,)


@EXERCISE.fixture_validator
def validate_fixture(data: dict) -> list[str]:
    """The shape (FIXTURE_SCHEMA), then what a schema cannot say: the pending calls against
    the last message, each way against the ledger, and the ways' keys against the pending ids."""
    problems = schema_problems(FIXTURE_SCHEMA, data)
    if problems:
        return problems
    checkpoint, effects, ways = data["checkpoint"], data.get("effects") or {}, data["expect"]["ways"]
    problems = pending_problems(checkpoint["pending_tool_use"], checkpoint["messages"], "checkpoint.pending_tool_use")
    calls_agree = not problems  # else the ids below may be the checkpoint's mistake, said already
    for key, way in ways.items():
        status = effects.get(key, {}).get("status")
        if way == "reuse" and status not in ("committed", "rejected"):
            problems.append(problem(f"expect.ways.{key}", "\"reuse\" pede um recibo committed ou rejected em effects"))
        elif way == "confirm" and status not in ("intent", "unknown"):
            problems.append(problem(f"expect.ways.{key}", "\"confirm\" pede um registro intent ou unknown em effects"))
    ids = pending_ids(checkpoint)
    if calls_agree and sorted(ways) != sorted(ids):
        problems.append(problem("expect.ways", f"as chaves deveriam ser exatamente os ids pendentes {ids}"))
    return problems
