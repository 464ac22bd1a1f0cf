"""Um provedor de SMS de mentira, sem chave de idempotência (exercício 4, nível 5).

Como muitas APIs de SMS reais, ele não reconhece repetições: cada ``send`` manda uma
mensagem nova, mesmo com o mesmo texto e a mesma referência. O que ele oferece é uma
referência do cliente (``client_ref``), um texto livre que o remetente escolhe e que fica
guardado com a mensagem, e uma consulta por ela (``find_by_client_ref``). A consulta é
autoritativa: uma mensagem aparece nela assim que ``send`` volta. E ela pode falhar
(``SmsApiError``), como qualquer chamada de rede.
"""
from __future__ import annotations

from typing import Callable


class SmsApiError(Exception):
    """O provedor não respondeu (fora do ar, prazo estourado): não dá para saber nada por ele."""


class SmsGateway:
    """O provedor: ``sent`` é a lista das mensagens que saíram, na ordem."""

    def __init__(self, sent: list[dict] | None = None, lookup_fails: bool = False,
                 on_send: Callable[[dict], None] | None = None):
        self.sent = [dict(message) for message in sent or []]
        self.lookup_fails = lookup_fails
        self.lookups: list[str] = []
        self.on_send = on_send

    def send(self, to: str, text: str, client_ref: str | None = None) -> str:
        """Manda um SMS e devolve o id que o provedor deu a ele. Não há chave: repetir repete."""
        message = {"sid": f"SM{len(self.sent) + 1:04d}", "to": to, "text": text, "client_ref": client_ref}
        if self.on_send is not None:
            self.on_send(message)
        self.sent.append(message)
        return message["sid"]

    def find_by_client_ref(self, client_ref: str) -> list[dict]:
        """As mensagens enviadas com esta referência ([] se nenhuma); SmsApiError se não responder."""
        self.lookups.append(client_ref)
        if self.lookup_fails:
            raise SmsApiError("a consulta por client_ref não respondeu (prazo estourado)")
        return [dict(message) for message in self.sent if message["client_ref"] == client_ref]
