"""Fixtures shared by the store tests: a throwaway PostgreSQL cluster and one store of each kind.

Import the fixtures into a test module (`from tests.stores_support import postgres_dsn, ...`).
The PostgreSQL tests skip, saying why, where no server can be started (no `postgresql`
package, or root without the `postgres` user); CI installs the package.
"""
from __future__ import annotations

import itertools

import pytest

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
