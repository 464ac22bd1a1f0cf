"""Exercise 2 and the shape of its fixtures: files for ``load_checkpoint`` (level 2) and scripted runs (level 3), as ``grade fixtures`` checks them."""
from __future__ import annotations

from grader.checks.fixture_shape import COUNT, scripted_run_schema, is_count, problem, required_text, scripted_run_problems, unknown_keys
from grader.checks.framework import Exercise, Fixture, is_kind
from grader.core.plural import quantity


EXERCISE = Exercise("exercise-2")


LOAD_OUTCOMES = ("None", "checkpoint", "CheckpointError")


def scripted_turns(data: dict) -> list[dict]:
    """The responses a correct loop receives from this script: up to the first one that does
    not ask for tools, and never more than max_turns."""
    limit = data.get("max_turns", len(data["responses"]))
    turns = []
    for response in data["responses"][:limit]:
        turns.append(response)
        if response.get("stop_reason") != "tool_use":
            break
    return turns


def expected_saves(data: dict) -> int:
    """Points A and B in every turn with tools, only A in the final turn."""
    return sum(2 if response.get("stop_reason") == "tool_use" else 1 for response in scripted_turns(data))


def has_tool_turns(fixture: Fixture) -> bool:
    return is_kind("run")(fixture) and any(r.get("stop_reason") == "tool_use" for r in scripted_turns(fixture.data))


# A scripted run's expect: what a correct loop does with the script (checked against it).
RUN_SCHEMA = scripted_run_schema({
    "type": "object",
    "required": ["saves"],
    "additionalProperties": False,
    "properties": {"saves": COUNT},
    "x-mensagens": {"type": "deveria ser {saves}"},
})
FIXTURE_SCHEMAS = (RUN_SCHEMA,)  # its other kind is still checked by hand below


@EXERCISE.fixture_validator
def validate_fixture(data: dict) -> list[str]:
    kind = data.get("kind")
    if kind == "load":
        return validate_load_fixture(data)
    if kind == "run":
        return validate_run_fixture(data)
    return [problem("kind", f"deveria ser \"load\" ou \"run\" (é {kind!r})")]


def validate_load_fixture(data: dict) -> list[str]:
    problems = unknown_keys(data, {"description", "kind", "file", "expect"})
    problems += required_text(data, "description", "description")
    spec = data.get("file")
    if not isinstance(spec, dict) or not ({"absent", "json", "text"} & set(spec)):
        problems.append(problem("file", "obrigatório: {\"absent\": true}, {\"json\": ...} ou {\"text\": \"...\"}"))
    else:
        problems += unknown_keys(spec, {"absent", "json", "text", "drop_last_bytes"}, "file")
        if "text" in spec and not isinstance(spec["text"], str):
            problems.append(problem("file.text", "deveria ser um texto"))
        if "drop_last_bytes" in spec and not is_count(spec["drop_last_bytes"]):
            problems.append(problem("file.drop_last_bytes", "deveria ser um inteiro >= 0"))
    expect = data.get("expect")
    if not isinstance(expect, dict) or expect.get("load_checkpoint") not in LOAD_OUTCOMES:
        return problems + [problem("expect.load_checkpoint", f"obrigatório, um de {', '.join(LOAD_OUTCOMES)}")]
    problems += unknown_keys(expect, {"load_checkpoint", "mentions"}, "expect")
    mentions = expect.get("mentions", [])
    if not isinstance(mentions, list) or not all(isinstance(m, str) and m for m in mentions):
        problems.append(problem("expect.mentions", "deveria ser uma lista de textos"))
    if expect["load_checkpoint"] == "checkpoint" and not (isinstance(spec, dict) and isinstance(spec.get("json"), dict)):
        problems.append(problem("file", "um checkpoint válido se descreve com {\"json\": {...}}"))
    if expect["load_checkpoint"] == "None" and not (isinstance(spec, dict) and spec.get("absent") is True):
        problems.append(problem("expect.load_checkpoint", "None só quando o arquivo não existe (file.absent)"))
    return problems


def validate_run_fixture(data: dict) -> list[str]:
    problems = scripted_run_problems(data, RUN_SCHEMA)
    if problems:
        return problems
    saves, got = expected_saves(data), data["expect"]["saves"]
    if got != saves:
        problems.append(problem("expect.saves", f"pelo roteiro, um loop correto grava {quantity(saves, 'vez', 'vezes')} (está {got!r})"))
    return problems
