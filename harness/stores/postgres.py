"""PostgreSQL: muitas execuções num servidor, e workers em muitas máquinas (psycopg 3).

O mesmo esquema do SQLite (``harness.stores.sql``), com três diferenças:

- a cerca é uma função ``harness_fence()`` chamada por gatilhos; ela lê a posse com
  ``FOR SHARE``, então quem troca o dono da posse espera a transação em curso terminar:
  não há como um token mudar entre a conferência e o COMMIT;
- cada execução é uma linha de ``runs`` com um nome (``run``), não um arquivo;
- ``claim_run`` deixa um worker pegar a próxima execução que precisa de trabalho com
  ``FOR UPDATE SKIP LOCKED``: dois workers nunca disputam a mesma linha, e uma posse
  vencida (ou de um processo morto nesta máquina) volta para a fila.
"""
from __future__ import annotations

import contextlib
import os
import socket
import time

import psycopg

from harness.lifecycle import (
    CLOCK_TOLERANCE_SECONDS,
    LEASE_SECONDS,
    MAX_LEASE_SECONDS,
    Lease,
    check_lease_seconds,
    default_owner,
    lease_is_free,
)
from harness.run_names import MAX_RUN_NAME, RUN_NAME_SQL
from harness.stores.addresses import without_password
from harness.stores.base import StoreError
from harness.stores.sql import FENCE_MESSAGE, FENCED_TABLES, TABLES, SqlStore, host_column, split_host_column

SCHEMA_VERSION = 1
FENCE_SQLSTATE = "HF001"     # o código de erro próprio da cerca (classe HF não é usada pelo PostgreSQL)
SCHEMA_LOCK = 7_141_401      # trava consultiva: dois workers não criam as tabelas ao mesmo tempo

FENCE_FUNCTION = f"""
CREATE OR REPLACE FUNCTION harness_fence() RETURNS trigger LANGUAGE plpgsql AS $fence$
DECLARE
    current_token integer;
BEGIN
    SELECT token INTO current_token FROM leases WHERE run = NEW.run AND released = 0 FOR SHARE;
    IF current_token IS DISTINCT FROM NEW.token THEN
        RAISE EXCEPTION USING ERRCODE = '{FENCE_SQLSTATE}',
            MESSAGE = format('{FENCE_MESSAGE}: o token %s não é o da posse atual de %s (%s)',
                             NEW.token, NEW.run, coalesce(current_token::text, 'posse liberada'));
    END IF;
    RETURN NEW;
END
$fence$
"""

# Só entra na fila uma execução de nome válido (``run_names``): um nome plantado no banco
# ("/alguma/pasta", "../x", 5.000 caracteres) nunca chega a virar a pasta de um worker.
CLAIMABLE = f"""
SELECT l.run, l.owner, l.host, l.pid, l.token, l.acquired_at, l.expires_at, l.released
FROM leases l JOIN runs r ON r.run = l.run CROSS JOIN (SELECT %s::double precision AS t) clock
WHERE r.status = 'running' AND (l.released = 1 OR l.expires_at < clock.t OR split_part(l.host, '|', 1) = %s
       OR l.acquired_at > clock.t + {CLOCK_TOLERANCE_SECONDS}
       OR l.expires_at > clock.t + {MAX_LEASE_SECONDS + CLOCK_TOLERANCE_SECONDS})
  AND char_length(r.run) <= {MAX_RUN_NAME} AND r.run ~ '{RUN_NAME_SQL}'
ORDER BY r.updated_at
FOR UPDATE OF l SKIP LOCKED
LIMIT 8
"""
REFUSED = f"""
SELECT run FROM runs
WHERE status = 'running' AND NOT (char_length(run) <= {MAX_RUN_NAME} AND run ~ '{RUN_NAME_SQL}')
ORDER BY run LIMIT 20
"""

_schema_ready = set()   # os endereços cujo esquema este processo já conferiu

