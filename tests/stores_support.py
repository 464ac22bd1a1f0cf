"""Fixtures shared by the store tests: a throwaway PostgreSQL cluster and one store of each kind.

Import the fixtures into a test module (`from tests.stores_support import postgres_dsn, ...`).
The PostgreSQL tests skip, saying why, where no server can be started (no `postgresql`
package, or root without the `postgres` user); CI installs the package.
"""
from __future__ import annotations

import hashlib
import itertools
from pathlib import Path

import pytest

from harness.stores import open_store as open_store_spec
from harness.stores.files import FileStore
from harness.stores.local_postgres import LocalPostgres, unavailable_reason
from harness.stores.sqlite import SqliteStore

STORE_KINDS = ("files", "sqlite", "postgresql")
SQL_KINDS = ("sqlite", "postgresql")

_run_names = itertools.count(1)


@pytest.fixture(scope="session")
def postgres_server():
    reason = unavailable_reason()
    if reason:
        pytest.skip(f"PostgreSQL tests skipped: {reason}")
    with LocalPostgres() as server:
        yield server


@pytest.fixture(scope="session")
def postgres_dsn(postgres_server):
    return postgres_server.dsn


def unique_run_name(prefix="run"):
    """Every PostgreSQL test gets runs of its own in the shared session database."""
    return f"{prefix}-{next(_run_names):04d}"


def open_store(kind, run_dir, request, run=None):
    """A store of ``kind`` for ``run_dir``; PostgreSQL only when the session server is up."""
    if kind == "files":
        return FileStore(run_dir)
    if kind == "sqlite":
        return SqliteStore(run_dir)
    from harness.stores.postgres import PostgresStore

    dsn = request.getfixturevalue("postgres_dsn")
    return PostgresStore(dsn, run or unique_run_name(), run_dir / "world")


def store_spec(kind, request):
    """What `--store` takes for ``kind`` (files: the default)."""
    if kind == "files":
        return "files"
    if kind == "sqlite":
        return "sqlite"
    return request.getfixturevalue("postgres_dsn")


class StoreCase:
    """One store kind as the command line and the checks see it: the `--store` options for a run
    folder, and the same store opened from the test process (closed again with `with`)."""

    def __init__(self, kind, dsn=None):
        self.kind, self.dsn = kind, dsn

    def __repr__(self):
        return f"StoreCase({self.kind})"

    def run_name(self, run_dir):
        """PostgreSQL holds many runs: each run folder gets its own, stable name."""
        return "r-" + hashlib.sha1(str(Path(run_dir).resolve()).encode()).hexdigest()[:16]

    def cli_args(self, run_dir):
        if self.kind == "files":
            return []
        if self.kind == "sqlite":
            return ["--store", "sqlite"]
        return ["--store", self.dsn, "--run", self.run_name(run_dir)]

    def open(self, run_dir):
        spec = {"files": "files", "sqlite": "sqlite"}.get(self.kind, self.dsn)
        return open_store_spec(spec, run_dir, run=self.run_name(run_dir))


FILES_CASE = StoreCase("files")


@pytest.fixture(params=STORE_KINDS)
def store_case(request):
    return StoreCase(request.param, request.getfixturevalue("postgres_dsn") if request.param == "postgresql" else None)


@pytest.fixture(params=SQL_KINDS)
def sql_store_case(request):
    return StoreCase(request.param, request.getfixturevalue("postgres_dsn") if request.param == "postgresql" else None)
