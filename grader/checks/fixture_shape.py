"""The fixture shapes the exercises share, as JSON Schema (Draft 2020-12, checked by
jsonschema: every problem at once), and the rules a schema cannot say, run once the shape is
fine. Each function returns Portuguese problems naming the field (``campo `checkpoint.turns`:
...``); an empty list means the fixture is fine."""
from __future__ import annotations

from typing import Any

from grader.checks.framework import content_blocks
from grader.core.schema_errors import NON_BLANK, Failure, all_failures, describe, field_name

CHECKPOINT_FIELDS = ("version", "task", "turns", "tokens_used", "messages", "pending_tool_use")

TEXT = {"type": "string", "pattern": NON_BLANK}
COUNT = {"type": "integer", "minimum": 0}
POSITIVE = {"type": "integer", "minimum": 1}
TEXTS = {"type": "array", "items": TEXT, "x-mensagens": {"*": "deveria ser uma lista de textos"}}

_BLOCK = {"type": "object", "required": ["type"], "properties": {
    "type": {"type": "string", "x-mensagens": {"*": "cada bloco precisa de um campo 'type' (texto)",
                                               "required": "cada bloco precisa de um campo 'type' (texto)"}}},
    "x-mensagens": {"type": "cada bloco deveria ser um objeto com um campo 'type'"}}
_MESSAGE = {
    "type": "object",
    "required": ["role", "content"],
    "properties": {
        "role": {"enum": ["user", "assistant"]},
        "content": {"type": ["string", "array"], "minItems": 1, "items": _BLOCK,
                    "x-mensagens": {"type": "deveria ser um texto ou uma lista de blocos",
                                    "minItems": "deveria ser um texto ou uma lista não vazia de blocos"}},
    },
    "x-mensagens": {"type": "cada mensagem deveria ser um objeto com role e content"},
}
_CALL = {
    "type": "object",
    "required": ["id", "name", "input"],
    "properties": {"id": {"type": "string"}, "name": {"type": "string"}, "input": {"type": "object"}},
    "x-mensagens": {"type": "deveria ser um objeto {id, name, input}"},
}
# A run state / checkpoint v1, as the lessons save it (extra fields are tolerated, as
# load_checkpoint tolerates them).
CHECKPOINT_SCHEMA = {
    "type": "object",
    "required": list(CHECKPOINT_FIELDS),
    "properties": {
        "version": {"const": 1},
        "task": TEXT,
        "turns": COUNT,
        "tokens_used": COUNT,
        "messages": {"type": "array", "minItems": 1, "items": _MESSAGE,
                     "x-mensagens": {"type": "deveria ser uma lista não vazia de mensagens",
                                     "minItems": "deveria ser uma lista não vazia de mensagens"}},
        "pending_tool_use": {"type": ["array", "null"], "minItems": 1, "items": _CALL, "x-mensagens": {
            "type": "deveria ser null ou uma lista não vazia de {id, name, input}",
            "minItems": "deveria ser null ou uma lista não vazia de {id, name, input}"}},
    },
    "x-mensagens": {"type": "obrigatório, deveria ser um objeto com " + ", ".join(CHECKPOINT_FIELDS)},
}
_OBJECTS = {"type": "array", "items": {"type": "object"}, "x-mensagens": {"*": "deveria ser uma lista de objetos"}}
# The world a fixture starts in; a file's path stays inside the sandbox (not absolute, no "..").
WORKSPACE_SCHEMA = {
    "type": ["object", "null"],
    "additionalProperties": False,
    "properties": {
        "files": {
            "type": "object",
            "propertyNames": {"not": {"pattern": r"^/|(^|/)\.\.(/|$)"},
                              "x-mensagens": {"*": "o caminho {value!r} precisa ficar dentro da sandbox"}},
            "additionalProperties": {"type": "string"},
            "x-mensagens": {"type": "deveria mapear caminho relativo -> conteúdo (texto)"},
        },
        "outbox": _OBJECTS,
        "tickets": _OBJECTS,
    },
    "x-mensagens": {"type": "deveria ser um objeto com files, outbox e tickets (todos opcionais)"},
}


def kinds_schema(kinds: dict[str, dict]) -> dict:
    """One schema for a fixture whose ``kind`` picks its shape: ``kind`` is one of ``kinds``,
    and the fixture is then held to that kind's schema alone."""
    return {
        "type": "object",
        "required": ["kind"],
        "properties": {"kind": {"enum": list(kinds)}},
        "allOf": [{"if": {"required": ["kind"], "properties": {"kind": {"const": kind}}}, "then": schema}
                  for kind, schema in kinds.items()],
    }


def refused(message: str) -> dict:
    """A schema no value passes, with the words saying why (for keys a patternProperties refuses)."""
    return {"not": {}, "x-mensagens": {"*": message}}


def problem(field: str, text: str) -> str:
    return f"campo `{field}`: {text}"


def worded(failures: list[Failure], field: str = "") -> list[str]:
    """One Portuguese problem per failure; ``field`` names where the data sits in the fixture."""
    prefix = (field,) if field else ()
    return [problem(field_name((*prefix, *failure.path)), describe(failure)) for failure in failures]


