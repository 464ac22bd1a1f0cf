"""The fixture shapes the exercises share, as JSON Schema (Draft 2020-12, checked by
jsonschema: every problem at once), and the rules a schema cannot say, run once the shape is
fine. Each function returns Portuguese problems naming the field (``campo `checkpoint.turns`:
...``); an empty list means the fixture is fine."""
from __future__ import annotations

import unicodedata
from typing import Any, Callable, Iterable

from grader.checks.framework import content_blocks
from grader.core.schema_errors import TEXT, Failure, all_failures, describe, field_name, shown

CHECKPOINT_FIELDS = ("version", "task", "turns", "tokens_used", "messages", "pending_tool_use")

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
        # 1 and nothing else: not 1.0, which const (JSON equality) would take, nor True
        "version": {"type": "integer", "minimum": 1, "maximum": 1, "x-mensagens": {"*": "deveria ser 1 (é {value!r})"}},
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
# The world a fixture starts in; its files' paths follow path_problems (workspace_problems).
WORKSPACE_SCHEMA = {
    "type": ["object", "null"],
    "additionalProperties": False,
    "properties": {
        "files": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "x-mensagens": {"type": "deveria mapear caminho relativo -> conteúdo (texto)"},
        },
        "outbox": _OBJECTS,
        "tickets": _OBJECTS,
    },
    "x-mensagens": {"type": "deveria ser um objeto com files, outbox e tickets (todos opcionais)"},
}


def closed(required: list[str], properties: dict, messages: dict | None = None, **more) -> dict:
    """An object schema allowing only ``properties``, ``required`` among them; ``messages``
    are its x-mensagens, ``more`` any other keywords (``**{"if": ..., "then": ...}`` for the
    names Python reserves)."""
    schema = {"type": "object", "required": required, "additionalProperties": False, "properties": properties, **more}
    return {**schema, "x-mensagens": messages} if messages else schema


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


PATH_PART_BYTES = 255  # the longest file name Linux, macOS and Windows file systems take
PATH_BYTES = 1024  # leaves the grading folder room under Linux's PATH_MAX (4096)


def unsafe_path(path: Any) -> str | None:
    """Why ``path`` cannot name a file inside the folder a fixture is written into (relative,
    "/" between non-empty parts, none of them "." or "..", nothing a file system refuses),
    in Portuguese; None when it can."""
    if not isinstance(path, str):  # a YAML key written as a number
        return "deveria ser um texto (entre aspas)"
    if not path:
        return "o caminho está vazio"
    try:
        size = len(path.encode("utf-8"))
    except UnicodeEncodeError:  # a lone surrogate (JSON "\ud800") names no file
        return "não é um texto Unicode válido"
    reasons = (
        ("\0" in path, "tem um caractere NUL"),
        ("\\" in path, "tem uma barra invertida (\\): separe as pastas com /"),
        (path[1:2] == ":" and path[:1].isascii() and path[:1].isalpha(), "começa com uma letra de unidade (C:)"),
        (path.startswith("/"), "começa com / (é um caminho absoluto)"),
        (path.endswith("/"), "termina com / (é uma pasta, não um arquivo)"),
        ("" in path.split("/"), "tem uma parte vazia (//)"),
        (any(part in (".", "..") for part in path.split("/")), "tem uma parte . ou .."),
    )
    reason = next((reason for broken, reason in reasons if broken), None)
    if reason:
        return reason
    longest = max(len(part.encode("utf-8")) for part in path.split("/"))
    if longest > PATH_PART_BYTES:
        return f"tem uma parte de {longest} bytes (o máximo é {PATH_PART_BYTES})"
    return f"tem {size} bytes (o máximo é {PATH_BYTES})" if size > PATH_BYTES else None


