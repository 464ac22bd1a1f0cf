"""A SQLite run whose rows were edited to lie: every command stops with exit 2 and a reason, never hangs."""
from __future__ import annotations

import os
import random
import sqlite3

import pytest

from harness.exit_codes import EXIT_BAD_INPUT
from harness.stores.sqlite import SqliteStore
from tests.warm_python import run_python


def crashed_sqlite_run(folder):
    env = {**os.environ, "CRASH_AFTER": "after-save-A:2"}
    run_python(["-m", "harness", "run", "--scenario", "team-email", "--workdir", str(folder), "--store", "sqlite"],
               env=env, timeout=120)
    return folder / "run.sqlite3"


def tamper(database, statement, params=()):
    connection = sqlite3.connect(database)
    connection.execute("UPDATE leases SET released = 0")  # the store's own guard lets a released lease edit
    connection.execute(statement, params)
    connection.execute("UPDATE leases SET released = 1")
    connection.commit()
    connection.close()


@pytest.mark.slow
@pytest.mark.parametrize("statement, words", [
    ("UPDATE saves SET parent_seq = 4 WHERE seq = 3", "mensagens"),  # a loop in the chain of saves
    ("UPDATE saves SET new_messages = 'não é json' WHERE seq = 2", "mensagens ilegíveis"),
    ("UPDATE saves SET new_messages = '{\"a\": 1}' WHERE seq = 2", "mensagens ilegíveis"),
])
def test_a_lying_row_is_bad_input_for_status_and_resume(tmp_path, statement, words):
    folder = tmp_path / "execucao"
    tamper(crashed_sqlite_run(folder), statement)
    for command in (["status"], ["run", "--resume"]):
        done = run_python(["-m", "harness", *command, "--workdir", str(folder), "--store", "sqlite"], timeout=120)
        assert done.returncode == EXIT_BAD_INPUT, (command, done.stderr)
        assert words in done.stderr and "Traceback" not in done.stderr, done.stderr


def harness(folder, *command):
    return run_python(["-m", "harness", *command, "--workdir", str(folder), "--store", "sqlite"], timeout=120)


def one_clean_line(done):
    lines = done.stderr.strip().splitlines()
    return len(lines) == 1 and "Traceback" not in done.stderr


# Each row edited as an outside tester did, the words the message must hold, and the statement that
# puts the row back as it was (the run must not be lost: repaired, it resumes to one email).
DOCTORED_ROWS = {
    "fields-not-json": ("UPDATE runs SET fields = 'não é json'", "runs.fields", "fields"),
    "timeline-null": ("UPDATE runs SET timeline = 'null'", "runs.timeline", "timeline"),
    "lease-token-text": ("UPDATE leases SET token = 'abc'", "leases.token", None),
}
# Commands that never read the doctored row may succeed (timeline and fork only read the run, not its lease).
MAY_SUCCEED = {"lease-token-text": {"timeline", "fork"}}


@pytest.mark.slow
@pytest.mark.parametrize("case", DOCTORED_ROWS)
def test_a_doctored_row_is_one_line_and_exit_2_for_every_command_and_the_run_survives(tmp_path, case):
    statement, words, column = DOCTORED_ROWS[case]
    folder = tmp_path / "execucao"
    database = crashed_sqlite_run(folder)
    connection = sqlite3.connect(database)
    saved = connection.execute("SELECT fields, timeline FROM runs").fetchone()
    token = connection.execute("SELECT token FROM leases").fetchone()[0]
    connection.close()
    tamper(database, statement)
    for command in (["status"], ["run", "--resume"], ["timeline"], ["rewind", "--to", "1"],
                    ["fork", "--to", "1", "--into", str(tmp_path / "ramo")], ["pause"]):
        done = harness(folder, *command)
        assert "Traceback" not in done.stderr, (command, done.stderr)
        if done.returncode == 0 and command[0] in MAY_SUCCEED.get(case, ()):
            continue
        assert done.returncode == EXIT_BAD_INPUT and one_clean_line(done), (command, done.stderr)
        assert words in done.stderr and str(database) in done.stderr, (command, done.stderr)
    fenced = ", token = (SELECT token FROM leases)"  # the token the failed commands' leases moved on to
    repair = {"fields": (f"UPDATE runs SET fields = ?{fenced}", saved[0]),
              "timeline": (f"UPDATE runs SET timeline = ?{fenced}", saved[1]),
              None: ("UPDATE leases SET token = ?", token)}[column]
    tamper(database, *repair[:1], repair[1:])
    done = harness(folder, "run", "--resume")
    assert done.returncode == 0, done.stderr
    with SqliteStore(folder) as store:
        assert len(store.world().emails()) == 1 and store.load()["status"] == "completed"


@pytest.mark.slow
@pytest.mark.parametrize("pages", ["every-page-but-the-header", "one-page"])
def test_random_bytes_in_the_database_pages_are_one_line_and_exit_2(tmp_path, pages):
    folder = tmp_path / "execucao"
    database = crashed_sqlite_run(folder)
    data = bytearray(database.read_bytes())
    page = 4096
    noise = random.Random(7)
    starts = range(page, len(data), page) if pages != "one-page" else [page]  # page 1 keeps the header
    for start in starts:
        data[start:start + page] = bytes(noise.randrange(256) for _ in range(page))
    database.write_bytes(bytes(data))
    seen = {}
    for command in (["status"], ["run", "--resume"], ["timeline"], ["rewind", "--to", "1"], ["pause"]):
        done = harness(folder, *command)
        seen[command[0]] = done.returncode
        assert "Traceback" not in done.stderr, (command, done.stderr)
        if done.returncode != 0:  # a command that never reads a damaged page may well succeed
            assert done.returncode == EXIT_BAD_INPUT and one_clean_line(done), (command, done.stderr)
            assert str(database) in done.stderr and "corrompido" in done.stderr, (command, done.stderr)
    assert seen["run"] == EXIT_BAD_INPUT, seen  # the resume reads the whole run: it must see the damage


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["nao-existe", None, "../../etc/passwd"], ids=["unknown", "null", "a-path"])
def test_a_fork_of_a_run_with_a_doctored_scenario_is_one_line_and_leaves_nothing(tmp_path, scenario):
    folder, into = tmp_path / "execucao", tmp_path / "d-fork"
    database = crashed_sqlite_run(folder)
    tamper(database, "UPDATE runs SET scenario = ?", (scenario,))
    for attempt in range(2):  # the retry gets the same message, not "já existe e não está vazia"
        done = harness(folder, "fork", "--to", "1", "--into", str(into))
        assert done.returncode == EXIT_BAD_INPUT, (attempt, done.stderr)
        assert one_clean_line(done) and "cenário" in done.stderr and "runs" in done.stderr, done.stderr
        assert "nada foi criado" in done.stderr, done.stderr
        assert not into.exists(), sorted(path.name for path in into.iterdir())
    tamper(database, "UPDATE runs SET scenario = 'team-email'")
    assert harness(folder, "fork", "--to", "1", "--into", str(into)).returncode == 0
