"""Reusable fixture-shape validators. Each returns a list of Portuguese problems, each
naming the field (``campo `checkpoint.turns`: ...``); an empty list means the shape is fine."""
from __future__ import annotations

from typing import Any

from grader.checks.framework import content_blocks

CHECKPOINT_FIELDS = ("version", "task", "turns", "tokens_used", "messages", "pending_tool_use")
SCRIPTED_RUN_KEYS = {"description", "kind", "task", "workspace", "responses", "max_turns", "expect"}


def problem(field: str, text: str) -> str:
    return f"campo `{field}`: {text}"


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


def messages_problems(messages: Any, field: str) -> list[str]:
    if not isinstance(messages, list) or not messages:
        return [problem(field, "deveria ser uma lista não vazia de mensagens")]
    problems = []
    for index, message in enumerate(messages):
        where = f"{field}[{index}]"
        if not isinstance(message, dict):
            problems.append(problem(where, "cada mensagem deveria ser um objeto com role e content"))
            continue
        if message.get("role") not in ("user", "assistant"):
            problems.append(problem(f"{where}.role", f"deveria ser 'user' ou 'assistant' (é {message.get('role')!r})"))
        content = message.get("content")
        if isinstance(content, str):
            continue
        if not isinstance(content, list) or not content:
            problems.append(problem(f"{where}.content", "deveria ser um texto ou uma lista de blocos"))
            continue
        for position, block in enumerate(content):
            if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                problems.append(problem(f"{where}.content[{position}]", "cada bloco precisa de um campo 'type'"))
    return problems


def pending_problems(pending: Any, messages: Any, field: str) -> list[str]:
    """pending_tool_use is None or a non-empty list of {id, name, input} that matches the
    tool_use blocks of the last assistant message."""
    if pending is None:
        if isinstance(messages, list) and messages and isinstance(messages[-1], dict) \
                and messages[-1].get("role") == "assistant" and content_blocks(messages[-1], "tool_use"):
            return [problem(field, "é null, mas a última mensagem tem tool_use sem tool_result; "
                                   "liste essas chamadas aqui")]
        return []
    if not isinstance(pending, list) or not pending:
        return [problem(field, "deveria ser null ou uma lista não vazia de {id, name, input}")]
    problems = []
    for index, call in enumerate(pending):
        where = f"{field}[{index}]"
        if not isinstance(call, dict):
            problems.append(problem(where, "deveria ser um objeto {id, name, input}"))
            continue
        for key, kind in (("id", str), ("name", str), ("input", dict)):
            if not isinstance(call.get(key), kind):
                problems.append(problem(f"{where}.{key}", f"obrigatório, deveria ser {'um texto' if kind is str else 'um objeto'}"))
    if problems or not isinstance(messages, list) or not messages:
        return problems
    last = messages[-1]
    uses = {b.get("id"): b for b in content_blocks(last, "tool_use")} if isinstance(last, dict) else {}
    if not isinstance(last, dict) or last.get("role") != "assistant" or not uses:
        return [problem(field, "há chamadas pendentes, mas a última mensagem não é do assistente com tool_use")]
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


def checkpoint_problems(checkpoint: Any, field: str = "checkpoint", versions: tuple[int, ...] = (1,)) -> list[str]:
    """Shape of a run state / checkpoint v1 (version, task, turns, tokens_used, messages,
    pending_tool_use)."""
    if not isinstance(checkpoint, dict):
        return [problem(field, "obrigatório, deveria ser um objeto com " + ", ".join(CHECKPOINT_FIELDS))]
    problems = [problem(f"{field}.{key}", "obrigatório") for key in CHECKPOINT_FIELDS if key not in checkpoint]
    if problems:
        return problems
    if checkpoint["version"] not in versions:
        problems.append(problem(f"{field}.version", f"deveria ser {' ou '.join(map(str, versions))} (é {checkpoint['version']!r})"))
    problems += required_text(checkpoint, "task", f"{field}.task")
    problems += count_problems(checkpoint, ("turns", "tokens_used"), field)
    problems += messages_problems(checkpoint["messages"], f"{field}.messages")
    problems += pending_problems(checkpoint["pending_tool_use"], checkpoint["messages"], f"{field}.pending_tool_use")
    return problems


def workspace_problems(workspace: Any, field: str = "workspace") -> list[str]:
    """Optional world of the fixture: files (path -> text), outbox (emails), tickets."""
    if workspace is None:
        return []
    if not isinstance(workspace, dict):
        return [problem(field, "deveria ser um objeto com files, outbox e tickets (todos opcionais)")]
    problems = unknown_keys(workspace, {"files", "outbox", "tickets"}, field)
    files = workspace.get("files", {})
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        problems.append(problem(f"{field}.files", "deveria mapear caminho relativo -> conteúdo (texto)"))
    else:
        for path in files:
            if path.startswith("/") or ".." in path.split("/"):
                problems.append(problem(f"{field}.files", f"o caminho {path!r} precisa ficar dentro da sandbox"))
    for key in ("outbox", "tickets"):
        value = workspace.get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
            problems.append(problem(f"{field}.{key}", "deveria ser uma lista de objetos"))
    return problems


def scripted_run_problems(data: dict) -> list[str]:
    """Shape of a fixture that runs the student's loop against a scripted model: description,
    task, the optional workspace, responses the offline endpoint can serve, and max_turns >= 1
    when present. ``expect`` is the exercise's to check, once this shape is fine."""
    from harness.fake_endpoint import expand_response

    problems = unknown_keys(data, SCRIPTED_RUN_KEYS)
    problems += required_text(data, "description", "description")
    problems += required_text(data, "task", "task")
    problems += workspace_problems(data.get("workspace"))
    responses = data.get("responses")
    if not isinstance(responses, list) or not responses:
        return problems + [problem("responses", "obrigatório, deveria ser uma lista não vazia de respostas")]
    for index, response in enumerate(responses):
        try:
            expand_response(response, index)
        except (ValueError, TypeError) as error:
            problems.append(problem(f"responses[{index}]", str(error)))
    if "max_turns" in data and (not is_count(data["max_turns"]) or data["max_turns"] < 1):
        problems.append(problem("max_turns", f"deveria ser um inteiro >= 1 (é {data['max_turns']!r})"))
    return problems
