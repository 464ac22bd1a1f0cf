"""Command lines that used to end in a traceback (exit 1), a silent re-stamp or a folder full of
stray files: each is now one Portuguese line and exit 2, and nothing is created or lost.

- ``--workdir ""``; SQLite on a read-only folder or a full disk; an unknown option in a
  PostgreSQL URL;
- NaN and infinities in numeric options, and a lease.json that already holds them;
- a schema version from the future (SQLite ``user_version``, PostgreSQL ``harness_schema``);
- read-only and control verbs on a folder without a run.
"""
from __future__ import annotations

import json
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys

import pytest

from harness import cli
from harness.exit_codes import EXIT_BAD_INPUT
from harness.stores.sqlite import SqliteStore
from tests.durability_checks import REPO_ROOT, final_run_problems, harness_env, run_forked
from tests.stores_support import unique_run_name

PROGRESS = ("retomando ", "iniciando ")


def run_args(run_dir, *extra):
    return ["run", "--scenario", "team-email", "--workdir", str(run_dir), *extra]


def error_lines(text):
    """stdout and stderr share the output file: the progress line of ``run`` is not an error line."""
    return [line for line in text.strip().splitlines() if not line.startswith(PROGRESS)]


def forked(args, tmp_path, in_child=None, name="output.txt"):
    output = tmp_path / name
    output.write_text("")
    code = run_forked(args, output_path=output, in_child=in_child)
    return code, output.read_text()


def assert_one_line_exit_2(code, text, *words):
    lines = error_lines(text)
    assert code == EXIT_BAD_INPUT, text
    assert len(lines) == 1 and "Traceback" not in text and "child crashed" not in text, text
    for word in words:
        assert word in lines[0], (word, lines[0])


def crashed_sqlite_run(run_dir):
    assert run_forked(run_args(run_dir, "--store", "sqlite"), {"CRASH_AFTER": "after-save-A:2"}) == 137
    return run_dir


# --- an empty --workdir -----------------------------------------------------------------------------

@pytest.mark.parametrize("command", [["run", "--resume"], ["run", "--scenario", "team-email"], ["status"],
                                     ["timeline"], ["pause"], ["rewind", "--to", "1"]])
