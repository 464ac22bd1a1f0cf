"""`python -m harness timeline`, `rewind` and `fork`: lesson 5 on the command line, over the
folders `python -m harness run` writes."""
from __future__ import annotations

import hashlib
import json
import os
import socket
import time
from pathlib import Path

import pytest

from harness import cli
from harness.crash import reset_crash_counts
from harness.exit_codes import EXIT_BAD_INPUT, EXIT_CODES, EXIT_LEASE_HELD
from harness.lifecycle import LEASE_FILE
from harness.runner import WORLD_DIR
from harness.tools import Workspace
from tests.warm_python import run_python


def digest(folder: Path, skip=()) -> str:
    hashed = hashlib.sha256()
    for path in sorted(Path(folder).rglob("*")):
        if path.is_file() and path.name not in skip:
            hashed.update(str(path.relative_to(folder)).encode())
            hashed.update(path.read_bytes())
    return hashed.hexdigest()


def harness(*args, cwd, env=None):
    return run_python(["-m", "harness", *args], cwd=cwd, timeout=120, env={**os.environ, **(env or {})})


def emails(run_dir: Path) -> list:
    return Workspace(run_dir / WORLD_DIR).emails()


@pytest.fixture
def finished(tmp_path):
    run_dir = tmp_path / "run"
    assert cli.main(["run", "--scenario", "team-email", "--workdir", str(run_dir)]) == 0
    return run_dir


def crashed_before_sending(run_dir: Path, monkeypatch, *extra) -> Path:
    """`run` killed right after point A of the turn that asks for send_email."""
    monkeypatch.setenv("CRASH_AFTER", "after-save-A:2")
    assert cli.main(["run", "--scenario", "team-email", "--workdir", str(run_dir), *extra]) == 137
    monkeypatch.delenv("CRASH_AFTER")
    reset_crash_counts()
    return run_dir


# --- timeline --------------------------------------------------------------------------------

def test_timeline_lists_every_save_point_and_where_the_run_is(finished, capsys):
    capsys.readouterr()
    assert cli.main(["timeline", "--workdir", str(finished)]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if "turn-" in line]
    assert [line.split()[0] for line in lines] == ["turn-001-A.json", "turn-001-B.json", "turn-002-A.json",
                                                   "turn-002-B.json", "turn-003-A.json"]
    assert "pendente: send_email (toolu_01TE2)" in lines[2] and "pendente" not in lines[3]
    assert "linha do tempo principal" in out and "checkpoint.json: turno 3, status completed" in out


def test_timeline_shows_an_unreadable_point_and_the_points_set_aside(finished, capsys):
    assert cli.main(["rewind", "--workdir", str(finished), "--to", "1"]) == 0
    (finished / "checkpoints" / "turn-001-A.json").write_text('{"version": 1, "ta')
    capsys.readouterr()
    assert cli.main(["timeline", "--workdir", str(finished)]) == 0
    out = capsys.readouterr().out
    assert "turn-001-A.json  ILEGÍVEL" in out and "rewound-001/ (3 pontos)" in out
    assert "checkpoint.json: turno 1, status paused" in out


def test_timeline_of_a_missing_folder_is_bad_input(tmp_path, capsys):
    assert cli.main(["timeline", "--workdir", str(tmp_path / "nada")]) == EXIT_BAD_INPUT
    assert "não existe" in capsys.readouterr().err
    assert not (tmp_path / "nada").exists()


# --- rewind ----------------------------------------------------------------------------------

def test_rewind_to_a_pending_send_email_sends_nothing_and_resume_sends_exactly_one(tmp_path, monkeypatch, capsys):
    run_dir = crashed_before_sending(tmp_path / "run", monkeypatch)
    outbox = run_dir / WORLD_DIR / "outbox.jsonl"
    before = outbox.read_bytes() if outbox.exists() else None
    assert cli.main(["rewind", "--workdir", str(run_dir), "--to", "2"]) == 0
    out = capsys.readouterr().out
    assert "pendente: send_email" in out and "nada foi executado" in out
    assert (outbox.read_bytes() if outbox.exists() else None) == before and emails(run_dir) == []
    assert cli.main(["run", "--scenario", "team-email", "--workdir", str(run_dir), "--resume"]) == 0
    assert len(emails(run_dir)) == 1


def test_rewind_with_the_gate_on_leads_to_a_request_for_approval(tmp_path, monkeypatch, capsys):
    run_dir = crashed_before_sending(tmp_path / "run", monkeypatch, "--approval")
    assert cli.main(["rewind", "--workdir", str(run_dir), "--to", "2-A"]) == 0
    assert emails(run_dir) == []
    resumed = cli.main(["run", "--scenario", "team-email", "--workdir", str(run_dir), "--resume"])
    assert resumed == EXIT_CODES["waiting_for_approval"] and emails(run_dir) == []
    capsys.readouterr()
    assert cli.main(["status", "--workdir", str(run_dir)]) == 0
    assert "aguarda aprovação: send_email" in capsys.readouterr().out
    assert cli.main(["approve", "--workdir", str(run_dir)]) == 0
    assert cli.main(["run", "--scenario", "team-email", "--workdir", str(run_dir), "--resume"]) == 0
    assert len(emails(run_dir)) == 1


