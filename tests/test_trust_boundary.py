"""The trust boundary: what a run folder, a database row or a command line holds is data, never an address.

Each test plants what an attacker (or an unlucky copy of a run folder) would plant and checks the
harness refuses it in one Portuguese line, touches nothing outside the run, and leaves the run as
it was: fixed by hand, the run resumes and sends its one email.
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from harness import cli
from harness.exit_codes import EXIT_BAD_INPUT, EXIT_CODES
from harness.lifecycle import CHECKPOINT_FILE, LEASE_FILE, LEASE_LOCK_FILE
from harness.scenarios import SCENARIOS_DIR, Scenario, ScenarioError, load_scenario
from harness.stores.sqlite import DATABASE_FILE
from harness.tools import Workspace, execute_tool, workspace_in_use
from tests.stores_support import unique_run_name

PAUSED = EXIT_CODES["paused"]


def one_line(err):
    lines = [line for line in err.strip().splitlines() if line.strip()]
    return len(lines) == 1 and "Traceback" not in err


def emails_in(run_dir):
    outbox = Path(run_dir) / "world" / "outbox.jsonl"
    return [] if not outbox.exists() else [line for line in outbox.read_text().splitlines() if line.strip()]


def paused_run(run_dir, *store):
    """A team-email run stopped by the turn ceiling after turn 1: the email is still to be sent."""
    code = cli.main(["run", "--scenario", "team-email", "--workdir", str(run_dir), "--max-turns", "1", *store])
    assert code == PAUSED
    return run_dir


def hostile_script(tmp_path):
    """A JSON script outside the course, as an attacker would leave one on the machine."""
    script = json.loads((SCENARIOS_DIR / "team-email.json").read_text())
    for response in script["responses"]:
        for block in response["content"]:
            if block.get("name") == "send_email":
                block["input"]["to"] = "attacker@example.com"
    script["files"] = {"../../fora-da-execucao.txt": "plantado"}
    path = tmp_path / "roteiro.json"
    path.write_text(json.dumps(script))
    return path


def bad_names(tmp_path):
    return [str(hostile_script(tmp_path).with_suffix("")), str(hostile_script(tmp_path)), "../team-email",
            "team-email/../team-email", "nao-existe"]


# --- 1. a scenario is chosen by name -------------------------------------------------------------

@pytest.mark.parametrize("index", range(5))
def test_a_recorded_scenario_that_is_not_a_shipped_name_is_refused_in_the_file_store(tmp_path, capsys, index):
    run_dir = paused_run(tmp_path / "run")
    bad = bad_names(tmp_path)[index]
    checkpoint = run_dir / CHECKPOINT_FILE
    state = json.loads(checkpoint.read_text())
    state["scenario"] = bad
    checkpoint.write_text(json.dumps(state))
    capsys.readouterr()
    code = cli.main(["run", "--resume", "--workdir", str(run_dir)])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and one_line(err), err
    assert "checkpoint.json" in err and "scenario" in err, err
    assert emails_in(run_dir) == [] and not (tmp_path / "fora-da-execucao.txt").exists()
    state["scenario"] = "team-email"
    checkpoint.write_text(json.dumps(state))
    assert cli.main(["run", "--resume", "--workdir", str(run_dir)]) == 0
    assert len(emails_in(run_dir)) == 1


def set_sqlite_scenario(run_dir, value):
    connection = sqlite3.connect(run_dir / DATABASE_FILE)
    connection.execute("UPDATE leases SET released = 0")
    connection.execute("UPDATE runs SET scenario = ?", (value,))
    connection.execute("UPDATE leases SET released = 1")
    connection.commit()
    connection.close()


@pytest.mark.parametrize("index", [0, 2, 4])
def test_a_recorded_scenario_in_the_sqlite_row_is_refused(tmp_path, capsys, index):
    run_dir = paused_run(tmp_path / "run", "--store", "sqlite")
    set_sqlite_scenario(run_dir, bad_names(tmp_path)[index])
    capsys.readouterr()
    code = cli.main(["run", "--resume", "--workdir", str(run_dir), "--store", "sqlite"])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and one_line(err), err
    assert "runs" in err and "scenario" in err, err
    assert not (tmp_path / "fora-da-execucao.txt").exists()
    set_sqlite_scenario(run_dir, "team-email")
    assert cli.main(["run", "--resume", "--workdir", str(run_dir), "--store", "sqlite"]) == 0
    connection = sqlite3.connect(run_dir / DATABASE_FILE)
    assert connection.execute("SELECT count(*) FROM outbox").fetchone()[0] == 1


def pg_execute(dsn, statement, params=()):
    from harness.stores.postgres import connect  # the harness's own: it makes the tables if none exist yet

    with connect(dsn) as connection:
        return connection.execute(statement, params).fetchall() if statement.lstrip().startswith("SELECT") \
            else connection.execute(statement, params)


def set_pg_scenario(dsn, run, value):
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as connection, connection.transaction():
        connection.execute("UPDATE leases SET released = 0 WHERE run = %s", (run,))
        connection.execute("UPDATE runs SET scenario = %s WHERE run = %s", (value, run))
        connection.execute("UPDATE leases SET released = 1 WHERE run = %s", (run,))


def test_a_recorded_scenario_in_the_postgres_row_is_refused(tmp_path, capsys, postgres_dsn):
    run, run_dir = unique_run_name("cena"), tmp_path / "run"
    store = ["--store", postgres_dsn, "--run", run]
    paused_run(run_dir, *store)
    set_pg_scenario(postgres_dsn, run, str(hostile_script(tmp_path)))
    capsys.readouterr()
    code = cli.main(["run", "--resume", "--workdir", str(run_dir), *store])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and one_line(err), err
    assert "runs" in err and "scenario" in err and run in err, err
    assert not (tmp_path / "fora-da-execucao.txt").exists()
    set_pg_scenario(postgres_dsn, run, "team-email")
    assert cli.main(["run", "--resume", "--workdir", str(run_dir), *store]) == 0
    assert pg_execute(postgres_dsn, "SELECT count(*) FROM outbox WHERE run = %s", (run,))[0][0] == 1


@pytest.mark.parametrize("name", ["../fora.txt", "ABSOLUTE", "notas/../../fora.txt", "a\x00b", "x" * 5000, ""])
def test_scenario_file_names_stay_inside_the_sandbox(tmp_path, name):
    absolute = tmp_path / "fora-absoluto.txt"
    name = str(absolute) if name == "ABSOLUTE" else name
    scenario = Scenario(name="s", task="t", responses=[], files={name: "plantado"})
    with pytest.raises(ScenarioError):
        scenario.make_workspace(tmp_path / "a" / "world")
    assert not (tmp_path / "a" / "fora.txt").exists() and not (tmp_path / "fora.txt").exists()
    assert not absolute.exists()


def test_a_shipped_scenario_with_an_escaping_file_name_is_refused_on_load(tmp_path, monkeypatch):
    import harness.scenarios as scenarios

    script = json.loads((SCENARIOS_DIR / "team-email.json").read_text())
    script["files"] = {"../fora.txt": "x"}
    (tmp_path / "team-email.json").write_text(json.dumps(script))
    monkeypatch.setattr(scenarios, "SCENARIOS_DIR", tmp_path)
    with pytest.raises(ScenarioError, match="fora.txt"):
        load_scenario("team-email")


def test_a_malformed_scenario_file_is_one_portuguese_line(tmp_path, monkeypatch, capsys):
    import harness.scenarios as scenarios

    (tmp_path / "team-email.json").write_text('{"name": "team-email", "task": ')
    monkeypatch.setattr(scenarios, "SCENARIOS_DIR", tmp_path)
    code = cli.main(["run", "--scenario", "team-email", "--workdir", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and one_line(err) and "team-email.json" in err, err


def test_load_scenario_takes_names_not_paths(tmp_path):
    with pytest.raises(ScenarioError):
        load_scenario(str(SCENARIOS_DIR / "team-email"))
    with pytest.raises(ScenarioError):
        load_scenario("../scenarios/team-email")
    assert load_scenario("team-email").name == "team-email"


# --- 2. run names ----------------------------------------------------------------------------------

HOSTILE_RUN_NAMES = {"absolute": None, "parent": "../x", "long": "x" * 5000, "dot": ".", "dash": "-x"}


@pytest.mark.parametrize("kind", HOSTILE_RUN_NAMES)
def test_submit_refuses_a_bad_run_name(tmp_path, capsys, postgres_dsn, kind):
    name = HOSTILE_RUN_NAMES[kind] or str(tmp_path / "some" / "dir")
    with pytest.raises(SystemExit) as stop:
        cli.main(["submit", "--store", postgres_dsn, "--scenario", "team-email", f"--run={name}"])
    err = capsys.readouterr().err
    assert stop.value.code == EXIT_BAD_INPUT and "nome de execução" in err and "Traceback" not in err, err
    assert pg_execute(postgres_dsn, "SELECT count(*) FROM runs WHERE run = %s", (name,))[0][0] == 0


def test_run_commands_refuse_a_bad_run_name_before_it_becomes_a_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        cli.main(["run", "--store", "postgresql://nobody@127.0.0.1:1/x", "--run", "../../fora", "--scenario", "team-email"])
    assert stop.value.code == EXIT_BAD_INPUT and "nome de execução" in capsys.readouterr().err
    assert not (tmp_path.parent / "fora").exists()


def plant_run_copy(dsn, source, name):
    """The rows of run ``source`` copied under ``name``, straight into the database (no validation)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as connection, connection.transaction():
        connection.execute("INSERT INTO leases SELECT %s, token, owner, host, pid, acquired_at, expires_at, 0 "
                           "FROM leases WHERE run = %s", (name, source))
        connection.execute("INSERT INTO runs SELECT %s, run_id, scenario, task, status, head_seq, fields, timeline, "
                           "token, updated_at - 1000 FROM runs WHERE run = %s", (name, source))
        connection.execute("INSERT INTO saves SELECT %s, seq, parent_seq, point, turn, tokens_used, message_count, "
                           "new_messages, pending_tool_use, token, saved_at FROM saves WHERE run = %s", (name, source))
        connection.execute("UPDATE leases SET released = 1 WHERE run = %s", (name,))


