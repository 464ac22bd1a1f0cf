"""Fixtures every test module sees without importing them.

pytest finds the fixtures of this file by name (https://docs.pytest.org/en/stable/reference/fixtures.html#conftest-py-sharing-fixtures-across-multiple-files).
Never import a fixture into a test module: pytest registers the imported copy as a fixture of
that module, so a session-scoped fixture imported into seven modules runs seven times
(`tests/test_conftest.py` guards this). Helpers that are plain functions stay in
`tests/stores_support.py` and friends.
"""
from __future__ import annotations

import os
from pathlib import Path
import signal
import tempfile

# Before any test module imports nbformat: `grader`'s import keeps jsonschema from loading its
# optional IRI checker (`rfc3987_syntax` compiles a grammar for seconds at import; nothing here
# validates IRIs). See `grader/__init__.py`.
import grader  # noqa: F401  (imported for the side effect above)

import pytest

from harness.crash import reset_crash_counts
from harness.display.scratch_folder import remove_made_folders
from harness.stores.local_postgres import LocalPostgres, unavailable_reason
from tests.stores_support import SQL_KINDS, STORE_KINDS, StoreCase
from tests.temp_root import CHOSEN_BY_SUITE, filesystem_of, memory_backed_temp_root, read_proc_mounts

# Before pytest picks its temporary root (at the first tmp_path) and before any worker or child
# process starts, so they all inherit it: a tmpfs when there is one with room (tests/temp_root.py).
MEMORY_TEMP_ROOT = memory_backed_temp_root(os.environ, read_proc_mounts)
if MEMORY_TEMP_ROOT:
    os.environ["TMPDIR"] = os.environ[CHOSEN_BY_SUITE] = MEMORY_TEMP_ROOT
    # gettempdir() keeps its first answer: give it this one now. Left at None, the first test
    # that sets TMPDIR for a kernel (test_lessons_execute) would fix it on that test's folder,
    # which goes away when the test passes, for every later test of the worker.
    tempfile.tempdir = MEMORY_TEMP_ROOT

CRASH_ENV = ("CRASH_AFTER", "CRASH_MODE")

# How many PostgreSQL clusters this run started: said at its end (one is the aim; each start
# costs seconds).
postgres_starts = 0


@pytest.fixture(autouse=True)
def no_crash_left_over(monkeypatch):
    """Every test starts with no crash armed: no CRASH_AFTER/CRASH_MODE from the caller's shell or
    an earlier test, and crash counts back at zero (they live in the `harness.crash` module)."""
    for key in CRASH_ENV:
        monkeypatch.delenv(key, raising=False)
    reset_crash_counts()
    yield
    reset_crash_counts()


def _unwind_as_ctrl_c(signum, frame):
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def pytest_configure(config):
    """A run ended by SIGTERM (`timeout`, a CI job cancelled) or SIGHUP (a closed terminal) unwinds
    as Ctrl-C does: fixtures tear down and the session's PostgreSQL cluster stops. Left to the
    default, the process dies at once and the cluster runs on with nobody to stop it."""
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) is signal.SIG_DFL:
            signal.signal(signum, _unwind_as_ctrl_c)
    # A shell starts a background job (`cmd &` in a script) with SIGINT ignored, and Python then
    # leaves it ignored: the tests of what Ctrl-C does would see nothing. Their processes, and the
    # children they start (an ignored signal stays ignored across exec), get Python's default back.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


# Under pytest-xdist (`-n 3`), the controller process starts the one cluster and hands its
# address to every worker (https://pytest-xdist.readthedocs.io/en/stable/how-to.html): a worker
# starting its own would make one cluster per worker. Without xdist, the first test that asks
# starts it.
_shared_cluster: LocalPostgres | None = None
_shared_cluster_problem = ""
WORKER_INPUT_KEY = "course_postgres_dsn"


def _distributed(config) -> bool:
    return config.pluginmanager.hasplugin("dsession") and bool(getattr(config.option, "numprocesses", 0))


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    global _shared_cluster, _shared_cluster_problem, postgres_starts
    config = session.config
    if hasattr(config, "workerinput") or not _distributed(config):
        return
    _shared_cluster_problem = unavailable_reason() or ""
    if not _shared_cluster_problem:
        postgres_starts += 1
        _shared_cluster = LocalPostgres().start()


@pytest.hookimpl(optionalhook=True)  # an xdist hook: unknown to a run without the plugin
def pytest_configure_node(node):
    """xdist's controller, for each worker it starts: the shared cluster's address (or why none)."""
    node.workerinput[WORKER_INPUT_KEY] = _shared_cluster.dsn if _shared_cluster else ""
    node.workerinput[WORKER_INPUT_KEY + "_problem"] = _shared_cluster_problem


def pytest_sessionfinish(session):
    global _shared_cluster
    # What the notebooks run in this process made with scratch_folder, removed now: an xdist
    # worker slow to finish is ended by os._exit or killed (execnet gives it 15 s), and its atexit
    # handlers never run (what a killed worker leaves goes with the next scratch_folder's sweep).
    remove_made_folders()
    if _shared_cluster is not None and not hasattr(session.config, "workerinput"):
        _shared_cluster.stop()
        _shared_cluster = None


