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
- o mundo e os pedidos de fora: ``world``, ``request_control``, ``pending_control``;
- a linha do tempo da lição 5 (``python -m harness timeline``, ``rewind``, ``fork``):
  ``timeline_view`` e ``head_scene`` mostram, ``find_point`` acha o ponto de ``--to``,
  ``rewound_state`` e ``rewind`` rebobinam, ``fork_preview`` e ``fork`` bifurcam. A linha de
  comando só chama estes métodos: o que só um armazenamento faz (nos arquivos, o plano da
  rebobinagem e a pasta de obra da bifurcação) fica dentro dele.

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


class TimelineFrame(NamedTuple):
    """Um ponto como ``python -m harness timeline`` o mostra.

    ``summary`` (``tokens_used``, ``message_count``, ``pending``) vem quando o armazenamento lê a
    cena de cada ponto para listar (os arquivos leem; um banco lista só a sequência); ``error``
    diz por que um ponto não se deixa ler, e a lista segue assim mesmo.
    """

    id: str
    turn: int
    point: str
    summary: dict | None = None
    error: str | None = None


class TimelineView(NamedTuple):
    """O que ``timeline`` mostra antes da cena atual: onde a execução mora, a identidade da linha
    (a de ``timeline()``), os pontos ativos (``TimelineFrame``) e os que rebobinagens guardaram
    fora da linha ativa, como ``(onde, quantos pontos)``."""

    where: str
    timeline: dict
    frames: list
    set_aside: list


class ForkPreview(NamedTuple):
    """O que uma bifurcação copiaria: o ponto, a cena dele e, quando o armazenamento a confere
    para a cópia, a linha de origem (``timeline_id``; None quando ele só lê o ponto)."""

    point: SavePoint
    scene: dict
    line: str | None


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

    # --- timeline, rewind e fork (lição 5) --------------------------------------------------

    @abc.abstractmethod
    def timeline_view(self):
        """O que ``timeline`` lista (``TimelineView``), lido e conferido; None se não há execução aqui.

        A cena atual vem à parte (``head_scene``), lida depois da lista: um checkpoint ilegível
        não esconde os pontos para onde dá para rebobinar.
        """

    @abc.abstractmethod
    def head_scene(self):
        """A cena atual e o nome que a linha do tempo lhe dá, ``(nome, cena)``; None se não há."""

    @abc.abstractmethod
    def find_point(self, turn, point=None):
        """O ponto ativo que ``--to`` indica (``SavePoint``): o último do turno ``turn`` ou, com
        ``point`` ("A" ou "B"), esse ponto dele. TimelineError, dizendo os que há, se não existe."""

    @abc.abstractmethod
    def rewound_state(self, point_id):
        """A cena que a rebobinagem para ``point_id`` grava, lida e conferida sem gravar nada.

        Numa execução v2, é a cena do ponto dentro da execução (run_id e regras ficam), pausada,
        pronta para --resume; numa linha do tempo v1 da lição 5, a própria cena. Quem rebobina a
        calcula antes de tomar a posse: um pedido impossível não toca em nada.
        """

    @abc.abstractmethod
    def rewind(self, lease, point_id, state):
        """Volta a linha do tempo ativa a ``point_id`` e grava ``state`` (o de ``rewound_state``)
        sob o token de ``lease``; devolve a cena gravada.

        Só move estado: nenhuma ferramenta roda, e nada é apagado (os pontos depois dele saem da
        linha ativa). Uma queda no meio deixa a troca inteira ou nenhuma: num banco, é uma
        transação; nos arquivos, o plano gravado antes, que o próximo comando termina.
        """

    @abc.abstractmethod
    def fork_preview(self, saved):
        """O que ``fork(saved, ...)`` copiaria (``ForkPreview``), sem criar nada."""

    @abc.abstractmethod
    def fork(self, saved, new_store, say=print):
        """Abre em ``new_store`` (vazio) uma nova linha do tempo, em dry-run, a partir do ponto ``saved``.

        A nova linha é outra execução (run_id próprio, a origem registrada em ``parent``) e leva
        a cena do ponto, com as chamadas pendentes e os registros que a original tem delas. A
        original só é lida. Tudo ou nada: uma queda no meio não deixa uma execução pela metade
        no destino. ``say`` conta o que a bifurcação arrumou antes de começar (a obra de uma
        bifurcação anterior interrompida). Devolve ``{"timeline_id", "parent", "dry_run"}``.
        """

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