@pytest.mark.slow
def test_a_worker_skips_planted_rows_with_hostile_names_and_touches_nothing_outside(tmp_path, own_postgres_dsn):
    postgres_dsn = own_postgres_dsn
    from harness.worker import submit_run, work

    victim = tmp_path / "some" / "dir"
    victim.mkdir(parents=True)
    (victim / "precioso.txt").write_text("não apague")
    template = submit_run(postgres_dsn, load_scenario("team-email"), run=unique_run_name("modelo"))
    hostile = [str(victim), "../x", "x" * 5000]
    for name in hostile:
        plant_run_copy(postgres_dsn, template, name)
    good = submit_run(postgres_dsn, load_scenario("team-email"), run=unique_run_name("boa"))
    sandbox_root = tmp_path / "worker" / "sandboxes"
    sandbox_root.mkdir(parents=True)
    said = []
    handled = work(postgres_dsn, workdir=sandbox_root, idle_exit=1.0, lease_seconds=5, say=said.append)
    assert (victim / "precioso.txt").read_text() == "não apague"
    assert sorted(p.name for p in victim.iterdir()) == ["precioso.txt"]
    assert not (tmp_path / "worker" / "x").exists()
    assert pg_execute(postgres_dsn, "SELECT status FROM runs WHERE run = %s", (good,))[0][0] == "completed"
    assert pg_execute(postgres_dsn, "SELECT status FROM runs WHERE run = %s", (template,))[0][0] == "completed"
    refused = [line for line in said if "nome de execução" in line]
    assert len(refused) == len(hostile), said  # one line per hostile row, not one per poll
    assert handled == 2
    for name in hostile:  # left as they were, for a person to look at
        assert pg_execute(postgres_dsn, "SELECT status FROM runs WHERE run = %s", (name,))[0][0] == "running"


