"""Helpers shared by the store tests: one store of each kind, opened from a test or named on
the command line.

The fixtures behind them (`postgres_server`, `postgres_dsn`, `store_case`, `sql_store_case`)
live in `tests/conftest.py`: a test asks for them by name and imports nothing. The PostgreSQL
tests skip, saying why, where no server can be started (no `postgresql` package, or root
without the `postgres` user); CI installs the package.
"""
from __future__ import annotations

import hashlib
import itertools
import os
from pathlib import Path

from harness.stores import open_store as open_store_spec
from harness.stores.files import FileStore
from harness.stores.sqlite import SqliteStore

STORE_KINDS = ("files", "sqlite", "postgresql")
SQL_KINDS = ("sqlite", "postgresql")

_run_names = itertools.count(1)


def unique_run_name(prefix="run"):
    """Every PostgreSQL test gets runs of its own in the shared session database, also when
    several xdist workers share it (each counts on its own: the worker's name keeps them apart)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return f"{prefix}-{worker + '-' if worker else ''}{next(_run_names):04d}"


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

# The fixtures that moved to tests/conftest.py.
CONFTEST_FIXTURES = ("postgres_server", "postgres_dsn", "store_case", "sql_store_case")


def __getattr__(name):
    if name in CONFTEST_FIXTURES:  # an import written before the fixtures moved: say where they went
        raise ImportError(f"{name} is a fixture of tests/conftest.py now: ask for it by name and drop the import "
                          "(an imported copy would start its own PostgreSQL cluster)")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
