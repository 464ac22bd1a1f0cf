"""Exercise 4 and the shape of its fixtures (the crash scenes of level 3), as ``grade fixtures`` checks them."""
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
from grader.checks.framework import Exercise


EXERCISE = Exercise("exercise-4")


WAYS = ("reuse", "rerun", "run", "confirm")


HIGH_IMPACT = ("send_email", "create_ticket", "ensure_ticket")


LEDGER_STATUSES = ("intent", "committed", "rejected", "unknown")


FIXTURE_SCHEMAS: tuple[dict, ...] = ()  # its own fields are checked by hand below; the shared ones by schema


@EXERCISE.fixture_validator
def validate_fixture(data: dict) -> list[str]:
    problems = unknown_keys(data, {"description", "checkpoint", "effects", "workspace", "expect"})
    problems += required_text(data, "description", "description")
    problems += checkpoint_problems(data.get("checkpoint"))
    problems += workspace_problems(data.get("workspace"))
    effects = data.get("effects", {})
    if not isinstance(effects, dict):
        problems.append(problem("effects", "deveria ser um objeto tool_use_id -> registro"))
        effects = {}
    for key, record in effects.items():
        if not isinstance(record, dict) or record.get("status") not in LEDGER_STATUSES \
                or not isinstance(record.get("tool"), str):
            problems.append(problem(
                f"effects.{key}", f"deveria ter tool (texto) e status em {', '.join(LEDGER_STATUSES)}"))
        elif record["status"] != "intent" and not (
                isinstance(record.get("result"), dict) and isinstance(record["result"].get("content"), str)
                and isinstance(record["result"].get("is_error"), bool)):
            problems.append(problem(f"effects.{key}.result", "um recibo precisa de {content: texto, is_error: bool}"))
    expect = data.get("expect")
    if not isinstance(expect, dict):
        return problems + [problem("expect", "obrigatório, deveria ser um objeto com ways")]
    problems += unknown_keys(expect, {"ways", "outbox_after", "tickets_after"}, "expect")
    ways = expect.get("ways")
    if not isinstance(ways, dict):
        problems.append(problem("expect.ways", "obrigatório: tool_use_id -> " + " | ".join(WAYS)))
        return problems
    for key, way in ways.items():
        if way not in WAYS:
            problems.append(problem(f"expect.ways.{key}", f"deveria ser um de {', '.join(WAYS)} (é {way!r})"))
        elif way == "reuse" and effects.get(key, {}).get("status") not in ("committed", "rejected"):
            problems.append(problem(f"expect.ways.{key}", "\"reuse\" pede um recibo committed ou rejected em effects"))
        elif way == "confirm" and effects.get(key, {}).get("status") not in ("intent", "unknown"):
            problems.append(problem(f"expect.ways.{key}", "\"confirm\" pede um registro intent ou unknown em effects"))
    ids = pending_ids(data.get("checkpoint"))
    if ids is not None and sorted(map(str, ways)) != sorted(map(str, ids)):
        problems.append(problem("expect.ways", f"as chaves deveriam ser exatamente os ids pendentes {ids}"))
    return problems + count_problems(expect, ("outbox_after", "tickets_after"), "expect")
