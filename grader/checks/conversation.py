"""What the API would say about a conversation the student's code built.

``api_refusal`` sends the messages through the real ``anthropic`` client to the course's
offline endpoint (the same validation and the same HTTP 400 text as the API) and returns
the refusal, or None when the request is accepted. ``refusal_failure`` turns a refusal
into a failed check that quotes the API and explains, in Portuguese, what is wrong.

Imported inside the kernel only by the checks that need it (the SDK is heavy).
"""
from __future__ import annotations

from typing import Any

from grader.checks.framework import CheckFailed, content_blocks, describe_error
from grader.core.plural import quantity


def tool_use_ids(message: Any) -> list[str]:
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return []
    return [block.get("id") for block in content_blocks(message, "tool_use")]


def tool_result_ids(message: Any) -> list[str]:
    if not isinstance(message, dict):
        return []
    return [block.get("tool_use_id") for block in content_blocks(message, "tool_result")]


def api_refusal(messages: Any) -> str | None:
    """The API's error for ``messages`` ("HTTP 400: ..."), or None when it accepts them.

    A conversation that ends with the user (the next step is a call to the model) is sent
    for real: the SDK builds the request, the endpoint validates it. One that ends with the
    assistant is only validated (nothing would be sent until a user message is added).
    """
    import anthropic

    from grader.checks.reference import MAX_TOKENS, MODEL, TOOL_SCHEMAS, make_stub_client, validate_messages

    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        return "HTTP 400: messages: Input should be a valid list of message objects"
    refusal = validate_messages(messages)
    if refusal:
        return f"HTTP 400: {refusal}"
    if messages[-1].get("role") != "user":
        return None
    assistants = sum(1 for m in messages if m.get("role") == "assistant")
    reply = {"content": [{"type": "text", "text": "Ok."}], "stop_reason": "end_turn",
             "usage": {"input_tokens": 1, "output_tokens": 1}}
    client = make_stub_client([reply] * (assistants + 1))
    try:
        client.messages.create(model=MODEL, max_tokens=MAX_TOKENS, messages=messages, tools=TOOL_SCHEMAS)
    except anthropic.APIStatusError as error:
        return f"HTTP {error.status_code}: {error.message}"
    except (TypeError, ValueError) as error:
        return f"a requisição nem pôde ser montada ({describe_error(error)})"
    return None


def protocol_diagnosis(messages: list, refusal: str) -> str:
    """A Portuguese explanation of why the API refuses this conversation."""
    if "nem pôde ser montada" in refusal:
        return "Confira se o content de cada mensagem é um texto ou uma lista de blocos (dicts)."
    if "at least one message" in refusal:
        return "A conversa ficou vazia: ela precisa de pelo menos a mensagem do usuário com a tarefa."
    if "role" in refusal and "Input should be" in refusal:
        return "Toda mensagem tem role \"user\" ou \"assistant\"."
    for index, message in enumerate(messages if isinstance(messages, list) else []):
        ids = tool_use_ids(message)
        if not ids:
            continue
        following = messages[index + 1: index + 3]
        if not following or not isinstance(following[0], dict) or following[0].get("role") != "user":
            return (f"O turno com {', '.join(ids)} ficou sem resposta: logo depois da mensagem do assistente "
                    "precisa vir uma mensagem do usuário com os tool_result.")
        answered = tool_result_ids(following[0])
        later = tool_result_ids(following[1]) if len(following) > 1 else []
        if set(answered) < set(ids) and later and set(later) & set(ids):
            return ("Os tool_result de um mesmo turno foram em mensagens separadas: a API exige todos os "
                    f"resultados de {', '.join(ids)} juntos, numa única mensagem do usuário, logo depois "
                    "da mensagem do assistente.")
        missing = [i for i in ids if i not in answered]
        if missing:
            return (f"O modelo pediu {quantity(len(ids), 'ferramenta', 'ferramentas')} no mesmo turno ({', '.join(ids)}), mas a mensagem "
                    f"seguinte não responde a {', '.join(missing)}: cada tool_use precisa do seu tool_result, "
                    "com o mesmo tool_use_id.")
    if "unexpected `tool_use_id`" in refusal:
        return ("Há um tool_result cujo tool_use_id não é de nenhum tool_use da mensagem anterior do "
                "assistente: use o id da chamada a que ele responde.")
    if "single result" in refusal:
        return "Há mais de um tool_result para a mesma chamada: cada tool_use recebe exatamente um."
    if "at the beginning of this message" in refusal:
        return "Os tool_result precisam vir primeiro na mensagem do usuário, antes de qualquer texto."
    return "A conversa quebra o protocolo de ferramentas da API."


def refusal_failure(what: str, messages: list, refusal: str) -> CheckFailed:
    """The failed check for a refused conversation: the API's own words, then why, in Portuguese."""
    status, _, text = refusal.partition(": ") if refusal.startswith("HTTP ") else ("", "", refusal)
    quoted = f"({status}): {text}" if status else f"({text})"
    return CheckFailed(
        f"A API recusaria {what} {quoted.rstrip('.')}. Em outras palavras: {protocol_diagnosis(messages, refusal)}",
        expected="conversa aceita pela API", observed=refusal,
    )


def require_api_accepts(what: str, messages: Any) -> None:
    refusal = api_refusal(messages)
    if refusal:
        raise refusal_failure(what, messages, refusal)


__all__ = ["api_refusal", "protocol_diagnosis", "refusal_failure", "require_api_accepts",
           "tool_result_ids", "tool_use_ids"]