@pytest.mark.parametrize("to, words", [("9", "turno 9"), ("2-C", "não é um ponto"), ("dois", "não é um ponto"),
                                       ("3-B", "não há turn-003-B.json"), ("1", "truncado")])
def test_a_rewind_that_fails_changes_nothing_at_all(finished, capsys, to, words):
    if to == "1":
        (finished / "checkpoints" / "turn-001-B.json").write_text('{"version": 1, "task"')  # torn point
    before = digest(finished)
    assert cli.main(["rewind", "--workdir", str(finished), "--to", to]) == EXIT_BAD_INPUT
    assert words in capsys.readouterr().err
    assert digest(finished) == before  # not even lease.json moved


def test_rewind_waits_for_a_live_worker(finished, capsys):
    lease = json.loads((finished / LEASE_FILE).read_text())
    lease.update(owner="outro-worker", host=socket.gethostname(), pid=os.getpid(), released=False,
                 expires_at=time.time() + 600)
    (finished / LEASE_FILE).write_text(json.dumps(lease))
    before = digest(finished)
    assert cli.main(["rewind", "--workdir", str(finished), "--to", "1"]) == EXIT_LEASE_HELD
    assert "outro-worker" in capsys.readouterr().err
    assert digest(finished) == before


def test_rewind_of_a_missing_folder_creates_nothing(tmp_path):
    assert cli.main(["rewind", "--workdir", str(tmp_path / "nada"), "--to", "1"]) == EXIT_BAD_INPUT
    assert not (tmp_path / "nada").exists()


# --- fork ------------------------------------------------------------------------------------