def test_an_empty_workdir_is_one_line_and_exit_2(tmp_path, command, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, text = forked([*command, "--workdir", ""], tmp_path)
    assert_one_line_exit_2(code, text, "--workdir")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["output.txt"]  # nothing made in the current folder


# --- SQLite that cannot write ---------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
@pytest.mark.parametrize("command", [["run", "--resume"], ["rewind", "--to", "1"], ["pause"]])
def test_sqlite_on_a_read_only_folder_is_one_line_and_exit_2(tmp_path, command):
    """Every command that writes; ``status`` only reads, and may well work there."""
    run_dir = crashed_sqlite_run(tmp_path / "run")
    before = {path: path.read_bytes() for path in run_dir.rglob("*") if path.is_file()}
    done = subprocess.run(["bwrap", "--dev-bind", "/", "/", "--ro-bind", str(run_dir), str(run_dir),
                           sys.executable, "-m", "harness", *command, "--workdir", str(run_dir), "--store", "sqlite"],
                          cwd=REPO_ROOT, env=harness_env(), capture_output=True, text=True, timeout=120)
    assert_one_line_exit_2(done.returncode, done.stderr, str(run_dir / "run.sqlite3"), "leitura")
    assert {path: path.read_bytes() for path in run_dir.rglob("*") if path.is_file()} == before
    code, text = forked(run_args(run_dir, "--resume", "--store", "sqlite"), tmp_path)
    assert code == 0, text
    with SqliteStore(run_dir) as store:
        assert final_run_problems(run_dir, store=store) == []


def files_cannot_grow():
    """For in_child: no file may grow past 4 KiB (a full disk for every write beyond it)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead of killing us
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))


def test_sqlite_on_a_full_disk_is_one_line_and_exit_2_and_the_run_resumes(tmp_path):
    run_dir = crashed_sqlite_run(tmp_path / "run")
    code, text = forked(run_args(run_dir, "--resume", "--store", "sqlite"), tmp_path, in_child=files_cannot_grow)
    assert_one_line_exit_2(code, text, str(run_dir / "run.sqlite3"), "disco")
    code, text = forked(run_args(run_dir, "--resume", "--store", "sqlite"), tmp_path, name="again.txt")
    assert code == 0, text
    with SqliteStore(run_dir) as store:
        assert final_run_problems(run_dir, store=store) == []


# --- PostgreSQL URL --------------------------------------------------------------------------------------

def test_an_unknown_option_in_the_postgres_url_is_one_line_and_exit_2(postgres_dsn, capsys):
    url = postgres_dsn + ("&" if "?" in postgres_dsn else "?") + "opcao_que_nao_existe=1"
    for command in (["status"], ["status", "--run", unique_run_name("url")],
                    ["submit", "--scenario", "team-email", "--run", unique_run_name("url")]):
        code = cli.main([*command, "--store", url])
        err = capsys.readouterr().err
        assert_one_line_exit_2(code, err, "opcao_que_nao_existe")


# --- NaN and infinities ----------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "infinity", "0", "-3"])
@pytest.mark.parametrize("command, option", [
    (["run", "--scenario", "team-email"], "--lease-seconds"),
    (["worker", "--store", "postgresql://localhost/x"], "--lease-seconds"),
    (["worker", "--store", "postgresql://localhost/x"], "--idle-exit"),
])
def test_numeric_options_refuse_nan_and_infinities(tmp_path, capsys, command, option, value):
    if option == "--idle-exit" and value == "0":
        return  # idle-exit 0 is a real choice: leave at once when the queue is empty
    with pytest.raises(SystemExit) as stopped:
        cli.main([*command, "--workdir", str(tmp_path / "run"), f"{option}={value}"])
    assert stopped.value.code == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert f"argumento {option}" in err and "número" in err and "Traceback" not in err, err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("expiry", ["NaN", "Infinity", "-Infinity"])
def test_a_lease_that_holds_nan_is_an_expired_lease_not_a_permanent_block(tmp_path, capsys, expiry):
    run_dir = tmp_path / "run"
    assert run_forked(run_args(run_dir), {"CRASH_AFTER": "after-save-A:2"}) == 137
    lease = json.loads((run_dir / "lease.json").read_text())
    text = json.dumps({**lease, "released": False}).replace(f'"expires_at": {json.dumps(lease["expires_at"])}',
                                                            f'"expires_at": {expiry}')
    assert expiry in text
    (run_dir / "lease.json").write_text(text)
    assert cli.main(["status", "--workdir", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert f"token {lease['token']}" in out and "vencida" in out, out
    code, output = forked(run_args(run_dir, "--resume"), tmp_path)
    assert code == 0, output
    assert final_run_problems(run_dir) == []
    assert json.loads((run_dir / "lease.json").read_text())["token"] == lease["token"] + 1


# --- a schema from the future ------------------------------------------------------------------------------

@pytest.mark.parametrize("command", [["status"], ["run", "--resume"], ["timeline"], ["pause"]])
def test_a_sqlite_schema_from_the_future_is_refused_never_restamped(tmp_path, capsys, command):
    run_dir = crashed_sqlite_run(tmp_path / "run")
    connection = sqlite3.connect(run_dir / "run.sqlite3")
    connection.execute("PRAGMA user_version=2")
    connection.close()
    code = cli.main([*command, "--workdir", str(run_dir), "--store", "sqlite"])
    err = capsys.readouterr().err
    assert_one_line_exit_2(code, err, "versão 2", str(run_dir / "run.sqlite3"))
    connection = sqlite3.connect(run_dir / "run.sqlite3")
    assert connection.execute("PRAGMA user_version").fetchone()[0] == 2
    connection.close()


def test_a_postgres_schema_from_the_future_is_refused_never_restamped(own_postgres_dsn, capsys):
    import psycopg

    from harness.stores import postgres

    dsn = own_postgres_dsn
    run = unique_run_name("futuro")
    assert cli.main(["submit", "--store", dsn, "--scenario", "team-email", "--run", run]) == 0
    capsys.readouterr()
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute("UPDATE harness_schema SET version = 2")
    postgres._schema_ready.discard(dsn)  # a new process has not checked this server yet
    for command in (["status"], ["status", "--run", run], ["pause", "--run", run]):
        code = cli.main([*command, "--store", dsn])
        err = capsys.readouterr().err
        assert_one_line_exit_2(code, err, "versão 2")
        postgres._schema_ready.discard(dsn)
    with psycopg.connect(dsn, autocommit=True) as connection:
        assert connection.execute("SELECT version FROM harness_schema").fetchall() == [(2,)]


# --- verbs on a folder without a run --------------------------------------------------------------------------

VERBS = {
    "status": ["status"],
    "timeline": ["timeline"],
    "approve": ["approve"],
    "reject": ["reject", "--reason", "não"],
    "pause": ["pause"],
    "cancel": ["cancel"],
}


def listing(folder):
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*")) if folder.exists() else None


@pytest.mark.parametrize("store", [[], ["--store", "sqlite"]], ids=["files", "sqlite"])
@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("folder_exists", [True, False], ids=["empty-folder", "no-folder"])
def test_a_verb_on_a_folder_without_a_run_creates_nothing_and_says_so(tmp_path, capsys, verb, store, folder_exists):
    folder = tmp_path / "digitada-errado"
    if folder_exists:
        folder.mkdir()
    before = listing(tmp_path)
    code = cli.main([*VERBS[verb], "--workdir", str(folder), *store])
    err = capsys.readouterr().err
    assert code != 0, err
    assert_one_line_exit_2(code, err, "não há execução", str(folder))
    assert listing(tmp_path) == before
