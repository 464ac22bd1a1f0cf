"""SQLite: a execução inteira num arquivo da pasta dela (``run.sqlite3``), sem servidor nenhum.

Duas configurações fazem dele um armazenamento durável:

- ``journal_mode=WAL``: cada COMMIT acrescenta as páginas mudadas ao fim de um diário
  (``run.sqlite3-wal``) em vez de regravar o arquivo; leitores não esperam escritores;
- ``synchronous=FULL``: cada COMMIT espera o diário chegar ao disco (fsync), então uma
  transação confirmada sobrevive até a uma queda de energia.

Os gatilhos ``fence_*`` recusam qualquer linha cujo token não seja o da posse atual: a cerca
é conferida pelo banco, dentro da transação. Várias execuções do mesmo processo (ou de
processos diferentes) podem abrir o mesmo arquivo; o SQLite serializa os escritores.
"""
from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from harness.stores.base import StoreError
from harness.stores.files import WORLD_DIR
from harness.stores.sql import FENCE_MESSAGE, FENCED_TABLES, TABLES, SqlStore

DATABASE_FILE = "run.sqlite3"
RUN_KEY = "principal"        # um arquivo por pasta de execução: a chave é sempre a mesma
SCHEMA_VERSION = 1
BUSY_TIMEOUT_SECONDS = 10.0  # quanto um escritor espera o outro terminar a transação dele
DAMAGED_FILE_CODES = (11, 26)  # SQLITE_CORRUPT e SQLITE_NOTADB: o arquivo, não a consulta, está errado
# O que o disco ou a pasta recusou, pelo código primário do SQLite, e o que fazer.
REFUSED_WRITE_ADVICE = {
    3: "sem permissão: ajuste as permissões da pasta",                                   # SQLITE_PERM
    8: "a pasta ou o arquivo está só para leitura: use uma pasta gravável",             # SQLITE_READONLY
    10: "o disco recusou a gravação (disco cheio ou com defeito?): libere espaço ou confira o disco",  # SQLITE_IOERR
    13: "o disco está cheio: libere espaço",                                             # SQLITE_FULL
    14: "não deu para abrir o arquivo (pasta só para leitura ou sem permissão?): use uma pasta gravável",  # CANTOPEN
}


def fence_triggers():
    """Um gatilho por tabela e operação: a linha só entra com o token da posse atual e não liberada."""
    for table in FENCED_TABLES:
        for operation in ("INSERT", "UPDATE"):
            yield (f"CREATE TRIGGER IF NOT EXISTS fence_{table}_{operation.lower()} BEFORE {operation} ON {table} "
                   f"WHEN NEW.token IS NOT (SELECT token FROM leases WHERE run = NEW.run AND released = 0) "
                   f"BEGIN SELECT RAISE(ABORT, '{FENCE_MESSAGE}'); END")


class _SaidCursor:
    """O cursor do sqlite3 com as leituras também sob ``_damage_said``: as linhas são lidas (e o texto
    decodificado) no fetch, não no execute, e uma página estragada ou um texto que não é UTF-8 aparece ali."""

    def __init__(self, cursor, said):
        self._cursor, self._said = cursor, said

    @property
    def rowcount(self):
        return self._cursor.rowcount

    def fetchone(self):
        with self._said():
            return self._cursor.fetchone()

    def fetchall(self):
        with self._said():
            return self._cursor.fetchall()


