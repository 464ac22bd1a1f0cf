"""What `python -m harness` knows about a run folder: which store holds it, which scenario it
runs, and that a fork is a run of its own (own run_id, the status its point had)."""
from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from harness import cli, timeline_commands
from harness.stores import sql
from harness.crash import reset_crash_counts
from harness.exit_codes import EXIT_BAD_INPUT, EXIT_CODES
from harness.fake_endpoint import ScriptedEndpoint
from harness.runner import run_durable
from harness.scenarios import Scenario
from harness.stores import open_store
from harness.stores.files import fork_run


def suggested_command(output: str) -> list[str]:
    """The arguments of the `continue com: python -m harness ...` line a command printed."""
    line = next(line for line in output.splitlines() if "continue com:" in line)
    words = shlex.split(line.split("continue com:", 1)[1])
    assert words[:3] == ["python", "-m", "harness"], line
    assert "..." not in line and "CENÁRIO" not in line, line
    return words[3:]


def run_state(store: str, folder: Path) -> dict:
    with open_store(store, folder) as opened:
        return opened.load()


# --- finding 18: the run records its scenario ---------------------------------------------------

@pytest.mark.parametrize("store", ["files", "sqlite"])
def test_a_rejection_suggests_a_command_that_resumes_the_right_scenario(tmp_path, capsys, store):
    folder = str(tmp_path / "triagem")
    assert cli.main(["run", "--scenario", "ticket-triage", "--workdir", folder, "--approval",
                     "--store", store]) == EXIT_CODES["waiting_for_approval"]
    capsys.readouterr()
    assert cli.main(["status", "--workdir", folder, "--store", store]) == 0
    assert "cenário: ticket-triage" in capsys.readouterr().out
    assert cli.main(["reject", "--workdir", folder, "--reason", "não agora", "--store", store]) == 0
    command = suggested_command(capsys.readouterr().out)
    assert "--scenario" not in command  # the run knows its own scenario
    assert cli.main(command) == 0
    state = run_state(store, Path(folder))
    assert state["status"] == "completed" and state["scenario"] == "ticket-triage"
    assert "ticket-triage" in capsys.readouterr().out


