"""O contrato de um armazenamento (store): tudo o que uma execução grava de forma durável.

O loop durável (lição 6) só fala com esta interface. Ela cobre cinco assuntos, e toda
escrita leva o fencing token de quem escreve:

- a posse: ``acquire_lease``, ``renew_lease``, ``release_lease``, ``read_lease``;
- a cena: ``load`` devolve a mais recente (checkpoint v2); ``save`` grava, e com
  ``point="A"`` ou ``"B"`` acrescenta um ponto à sequência;
- a sequência de pontos: ``points`` lista os pontos da linha do tempo ativa, em ordem,
  com ids que ordenam no tempo; ``read_point`` reconstrói a cena de qualquer um deles;
- o livro-razão e as aprovações: ``effects`` e ``approvals`` leem; ``tool_phase`` dá às
  ferramentas de um turno o contexto onde elas gravam; ``save_approval`` grava a decisão
  de uma pessoa;
- o mundo e os pedidos de fora: ``world``, ``request_control``, ``pending_control``.

Três implementações: ``files`` (os arquivos que as lições constroem), ``sqlite`` e
``postgres``. Nas duas últimas a cerca é conferida pelo próprio banco, na mesma
transação da escrita.
"""
from __future__ import annotations

import abc
from typing import NamedTuple


class StoreError(Exception):
    """O armazenamento não pode ser usado: --store desconhecido, banco inalcançável ou ilegível."""


class SavePoint(NamedTuple):
    """Um ponto da sequência: ``id`` (ordena no tempo), o turno e a letra (A ou B)."""

    id: str
    turn: int
    point: str


class RunStore(abc.ABC):
    """Um armazenamento ligado a UMA execução (uma pasta, um arquivo SQLite, uma linha no PostgreSQL)."""

    #: o nome que aparece em mensagens e no ``status`` ("arquivos", "sqlite", "postgresql")
    kind = ""

    # --- a posse ------------------------------------------------------------------------

    @abc.abstractmethod
    def acquire_lease(self, owner=None, seconds=None):
        """Toma a posse (um token maior que todos os anteriores) ou levanta LeaseHeld."""

    @abc.abstractmethod
    def renew_lease(self, lease, seconds=None):
        """Estende o prazo; LeaseLost se o token já não é o atual."""

    @abc.abstractmethod
    def release_lease(self, lease):
        """Devolve a posse; False se ela já não era deste token."""

    @abc.abstractmethod
    def read_lease(self):
        """O registro da posse (owner, token, expires_at, released...), ou None."""

    def lease_keeper(self):
        """Quem renova a posse em segundo plano (``harness.heartbeat``): um objeto com
        ``renew_now(lease, seconds)`` e ``close()``, usado só pela thread da batida (num banco,
        com uma conexão própria: a da thread principal pode estar no meio de uma transação)."""
        return self

    def confirm_lease(self, lease):
        """LeaseLost se ``lease`` já não é a posse atual (uma leitura, sem gravar nada)."""
        self.renew_lease(lease)

    def renew_now(self, lease, seconds=None):
        """Renova já, sem a economia de ``renew_lease`` (que só grava depois da metade do prazo)."""
        return self.renew_lease(lease, seconds)

    #: chamado logo antes de cada efeito de alto impacto (um e-mail, um chamado); o loop
    #: durável põe aqui a conferência da posse (``check_before_effect``)
    effect_guard = None

    def check_before_effect(self):
        """A posse ainda é deste worker? LeaseLost se não: nenhum efeito sai de um worker sem posse."""
        if self.effect_guard is not None:
            self.effect_guard()

    # --- a cena e a sequência -------------------------------------------------------------

    @abc.abstractmethod
    def exists(self):
        """Há uma execução gravada aqui (mesmo que ilegível)?"""

    @abc.abstractmethod
    def load(self):
        """A cena mais recente, sempre na versão 2; None se não há execução; CheckpointError se ilegível."""

    @abc.abstractmethod
    def start(self, lease, state, scenario):
        """Começo limpo: apaga a execução anterior (o token continua crescendo), recria o mundo
        do cenário e grava ``state`` como a cena inicial."""

    @abc.abstractmethod
    def save(self, lease, state, point=None, crash_points=True):
        """Grava a cena sob o token de ``lease``; com ``point``, acrescenta um ponto à sequência.

        ``crash_points=False`` grava sem o ponto de queda "mid-checkpoint-write".
        """

    @abc.abstractmethod
    def points(self):
        """Os pontos da linha do tempo ativa, do mais antigo ao mais recente (``SavePoint``)."""

    @abc.abstractmethod
    def read_point(self, point_id):
        """A cena (formato v1: task, turns, tokens_used, messages, pending_tool_use) de um ponto."""

    # --- livro-razão e aprovações ----------------------------------------------------------

    @abc.abstractmethod
    def effects(self):
        """O livro-razão: ``{tool_use_id: registro}`` (ausente = {}; corrompido = erro)."""

    @abc.abstractmethod
    def approvals(self):
        """As decisões da válvula: ``{tool_use_id: registro}``."""

    @abc.abstractmethod
    def save_approval(self, lease, tool_use_id, record):
        """Grava a decisão de uma pessoa sob o token de ``lease``."""

    @abc.abstractmethod
    def tool_phase(self, lease, calls, approver=None, dry_run=False):
        """Context manager que entrega o ``ToolContext`` das ferramentas de um turno.

        Onde as ferramentas gravam depende do armazenamento: nos arquivos, direto no
        effects.json; num banco, num rascunho que o próximo ``save`` leva ao banco numa
        transação só, junto com o ponto B.
        """

    @abc.abstractmethod
    def world(self):
        """O mundo externo desta execução (um ``Workspace``): sandbox, caixa de saída, chamados."""

    # --- pedidos de fora e linha do tempo -------------------------------------------------

    @abc.abstractmethod
    def request_control(self, action, reason=""):
        """Deixa um pedido (pause/cancel) para o dono da posse atender na fronteira de turno."""

    @abc.abstractmethod
    def pending_control(self):
        """O pedido à espera, ou None."""

    @abc.abstractmethod
    def clear_control(self, lease):
        """Apaga o pedido atendido."""

    @abc.abstractmethod
    def timeline(self):
        """``{"timeline_id", "parent", "dry_run"}`` desta execução."""

    def scenario_name(self):
        """O nome do cenário que a execução gravou ao começar; None se ela não gravou (v1, lição 5)."""
        state = self.load()
        return None if state is None else state.get("scenario")

    def scenario_source(self):
        """Onde o nome do cenário está gravado, para uma mensagem que aponte o lugar exato."""
        return f"{self.describe()}, campo 'scenario'"

    def scene_predates_ledger(self):
        """A cena veio de um código sem livro-razão (checkpoint v1 sem effects.json)? Só nos arquivos."""
        return False

    def describe(self):
        """Onde a execução mora, para mensagens ("arquivos em runs/x", "sqlite em ...")."""
        return self.kind

    def close(self):  # noqa: B027 - optional: a store without connections has nothing to close
        """Fecha conexões; o armazenamento não é mais usado depois disto."""

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

