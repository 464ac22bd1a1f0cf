"""The shared fixtures stay shared: no test module imports a fixture by name.

pytest registers an imported fixture as a new fixture of the importing module, with a cache of
its own: a session-scoped PostgreSQL cluster imported into seven modules starts seven times.
Read with ast (nothing is imported); the scan is proven by planting a bad module in a copy.
"""
from __future__ import annotations

import ast
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness.crash import crash_counts, crash_point
from harness.stores.local_postgres import LocalPostgres, unavailable_reason

ROOT = Path(__file__).resolve().parent.parent

TESTS = Path(__file__).resolve().parent


def is_fixture(decorator: ast.expr) -> bool:
    """``@pytest.fixture``, ``@pytest.fixture(...)`` or ``@fixture``."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(target, ast.Attribute) and target.attr == "fixture") or \
        (isinstance(target, ast.Name) and target.id == "fixture")


def fixtures_by_module(tests: Path) -> dict[str, set[str]]:
    """``tests.<module>`` -> the fixtures it defines at module level."""
    found = {}
    for path in sorted(tests.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        found[f"tests.{path.stem}"] = {
            node.name for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(map(is_fixture, node.decorator_list))}
    return found


def imported_fixtures(tests: Path) -> list[str]:
    """Every ``from tests.x import <a fixture of x>`` and every module fixture that shadows one of conftest."""
    fixtures = fixtures_by_module(tests)
    shared = fixtures.get("tests.conftest", set())
    problems = []
    for path in sorted(tests.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tests."):
                for alias in node.names:
                    if alias.name in fixtures.get(node.module, set()) | (shared if node.module == "tests.conftest" else set()):
                        problems.append(f"{path.name}:{node.lineno} imports the fixture {alias.name} from {node.module}")
        if path.name != "conftest.py":
            for name in sorted(fixtures[f"tests.{path.stem}"] & shared):
                problems.append(f"{path.name} redefines the conftest fixture {name}")
    return problems


@pytest.mark.slow  # reads every module of the project
def test_no_test_module_imports_a_fixture():
    assert imported_fixtures(TESTS) == []


def copy_of_tests(tmp_path: Path) -> Path:
    copy = tmp_path / "tests"
    shutil.copytree(TESTS, copy, ignore=shutil.ignore_patterns("__pycache__", "right_answers", "wrong_answers"))
    return copy


@pytest.mark.slow
@pytest.mark.parametrize("source, problem", [
    pytest.param("from tests.conftest import postgres_dsn  # noqa: F401\n",
                 "test_planted.py:1 imports the fixture postgres_dsn from tests.conftest", id="from-conftest"),
    pytest.param("def helper():\n    from tests.test_grader_limits import MEMORY_BOMB, bomb_json\n",
                 "test_planted.py:2 imports the fixture bomb_json from tests.test_grader_limits",
                 id="another-module's-fixture-inside-a-function"),
    pytest.param("import pytest\n\n\n@pytest.fixture(scope='session')\ndef postgres_server():\n    yield None\n",
                 "test_planted.py redefines the conftest fixture postgres_server", id="shadowing"),
])
def test_a_planted_fixture_import_is_found(tmp_path, source, problem):
    copy = copy_of_tests(tmp_path)
    assert imported_fixtures(copy) == []
    (copy / "test_planted.py").write_text(source, encoding="utf-8")
    assert imported_fixtures(copy) == [problem]


def test_an_old_fixture_import_says_where_the_fixture_went():
    with pytest.raises(ImportError, match="fixture of tests/conftest.py now"):
        from tests.stores_support import postgres_dsn  # noqa: F401


def test_a_test_may_leave_crash_counts_behind():
    crash_point("after-save-A")  # counted even with no crash armed
    assert crash_counts()["after-save-A"] == 1


def test_no_crash_is_armed_when_a_test_starts():
    """The autouse cleanup ran: nothing from the shell or the test above can crash this one."""
    assert "CRASH_AFTER" not in os.environ and "CRASH_MODE" not in os.environ
    assert not any(crash_counts().values())


HOLDS_A_CLUSTER = """\
import time


def test_holds_the_cluster(postgres_server):
    print("cluster", postgres_server.folder, flush=True)
    time.sleep(120)
"""


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["sigterm", "sighup"])
def test_a_run_ended_by_a_signal_stops_its_postgres_cluster(tmp_path, signum):
    if unavailable_reason():
        pytest.skip(unavailable_reason())
    (tmp_path / "test_hold.py").write_text(HOLDS_A_CLUSTER, encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "tests.conftest", "-s", "-q", "-p", "no:cacheprovider",
         "--rootdir", str(tmp_path), str(tmp_path / "test_hold.py")],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        # A caller run under nohup ignores SIGHUP, and children inherit that: the run under test must not.
        preexec_fn=lambda: signal.signal(signum, signal.SIG_DFL))
    try:
        folder = None
        for line in process.stdout:
            if line.startswith("cluster "):
                folder = Path(line.split(" ", 1)[1].strip())
                break
        assert folder is not None and (folder / "data" / "postmaster.pid").exists(), "the cluster never started"
        process.send_signal(signum)
        process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert not folder.exists(), f"the cluster's folder {folder} outlived the run"


def test_a_cluster_interrupted_while_it_starts_leaves_no_folder(monkeypatch):
    import tempfile

    from harness.stores import local_postgres

    if unavailable_reason():
        pytest.skip(unavailable_reason())
    made = []
    real_mkdtemp = tempfile.mkdtemp
    monkeypatch.setattr(local_postgres.tempfile, "mkdtemp", lambda **kw: made.append(real_mkdtemp(**kw)) or made[-1])

    def ctrl_c_in_initdb(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(local_postgres.subprocess, "run", ctrl_c_in_initdb)
    with pytest.raises(KeyboardInterrupt):
        LocalPostgres().start()
    assert made and not os.path.exists(made[0])


def test_answers_left_in_the_exercises_are_named_before_the_tests_run(tmp_path):
    from tests.conftest import edited_exercises

    if shutil.which("git") is None:
        pytest.skip("sem git")
    (tmp_path / "exercises").mkdir()
    notebook = tmp_path / "exercises" / "exercise-1.ipynb"
    notebook.write_text("{}", encoding="utf-8")
    for command in (["init", "-q"], ["add", "."], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", *command], cwd=tmp_path, check=True, capture_output=True)
    assert edited_exercises(tmp_path) == []
    notebook.write_text('{"cells": []}', encoding="utf-8")
    assert edited_exercises(tmp_path) == ["exercises/exercise-1.ipynb"]
    assert edited_exercises(tmp_path / "not-a-repository") == []