# --- 3. links -----------------------------------------------------------------------------------------

@pytest.fixture
def world(tmp_path):
    workspace = Workspace(tmp_path / "world")
    workspace.add_files({"notes/a.txt": "linha comum\n"})
    outside = tmp_path / "segredo.txt"
    outside.write_text("SEGREDO-DE-FORA\n")
    (workspace.sandbox / "notes" / "link.txt").symlink_to(outside)
    (workspace.sandbox / "pasta-de-fora").symlink_to(tmp_path, target_is_directory=True)
    with workspace_in_use(workspace):
        yield workspace


def test_grep_does_not_follow_a_planted_link_out_of_the_sandbox(world):
    for path in (".", "notes", "notes/link.txt", "pasta-de-fora"):
        result = execute_tool("grep", {"pattern": "SEGREDO", "path": path})
        assert "SEGREDO-DE-FORA" not in result["content"], (path, result)
    assert execute_tool("grep", {"pattern": "comum"})["content"].startswith("notes/a.txt:1:")


def test_read_file_and_list_dir_refuse_links_too(world):
    for path in ("notes/link.txt", "pasta-de-fora/segredo.txt"):
        result = execute_tool("read_file", {"path": path})
        assert result["is_error"] and "SEGREDO" not in result["content"], result
    listed = execute_tool("list_dir", {"path": "pasta-de-fora"})
    assert listed["is_error"] and "segredo" not in listed["content"], listed