def schema_problems(schema: dict, data: Any, field: str = "") -> list[str]:
    """Every way ``data`` breaks ``schema``, one Portuguese problem per field."""
    return worded(all_failures(schema, data), field)


def holds(failures: list[Failure], *path) -> bool:
    """No failure at ``path`` or above it: what is there (if anything) has its schema's type,
    so code may read it."""
    return not any(failure.path == path[:len(failure.path)] for failure in failures)


def intact(failures: list[Failure], *path) -> bool:
    """No failure at, above or below ``path``: the whole value is as its schema says."""
    return holds(failures, *path) and not any(failure.path[:len(path)] == path for failure in failures)


def is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def unknown_keys(data: dict, allowed: set[str], field: str = "") -> list[str]:
    where = f"{field}." if field else ""
    return [
        problem(f"{where}{key}", f"chave desconhecida (aceitas: {', '.join(sorted(allowed))})")
        for key in data if key not in allowed
    ]


def required_text(data: dict, key: str, field: str) -> list[str]:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        return [problem(field, "obrigatório, deveria ser um texto não vazio")]
    return []


def count_problems(data: dict, keys: tuple[str, ...], field: str) -> list[str]:
    """Each of ``keys`` that ``data`` has must be an integer >= 0."""
    return [
        problem(f"{field}.{key}", f"deveria ser um inteiro >= 0 (é {data[key]!r})")
        for key in keys if key in data and not is_count(data[key])
    ]


def pending_problems(pending: Any, messages: list, field: str) -> list[str]:
    """What CHECKPOINT_SCHEMA cannot say: pending_tool_use matches the tool_use blocks of the
    last assistant message (same ids, names and inputs), and is null only when that message
    asks for no tool."""
    last = messages[-1]
    uses = {block.get("id"): block for block in content_blocks(last, "tool_use")}
    if pending is None:
        if last["role"] == "assistant" and uses:
            return [problem(field, "é null, mas a última mensagem tem tool_use sem tool_result; "
                                   "liste essas chamadas aqui")]
        return []
    if last["role"] != "assistant" or not uses:
        return [problem(field, "há chamadas pendentes, mas a última mensagem não é do assistente com tool_use")]
    problems = []
    for index, call in enumerate(pending):
        block = uses.get(call["id"])
        if block is None:
            problems.append(problem(f"{field}[{index}].id", f"{call['id']!r} não é o id de nenhum tool_use da última mensagem"))
        elif block.get("name") != call["name"] or block.get("input") != call["input"]:
            problems.append(problem(f"{field}[{index}]", "name/input diferentes do tool_use de mesmo id na última mensagem"))
    return problems


def pending_ids(checkpoint: Any) -> list | None:
    """The ids of the checkpoint's pending calls ([] when nothing is pending); None when
    pending_tool_use is not a list or null (checkpoint_problems reports that)."""
    pending = checkpoint.get("pending_tool_use") if isinstance(checkpoint, dict) else None
    if not (isinstance(pending, list) or pending is None):
        return None
    return [call.get("id") for call in pending or [] if isinstance(call, dict)]


def checkpoint_problems(checkpoint: Any, field: str = "checkpoint") -> list[str]:
    """Shape of a run state / checkpoint v1 (CHECKPOINT_SCHEMA), then its pending calls."""
    problems = schema_problems(CHECKPOINT_SCHEMA, checkpoint, field)
    if problems:
        return problems
    return pending_problems(checkpoint["pending_tool_use"], checkpoint["messages"], f"{field}.pending_tool_use")


def workspace_problems(workspace: Any, field: str = "workspace") -> list[str]:
    """Optional world of the fixture: files (path -> text), outbox (emails), tickets."""
    return schema_problems(WORKSPACE_SCHEMA, workspace, field)


def response_problems(responses: list) -> list[str]:
    """Each scripted response must be one the offline endpoint can serve (the SDK's own model
    of a Message checks it, which a schema here would only copy)."""
    from harness.fake_endpoint import expand_response

    problems = []
    for index, response in enumerate(responses):
        try:
            expand_response(response, index)
        except (ValueError, TypeError) as error:
            problems.append(problem(f"responses[{index}]", str(error)))
    return problems


def scripted_run_schema(expect: dict) -> dict:
    """The shape of a fixture that runs the student's loop against a scripted model, with the
    exercise's own ``expect``."""
    return {
        "type": "object",
        "required": ["description", "task", "responses", "expect"],
        "additionalProperties": False,
        "properties": {
            "description": TEXT,
            "kind": {"const": "run"},
            "task": TEXT,
            "workspace": WORKSPACE_SCHEMA,
            "responses": {"type": "array", "minItems": 1, "x-mensagens": {
                "*": "deveria ser uma lista não vazia de respostas"}},
            "max_turns": {"type": "integer", "minimum": 1},
            "expect": expect,
        },
    }


def scripted_run_problems(data: dict, schema: dict) -> list[str]:
    """Shape of a scripted-run fixture (``schema``, from scripted_run_schema), then each
    response; ``expect``'s values are the exercise's to check, once this shape is fine."""
    return schema_problems(schema, data) or response_problems(data["responses"])