# Quanto uma transação pode ficar parada do lado do cliente (um worker congelado, SIGSTOP, no meio
# dela) antes de o próprio servidor encerrar a sessão e soltar as travas dela; e quanto uma
# consulta espera por uma trava. Sem isso, a linha da posse travada por um worker congelado
# ficaria de fora de todo ``SKIP LOCKED`` até ele acordar. Uma posse de N segundos usa N/2.
TRANSACTION_IDLE_SECONDS = LEASE_SECONDS / 2
# Os SQLSTATE de uma sessão que o servidor encerrou (ocioso em transação, desligamento, reinício).
SESSION_ENDED_SQLSTATES = {"25P03", "57P01", "57P02", "57P03"}


class DatabaseUnavailable(StoreError):
    """O servidor não respondeu (desligado, reiniciando, rede fora): vale tentar de novo depois."""


def command_left_running(connection):
    """Um comando ainda em andamento numa conexão que só esta thread usa: foi abandonado no meio
    (um Ctrl-C caiu durante a consulta). A conexão não aceita outro; o servidor desfaz o que ele fazia."""
    from psycopg import pq

    return connection.pgconn.transaction_status == pq.TransactionStatus.ACTIVE


def connection_lost(error):
    """O erro é a conexão que caiu (servidor reiniciado, sessão encerrada), não uma consulta errada?"""
    if isinstance(error, DatabaseUnavailable):
        return True
    if isinstance(error, (psycopg.OperationalError, psycopg.InterfaceError)):
        return True
    return isinstance(error, psycopg.Error) and getattr(error, "sqlstate", None) in SESSION_ENDED_SQLSTATES




def schema_statements():
    yield from (statement for statement in TABLES.split(";") if statement.strip())
    yield "CREATE TABLE IF NOT EXISTS harness_schema (version integer NOT NULL)"
    yield FENCE_FUNCTION
    for table in FENCED_TABLES:
        yield f"DROP TRIGGER IF EXISTS fence ON {table}"
        yield f"CREATE TRIGGER fence BEFORE INSERT OR UPDATE ON {table} FOR EACH ROW EXECUTE FUNCTION harness_fence()"


def connect(dsn, idle_seconds=TRANSACTION_IDLE_SECONDS):
    """Uma conexão em autocommit (cada transação é explícita) com o esquema pronto e as transações
    limitadas pelo servidor (``limit_transactions``)."""
    try:
        connection = psycopg.connect(dsn, autocommit=True, connect_timeout=10)
        limit_transactions(connection, idle_seconds)
    except psycopg.OperationalError as error:
        raise DatabaseUnavailable(f"não consegui conectar ao PostgreSQL ({without_password(dsn)}): "
                                  f"{str(error).strip()}") from None
    except psycopg.ProgrammingError as error:  # uma opção desconhecida na URL: não adianta tentar de novo
        raise StoreError(f"não consegui conectar ao PostgreSQL ({without_password(dsn)}): "
                         f"{str(error).strip()}") from None
    if dsn not in _schema_ready:
        try:
            prepare_schema(connection, dsn)
        except BaseException:
            connection.close()
            raise
        _schema_ready.add(dsn)
    return connection


def limit_transactions(connection, idle_seconds):
    """Põe na sessão os limites que o SERVIDOR aplica: uma transação ociosa por mais de
    ``idle_seconds`` é encerrada por ele (as travas dela saem junto), e nenhuma consulta espera
    uma trava por mais do que o dobro disso. Um cliente congelado não consegue desrespeitar nenhum dos dois."""
    milliseconds = max(100, int(idle_seconds * 1000))
    connection.execute("SELECT set_config('idle_in_transaction_session_timeout', %s, false), "
                       "set_config('lock_timeout', %s, false)", (str(milliseconds), str(2 * milliseconds)))


def prepare_schema(connection, dsn):
    """Cria as tabelas, a cerca e a versão do esquema, se faltam; um esquema do futuro é recusado
    (a transação é desfeita: regravar a versão por cima estragaria o banco para o código novo)."""
    with connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        exists = connection.execute("SELECT to_regclass('harness_schema') IS NOT NULL").fetchone()[0]
        version = connection.execute("SELECT max(version) FROM harness_schema").fetchone()[0] if exists else None
        if version is not None and version > SCHEMA_VERSION:
            raise StoreError(f"o PostgreSQL em {without_password(dsn)} tem o esquema na versão {version}, e este "
                             f"código conhece até a {SCHEMA_VERSION}; nada foi alterado. Use o harness que o criou")
        if version != SCHEMA_VERSION:
            for statement in schema_statements():
                connection.execute(statement)
            connection.execute("DELETE FROM harness_schema")
            connection.execute("INSERT INTO harness_schema (version) VALUES (%s)", (SCHEMA_VERSION,))