def test_a_dangling_outbox_link_never_sends_the_email_outside_the_run(tmp_path, capsys):
    run_dir = paused_run(tmp_path / "run")
    elsewhere = tmp_path / "fora" / "caixa.jsonl"
    elsewhere.parent.mkdir()
    (run_dir / "world" / "outbox.jsonl").symlink_to(elsewhere)
    capsys.readouterr()
    code = cli.main(["run", "--resume", "--workdir", str(run_dir)])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and one_line(err) and "link" in err, err
    assert not elsewhere.exists()
    (run_dir / "world" / "outbox.jsonl").unlink()
    assert cli.main(["run", "--resume", "--workdir", str(run_dir)]) == 0
    assert len(emails_in(run_dir)) == 1 and not elsewhere.exists()


@pytest.mark.parametrize("planted", [CHECKPOINT_FILE + ".tmp", LEASE_FILE + ".tmp", "effects.json.tmp",
                                     "checkpoints/turn-002-A.json.tmp", "world/outbox.jsonl.tmp"])
def test_a_planted_temporary_link_never_gets_its_target_overwritten(tmp_path, planted):
    run_dir = paused_run(tmp_path / "run")
    victim = tmp_path / "vitima.txt"
    victim.write_text("original")
    (run_dir / planted).symlink_to(victim)
    assert cli.main(["run", "--resume", "--workdir", str(run_dir)]) == 0
    assert victim.read_text() == "original"
    assert len(emails_in(run_dir)) == 1


def test_a_planted_lease_lock_link_creates_nothing_outside(tmp_path, capsys):
    run_dir = paused_run(tmp_path / "run")
    elsewhere = tmp_path / "criado-fora.lock"
    (run_dir / LEASE_LOCK_FILE).unlink()
    (run_dir / LEASE_LOCK_FILE).symlink_to(elsewhere)
    capsys.readouterr()
    code = cli.main(["run", "--resume", "--workdir", str(run_dir)])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and one_line(err) and "link" in err, err
    assert not elsewhere.exists()


def test_a_world_folder_that_is_a_link_is_refused(tmp_path, capsys):
    run_dir = paused_run(tmp_path / "run")
    outside = tmp_path / "mundo-de-fora"
    (run_dir / "world").rename(outside)
    (run_dir / "world").symlink_to(outside, target_is_directory=True)
    capsys.readouterr()
    code = cli.main(["run", "--resume", "--workdir", str(run_dir)])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and one_line(err) and "link" in err, err
    assert not (outside / "outbox.jsonl").exists()


