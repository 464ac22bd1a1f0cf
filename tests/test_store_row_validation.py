"""The rows of a SQLite or PostgreSQL run are untrusted input too: an endless nesting, a number of
thousands of digits, text that is not UTF-8 or a value of the wrong shape in any JSON column is one
Portuguese line naming the table, the column and the run, exit 2; put the row back and the run
resumes to exactly one email. A control request that cannot be read never cancels the run.
"""
from __future__ import annotations

import json
import sqlite3

import pytest

from harness import cli
from harness.exit_codes import EXIT_BAD_INPUT
from tests.durability_checks import final_run_problems, run_forked


DEEP = "[" * 100_000
HUGE = "9" * 5000


class Rows:
    """Direct access to one run's rows, past the store (as someone editing the database would)."""

    def __init__(self, case, run_dir):
        self.case, self.run_dir = case, run_dir
        self.run = "principal" if case.kind == "sqlite" else case.run_name(run_dir)

    def _connect(self):
        if self.case.kind == "sqlite":
            return sqlite3.connect(self.run_dir / "run.sqlite3", isolation_level=None)
        import psycopg

        return psycopg.connect(self.case.dsn, autocommit=True)

    def _sql(self, sql):
        return sql if self.case.kind == "sqlite" else sql.replace("?", "%s")

    def query(self, sql, *params):
        connection = self._connect()
        try:
            return connection.execute(self._sql(sql), params).fetchall()
        finally:
            connection.close()

    def write(self, sql, *params):
        """One write the fence lets through: the lease is unreleased around it, and ``{token}`` in
        ``sql`` is the current lease token (the triggers refuse any other)."""
        connection = self._connect()
        try:
            token = connection.execute(self._sql("SELECT token FROM leases WHERE run = ?"), (self.run,)).fetchone()[0]
            connection.execute(self._sql("UPDATE leases SET released = 0 WHERE run = ?"), (self.run,))
            connection.execute(self._sql(sql.replace("{token}", str(int(token)))), params)
            connection.execute(self._sql("UPDATE leases SET released = 1 WHERE run = ?"), (self.run,))
        finally:
            connection.close()

    def head_save(self):
        [(seq, pending)] = self.query("SELECT s.seq, s.pending_tool_use FROM saves s JOIN runs r ON r.run = s.run "
                                      "AND s.seq = r.head_seq WHERE s.run = ?", self.run)
        return seq, pending


@pytest.fixture
def crashed(sql_store_case, tmp_path):
    run_dir = tmp_path / "run"
    args = ["run", "--scenario", "team-email", "--workdir", str(run_dir), *sql_store_case.cli_args(run_dir)]
    assert run_forked(args, {"CRASH_AFTER": "after-save-A:2"}) == 137
    return sql_store_case, run_dir, Rows(sql_store_case, run_dir)


def resume(case, run_dir, capsys):
    code = cli.main(["run", "--resume", "--workdir", str(run_dir), *case.cli_args(run_dir)])
    captured = capsys.readouterr()
    return code, captured.err


def assert_one_line_exit_2(code, err, *words):
    lines = err.strip().splitlines()
    assert code == EXIT_BAD_INPUT, err
    assert len(lines) == 1, err
    for word in words:
        assert word in lines[0], (word, lines[0])


def resumes_to_one_email(case, run_dir, capsys):
    code, err = resume(case, run_dir, capsys)
    assert code == 0, err
    with case.open(run_dir) as store:
        assert final_run_problems(run_dir, store=store) == []


def spoil_column(rows, table, column, where, value):
    """Set ``table.column`` (the row picked by ``where``) to ``value``; returns how to put it back."""
    [(saved,)] = rows.query(f"SELECT {column} FROM {table} WHERE run = ? AND {where}", rows.run)
    rows.write(f"UPDATE {table} SET {column} = ?, token = {{token}} WHERE run = ? AND {where}", value, rows.run)
    return lambda: rows.write(f"UPDATE {table} SET {column} = ?, token = {{token}} WHERE run = ? AND {where}",
                              saved, rows.run)


