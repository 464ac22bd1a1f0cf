"""Os erros da API do SDK para ``isinstance``, sem importar o SDK.

Importar ``anthropic`` leva mais de um segundo: os tipos dele são milhares de modelos do
pydantic. ``status``, ``timeline``, ``rewind`` e os outros comandos que nunca chamam o modelo
não precisam pagar esse segundo só para ter a tabela de erros à mão. Antes de o SDK ser
importado não existe erro dele, então nada é um destes; depois, cada classe aqui responde
como a classe do SDK de mesmo nome.
"""
from __future__ import annotations

import sys


class _ComoAClasseDoSdk(type):
    def __instancecheck__(cls, instance) -> bool:
        # Outro módulo com o nome anthropic (um anthropic.py na pasta) não tem a classe: nada é dela.
        sdk_class = getattr(sys.modules.get("anthropic"), cls.__name__, None)
        return isinstance(sdk_class, type) and isinstance(instance, sdk_class)


class APIError(metaclass=_ComoAClasseDoSdk):
    """``anthropic.APIError``: qualquer erro da API (um status de erro, o tempo esgotado, a conexão)."""


class APIStatusError(metaclass=_ComoAClasseDoSdk):
    """``anthropic.APIStatusError``: a API respondeu com um status de erro."""


class APITimeoutError(metaclass=_ComoAClasseDoSdk):
    """``anthropic.APITimeoutError``: a API não respondeu a tempo."""