def path_problems(paths: Iterable, field_of: Callable[[str], str], unsafe: str) -> list[str]:
    """The paths of one folder a fixture writes file by file: each must be safe (``unsafe``,
    with ``{path}`` for the path, says so where it is not, at ``field_of(path)``), none may be
    a folder of another, and no two may name the same file on a file system that folds case
    or Unicode forms (macOS, Windows)."""
    problems, files = [], {}
    for path in paths:
        reason = unsafe_path(path)
        if reason:
            problems.append(problem(field_of(path), f"{unsafe.format(path=shown(path))}: {reason}"))
        else:
            files.setdefault(_same_file(path), path)
    for path in paths:
        if unsafe_path(path):
            continue
        parts = path.split("/")
        folder = next((files[key] for key in (_same_file("/".join(parts[:end])) for end in range(1, len(parts)))
                       if key in files), None)
        twin = files[_same_file(path)]
        if folder is not None:
            problems.append(problem(field_of(path), f"o caminho {shown(path)} fica dentro de "
                                                    f"{shown(folder)}, que é um arquivo"))
        elif twin != path:
            problems.append(problem(field_of(path), (
                f"o caminho {shown(path)} é o mesmo arquivo que {shown(twin)} no macOS e no Windows "
                "(mudam só maiúsculas ou a forma Unicode dos acentos)")))
    return problems


def _same_file(path: str) -> str:
    return unicodedata.normalize("NFC", path).casefold()


def workspace_problems(data: dict) -> list[str]:
    """path_problems for the files of a fixture's workspace (when it has them)."""
    workspace = data.get("workspace")
    files = workspace.get("files") if isinstance(workspace, dict) else None
    if not isinstance(files, dict):
        return []
    return path_problems(list(files), lambda path: "workspace.files", "o caminho {path} precisa ficar dentro da sandbox")


def checkpoint_problems(checkpoint: dict, field: str) -> list[str]:
    """What CHECKPOINT_SCHEMA cannot say about a checkpoint at ``field`` (once the schema
    passed): its conversation is one the API accepts once the pending calls get their
    tool_result, and those calls are the ones the last message left unanswered."""
    messages = checkpoint["messages"]
    return (conversation_problems(messages, f"{field}.messages")
            + pending_problems(checkpoint["pending_tool_use"], messages, f"{field}.pending_tool_use"))


def conversation_problems(messages: list, field: str) -> list[str]:
    """The order the Messages API requires: the user speaks first, roles alternate, each
    tool_use is answered in the next message (but the last one's, which are pending), each
    tool_result answers a tool_use of the message just before, and no two tool_use share an id."""
    problems = []
    if messages[0]["role"] != "user":
        problems.append(problem(f"{field}[0].role", f"a conversa começa com uma mensagem do usuário (é {messages[0]['role']!r})"))
    for index, (before, message) in enumerate(zip(messages, messages[1:]), start=1):
        if message["role"] == before["role"]:
            other = "user" if before["role"] == "assistant" else "assistant"
            problems.append(problem(f"{field}[{index}].role", f"os papéis se alternam: depois de uma mensagem "
                                                             f"{before['role']!r} vem uma {other!r} (é {message['role']!r})"))
    first_use: dict = {}
    for index, message in enumerate(messages):
        blocks = message["content"] if isinstance(message["content"], list) else []
        if message["role"] == "assistant":
            answered = set(_ids(messages[index + 1], "tool_result", "tool_use_id")) if index + 1 < len(messages) else None
            for position, block in enumerate(blocks):
                if block["type"] != "tool_use":
                    continue
                where, tool_use_id = f"{field}[{index}].content[{position}]", block.get("id")
                if tool_use_id in first_use:
                    problems.append(problem(f"{where}.id", f"o id {shown(tool_use_id)} já é de um tool_use anterior "
                                                           f"({first_use[tool_use_id]}): cada chamada tem o seu id"))
                first_use.setdefault(tool_use_id, where)
                if answered is not None and tool_use_id not in answered:
                    problems.append(problem(where, f"o tool_use {shown(tool_use_id)} não tem tool_result na mensagem "
                                                   "seguinte (só os da última mensagem ficam pendentes)"))
        else:
            asked = _ids(messages[index - 1], "tool_use", "id") if index else []
            for position, block in enumerate(blocks):
                if block["type"] == "tool_result" and block.get("tool_use_id") not in asked:
                    problems.append(problem(f"{field}[{index}].content[{position}].tool_use_id", (
                        f"{shown(block.get('tool_use_id'))} não é o id de nenhum tool_use da mensagem anterior do "
                        f"assistente (os ids ali: {shown(asked)})")))
    return problems


