"""Defect: each model response is kept on disk as soon as it arrives ("so a crash does not pay
for it twice"), and the resume reuses a kept response without adding its tokens. Only a crash
right after the response and before point A (after-model-response) leaves a kept response
behind: the run completes with one email, and tokens_used comes out lower than without a crash."""
from __future__ import annotations

import json
from pathlib import Path

from anthropic.types import Message

from harness import runner

NAME = "cached-response-not-counted"
COMPLETES = True
DESCRIPTION = (
    "Cada resposta do modelo é guardada em disco assim que chega, e a retomada reaproveita a resposta "
    "guardada sem somar os tokens dela (\"já foram pagos\"): só que a queda levou junto a conta daquele "
    "turno, e tokens_used termina menor que numa execução sem queda."
)
SYMPTOM = (
    "Derrube a execução logo depois da resposta do modelo, antes do ponto A (after-model-response:2), "
    "retome e compare tokens_used com o de uma execução sem queda do mesmo cenário."
)

KEPT_RESPONSE = "resposta-guardada.json"
ORIGINAL_DRIVE = runner.drive
ORIGINAL_CALL_MODEL = runner.call_model
ORIGINAL_TAKE_RESPONSE = runner.take_response
_run_dirs: list[Path] = []  # the run folder of the drive in progress


def drive_keeping_responses(client, store, *args, **kwargs):
    _run_dirs.append(Path(store.run_dir))
    try:
        return ORIGINAL_DRIVE(client, store, *args, **kwargs)
    finally:
        _run_dirs.pop()


def call_model_keeping_the_response(client, messages, *args, **kwargs):
    kept = _run_dirs[-1] / KEPT_RESPONSE
    if kept.exists():
        data = json.loads(kept.read_text(encoding="utf-8"))
        data["usage"].update(input_tokens=0, output_tokens=0)  # the defect: "already paid for"
        return Message.model_validate(data)
    response = ORIGINAL_CALL_MODEL(client, messages, *args, **kwargs)
    kept.write_text(response.model_dump_json(), encoding="utf-8")
    return response


def take_response_dropping_the_kept_one(state, response):
    (_run_dirs[-1] / KEPT_RESPONSE).unlink(missing_ok=True)
    return ORIGINAL_TAKE_RESPONSE(state, response)


def patches() -> dict:
    return {"harness.runner:drive": drive_keeping_responses,
            "harness.runner:call_model": call_model_keeping_the_response,
            "harness.runner:take_response": take_response_dropping_the_kept_one}
