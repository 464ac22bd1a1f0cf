"""Qual modelo o harness usa e como obter um cliente: offline (padrão) ou ao vivo."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from harness.fake_endpoint import DEFAULT_MODEL, make_stub_client

if TYPE_CHECKING:
    import anthropic

MODEL = DEFAULT_MODEL
MAX_TOKENS = 1024


class LiveModeUnavailable(RuntimeError):
    """Modo ao vivo pedido sem ANTHROPIC_API_KEY: nada foi chamado nem gravado."""


def make_client(responses: list[dict] | None = None, live: bool = False) -> anthropic.Anthropic:
    """Cliente offline sobre uma fila de respostas, ou o da API real quando pedido.

    O modo ao vivo só é usado quando o chamador pede E há ``ANTHROPIC_API_KEY``:
    sem chave, o construtor do SDK falharia, então avisamos antes e em português.
    """
    if live:
        if not os.environ.get("ANTHROPIC_API_KEY"):
            raise LiveModeUnavailable("modo ao vivo pedido, mas ANTHROPIC_API_KEY não está definida: defina a "
                                      "chave no ambiente ou rode sem --live (o modo offline é o padrão)")
        import anthropic  # só aqui: importar o SDK leva um segundo (veja harness/api_errors.py)

        return anthropic.Anthropic()
    if responses is None:
        raise ValueError("no modo offline é preciso uma fila de respostas (responses)")
    return make_stub_client(responses)