class PostgresStore(SqlStore):
    """A execução ``run`` no servidor ``dsn``; a sandbox do mundo numa pasta local (``world_root``)."""

    kind = "postgresql"
    placeholder = "%s"
    for_update = " FOR UPDATE"
    fence_errors = (psycopg.Error,)

    def __init__(self, dsn, run, world_root, connection=None, lease_seconds=LEASE_SECONDS):
        super().__init__(run, world_root)
        self.dsn = dsn
        self._connection = connection
        self.lease_seconds = lease_seconds

    def describe(self):
        return f"postgresql (execução {self.run})"

    def reopened(self):
        return PostgresStore(self.dsn, self.run, self.world_root, lease_seconds=self.lease_seconds)

    def acquire_lease(self, owner=None, seconds=None):
        lease = super().acquire_lease(owner, seconds)
        if seconds:  # uma posse mais curta: transações paradas caem antes de ela vencer
            self.lease_seconds = seconds
            limit_transactions(self._db(), seconds / 2)
        return lease

    def _db(self):
        if self._connection is not None and (self._connection.broken or command_left_running(self._connection)):
            self._connection.close()   # o servidor reiniciou ou encerrou a sessão: uma conexão nova
            self._connection = None
        if self._connection is None:
            self._connection = connect(self.dsn, self.lease_seconds / 2)
        return self._connection

    def _execute(self, sql, params=()):
        return self._db().execute(sql, params)

    @contextlib.contextmanager
    def _transaction(self):
        with self._db().transaction():
            yield

    @contextlib.contextmanager
    def _reading(self):
        with self._db().transaction():
            self._db().execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            yield

    def _is_fence_error(self, error):
        return getattr(error, "sqlstate", None) == FENCE_SQLSTATE

    def close(self):
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def claim_run(dsn, owner=None, seconds=LEASE_SECONDS, connection=None):
    """A próxima execução que precisa de trabalho, já com a posse deste worker: ``(run, lease)`` ou None.

    ``SKIP LOCKED`` pula as linhas que outro worker está examinando neste instante, então
    vários workers consultam ao mesmo tempo sem fila nem disputa. Entra na lista a execução
    ``running`` cuja posse foi devolvida, venceu, ou é de um processo morto nesta máquina.
    """
    owner = owner or default_owner()
    seconds = check_lease_seconds(seconds)
    own_connection = connection is None
    connection = connection or connect(dsn, seconds / 2)
    try:
        with connection.transaction():
            now = time.time()
            for run, *values in connection.execute(CLAIMABLE, (now, socket.gethostname())).fetchall():
                record = dict(zip(("owner", "host", "pid", "token", "acquired_at", "expires_at", "released"), values))
                record["released"] = bool(record["released"])
                record["host"], record["boot_id"], record["started"] = split_host_column(record["host"])
                if not lease_is_free(record, now):
                    continue  # um worker vivo desta máquina: a posse ainda é dele
                lease = Lease(run, owner, record["token"] + 1, now + seconds)
                connection.execute("UPDATE leases SET token = %s, owner = %s, host = %s, pid = %s, acquired_at = %s, "
                                   "expires_at = %s, released = 0 WHERE run = %s",
                                   (lease.token, owner, host_column(os.getpid()), os.getpid(), now, lease.expires_at,
                                    run))
                return run, lease
        return None
    finally:
        if own_connection:
            connection.close()


def refused_run_names(dsn, connection=None):
    """As execuções ``running`` que ``claim_run`` nunca oferece porque o nome não serve."""
    own_connection = connection is None
    connection = connection or connect(dsn)
    try:
        return [run for (run,) in connection.execute(REFUSED).fetchall()]
    finally:
        if own_connection:
            connection.close()
