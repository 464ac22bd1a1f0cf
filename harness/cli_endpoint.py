"""O cliente do modelo dos comandos ``run`` e ``worker``: a API real (``--live``) ou o endpoint offline.

O endpoint offline serve a fila de respostas do cenário. Duas variáveis de ambiente mudam
como ele responde, para um teste (ou uma medida) que roda o comando de verdade:

- ``HARNESS_ENDPOINT_LOG``: cada pedido que ele recebe vira uma linha JSON nesse arquivo;
- ``HARNESS_ENDPOINT_LATENCY``: quantos segundos ele espera antes de cada resposta.
"""
from __future__ import annotations

import json
import os
import time

from harness.fake_endpoint import ScriptedEndpoint
from harness.model import make_client
from harness.request_log import append_request

ENDPOINT_LOG_ENV = "HARNESS_ENDPOINT_LOG"  # arquivo onde cada pedido ao endpoint offline vira uma linha
# Segundos que o endpoint offline espera antes de cada resposta: a API real leva segundos por
# chamada, e um worker passa a maior parte do tempo esperando o modelo, não gravando.
ENDPOINT_LATENCY_ENV = "HARNESS_ENDPOINT_LATENCY"


class EndpointSettingError(ValueError):
    """Uma variável do endpoint offline (HARNESS_ENDPOINT_LATENCY) com valor que não serve."""


def make_run_client(responses, live=False):
    """O cliente da execução. Com HARNESS_ENDPOINT_LOG, cada pedido que o endpoint offline
    recebe vira uma linha JSON nesse arquivo (de todos os processos que retomam a execução),
    para um teste conferir que o modelo nunca recebeu um tool_use órfão."""
    if live:
        return make_client(live=True)
    endpoint = ScriptedEndpoint(responses)
    log_path = os.environ.get(ENDPOINT_LOG_ENV)
    if log_path:
        endpoint.handle = logged_handler(endpoint.handle, log_path)
    latency = endpoint_latency()
    if latency:
        endpoint.handle = delayed_handler(endpoint.handle, latency)
    return endpoint.client()


def endpoint_latency():
    """HARNESS_ENDPOINT_LATENCY em segundos (0 se ausente); um valor que não é um número
    não negativo é erro de quem chamou, dito com o nome da variável."""
    raw = os.environ.get(ENDPOINT_LATENCY_ENV, "").strip()
    if not raw:
        return 0.0
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not (seconds >= 0 and seconds != float("inf")):
        raise EndpointSettingError(f"{ENDPOINT_LATENCY_ENV}={raw!r}: esperava um número de segundos >= 0")
    return seconds


def delayed_handler(handle, seconds):
    def handle_after_a_while(request):
        time.sleep(seconds)
        return handle(request)
    return handle_after_a_while


def logged_handler(handle, log_path):
    def handle_and_log(request):
        append_request(log_path, json.loads(request.content))
        return handle(request)
    return handle_and_log