class SqliteStore(SqlStore):
    """A execução de ``run_dir``, guardada em ``run_dir/run.sqlite3``; o mundo em ``run_dir/world``."""

    kind = "sqlite"
    fence_errors = (sqlite3.IntegrityError,)

    def __init__(self, run_dir, run=RUN_KEY):
        self.run_dir = Path(run_dir)
        super().__init__(run, self.run_dir / WORLD_DIR)
        self.path = self.run_dir / DATABASE_FILE
        self._connection = None

    def describe(self):
        return str(self.path)

    def _db(self):
        if self._connection is None:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            with self._damage_said():
                self._connection = self._open()
        return self._connection

    def _fresh_transaction_db(self):
        """A conexão, pronta para um BEGIN. Só esta thread a usa e nenhuma transação fica aberta entre
        duas: uma aberta aqui foi abandonada no meio (um Ctrl-C entre o BEGIN e o try, ou no COMMIT),
        e é desfeita como uma queda a desfaria."""
        db = self._db()
        if db.in_transaction:
            db.execute("ROLLBACK")
        return db

    @contextlib.contextmanager
    def _damage_said(self):
        """Um arquivo estragado ("file is not a database", "database disk image is malformed"), ao abrir
        ou no meio de qualquer consulta, vira um StoreError que diz qual arquivo e o que fazer."""
        try:
            yield
        except sqlite3.DatabaseError as error:
            said = self._said(error)
            if said is None:
                raise
            raise said from None

    def _said(self, error):
        """O StoreError de um erro do SQLite que vem do disco, do arquivo ou de uma linha ilegível;
        None para os demais (um erro de consulta é do código, e sobe como está)."""
        if str(error).startswith("Could not decode to UTF-8"):
            # O módulo sqlite3 não consegue nem entregar a linha: uma coluna TEXT com bytes que não são UTF-8.
            return StoreError(f"{self.path}: uma coluna de texto não é UTF-8 válido ({error}); nada foi alterado. "
                              f"Restaure a linha (ou uma cópia do banco) e tente de novo")
        code = getattr(error, "sqlite_errorcode", 0) & 0xFF
        if code in REFUSED_WRITE_ADVICE:  # a transação foi desfeita: o que já estava gravado continua inteiro
            return StoreError(f"não deu para gravar em {self.path}: {error}; {REFUSED_WRITE_ADVICE[code]}. "
                              f"A última cena gravada continua inteira; resolvido isso, retome com --resume")
        if code in DAMAGED_FILE_CODES:
            return StoreError(f"{self.path}: o banco SQLite está corrompido ({error}); nada foi alterado. "
                              f"Restaure uma cópia do arquivo (ou comece a execução de novo, sem --resume)")
        return None

    def _open(self):
        connection = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_TIMEOUT_SECONDS)
        try:
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                # Um esquema do futuro: regravar a versão 1 por cima o estragaria para o código novo.
                raise StoreError(f"{self.path}: o banco é da versão {version} do esquema, e este código conhece "
                                 f"até a {SCHEMA_VERSION}; nada foi alterado. Use o harness que o criou")
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=FULL")
            if version != SCHEMA_VERSION:
                connection.execute("BEGIN IMMEDIATE")
                for statement in [*TABLES.split(";"), *fence_triggers()]:
                    connection.execute(statement)
                connection.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                connection.execute("COMMIT")
        except BaseException:
            connection.close()
            raise
        return connection

    def reopened(self):
        return SqliteStore(self.run_dir, self.run)

    def exists(self):
        """Há uma execução em run.sqlite3? Sem criar nada: um arquivo que falta, vazio ou sem o esquema
        do harness não é uma execução (e abri-lo pela conexão de sempre gravaria o esquema nele)."""
        if self._connection is None and not self._has_schema():
            return False
        return super().exists()

    def _has_schema(self):
        """O arquivo existe e tem o esquema gravado (PRAGMA user_version), lido sem gravar nada."""
        if not self.path.is_file() or self.path.stat().st_size == 0:
            return False
        with self._damage_said():
            connection = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_TIMEOUT_SECONDS)
            try:
                return connection.execute("PRAGMA user_version").fetchone()[0] != 0
            finally:
                connection.close()

    def _execute(self, sql, params=()):
        with self._damage_said():
            return _SaidCursor(self._db().execute(sql, params), self._damage_said)

    @contextlib.contextmanager
    def _transaction(self):
        db = self._fresh_transaction_db()
        with self._damage_said():
            db.execute("BEGIN IMMEDIATE")  # a trava de escrita já no começo: nada de upgrade no meio
            try:
                yield
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    @contextlib.contextmanager
    def _reading(self):
        db = self._fresh_transaction_db()
        with self._damage_said():
            db.execute("BEGIN")
            try:
                yield
            finally:
                db.execute("COMMIT")

    def _is_fence_error(self, error):
        return FENCE_MESSAGE in str(error)

    def close(self):
        if self._connection is not None:
            self._connection.close()
            self._connection = None
