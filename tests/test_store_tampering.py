"""A SQLite run whose rows were edited to lie: every command stops with exit 2 and a reason, never hangs."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import pytest

from harness.runner import EXIT_BAD_INPUT


def crashed_sqlite_run(folder):
    env = {**os.environ, "CRASH_AFTER": "after-save-A:2"}
    subprocess.run([sys.executable, "-m", "harness", "run", "--scenario", "team-email", "--workdir", str(folder),
                    "--store", "sqlite"], env=env, capture_output=True, timeout=120)
    return folder / "run.sqlite3"


def tamper(database, statement):
    connection = sqlite3.connect(database)
    connection.execute("UPDATE leases SET released = 0")  # the store's own guard lets a released lease edit
    connection.execute(statement)
    connection.execute("UPDATE leases SET released = 1")
    connection.commit()
    connection.close()


@pytest.mark.parametrize("statement, words", [
    ("UPDATE saves SET parent_seq = 4 WHERE seq = 3", "mensagens"),  # a loop in the chain of saves
    ("UPDATE saves SET new_messages = 'não é json' WHERE seq = 2", "mensagens ilegíveis"),
    ("UPDATE saves SET new_messages = '{\"a\": 1}' WHERE seq = 2", "mensagens ilegíveis"),
])
def test_a_lying_row_is_bad_input_for_status_and_resume(tmp_path, statement, words):
    folder = tmp_path / "execucao"
    tamper(crashed_sqlite_run(folder), statement)
    for command in (["status"], ["run", "--resume"]):
        done = subprocess.run([sys.executable, "-m", "harness", *command, "--workdir", str(folder), "--store", "sqlite"],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == EXIT_BAD_INPUT, (command, done.stderr)
        assert words in done.stderr and "Traceback" not in done.stderr, done.stderr
