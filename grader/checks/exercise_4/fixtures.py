"""Exercise 4 and the shape of its fixtures (the crash scenes of level 3), as ``grade fixtures`` checks them."""
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
from grader.checks.framework import Exercise


EXERCISE = Exercise("exercise-4")


WAYS = ("reuse", "rerun", "run", "confirm")


LEDGER_STATUSES = ("intent", "committed", "rejected", "unknown")


SETTLED = ("committed", "rejected")  # a receipt: the outcome is known and comes back as it is


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
    the last message, each way against the ledger and the tool's kind, and the ways' keys
    against the pending ids."""
    problems = schema_problems(FIXTURE_SCHEMA, data) + workspace_problems(data)
    if problems:
        return problems
    checkpoint, effects, ways = data["checkpoint"], data.get("effects") or {}, data["expect"]["ways"]
    problems = checkpoint_problems(checkpoint, "checkpoint")
    calls_agree = not problems  # else the ids below may be the checkpoint's mistake, said already
    tools = {call["id"]: call["name"] for call in checkpoint["pending_tool_use"] or []}
    for key, way in ways.items():
        status = effects.get(key, {}).get("status")
        if way == "reuse" and status not in SETTLED:
            problems.append(problem(f"expect.ways.{key}", "\"reuse\" pede um recibo committed ou rejected em effects"))
        elif way == "confirm" and status not in ("intent", "unknown"):
            problems.append(problem(f"expect.ways.{key}", "\"confirm\" pede um registro intent ou unknown em effects"))
        elif calls_agree and key in tools:
            mismatch = way_mismatch(way, status, tools[key])
            if mismatch:
                problems.append(problem(f"expect.ways.{key}", mismatch))
    ids = pending_ids(checkpoint)
    if calls_agree and sorted(ways) != sorted(ids):
        problems.append(problem("expect.ways", f"as chaves deveriam ser exatamente os ids pendentes {ids}"))
    return problems


def way_mismatch(way: str, status: str | None, tool: str) -> str | None:
    """Why ``way`` is not the one reconcile takes for a pending ``tool`` whose ledger record has
    ``status`` (None: no record), as the harness decides it: a receipt is reused; without one,
    a read runs again and a high-impact call runs once or is confirmed. None when it agrees."""
    from grader.checks.reference import HIGH_IMPACT_TOOLS, READ_ONLY_TOOLS

    kind = ("é de leitura" if tool in READ_ONLY_TOOLS else "é de alto impacto" if tool in HIGH_IMPACT_TOOLS
            else "não está em READ_ONLY_TOOLS nem em HIGH_IMPACT_TOOLS")
    if status in SETTLED:
        return None if way == "reuse" else f"há um recibo {status} em effects para esta chamada: a via é \"reuse\""
    if way == "rerun" and tool not in READ_ONLY_TOOLS:
        advice = ("; sem recibo, a via é \"run\" (nunca aconteceu) ou \"confirm\" (o efeito já está no sistema "
                  "externo)") if tool in HIGH_IMPACT_TOOLS else ""
        return f"\"rerun\" é só para leituras (READ_ONLY_TOOLS), e {tool} {kind}{advice}"
    if way in ("run", "confirm") and tool not in HIGH_IMPACT_TOOLS:
        advice = "; sem recibo, a via é \"rerun\"" if tool in READ_ONLY_TOOLS else ""
        return f"\"{way}\" é só para alto impacto (HIGH_IMPACT_TOOLS), e {tool} {kind}{advice}"
    return None
