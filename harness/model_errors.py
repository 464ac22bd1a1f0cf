"""Apêndice 2: quando a chamada ao modelo falha, tentar de novo com limite, e anotar cada tentativa.

A API separa os erros do pedido dos erros do servidor (Errors — Claude API —
https://docs.claude.com/en/api/errors): um 400 diz que o pedido está errado, e repeti-lo dá o
mesmo 400; um 429 (limite de uso) ou um 529 (API sobrecarregada) dizem "agora não", e o 429
vem com ``retry-after``, os segundos que convém esperar. O SDK já tenta de novo sozinho (duas
vezes, por padrão), mas em silêncio; o harness desliga isso (``max_retries=0``) e tenta ele
mesmo, para que cada tentativa fique escrita na cena de execução.
"""
from __future__ import annotations

import time

import anthropic

MAX_MODEL_ATTEMPTS = 4       # chamadas por pedido, contando a primeira
MAX_RETRY_WAIT = 30.0        # segundos: nenhuma espera passa disso, diga o retry-after o que disser
FIRST_RETRY_WAIT = 0.5       # sem retry-after: 0,5 s, 1 s, 2 s... até o teto
RETRYABLE_STATUSES = (408, 409, 429, 500, 502, 503, 504, 529)


class StreamCut(Exception):
    """A conexão caiu antes do ``message_stop``: a resposta chegou pela metade e é descartada."""


class ModelUnavailable(Exception):
    """O modelo continuou indisponível depois de todas as tentativas; a cena diz quantas e por quê."""


def is_retryable(error):
    """Repetir o mesmo pedido pode dar certo? Nunca para um 400: o pedido errado continua errado."""
    if isinstance(error, (StreamCut, anthropic.APIConnectionError)):
        return True
    return isinstance(error, anthropic.APIStatusError) and error.status_code in RETRYABLE_STATUSES


def retry_wait(error, attempt, max_wait=MAX_RETRY_WAIT):
    """Quanto esperar antes da tentativa seguinte: o retry-after, se veio, senão o dobro da anterior."""
    header = None
    if isinstance(error, anthropic.APIStatusError):
        header = error.response.headers.get("retry-after")
    try:
        asked = float(header) if header is not None else None
    except ValueError:
        asked = None  # uma data HTTP, ou lixo: cai na espera crescente
    if asked is None or asked < 0:
        asked = FIRST_RETRY_WAIT * 2 ** (attempt - 1)
    return min(asked, max_wait)


def failure_record(state, error, attempt, waited):
    """A linha que a cena guarda para uma tentativa que falhou."""
    status = getattr(error, "status_code", None)
    header = error.response.headers.get("retry-after") if isinstance(error, anthropic.APIStatusError) else None
    return {
        "turn": state["turns"] + 1,
        "attempt": attempt,
        "status": status if status is not None else "stream_cut" if isinstance(error, StreamCut) else "connection",
        "retry_after": header,
        "waited": waited,
    }


def call_with_retries(state, call, sleep=time.sleep, max_attempts=MAX_MODEL_ATTEMPTS, max_wait=MAX_RETRY_WAIT):
    """``call()`` até dar certo, no máximo ``max_attempts`` vezes; cada falha vai para state["model_retries"].

    Um erro que não se resolve repetindo (400, 401, 404...) sobe na primeira vez. Esgotadas
    as tentativas, ModelUnavailable. A espera honra o retry-after, mas nunca passa de ``max_wait``.
    """
    retries = state.setdefault("model_retries", [])
    for attempt in range(1, max_attempts + 1):
        try:
            return call()
        except Exception as error:
            if not is_retryable(error):
                raise
            last = attempt == max_attempts
            waited = 0.0 if last else retry_wait(error, attempt, max_wait)
            retries.append(failure_record(state, error, attempt, waited))
            if last:
                raise ModelUnavailable(
                    f"o modelo não respondeu depois de {max_attempts} tentativas "
                    f"(a última: {retries[-1]['status']})") from error
            sleep(waited)


def api_message(error):
    """O texto que a API mandou no corpo do erro (o ``message`` do JSON), sem o prefixo do SDK."""
    body = getattr(error, "body", None)
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return body["error"].get("message") or str(error)
    return str(error)