def test_tickets_are_written_without_following_a_planted_temporary(tmp_path):
    workspace = Workspace(tmp_path / "world")
    victim = tmp_path / "vitima.txt"
    victim.write_text("original")
    (workspace.root / "tickets.json.tmp").symlink_to(victim)
    with workspace_in_use(workspace):
        assert not execute_tool("create_ticket", {"title": "t"})["is_error"]
    assert victim.read_text() == "original" and len(workspace.tickets()) == 1


# --- 4. tools bound their work -------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.timeout(180)
def test_grep_with_a_catastrophic_pattern_is_a_tool_error_not_a_frozen_run(tmp_path):
    workspace = Workspace(tmp_path / "world")
    workspace.add_files({"a.txt": "a" * 28 + "b\n", "b.txt": "a" * 40 + "b\n"})
    with workspace_in_use(workspace):
        execute_tool("grep", {"pattern": "(a+)+$"})   # the pattern of the report: it must simply end
        result = execute_tool("grep", {"pattern": "(a|aa)+$"})
    assert result["is_error"] and "tempo" in result["content"], result


def test_read_file_bounds_what_it_reads(tmp_path):
    workspace = Workspace(tmp_path / "world")
    with open(workspace.sandbox / "enorme.txt", "wb") as file:
        file.truncate(200 * 1024 * 1024)  # sparse: 200 MiB that take no disk
    with workspace_in_use(workspace):
        result = execute_tool("read_file", {"path": "enorme.txt"})
        found = execute_tool("grep", {"pattern": "x", "path": "enorme.txt"})
    assert not result["is_error"] and len(result["content"]) < 2 * 1024 * 1024, len(result["content"])
    assert "cortad" in result["content"][-300:], result["content"][-300:]
    assert len(found["content"]) < 2 * 1024 * 1024


def test_a_binary_file_is_a_tool_error_not_a_crash(tmp_path):
    workspace = Workspace(tmp_path / "world")
    (workspace.sandbox / "imagem.bin").write_bytes(b"\xff\xfe\x00\x81")
    with workspace_in_use(workspace):
        result = execute_tool("read_file", {"path": "imagem.bin"})
    assert result["is_error"] and "UTF-8" in result["content"], result


# --- 5. secrets in a database address ---------------------------------------------------------------------

@pytest.mark.parametrize("dsn", [
    "postgresql://ana:SEGREDO123@127.0.0.1:1/curso",
    "postgresql://ana@127.0.0.1:1/curso?password=SEGREDO123",
    "postgresql://ana@127.0.0.1:1/curso?sslmode=disable&password=SEGREDO123&connect_timeout=3",
    "postgresql://ana@127.0.0.1:1/curso?password=SEGREDO%20123",
])
def test_a_password_never_appears_in_a_message(dsn, capsys):
    from harness.stores.postgres import without_password

    assert "SEGREDO" not in without_password(dsn)
    code = cli.main(["status", "--store", dsn, "--run", "x"])
    captured = capsys.readouterr()
    assert code == EXIT_BAD_INPUT and "SEGREDO" not in captured.err + captured.out, captured.err


@pytest.mark.parametrize("conninfo", ["host=127.0.0.1 port=1 password=SEGREDO123 dbname=x",
                                      "host=127.0.0.1 password = 'SEGREDO 123' dbname=x",
                                      "host=127.0.0.1 PASSWORD='SEGREDO\\' 123' dbname=x",
                                      "postgresql://ana@127.0.0.1:1/curso?PASSWORD=SEGREDO123"])
def test_a_keyword_conninfo_password_is_masked(conninfo):
    from harness.stores.postgres import without_password

    assert "SEGREDO" not in without_password(conninfo) and "123" not in without_password(conninfo)
    assert "127.0.0.1" in without_password(conninfo)


def test_the_commands_a_run_prints_do_not_carry_the_password(postgres_dsn, capsys):
    separator = "&" if "?" in postgres_dsn else "?"
    dsn = f"{postgres_dsn}{separator}password=SEGREDO123"  # the test server trusts local users: it is ignored
    run = unique_run_name("senha")
    assert cli.main(["submit", "--store", dsn, "--scenario", "team-email", "--run", run]) == 0
    captured = capsys.readouterr()
    assert "SEGREDO" not in captured.out + captured.err and run in captured.out, captured.out