def _ids(message: dict, kind: str, key: str) -> list:
    """The ``key`` of each ``kind`` block of an assistant's (tool_use) or a user's (tool_result) message."""
    wanted_role = "assistant" if kind == "tool_use" else "user"
    return [block.get(key) for block in content_blocks(message, kind)] if message["role"] == wanted_role else []


def pending_problems(pending: Any, messages: list, field: str) -> list[str]:
    """pending_tool_use is exactly the tool_use blocks of the last assistant message (same
    ids, names and inputs, each once), and is null only when that message asks for no tool."""
    last = messages[-1]
    uses = {block.get("id"): block for block in content_blocks(last, "tool_use")}
    if pending is None:
        if last["role"] == "assistant" and uses:
            return [problem(field, "é null, mas a última mensagem tem tool_use sem tool_result; "
                                   "liste essas chamadas aqui")]
        return []
    if last["role"] != "assistant" or not uses:
        return [problem(field, "há chamadas pendentes, mas a última mensagem não é do assistente com tool_use")]
    problems, listed = [], set()
    for index, call in enumerate(pending):
        block = uses.get(call["id"])
        if call["id"] in listed:
            problems.append(problem(f"{field}[{index}].id", f"{shown(call['id'])} já está listado "
                                                            "(cada chamada pendente aparece uma vez)"))
        elif block is None:
            problems.append(problem(f"{field}[{index}].id", f"{call['id']!r} não é o id de nenhum tool_use da última "
                                                            f"mensagem (os ids ali: {shown(sorted(uses))})"))
        elif block.get("name") != call["name"] or block.get("input") != call["input"]:
            problems.append(problem(f"{field}[{index}]", (
                f"name/input ({call['name']!r}, {shown(call['input'])}) diferentes do tool_use de mesmo id na "
                f"última mensagem ({block.get('name')!r}, {shown(block.get('input'))})")))
        listed.add(call["id"])
    if listed <= set(uses):  # else a mistyped id is the missing one, said above
        problems += [problem(field, f"falta o tool_use {shown(tool_use_id)} ({block.get('name')}) da última "
                                    "mensagem: cada tool_use dela ainda sem tool_result é uma chamada pendente")
                     for tool_use_id, block in uses.items() if tool_use_id not in listed]
    return problems


def pending_ids(checkpoint: dict) -> list:
    """The ids of a checkpoint's pending calls ([] when nothing is pending), once
    CHECKPOINT_SCHEMA passed."""
    return [call["id"] for call in checkpoint["pending_tool_use"] or []]


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
            continue
        problems += stop_reason_problems(response, f"responses[{index}]")
    return problems


def stop_reason_problems(response: dict, field: str) -> list[str]:
    """What the stop reason says must agree with the blocks: tool_use asks for at least one
    tool; pause_turn only pauses (a tool_use in it would never run, and the next request,
    with that tool_use unanswered, is one the API refuses)."""
    asked = [block for block in response.get("content", []) if isinstance(block, dict) and block.get("type") == "tool_use"]
    reason = response.get("stop_reason")
    if reason == "tool_use" and not asked:
        return [problem(f"{field}.stop_reason", "é \"tool_use\", mas a resposta não tem nenhum bloco tool_use")]
    if reason == "pause_turn" and asked:
        return [problem(f"{field}.stop_reason", "é \"pause_turn\", mas a resposta tem tool_use: um pause_turn só pausa o "
                                                "turno (o loop não executa nada e chama o modelo de novo); use \"tool_use\"")]
    return []


def scripted_run_schema(expect: dict) -> dict:
    """The shape of a fixture that runs the student's loop against a scripted model, with the
    exercise's own ``expect``."""
    return closed(["description", "task", "responses", "expect"], {
        "description": TEXT,
        "kind": {"const": "run"},
        "task": TEXT,
        "workspace": WORKSPACE_SCHEMA,
        "responses": {"type": "array", "minItems": 1, "x-mensagens": {
            "*": "deveria ser uma lista não vazia de respostas"}},
        "max_turns": POSITIVE,
        "expect": expect,
    })