class SharedCluster:
    """What a worker knows of the controller's cluster: its address (tests only read ``dsn``)."""

    def __init__(self, dsn: str):
        self.dsn = dsn


@pytest.fixture(scope="session")
def postgres_server(request):
    """One throwaway PostgreSQL cluster for the whole session; each test uses runs of its own
    (`stores_support.unique_run_name`). Skips, saying why, where no server can be started."""
    global postgres_starts
    handed = getattr(request.config, "workerinput", {})
    if WORKER_INPUT_KEY in handed:
        if not handed[WORKER_INPUT_KEY]:
            pytest.skip(f"PostgreSQL tests skipped: {handed[WORKER_INPUT_KEY + '_problem'] or 'no cluster'}")
        yield SharedCluster(handed[WORKER_INPUT_KEY])
        return
    reason = unavailable_reason()
    if reason:
        pytest.skip(f"PostgreSQL tests skipped: {reason}")
    postgres_starts += 1
    with LocalPostgres() as server:
        yield server


@pytest.fixture(scope="session")
def postgres_dsn(postgres_server):
    return postgres_server.dsn


@pytest.fixture
def own_postgres_dsn(postgres_server):
    """A database of this test's own on the session's cluster, for tests that look at every row
    (a worker claims any queued run, so another test's leftovers would be counted here)."""
    import psycopg

    from tests.stores_support import unique_run_name

    database = unique_run_name("db").replace("-", "_")
    with psycopg.connect(postgres_server.dsn, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {database}")
    base, _, query = postgres_server.dsn.partition("?")
    return base.rsplit("/", 1)[0] + f"/{database}" + (f"?{query}" if query else "")


@pytest.fixture(params=STORE_KINDS)
def store_case(request):
    return StoreCase(request.param, request.getfixturevalue("postgres_dsn") if request.param == "postgresql" else None)


@pytest.fixture(params=SQL_KINDS)
def sql_store_case(request):
    return StoreCase(request.param, request.getfixturevalue("postgres_dsn") if request.param == "postgresql" else None)


# The browser tests' Chromium: one per module, a fresh context per test.
@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from playwright.sync_api import sync_playwright

    from tests.test_browser import CHROMIUM, CHROMIUM_ARGS, require_chromium

    require_chromium()

    home = tmp_path_factory.mktemp("chromium-home")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True,
            env={**os.environ, "HOME": str(home)},
        )
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="pt-BR")
    tab = context.new_page()
    tab.set_default_timeout(90_000)
    try:
        yield tab
    finally:
        context.close()


def pytest_terminal_summary(terminalreporter, config):
    if postgres_starts:
        terminalreporter.write_line(f"PostgreSQL clusters started: {postgres_starts}")
    if EDITED_EXERCISES in config.stash:
        terminalreporter.write_line(config.stash[EDITED_EXERCISES], yellow=True)


EDITED_EXERCISES = pytest.StashKey[str]()


def edited_exercises(root: Path) -> list[str]:
    """The files under ``root/exercises`` that differ from the repository (none without git)."""
    import subprocess

    try:
        changed = subprocess.run(["git", "status", "--porcelain", "--", "exercises"], cwd=root,
                                 capture_output=True, text=True, timeout=10).stdout.split("\n")
    except (OSError, subprocess.SubprocessError):
        return []
    return [line[3:] + (" (fora do repositório)" if line.startswith("??") else "") for line in changed if line.strip()]


def temporary_root(config) -> str:
    """The folder pytest makes its temporary folders under, in its own order of precedence."""
    if config.option.basetemp:
        return str(Path(config.option.basetemp).resolve())
    return str(Path(os.environ.get("PYTEST_DEBUG_TEMPROOT") or tempfile.gettempdir()).resolve())


def temporary_files_line(config) -> str:
    root = temporary_root(config)
    try:
        kind = filesystem_of(read_proc_mounts(), root)
    except OSError:  # no mount table to say (not Linux)
        kind = ""
    return f"temporary files: {root}" + (f" ({kind})" if kind == "tmpfs" else "")


def pytest_report_header(config):
    """Where the temporary files go (tests/temp_root.py), and a warning when `exercises/` differs.

    Tests that check the generated exercises read `exercises/` as it is on disk: a contributor's
    own answers there fail them. Say so at the start and again at the end, beside the failures."""
    where = temporary_files_line(config)
    edited = edited_exercises(Path(__file__).resolve().parent.parent)
    if not edited:
        return [where]
    verb = "difere" if len(edited) == 1 else "diferem"
    config.stash[EDITED_EXERCISES] = (f"atenção: {', '.join(edited)} {verb} do repositório (respostas suas?). Os "
                                      "testes que conferem os exercícios gerados vão falhar; guarde as respostas "
                                      "(git stash -u guarda também os arquivos novos) ou rode `course build`.")
    return [where, config.stash[EDITED_EXERCISES]]