ROW_CASES = {
    "new_messages-deep": ("saves", "new_messages", "seq = 2", DEEP, ["saves.new_messages", "aninhamento"]),
    "new_messages-huge-int": ("saves", "new_messages", "seq = 2",
                              '[{"role": "user", "content": "x", "n": ' + HUGE + "}]",
                              ["saves.new_messages", "5000 dígitos", "'n'"]),
    "pending-huge-int": ("saves", "pending_tool_use", "seq = {head}", '[{"id": ' + HUGE + "}]",
                         ["saves.pending_tool_use", "5000 dígitos"]),
    "pending-not-calls": ("saves", "pending_tool_use", "seq = {head}", "[1]", ["pending_tool_use[0]"]),
    "pending-object": ("saves", "pending_tool_use", "seq = {head}", '{"id": "x"}', ["saves.pending_tool_use"]),
    "fields-deep": ("runs", "fields", "1 = 1", '{"a": ' + DEEP + "}", ["runs.fields", "aninhamento"]),
    "fields-nan": ("runs", "fields", "1 = 1", '{"a": NaN}', ["runs.fields", "NaN"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", ROW_CASES)
def test_a_spoiled_json_column_is_one_line_exit_2_and_the_run_survives(crashed, capsys, case):
    store_case, run_dir, rows = crashed
    table, column, where, value, words = ROW_CASES[case]
    put_back = spoil_column(rows, table, column, where.format(head=rows.head_save()[0]), value)
    for command in (["run", "--resume"], ["status"]):
        code = cli.main([*command, "--workdir", str(run_dir), *store_case.cli_args(run_dir)])
        assert_one_line_exit_2(code, capsys.readouterr().err, *words)
    put_back()
    resumes_to_one_email(store_case, run_dir, capsys)


def pending_call_id(rows):
    return json.loads(rows.head_save()[1])[0]["id"]


INSERTED = {
    "effects-huge-int": ("effects", lambda rows: (
        "INSERT INTO effects (run, tool_use_id, record, token) VALUES (?, ?, ?, {token})",
        (rows.run, pending_call_id(rows), '{"status": "committed", "n": ' + HUGE + "}")),
        "tool_use_id = ?", ["effects.record", "5000 dígitos"]),
    "effects-deep": ("effects", lambda rows: (
        "INSERT INTO effects (run, tool_use_id, record, token) VALUES (?, ?, ?, {token})",
        (rows.run, pending_call_id(rows), DEEP)), "tool_use_id = ?", ["effects.record", "aninhamento"]),
    "outbox-not-object": ("outbox", lambda rows: (
        "INSERT INTO outbox (run, seq, idempotency_key, email, token) VALUES (?, 99, 'k', ?, {token})",
        (rows.run, '["não é um e-mail"]')), "seq = 99", ["outbox.email", "linha 99"]),
    "outbox-huge-int": ("outbox", lambda rows: (
        "INSERT INTO outbox (run, seq, idempotency_key, email, token) VALUES (?, 99, 'k', ?, {token})",
        (rows.run, '{"to": ' + HUGE + "}")), "seq = 99", ["outbox.email", "5000 dígitos"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", INSERTED)
def test_a_spoiled_ledger_or_outbox_row_is_one_line_exit_2_and_the_run_survives(crashed, capsys, case):
    store_case, run_dir, rows = crashed
    table, make, where, words = INSERTED[case]
    statement, params = make(rows)
    key = params[1] if table == "effects" else None
    rows.write(statement, *params)
    code, err = resume(store_case, run_dir, capsys)
    assert_one_line_exit_2(code, err, *words)
    rows.write(f"DELETE FROM {table} WHERE run = ? AND {where}", *([rows.run, key] if key else [rows.run]))
    resumes_to_one_email(store_case, run_dir, capsys)


@pytest.mark.slow
@pytest.mark.parametrize("request_text", ["", "{", DEEP, '{"action": "explodir"}', '"cancel"'])
def test_an_unreadable_control_request_never_cancels_the_run(crashed, capsys, request_text):
    store_case, run_dir, rows = crashed
    rows.write("INSERT INTO controls (run, request) VALUES (?, ?)", rows.run, request_text)
    code, err = resume(store_case, run_dir, capsys)
    assert_one_line_exit_2(code, err, "controls.request")
    [(status,)] = rows.query("SELECT status FROM runs WHERE run = ?", rows.run)
    assert status in ("running", "paused"), status
    rows.write("DELETE FROM controls WHERE run = ?", rows.run)
    resumes_to_one_email(store_case, run_dir, capsys)


def test_sqlite_text_that_is_not_utf8_is_one_line_exit_2(tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert run_forked(["run", "--scenario", "team-email", "--workdir", str(run_dir), "--store", "sqlite"],
                      {"CRASH_AFTER": "after-save-A:2"}) == 137
    connection = sqlite3.connect(run_dir / "run.sqlite3", isolation_level=None)
    [(saved,)] = connection.execute("SELECT task FROM runs").fetchall()
    connection.execute("UPDATE leases SET released = 0")
    connection.execute("UPDATE runs SET task = CAST(X'FF' AS TEXT), token = (SELECT token FROM leases)")
    connection.execute("UPDATE leases SET released = 1")
    for command in (["run", "--resume"], ["status"]):
        code = cli.main([*command, "--workdir", str(run_dir), "--store", "sqlite"])
        assert_one_line_exit_2(code, capsys.readouterr().err, "UTF-8", str(run_dir / "run.sqlite3"))
    connection.execute("UPDATE leases SET released = 0")
    connection.execute("UPDATE runs SET task = ?, token = (SELECT token FROM leases)", (saved,))
    connection.execute("UPDATE leases SET released = 1")
    connection.close()
    code = cli.main(["run", "--resume", "--workdir", str(run_dir), "--store", "sqlite"])
    assert code == 0, capsys.readouterr().err
