"""O que o SQLite e o PostgreSQL têm em comum: as tabelas, as gravações e a reconstrução da cena.

Três ideias, cada uma numa parte deste módulo:

1. **A cerca no banco.** Toda tabela que uma execução grava tem a coluna ``token``, e um
   gatilho (trigger) do próprio banco recusa a linha cujo token não é o da posse atual. O
   worker não precisa lembrar de conferir nada: uma escrita velha falha dentro da
   transação, que é desfeita inteira.
2. **Só o que mudou.** A tabela ``saves`` é um diário: cada gravação acrescenta uma linha
   com as mensagens novas desde a gravação anterior (``parent_seq``), os contadores e as
   chamadas pendentes. O custo por turno não cresce com a conversa. Qualquer ponto é
   reconstruído seguindo os pais até a raiz; rebobinar é só apontar a cabeça para um ponto.
3. **O turno numa transação.** As ferramentas de um turno gravam num rascunho
   (``tool_phase``); o ponto B leva ao banco, numa transação só, os recibos, as
   aprovações, os e-mails e os chamados do turno. Uma queda antes do COMMIT não deixa
   nada; depois dele, deixa tudo.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import tempfile
import time
from pathlib import Path

from harness.abandoned_folders import new_claimed_folder
from harness.abandoned_folders import remove as remove_scratch
from harness.approval import APPROVALS_FILE, load_approvals, validate_decision
from harness.checkpoint import CHECKPOINT_FIELDS, CheckpointError, write_json_atomic
from harness.crash import crash_point
from harness.effects import EFFECTS_FILE, load_effects, validate_record
from harness.lifecycle import (
    CONTROL_ACTIONS,
    LEASE_SECONDS,
    Lease,
    LeaseFileError,
    LeaseHeld,
    LeaseLost,
    _check_fields,
    check_lease_seconds,
    check_control_request,
    check_run_scene,
    control_file_error,
    default_owner,
    lease_is_free,
    now_iso,
    process_identity,
)
from harness.scenarios import ScenarioError, load_scenario
from harness.state_json import StateFileError, parse_state_json
from harness.stores.base import ForkPreview, RunStore, SavePoint, StoreError, TimelineFrame, TimelineView
from harness.stores.database_world import DatabaseWorld
from harness.timeline import TimelineError, forked_run, inherited_receipts, new_timeline_id
from harness.tool_runner import ToolContext
from harness.tools import workspace_in_use

# Campos da cena (vão para ``saves``); o resto da v2 é da execução (vai para ``runs``).
SCENE_FIELDS = ("task", "turns", "tokens_used", "messages", "pending_tool_use")
RUN_ONLY_FIELDS = ("version", "status", *SCENE_FIELDS)

FENCE_MESSAGE = "cerca: token de posse recusado"   # o texto que os gatilhos levantam

TABLES = """
CREATE TABLE IF NOT EXISTS leases (
    run TEXT PRIMARY KEY,
    token INTEGER NOT NULL,
    owner TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    acquired_at DOUBLE PRECISION NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL,
    released INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    run TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    scenario TEXT,
    task TEXT NOT NULL,
    status TEXT NOT NULL,
    head_seq INTEGER NOT NULL,
    fields TEXT NOT NULL,
    timeline TEXT NOT NULL,
    token INTEGER NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_status ON runs (status, updated_at);
CREATE TABLE IF NOT EXISTS saves (
    run TEXT NOT NULL,
    seq INTEGER NOT NULL,
    parent_seq INTEGER,
    point TEXT,
    turn INTEGER NOT NULL,
    tokens_used INTEGER NOT NULL,
    message_count INTEGER NOT NULL,
    new_messages TEXT NOT NULL,
    pending_tool_use TEXT,
    token INTEGER NOT NULL,
    saved_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (run, seq)
);
CREATE TABLE IF NOT EXISTS effects (
    run TEXT NOT NULL,
    tool_use_id TEXT NOT NULL,
    record TEXT NOT NULL,
    token INTEGER NOT NULL,
    PRIMARY KEY (run, tool_use_id)
);
CREATE TABLE IF NOT EXISTS approvals (
    run TEXT NOT NULL,
    tool_use_id TEXT NOT NULL,
    record TEXT NOT NULL,
    token INTEGER NOT NULL,
    PRIMARY KEY (run, tool_use_id)
);
CREATE TABLE IF NOT EXISTS outbox (
    run TEXT NOT NULL,
    seq INTEGER NOT NULL,
    idempotency_key TEXT,
    email TEXT NOT NULL,
    token INTEGER NOT NULL,
    PRIMARY KEY (run, seq),
    UNIQUE (run, idempotency_key)
);
CREATE TABLE IF NOT EXISTS tickets (
    run TEXT NOT NULL,
    number INTEGER NOT NULL,
    idempotency_key TEXT,
    ticket TEXT NOT NULL,
    token INTEGER NOT NULL,
    PRIMARY KEY (run, number),
    UNIQUE (run, idempotency_key)
);
CREATE TABLE IF NOT EXISTS controls (
    run TEXT PRIMARY KEY,
    request TEXT NOT NULL
)
"""
# As tabelas cujas linhas só entram (ou mudam) com o token da posse atual.
FENCED_TABLES = ("runs", "saves", "effects", "approvals", "outbox", "tickets")

CHAIN = """
WITH RECURSIVE chain(seq, parent_seq) AS (
    SELECT seq, parent_seq FROM saves WHERE run = ? AND seq = ?
    UNION ALL
    SELECT s.seq, s.parent_seq FROM saves s JOIN chain c ON s.run = ? AND s.seq = c.parent_seq
    WHERE c.parent_seq < c.seq  -- a gravação só aponta para trás: uma linha adulterada não prende a busca num laço
)
SELECT s.seq, s.point, s.turn, s.tokens_used, s.message_count, s.new_messages, s.pending_tool_use
FROM saves s JOIN chain c ON s.run = ? AND s.seq = c.seq
ORDER BY s.seq
"""


def host_column(pid):
    """O que a coluna ``leases.host`` guarda: ``máquina|boot|início`` do processo dono.

    O boot e o início do processo (ver ``process_identity``) distinguem um dono vivo de um pid
    reaproveitado, sem mudar o esquema; um nome de máquina não tem ``|``.
    """
    identity = process_identity(pid)
    return "|".join((identity["host"], identity["boot_id"] or "", str(identity["started"] or "")))


def split_host_column(text):
    """``máquina|boot|início`` -> (máquina, boot ou None, início ou None); só a máquina numa linha antiga."""
    host, _, rest = str(text).partition("|")
    boot, _, started = rest.partition("|")
    return host, boot or None, int(started) if started.isdigit() else None


def dumps(value):
    """JSON compacto (o codificador em C do Python): ninguém lê estas colunas à mão."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def point_id(seq, turn, point):
    """``(7, 3, "B") -> "000007-turn-003-B"``: o número da gravação na frente ordena no tempo."""
    return f"{seq:06d}-turn-{turn:03d}-{point}"


def seq_of(point_id_text):
    head = str(point_id_text).split("-", 1)[0]
    if not head.isdigit():
        raise KeyError(f"id de ponto inválido: {point_id_text!r} (esperava algo como 000007-turn-003-B)")
    return int(head)


def scratch_root():
    """Onde o rascunho de um turno mora: memória (/dev/shm) quando existe, pois ele nunca precisa
    sobreviver; com um TMPDIR escolhido, a pasta temporária de sempre (None)."""
    if os.environ.get("TMPDIR"):
        return None
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def new_turn_scratch() -> Path:
    """Uma pasta nova para o rascunho de um turno, com a trava do processo ao lado.

    Um processo morto no meio de um turno (SIGKILL, a queda que o curso simula) não apaga o
    rascunho; em memória, largados assim se acumulariam até a máquina reiniciar. O primeiro
    turno de cada processo leva embora os que nenhum processo vivo segura
    (harness/abandoned_folders.py).
    """
    return new_claimed_folder(scratch_root() or tempfile.gettempdir(), "turno-")


class SqlStore(RunStore):
    """Uma execução (``run``, a chave) num banco SQL. As subclasses trazem a conexão e o dialeto."""

    placeholder = "?"          # o psycopg usa %s
    for_update = ""            # o PostgreSQL trava a linha da posse com FOR UPDATE

    def __init__(self, run, world_root):
        self.run = run
        self.world_root = Path(world_root)
        self._head = None      # (seq, message_count, turns, tokens_used, pending_tool_use) da cena carregada
        self._staged = None    # o que o último tool_phase deixou para o próximo save
        self._world = None

    # --- o dialeto (cada subclasse) ---------------------------------------------------------

    def _execute(self, sql, params=()):
        raise NotImplementedError

    def _transaction(self):
        """Context manager de uma transação de escrita (BEGIN ... COMMIT, ROLLBACK se der erro)."""
        raise NotImplementedError

    def _reading(self):
        """Context manager de uma leitura coerente entre várias consultas (sem travar escritores)."""
        raise NotImplementedError

    def _is_fence_error(self, error):
        raise NotImplementedError

    fence_errors = ()          # as classes de exceção do driver que um gatilho pode levantar

    def _x(self, sql, params=()):
        if self.placeholder != "?":
            sql = sql.replace("?", self.placeholder)
        return self._execute(sql, params)

    # --- a posse ------------------------------------------------------------------------

    def _lease_row(self, lock=False):
        row = self._x("SELECT owner, host, pid, token, acquired_at, expires_at, released FROM leases WHERE run = ?"
                      + (self.for_update if lock else ""), (self.run,)).fetchone()
        if row is None:
            return None
        owner, host, pid, token, acquired_at, expires_at, released = row
        host, boot, started = split_host_column(host)
        record = {"owner": owner, "host": host, "boot_id": boot, "started": started, "pid": pid, "token": token,
                  "acquired_at": acquired_at, "expires_at": expires_at, "released": bool(released)}
        if isinstance(expires_at, float) and not math.isfinite(expires_at):
            record["expires_at"] = 0.0  # um prazo NaN ou infinito não é prazo: a posse conta como vencida (o token vale)
        for field in ("token", "pid", "expires_at"):
            value = record[field]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    (field != "expires_at" and not isinstance(value, int)):
                raise LeaseFileError(
                    f"{self.describe()}: leases.{field} da execução {self.run} vale {value!r}, não um número. Sem "
                    f"saber quem tem a posse, ninguém grava nesta execução: corrija a linha ou, se nenhum worker "
                    f"está rodando, apague-a (a próxima posse recomeça do token 1)")
        return record

    def read_lease(self):
        return self._lease_row()

    def acquire_lease(self, owner=None, seconds=None):
        seconds = check_lease_seconds(seconds or LEASE_SECONDS)
        owner = owner or default_owner()
        with self._transaction():
            self._x("INSERT INTO leases (run, token, owner, host, pid, acquired_at, expires_at, released) "
                    "VALUES (?, 0, '', '', 0, 0, 0, 1) ON CONFLICT (run) DO NOTHING", (self.run,))
            record = self._lease_row(lock=True)
            now = time.time()
            if not lease_is_free(record, now):
                raise LeaseHeld(
                    f"a execução {self.run} ({self.describe()}) está com outro worker ({record['owner']}, token "
                    f"{record['token']}, posse válida por mais {record['expires_at'] - now:.0f} s); "
                    f"só um worker por vez pode retomá-la"
                )
            lease = Lease(self.run, owner, record["token"] + 1, now + seconds)
            self._x("UPDATE leases SET token = ?, owner = ?, host = ?, pid = ?, acquired_at = ?, expires_at = ?, "
                    "released = 0 WHERE run = ?",
                    (lease.token, owner, host_column(os.getpid()), os.getpid(), now, lease.expires_at, self.run))
        self._head = None  # quem acabou de tomar a posse relê a cena antes de gravar
        return lease

    def renew_lease(self, lease, seconds=None):
        """A conferência do próprio worker a cada turno. Só grava quando falta menos da metade do
        prazo; antes disso, uma leitura basta (a cerca de verdade está nos gatilhos)."""
        seconds = seconds or LEASE_SECONDS
        if lease.expires_at - time.time() > seconds / 2:
            self.confirm_lease(lease)
            return lease
        return self.renew_now(lease, seconds)

    def renew_now(self, lease, seconds=None):
        renewed = Lease(lease.run_dir, lease.owner, lease.token, time.time() + (seconds or LEASE_SECONDS))
        with self._transaction():
            changed = self._x("UPDATE leases SET expires_at = ? WHERE run = ? AND token = ? AND released = 0",
                              (renewed.expires_at, self.run, lease.token)).rowcount
        if changed != 1:
            self._check_token(lease, self._lease_row())
        return renewed

    def confirm_lease(self, lease):
        self._check_token(lease, self._lease_row())

    def lease_keeper(self):
        return self.reopened()

    def reopened(self):
        """A mesma execução, por uma conexão nova (a de outra thread)."""
        raise NotImplementedError

    def _check_token(self, lease, record):
        if record is None or record["token"] != lease.token:
            current = "ninguém" if record is None else f"{record['owner']} com o token {record['token']}"
            raise LeaseLost(f"posse perdida: este worker tem o token {lease.token}, mas a execução agora é de "
                            f"{current}; nada foi gravado")
        if record["released"]:
            raise LeaseLost(f"a posse do token {lease.token} já foi liberada; nada foi gravado")

    def release_lease(self, lease):
        with self._transaction():
            changed = self._x("UPDATE leases SET released = 1 WHERE run = ? AND token = ? AND released = 0",
                              (self.run, lease.token)).rowcount
        return changed == 1

    @contextlib.contextmanager
    def _fenced(self, lease):
        """Uma transação de escrita; se um gatilho recusar o token, LeaseLost (e nada foi gravado)."""
        try:
            with self._transaction():
                yield
        except self.fence_errors as error:
            if not self._is_fence_error(error):
                raise
            self._check_token(lease, self._lease_row())
            raise LeaseLost(f"o banco recusou a escrita do token {lease.token}: {error}") from None

    # --- a cena ---------------------------------------------------------------------------

    def exists(self):
        return self._x("SELECT 1 FROM runs WHERE run = ?", (self.run,)).fetchone() is not None

    def _chain(self, seq):
        rows = self._x(CHAIN, (self.run, seq, self.run, self.run)).fetchall()
        if not rows or rows[-1][0] != seq:
            raise CheckpointError(f"{self.describe()}: a gravação {seq} não existe")
        messages = []
        for number, _point, _turn, _tokens, count, new_messages, _pending in rows:
            try:
                added = self._column_json(new_messages, "saves", "new_messages", f"gravação {number}")
            except StateFileError as error:
                raise CheckpointError(f"{error.where}: a gravação {number} tem mensagens ilegíveis "
                                      f"({error.problem})") from None
            if not isinstance(added, list):
                raise CheckpointError(f"{self.describe()}: a gravação {number} tem mensagens ilegíveis")
            messages.extend(added)
            if len(messages) != count:
                raise CheckpointError(f"{self.describe()}: a gravação {number} diz {count} mensagens, "
                                      f"a sequência até ela tem {len(messages)}")
        return rows, messages

    def _scene_at(self, seq, task):
        rows, messages = self._chain(seq)
        _seq, _point, turn, tokens_used, _count, _new, pending = rows[-1]
        return {"task": task, "turns": turn, "tokens_used": tokens_used, "messages": messages,
                "pending_tool_use": self._pending_of(rows[-1])}

    def _pending_of(self, row):
        """As chamadas pendentes de uma linha de ``saves`` (None ou uma lista), já lidas com limites."""
        seq, pending = row[0], row[6]
        if pending is None:
            return None
        calls = self._column_json(pending, "saves", "pending_tool_use", f"gravação {seq}")
        if not isinstance(calls, (list, type(None))):
            raise StateFileError(self._row_where("saves", "pending_tool_use", f"gravação {seq}"),
                                 f"esperava uma lista de chamadas ou null, encontrei {type(calls).__name__}")
        return calls

    def _row_where(self, table, column, key):
        return f"{self.describe()}: {table}.{column} da execução {self.run}" + (f", {key}" if key else "")

    def _column_json(self, text, table, column, key=""):
        """O JSON guardado numa coluna, lido como um arquivo da execução (UTF-8, profundidade e
        números limitados); o erro diz a tabela, a coluna, a execução e a linha."""
        if not isinstance(text, (str, bytes)):
            raise StateFileError(self._row_where(table, column, key),
                                 f"esperava texto JSON, encontrei {type(text).__name__}")
        return parse_state_json(text, self._row_where(table, column, key))

    def _run_row(self):
        return self._x("SELECT run_id, task, status, head_seq, fields, timeline FROM runs WHERE run = ?",
                       (self.run,)).fetchone()

    def load(self):
        with self._reading():   # uma leitura só, coerente entre as tabelas
            row = self._run_row()
            if row is None:
                return None
            run_id, task, status, head_seq, fields, timeline = row
            scene = self._scene_at(head_seq, task)
        self._timeline_of(timeline)  # uma linha do tempo ilegível é dita aqui, não no meio da retomada
        state = {"version": 2, **self._json_object(fields, "runs.fields"), "run_id": run_id, "status": status, **scene}
        where = f"{self.describe()} (execução {self.run})"
        _check_fields(state, CHECKPOINT_FIELDS, where)
        check_run_scene(state, where)
        self._head = self._head_of(head_seq, scene)
        return state

    @staticmethod
    def _head_of(seq, scene):
        return (seq, len(scene["messages"]), scene["turns"], scene["tokens_used"], scene["pending_tool_use"])

    def _write_run(self, lease, state, head_seq, timeline=None, insert=False, expected_head_seq=None,
                   only_new=False):
        fields = dumps({key: value for key, value in state.items() if key not in RUN_ONLY_FIELDS})
        if insert:
            timeline = dumps(timeline)
            # only_new: the row is created here or not at all; a run that appeared since exists() was
            # asked (another fork into the same name) is never overwritten.
            on_conflict = "DO NOTHING" if only_new else (
                "DO UPDATE SET run_id = excluded.run_id, scenario = excluded.scenario, task = excluded.task, "
                "status = excluded.status, head_seq = excluded.head_seq, fields = excluded.fields, "
                "timeline = excluded.timeline, token = excluded.token, updated_at = excluded.updated_at")
            changed = self._x("INSERT INTO runs (run, run_id, scenario, task, status, head_seq, fields, timeline, "
                              "token, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run) "
                              + on_conflict,
                              (self.run, state["run_id"], self._scenario_name, state["task"], state["status"],
                               head_seq, fields, timeline, lease.token, time.time())).rowcount
            if only_new and changed != 1:
                raise TimelineError(f"{self.describe()} já existe: outra execução com o nome {self.run} foi criada "
                                    f"enquanto esta era montada; nada foi gravado. Escolha um destino novo")
            return
        changed = self._x("UPDATE runs SET status = ?, head_seq = ?, fields = ?, token = ?, updated_at = ? "
                          "WHERE run = ? AND head_seq = ?",
                          (state["status"], head_seq, fields, lease.token, time.time(), self.run,
                           expected_head_seq)).rowcount
        if changed != 1:
            raise CheckpointError(f"{self.describe()}: a cena mudou no banco desde a última leitura; nada foi gravado")

    def _append_save(self, lease, state, point, parent):
        seq = (parent[0] if parent else 0) + 1
        latest = self._x("SELECT MAX(seq) FROM saves WHERE run = ?", (self.run,)).fetchone()[0]
        seq = max(seq, (latest or 0) + 1)
        already = parent[1] if parent else 0
        messages = state["messages"]
        if len(messages) < already:
            raise CheckpointError(f"{self.describe()}: a cena tem menos mensagens ({len(messages)}) que a gravação "
                                  f"anterior ({already}); a conversa só cresce")
        pending = state["pending_tool_use"]
        self._x("INSERT INTO saves (run, seq, parent_seq, point, turn, tokens_used, message_count, new_messages, "
                "pending_tool_use, token, saved_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (self.run, seq, parent[0] if parent else None, point, state["turns"], state["tokens_used"],
                 len(messages), dumps(messages[already:]), None if pending is None else dumps(pending),
                 lease.token, time.time()))
        return self._head_of(seq, state)

    def start(self, lease, state, scenario, timeline=None, make_world=True, point=None, effects=None,
              only_new=False):
        """Como no contrato; ``make_world=False`` só grava (quem enfileira não precisa da sandbox),
        ``point`` marca a cena inicial como um ponto da sequência e ``effects`` são os registros
        que ela herda (os de uma bifurcação), gravados na mesma transação. Com ``only_new`` (a
        bifurcação), a execução só é criada se ainda não existe: TimelineError, e nada gravado, se já."""
        self._scenario_name = scenario.name if scenario is not None else None
        timeline = timeline or {**state["timeline"], "dry_run": False}
        with self._fenced(lease):
            # A primeira escrita é a da linha da execução: o gatilho confere o token antes de tudo.
            self._write_run(lease, state, 1, timeline, insert=True, only_new=only_new)
            for table in ("saves", "effects", "approvals", "outbox", "tickets", "controls"):
                self._x(f"DELETE FROM {table} WHERE run = ?", (self.run,))
            head = self._append_save(lease, state, point, None)
            for tool_use_id, record in (effects or {}).items():
                self._upsert_record(lease, "effects", tool_use_id, record)
        self._head = head
        self._staged = None
        if scenario is not None and make_world:
            self._make_world(scenario)  # troca a sandbox inteira (rmtree nunca desce por um link)

    _scenario_name = None

    def _make_world(self, scenario):
        """Cria o mundo do cenário numa pasta ao lado e só então a põe no lugar: a linha da execução
        já está no banco, e uma queda no meio não pode deixar uma sandbox pela metade (um arquivo de
        notas vazio que o modelo leria como "nada a mandar")."""
        self.world_root.parent.mkdir(parents=True, exist_ok=True)
        building = Path(tempfile.mkdtemp(prefix=f".{self.world_root.name}-", dir=self.world_root.parent))
        scenario.make_workspace(building)
        if self.world_root.is_symlink():  # um link plantado no lugar do mundo sai; o alvo dele fica intacto
            self.world_root.unlink()
        shutil.rmtree(self.world_root, ignore_errors=True)  # sobra de uma queda, sem sandbox completa
        os.replace(building, self.world_root)

    def save(self, lease, state, point=None, crash_points=True):
        if self._head is None:
            raise CheckpointError(f"{self.describe()}: grave só depois de ler a cena (load) ou começar (start)")
        self._commit(lease, state, point, self._head, self._head[0], crash_points)

    def rewind(self, lease, point_id, state):
        """Volta a cabeça a um ponto e grava ``state`` a partir dele.

        Nada é apagado: os pontos depois dele só saem da linha do tempo ativa (a cadeia de
        pais que parte da cabeça não passa mais por eles). Se ``state`` acrescenta algo à
        cena do ponto, entra uma gravação nova, filha dele. Devolve ``state``, a cena gravada.
        """
        with self._reading():
            row = self._run_row()
            if row is None:
                raise CheckpointError(f"{self.describe()}: não há execução gravada")
            seq = seq_of(point_id)
            rows, messages = self._chain(seq)
        scene = {"messages": messages, "turns": rows[-1][2], "tokens_used": rows[-1][3],
                 "pending_tool_use": self._pending_of(rows[-1])}
        self._commit(lease, state, None, self._head_of(seq, scene), row[3], crash_points=False)
        return state

    def _commit(self, lease, state, point, parent, expected_head_seq, crash_points):
        """A transação de uma gravação: a linha nova em ``saves`` (se a cena mudou), a execução
        em ``runs`` e o rascunho do turno, tudo sob o mesmo token, tudo ou nada."""
        state["updated_at"] = now_iso()
        scene_changed = point is not None or self._head_of(parent[0], state) != parent
        staged, self._staged = self._staged, None
        with self._fenced(lease):
            new_head = self._append_save(lease, state, point, parent) if scene_changed else parent
            self._write_run(lease, state, new_head[0], expected_head_seq=expected_head_seq)
            if staged:
                self._write_staged(lease, staged)
            if crash_points:
                crash_point("mid-checkpoint-write")  # a transação está aberta: uma queda aqui não deixa nada
        self._head = new_head

    def points(self):
        with self._reading():
            row = self._run_row()
            if row is None:
                return []
            rows, _messages = self._chain(row[3])
        return [SavePoint(point_id(seq, turn, point), turn, point)
                for seq, point, turn, *_rest in rows if point is not None]

    def read_point(self, point_id_text):
        with self._reading():
            row = self._run_row()
            if row is None:
                raise CheckpointError(f"{self.describe()}: não há execução gravada")
            seq = seq_of(point_id_text)
            marked = self._x("SELECT point FROM saves WHERE run = ? AND seq = ?", (self.run, seq)).fetchone()
            if marked is None or marked[0] is None:
                raise CheckpointError(f"{self.describe()}: o ponto {point_id_text} não existe")
            scene = self._scene_at(seq, row[1])
        return {"version": 1, **scene}

    # --- livro-razão, aprovações, mundo -----------------------------------------------------

    def _records(self, table, validate, ids=None):
        """Os registros de ``table``; com ``ids``, só os dessas chamadas (o custo não cresce com a execução)."""
        sql, params = f"SELECT tool_use_id, record FROM {table} WHERE run = ?", [self.run]
        if ids is not None:
            if not ids:
                return {}
            sql += f" AND tool_use_id IN ({', '.join('?' * len(ids))})"
            params += sorted(ids)
        records = {}
        for tool_use_id, text in self._x(sql, params).fetchall():
            record = self._column_json(text, table, "record", f"tool_use_id {tool_use_id}")
            validate(f"{self.describe()} ({table})", tool_use_id, record)
            records[tool_use_id] = record
        return records

    def effects(self):
        return self._records("effects", validate_record)

    def approvals(self):
        return self._records("approvals", validate_decision)

    def save_approval(self, lease, tool_use_id, record):
        with self._fenced(lease):
            self._upsert_record(lease, "approvals", tool_use_id, record)

    def _upsert_record(self, lease, table, tool_use_id, record):
        self._x(f"INSERT INTO {table} (run, tool_use_id, record, token) VALUES (?, ?, ?, ?) "
                f"ON CONFLICT (run, tool_use_id) DO UPDATE SET record = excluded.record, token = excluded.token",
                (self.run, tool_use_id, dumps(record), lease.token))

    def _write_staged(self, lease, staged):
        for tool_use_id, record in staged["effects"].items():
            self._upsert_record(lease, "effects", tool_use_id, record)
        for tool_use_id, record in staged["approvals"].items():
            self._upsert_record(lease, "approvals", tool_use_id, record)
        if staged["emails"]:
            last = self._x("SELECT MAX(seq) FROM outbox WHERE run = ?", (self.run,)).fetchone()[0] or 0
            for number, email in enumerate(staged["emails"], start=last + 1):
                self._x("INSERT INTO outbox (run, seq, idempotency_key, email, token) VALUES (?, ?, ?, ?, ?)",
                        (self.run, number, email.get("idempotency_key"), dumps(email), lease.token))
        for ticket in staged["tickets"]:
            self._x("INSERT INTO tickets (run, number, idempotency_key, ticket, token) VALUES (?, ?, ?, ?, ?)",
                    (self.run, ticket["number"], ticket.get("idempotency_key"), dumps(ticket), lease.token))

    def committed_emails(self):
        return self._objects("SELECT seq, email FROM outbox WHERE run = ? ORDER BY seq", "outbox", "email")

    def committed_tickets(self):
        return self._objects("SELECT number, ticket FROM tickets WHERE run = ? ORDER BY number", "tickets", "ticket")

    def _objects(self, sql, table, column):
        """Os objetos JSON da coluna ``column`` (a caixa de saída, os chamados), cada linha validada."""
        objects = []
        for key, text in self._x(sql, (self.run,)).fetchall():
            value = self._column_json(text, table, column, f"linha {key}")
            if not isinstance(value, dict):
                raise StateFileError(self._row_where(table, column, f"linha {key}"),
                                     f"esperava um objeto JSON, encontrei {type(value).__name__}")
            objects.append(value)
        return objects

    def world(self, scenario=None):
        if scenario is not None and not (self.world_root / "sandbox").is_dir():
            self._make_world(scenario)  # outra máquina, ou uma queda antes de o mundo existir
        if self._world is None:
            self._world = DatabaseWorld(self.world_root, self)
        return self._world

    @contextlib.contextmanager
    def tool_phase(self, lease, calls, approver=None, dry_run=False):
        """As ferramentas do turno gravam num rascunho; o próximo ``save`` leva tudo ao banco.

        O rascunho é uma pasta temporária com effects.json e approvals.json (as mesmas
        funções da lição 4, sem mudar uma linha), semeada com o que o banco sabe das
        chamadas deste turno; os e-mails e chamados esperam no mundo. Nenhuma trava e
        nenhuma transação ficam abertas enquanto uma ferramenta roda.
        """
        from harness.approval import WaitingForApproval  # a exceção que ainda leva o rascunho

        ids = {call["id"] for call in calls}
        scratch = new_turn_scratch()
        effects_path, approvals_path = scratch / EFFECTS_FILE, scratch / APPROVALS_FILE
        for table, validate, path in (("effects", validate_record, effects_path),
                                      ("approvals", validate_decision, approvals_path)):
            known = self._records(table, validate, ids)
            if known:
                write_json_atomic(path, known)
        world = self.world()
        world.begin_turn()
        try:
            with workspace_in_use(world):
                yield ToolContext(effects_path=effects_path, approver=approver, approvals_path=approvals_path,
                                  dry_run=dry_run)
        except WaitingForApproval:
            self._stage(world, effects_path, approvals_path)  # o pedido pendente também vai ao banco
            raise
        else:
            self._stage(world, effects_path, approvals_path)
        finally:
            world.end_turn()
            remove_scratch(scratch)

    def _stage(self, world, effects_path, approvals_path):
        emails, tickets = world.staged_emails, world.staged_tickets
        self._staged = {"effects": load_effects(effects_path), "approvals": load_approvals(approvals_path),
                        "emails": list(emails), "tickets": list(tickets)}

    # --- pedidos de fora e linha do tempo -------------------------------------------------

    def request_control(self, action, reason=""):
        if action not in CONTROL_ACTIONS:
            raise ValueError(f"pedido desconhecido {action!r}; use um de {', '.join(CONTROL_ACTIONS)}")
        request = dumps({"action": action, "reason": reason, "requested_at": now_iso()})
        with self._transaction():
            self._x("INSERT INTO controls (run, request) VALUES (?, ?) "
                    "ON CONFLICT (run) DO UPDATE SET request = excluded.request", (self.run, request))

    def pending_control(self):
        row = self._x("SELECT request FROM controls WHERE run = ?", (self.run,)).fetchone()
        if row is None:
            return None
        where = self._row_where("controls", "request", "")
        try:  # como o control.json: um pedido ilegível é recusado, nunca lido como "cancelar"
            request = self._column_json(row[0], "controls", "request")
        except StateFileError as error:
            raise control_file_error(error.where, error.problem) from None
        if not isinstance(request, dict):
            raise control_file_error(where, f"esperava um objeto JSON, encontrei {type(request).__name__}")
        return check_control_request(request, where)

    def clear_control(self, lease):
        with self._fenced(lease):
            self._write_run_token(lease)
            self._x("DELETE FROM controls WHERE run = ?", (self.run,))

    def _write_run_token(self, lease):
        """Uma escrita só para o gatilho conferir o token antes de um DELETE (que não tem token)."""
        self._x("UPDATE runs SET token = ? WHERE run = ?", (lease.token, self.run))

    def timeline(self):
        row = self._run_row()
        if row is None:
            return {"timeline_id": "principal", "parent": None, "dry_run": False}
        return self._timeline_of(row[5])

    # --- timeline, rewind e fork (lição 5) ---------------------------------------------------

    def timeline_view(self):
        """A sequência ativa (a cadeia de pais que parte da cabeça); nada fica guardado à parte."""
        if not self.exists() or self.load() is None:  # load: uma cena ilegível é dita antes da lista
            return None
        return TimelineView(self.describe(), self.timeline(),
                            [TimelineFrame(saved.id, saved.turn, saved.point) for saved in self.points()], [])

    def head_scene(self):
        state = self.load()
        return None if state is None else ("cena atual", state)

    def find_point(self, turn, point=None):
        if not self.exists():  # antes de ler: abrir um banco que não existe o criaria
            raise TimelineError(f"não há execução em {self.describe()}: nada para rebobinar ou bifurcar; confira "
                                f"a pasta (--workdir) ou o nome (--run); nada foi criado")
        points = self.points()
        chosen = [saved for saved in points if saved.turn == turn and (point is None or saved.point == point)]
        if not chosen:
            available = ", ".join(str(number) for number in sorted({saved.turn for saved in points})) or "nenhum"
            asked = f"{turn}-{point}" if point else str(turn)
            raise TimelineError(f"não há ponto gravado para {asked} em {self.describe()}; turnos disponíveis: {available}")
        return chosen[-1]

    def rewound_state(self, point_id):
        """A execução como está, com a cena do ponto e pausada (``rewind`` só move a cabeça até ele)."""
        scene = self.read_point(point_id)
        state = self.load()
        state.update({field: scene[field] for field in SCENE_FIELDS})
        state.update(status="paused", status_reason=f"rebobinada para {point_id}", recovery_attempts=0,
                     pending_approval=None)
        return state

    def fork_preview(self, saved):
        return ForkPreview(saved, self.read_point(saved.id), None)  # só o ponto: a origem é lida ao bifurcar

    def fork(self, saved, new_store, say=print):
        """A nova linha é outra execução no banco, começada com a cena do ponto numa transação só
        (``start``): ou ela existe inteira, ou não existe."""
        if not isinstance(new_store, SqlStore):
            raise StoreError(f"uma execução num banco bifurca para outra execução num banco, não para "
                             f"{new_store.describe()}")
        scene = self.read_point(saved.id)
        inherited = inherited_receipts(self.effects(), scene)
        scenario = self._scenario_to_fork()  # antes da posse do destino: um cenário ruim não deixa nada lá
        if new_store.exists():
            raise TimelineError(f"{new_store.describe()} já tem uma execução; escolha um destino novo")
        parent = self.timeline()
        timeline = {"timeline_id": new_timeline_id(),
                    "parent": {"timeline_id": parent["timeline_id"], "turn": saved.turn, "point": saved.point}}
        state = forked_run(self.load(), scene, saved.id, timeline)
        lease = new_store.acquire_lease(owner=f"{os.getpid()}:bifurcar")
        try:
            new_store.start(lease, state, scenario, timeline={**timeline, "dry_run": True},
                            point=saved.point, effects=inherited, only_new=True)
        finally:
            new_store.release_lease(lease)
        return {**timeline, "dry_run": True}

    def _scenario_to_fork(self):
        """O cenário que a bifurcação recria no destino (o mundo dele), conferido antes de criar qualquer coisa."""
        name = self.scenario_name()
        if name is None:
            problem = "o cenário gravado está vazio (NULL)"
        else:
            try:
                return load_scenario(name)
            except ScenarioError as error:
                problem = str(error)
        raise TimelineError(f"{self.scenario_source()}: {problem}. A bifurcação recria no destino o mundo do "
                            f"cenário, e nada foi criado: corrija o valor e bifurque de novo")

    def _timeline_of(self, text):
        timeline = self._json_object(text, "runs.timeline")
        if not isinstance(timeline.get("timeline_id"), str) or not isinstance(timeline.get("dry_run"), bool):
            raise self._unreadable("runs.timeline", "esperava timeline_id (texto) e dry_run (true/false)")
        return timeline

    def _json_object(self, text, column):
        """O objeto JSON guardado em ``column`` (tabela.coluna) da execução; CheckpointError se não é um."""
        if not isinstance(text, (str, bytes)):
            raise self._unreadable(column, "não é JSON válido")
        try:
            value = parse_state_json(text, column)
        except StateFileError as error:
            raise self._unreadable(column, f"não é JSON válido ({error.problem})") from None
        if not isinstance(value, dict):
            raise self._unreadable(column, f"esperava um objeto JSON, encontrei {type(value).__name__}")
        return value

    def _unreadable(self, column, problem):
        return CheckpointError(f"{self.describe()}: {column} da execução {self.run} {problem}; nada foi alterado. "
                               f"Restaure a linha (ou uma cópia do banco) e tente de novo")

    def scenario_source(self):
        return f"{self.describe()}: tabela runs, linha {self.run!r}, coluna scenario"

    def scenario_name(self):
        row = self._x("SELECT scenario FROM runs WHERE run = ?", (self.run,)).fetchone()
        return None if row is None else row[0]

