"""O mundo de uma execução num banco: a caixa de saída e os chamados são tabelas (outbox transacional).

As ferramentas de leitura continuam olhando a sandbox (uma pasta local, recriada do cenário
em qualquer máquina). Os efeitos de alto impacto não saem na hora: ``add_email`` e
``add_ticket`` só os deixam num rascunho, e o armazenamento grava o rascunho no banco na
MESMA transação do recibo e do ponto B. Ou o e-mail, o recibo e a cena entram juntos, ou
nenhum deles entra: não existe mais o instante "enviado, sem recibo" da lição 4.

Um serviço de verdade teria, do outro lado da tabela, um processo que lê a caixa de saída e
entrega cada mensagem (com o id da linha como chave de idempotência). Aqui a tabela é a
caixa de saída que os testes contam.
"""
from __future__ import annotations

from pathlib import Path

from harness.tools import Workspace


class DatabaseWorld(Workspace):
    """Sandbox local + caixa de saída e chamados no banco, com um rascunho por turno."""

    def __init__(self, root, store):
        super().__init__(root, boundary=Path(root).parent)  # a pasta de sandboxes do worker (ou da execução)
        self.store = store
        self.staged_emails = None   # None: fora de um turno, nenhum efeito pode acontecer
        self.staged_tickets = None

    def begin_turn(self):
        self.staged_emails, self.staged_tickets = [], []

    def end_turn(self):
        staged = (self.staged_emails or [], self.staged_tickets or [])
        self.staged_emails = self.staged_tickets = None
        return staged

    def emails(self):
        return self.store.committed_emails() + list(self.staged_emails or [])

    def tickets(self):
        return self.store.committed_tickets() + list(self.staged_tickets or [])

    def _staging(self):
        if self.staged_emails is None:
            raise RuntimeError("efeito fora de um turno: no banco, e-mails e chamados só saem dentro de tool_phase")

    def add_email(self, email):
        self._staging()
        self.store.check_before_effect()
        self.staged_emails.append(email)

    def add_ticket(self, ticket):
        self._staging()
        self.store.check_before_effect()
        self.staged_tickets.append(ticket)

    def __repr__(self):
        return f"DatabaseWorld({str(self.root)!r}, {self.store.describe()})"