def test_fork_dry_run_writes_nothing_anywhere(finished, tmp_path, capsys):
    before, outbox = digest(finished), (finished / WORLD_DIR / "outbox.jsonl").read_bytes()
    into = tmp_path / "fork"
    assert cli.main(["fork", "--workdir", str(finished), "--to", "1", "--into", str(into), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "nada foi gravado" in out and "turn-001-B.json" in out
    assert (finished / WORLD_DIR / "outbox.jsonl").read_bytes() == outbox
    assert digest(finished) == before and not into.exists()


def test_a_fork_continued_in_dry_run_leaves_both_outboxes_byte_identical(finished, tmp_path, capsys):
    before, outbox = digest(finished), (finished / WORLD_DIR / "outbox.jsonl").read_bytes()
    into = tmp_path / "fork"
    assert cli.main(["fork", "--workdir", str(finished), "--to", "2-A", "--into", str(into)]) == 0
    copied = (into / WORLD_DIR / "outbox.jsonl").read_bytes()
    assert copied == outbox  # the fork sees the same world
    capsys.readouterr()
    assert cli.main(["timeline", "--workdir", str(into)]) == 0
    out = capsys.readouterr().out
    assert "bifurcada de principal no turno 2 (ponto A); dry-run: sim" in out and "pendente: send_email" in out
    assert cli.main(["run", "--scenario", "team-email", "--workdir", str(into), "--resume"]) == 0
    state = json.loads((into / "checkpoint.json").read_text())
    assert state["status"] == "completed"
    # The email went out in the original before 2-A was forked: the fork inherits that receipt.
    receipt = json.loads((finished / "effects.json").read_text())["toolu_01TE2"]
    assert state["messages"][4]["content"][0]["content"] == receipt["result"]["content"]
    assert (finished / WORLD_DIR / "outbox.jsonl").read_bytes() == outbox
    assert (into / WORLD_DIR / "outbox.jsonl").read_bytes() == copied
    assert digest(finished) == before


def test_fork_refuses_a_folder_in_use_and_an_unknown_point(finished, tmp_path, capsys):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("meu")
    assert cli.main(["fork", "--workdir", str(finished), "--to", "1", "--into", str(busy)]) == EXIT_BAD_INPUT
    assert "não está vazia" in capsys.readouterr().err
    assert cli.main(["fork", "--workdir", str(finished), "--to", "7", "--into", str(tmp_path / "f")]) == EXIT_BAD_INPUT
    assert not (tmp_path / "f").exists() and [p.name for p in busy.iterdir()] == ["keep.txt"]



@pytest.mark.parametrize("store", [[], ["--store", "sqlite"]], ids=["files", "sqlite"])
def test_fork_into_a_folder_in_use_names_it_as_it_was_typed(tmp_path, monkeypatch, capsys, store):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", "--scenario", "team-email", "--workdir", "runs/email", *store]) == 0
    (tmp_path / "runs" / "ramo").mkdir()
    (tmp_path / "runs" / "ramo" / "keep.txt").write_text("meu")
    capsys.readouterr()
    assert cli.main(["fork", "--workdir", "runs/email", "--to", "1", "--into", "runs/ramo", *store]) == EXIT_BAD_INPUT
    assert "não deu: runs/ramo já existe e não está vazia; escolha uma pasta nova" in capsys.readouterr().err

@pytest.mark.slow
def test_the_commands_run_as_a_real_process_and_show_in_help(tmp_path):
    assert harness("run", "--scenario", "team-email", "--workdir", "run", cwd=tmp_path).returncode == 0
    listed = harness("timeline", "--workdir", "run", cwd=tmp_path)
    assert listed.returncode == 0 and "turn-003-A.json" in listed.stdout
    rewound = harness("rewind", "--workdir", "run", "--to", "1-B", cwd=tmp_path)
    assert rewound.returncode == 0 and "rebobinada para o turno 1" in rewound.stdout, rewound.stderr
    forked = harness("fork", "--workdir", "run", "--to", "1", "--into", "ramo", cwd=tmp_path)
    assert forked.returncode == 0 and (tmp_path / "ramo" / "timeline.json").exists(), forked.stderr
    usage = harness("--help", cwd=tmp_path).stdout
    for command in ("timeline", "rewind", "fork", "--to TURNO[-A|-B]", "--dry-run"):
        assert command in usage


def test_rewind_never_writes_through_a_planted_temporary_link(finished, tmp_path, capsys):
    outside = tmp_path / "precious.txt"
    outside.write_text("guardado")
    (finished / "checkpoint.json.tmp").symlink_to(outside)
    assert cli.main(["rewind", "--workdir", str(finished), "--to", "2"]) == 0
    assert outside.read_text() == "guardado"
    checkpoint = finished / "checkpoint.json"
    assert not checkpoint.is_symlink()
    assert json.loads(checkpoint.read_text())["turns"] == 2
    assert cli.main(["status", "--workdir", str(finished)]) == 0


SQLITE_READERS = {"timeline": ["timeline"], "rewind": ["rewind", "--to", "2"],
                  "fork": ["fork", "--to", "2", "--into", "RAMO"],
                  "fork-dry-run": ["fork", "--to", "2", "--into", "RAMO", "--dry-run"]}


@pytest.mark.parametrize("place", ["missing-folder", "empty-folder", "empty-database"])
@pytest.mark.parametrize("command", SQLITE_READERS)
def test_sqlite_timeline_commands_where_there_is_no_run_create_nothing(tmp_path, capsys, place, command):
    workdir, into = tmp_path / "typo", tmp_path / "ramo"
    if place != "missing-folder":
        workdir.mkdir()
    if place == "empty-database":
        (workdir / "run.sqlite3").write_bytes(b"")
    words = [str(into) if word == "RAMO" else word for word in SQLITE_READERS[command]]
    assert cli.main([*words, "--workdir", str(workdir), "--store", "sqlite"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "não há execução" in err and "Traceback" not in err, err
    assert not into.exists()
    if place == "missing-folder":
        assert not workdir.exists()
    else:
        found = {path.name: path.stat().st_size for path in workdir.iterdir()}
        assert found == ({} if place == "empty-folder" else {"run.sqlite3": 0}), found


POINT_COMMANDS = {"rewind": ["rewind"], "fork": ["fork", "--into", "RAMO"],
                  "fork-dry-run": ["fork", "--into", "RAMO", "--dry-run"]}


def planted_point(run_dir: Path, how: str) -> tuple[str, str]:
    """A point whose file cannot be trusted, and the --to that picks it."""
    points = run_dir / "checkpoints"
    if how == "copied-under-a-later-name":
        scene = json.loads((points / "turn-001-A.json").read_text())
        scene["tokens_used"] += 1000
        (points / "turn-005-A.json").write_text(json.dumps(scene))
        return "turn-005-A.json", "5"
    if how == "letter-swapped":
        (points / "turn-002-B.json").unlink()
        (points / "turn-002-B.json").write_bytes((points / "turn-002-A.json").read_bytes())
        return "turn-002-B.json", "2-B"
    outside = run_dir.parent / "de-fora.json"
    (points / "turn-003-A.json").rename(outside)
    (points / "turn-003-A.json").symlink_to(outside)
    return "turn-003-A.json", "3"


@pytest.mark.parametrize("how", ["copied-under-a-later-name", "letter-swapped", "a-symlink"])
@pytest.mark.parametrize("command", POINT_COMMANDS)
def test_a_point_whose_file_lies_about_itself_is_refused_by_name(finished, tmp_path, capsys, how, command):
    name, to = planted_point(finished, how)
    into = tmp_path / "ramo"
    before = digest(finished)
    words = [str(into) if word == "RAMO" else word for word in POINT_COMMANDS[command]]
    assert cli.main([*words, "--to", to, "--workdir", str(finished)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert name in err and "Traceback" not in err and "rebobinada" not in err, err
    assert ("link simbólico" if how == "a-symlink" else "o nome diz") in err, err
    assert digest(finished) == before and not into.exists()
    assert json.loads((finished / "checkpoint.json").read_text())["turns"] == 3