def test_rewind_and_fork_suggest_commands_that_work_as_printed(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", "--scenario", "meeting-notes", "--workdir", "notas"]) == 0
    assert cli.main(["rewind", "--workdir", "notas", "--to", "1-B"]) == 0
    rewound = suggested_command(capsys.readouterr().out)
    assert cli.main(rewound) == 0 and run_state("files", tmp_path / "notas")["turns"] == 3
    assert cli.main(["fork", "--workdir", "notas", "--to", "2-A", "--into", "ramo"]) == 0
    forked = suggested_command(capsys.readouterr().out)
    assert cli.main(forked) == 0
    state = run_state("files", tmp_path / "ramo")
    assert state["status"] == "completed" and state["scenario"] == "meeting-notes"


def test_a_resume_that_cannot_know_its_scenario_says_so(tmp_path, capsys):
    folder = tmp_path / "licao5"
    folder.mkdir()
    scene = {"version": 1, "task": "t", "turns": 1, "tokens_used": 5, "pending_tool_use": None,
             "messages": [{"role": "user", "content": "t"},
                          {"role": "assistant", "content": [{"type": "text", "text": "vou ver"}]}]}
    (folder / "checkpoint.json").write_text(json.dumps(scene))
    assert cli.main(["run", "--resume", "--workdir", str(folder)]) == EXIT_BAD_INPUT
    error = capsys.readouterr().err
    assert "--scenario" in error and "Traceback" not in error
    assert cli.main(["run", "--workdir", str(tmp_path / "novo")]) == EXIT_BAD_INPUT
    assert "--scenario" in capsys.readouterr().err and not (tmp_path / "novo").exists()


def test_an_explicit_scenario_still_wins_on_resume(tmp_path, capsys, monkeypatch):
    """team-email-variant exists to resume a team-email run with another script."""
    folder = str(tmp_path / "email")
    monkeypatch.setenv("CRASH_AFTER", "after-save-A:2")
    assert cli.main(["run", "--scenario", "team-email", "--workdir", folder]) == 137
    monkeypatch.delenv("CRASH_AFTER")
    reset_crash_counts()
    assert cli.main(["run", "--resume", "--workdir", folder, "--scenario", "team-email-variant"]) == 0
    assert "ensure_ticket" in capsys.readouterr().out


# --- finding 13: one folder, one store ----------------------------------------------------------

def test_sqlite_refuses_a_folder_that_holds_a_file_run_and_changes_nothing(tmp_path, capsys):
    folder = tmp_path / "mix"
    assert cli.main(["run", "--scenario", "team-email", "--workdir", str(folder)]) == 0
    before = {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()}
    capsys.readouterr()
    assert cli.main(["run", "--scenario", "team-email", "--workdir", str(folder), "--store", "sqlite"]) \
        == EXIT_BAD_INPUT
    error = capsys.readouterr().err
    assert "arquivos" in error and "outra pasta" in error and "Traceback" not in error
    assert {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()} == before
    assert cli.main(["status", "--workdir", str(folder), "--store", "sqlite"]) == EXIT_BAD_INPUT


@pytest.mark.parametrize("command", [["run", "--scenario", "team-email"], ["run", "--resume"], ["status"],
                                     ["timeline"], ["pause"], ["rewind", "--to", "1"]])
def test_commands_without_store_in_a_sqlite_folder_say_to_pass_it(tmp_path, capsys, command):
    folder = tmp_path / "banco"
    assert cli.main(["run", "--scenario", "team-email", "--workdir", str(folder), "--store", "sqlite"]) == 0
    before = sqlite_folder(folder)
    capsys.readouterr()
    assert cli.main([*command, "--workdir", str(folder)]) == EXIT_BAD_INPUT
    error = capsys.readouterr().err
    assert "--store sqlite" in error and "Traceback" not in error, error
    assert sqlite_folder(folder) == before and not (folder / "checkpoint.json").exists()


def sqlite_folder(folder: Path) -> tuple:
    """The run in a SQLite folder and every other file there (the database's own bytes move when
    SQLite folds its journal in, so the run is compared by what it holds)."""
    others = {path: path.read_bytes() for path in folder.rglob("*") if path.is_file() and "run.sqlite3" not in path.name}
    with open_store("sqlite", folder) as opened:
        return opened.load(), opened.points(), opened.effects(), others


def test_readme_sqlite_example_uses_its_own_folder():
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    commands = [line for line in readme.splitlines() if "-m harness" in line and "--workdir" in line]
    folders = {"sqlite": set(), "files": set()}
    for line in commands:
        folder = line.split("--workdir", 1)[1].split()[0]
        folders["sqlite" if "--store sqlite" in line else "files"].add(folder)
    assert folders["sqlite"] and not folders["sqlite"] & folders["files"], folders


# --- finding 20: a fork is a run of its own -------------------------------------------------------

def test_every_fork_has_its_own_run_id_and_says_it_is_a_fork(tmp_path, capsys):
    source = tmp_path / "email"
    assert cli.main(["run", "--scenario", "team-email", "--workdir", str(source)]) == 0
    ids = {run_state("files", source)["run_id"]}
    for name in ("ramo", "ramo2"):
        assert cli.main(["fork", "--workdir", str(source), "--to", "1", "--into", str(tmp_path / name)]) == 0
        capsys.readouterr()
        assert cli.main(["status", "--workdir", str(tmp_path / name)]) == 0
        out = capsys.readouterr().out
        assert "migrada" not in out and "run-v1-" not in out and "bifurcada de turn-001-B.json" in out, out
        ids.add(run_state("files", tmp_path / name)["run_id"])
    assert len(ids) == 3


PAUSING = Scenario(name="pausa", task="Leia as notas com calma.", files={"n.md": "nota"}, responses=[
    {"content": [{"type": "text", "text": "Começo a ler."}], "stop_reason": "pause_turn",
     "usage": {"input_tokens": 10, "output_tokens": 5}},
    {"content": [{"type": "text", "text": "Terminei a leitura."}], "stop_reason": "end_turn",
     "usage": {"input_tokens": 20, "output_tokens": 5}},
])


@pytest.mark.parametrize("store", ["files", "sqlite"])
def test_a_fork_right_after_a_pause_turn_continues_the_turn(tmp_path, monkeypatch, store):
    source, into = tmp_path / "origem", tmp_path / "ramo"
    with open_store(store, source) as opened:
        done = run_durable(ScriptedEndpoint(PAUSING.responses).client(), source, PAUSING, store=opened)
    assert done["status"] == "completed" and done["turns"] == 2
    if store == "files":
        fork_run(source, 1, into, "A")
    else:
        monkeypatch.setattr(sql, "load_scenario", {"pausa": PAUSING}.get)
        with open_store(store, source) as opened, open_store(store, into) as new_store:
            timeline_commands.fork_in_store(opened, 1, new_store, "A")
    forked = run_state(store, into)
    assert forked["status"] == "paused" and forked["run_id"] != done["run_id"]
    with open_store(store, into) as opened:
        resumed = run_durable(ScriptedEndpoint(PAUSING.responses).client(), into, resume=True, store=opened)
    assert resumed["status"] == "completed" and resumed["turns"] == 2
    assert resumed["messages"][-1]["content"][0]["text"] == "Terminei a leitura."


@pytest.mark.parametrize("store", ["files", "sqlite"])
def test_a_fork_of_the_final_point_of_a_finished_run_is_finished_too(tmp_path, capsys, store):
    source, into = str(tmp_path / "origem"), str(tmp_path / "ramo")
    assert cli.main(["run", "--scenario", "team-email", "--workdir", source, "--store", store]) == 0
    assert cli.main(["fork", "--workdir", source, "--to", "3", "--into", into, "--store", store]) == 0
    assert run_state(store, Path(into))["status"] == "completed"
    capsys.readouterr()
    assert cli.main(["run", "--resume", "--workdir", into, "--store", store]) == 0
    assert "status=completed" in capsys.readouterr().out


def folder_bytes(folder: Path) -> dict:
    """Every file's bytes, except a SQLite database's, which is compared by its rows: reading it may
    fold its write-ahead log into the main file without changing anything it holds."""
    import sqlite3

    found = {}
    for path in folder.rglob("*"):
        if path.name.endswith((".sqlite3-wal", ".sqlite3-shm")) or not path.is_file():
            continue
        if path.name.endswith(".sqlite3"):
            connection = sqlite3.connect(path)
            found[path] = list(connection.iterdump())
            connection.close()
        else:
            found[path] = path.read_bytes()
    return found


@pytest.mark.parametrize("store", ["files", "sqlite"])
def test_a_fork_never_lands_on_something_that_exists_nor_inside_its_source(tmp_path, capsys, store):
    source, victim = tmp_path / "origem", tmp_path / "vitima"
    assert cli.main(["run", "--scenario", "team-email", "--workdir", str(source), "--store", store]) == 0
    assert cli.main(["run", "--scenario", "team-email", "--workdir", str(victim)]) == 0  # an email in its outbox
    a_file = tmp_path / "arquivo.txt"
    a_file.write_text("não sou uma pasta")
    before_source, before_victim = folder_bytes(source), folder_bytes(victim)
    capsys.readouterr()
    for into, words in [(victim, "não está vazia"), (source / "world" / "ramo", "dentro da pasta original"),
                        (a_file, "não é uma pasta"), (source, "diferente da original")]:
        for dry_run in ([], ["--dry-run"]):
            code = cli.main(["fork", "--workdir", str(source), "--store", store, "--to", "1",
                             "--into", str(into), *dry_run])
            error = capsys.readouterr().err
            assert code == EXIT_BAD_INPUT and words in error and "Traceback" not in error, (into, error)
    assert folder_bytes(source) == before_source and folder_bytes(victim) == before_victim
    assert a_file.read_text() == "não sou uma pasta"
