"""`timeline`, `rewind` and `fork` on the database stores: the same commands as lesson 5's files,
with a moved head instead of files set aside, and a new run instead of a new folder.

The rules are lesson 5's: a rewind runs nothing (a pending send_email stays pending and the next
resume settles it, once); a fork copies one point into a new line in dry-run and leaves the
original untouched.
"""
from __future__ import annotations

import os

import pytest

from harness.cli_endpoint import ENDPOINT_LOG_ENV
from harness.crash import EXIT_CODE_KILLED
from tests.durability_checks import final_run_problems, run_forked


def command(name, run_dir, case, *extra):
    return [name, "--workdir", str(run_dir), *case.cli_args(run_dir), *extra]


def run_command(run_dir, case, *extra):
    return ["run", "--scenario", "team-email", "--workdir", str(run_dir), *case.cli_args(run_dir), *extra]


def fork_target(tmp_path, case):
    """The new line: a folder for SQLite; for PostgreSQL the folder's name is the new run's name."""
    into = tmp_path / f"ramo-{os.getpid()}-{case.kind}-{tmp_path.name[-6:]}"
    spec = ["--store", "sqlite"] if case.kind == "sqlite" else ["--store", case.dsn, "--run", into.name]
    return into, spec


def snapshot(store):
    return store.load(), store.points(), store.effects(), store.approvals(), store.world().emails()


def test_rewind_keeps_the_call_pending_and_the_resume_sends_it_once(tmp_path, sql_store_case):
    case, run_dir, out = sql_store_case, tmp_path / "run", tmp_path / "out.txt"
    log = tmp_path / "requests.jsonl"
    assert run_forked(run_command(run_dir, case), {"CRASH_AFTER": "after-save-B:2"}, out) == EXIT_CODE_KILLED
    assert run_forked(command("timeline", run_dir, case), {}, out) == 0
    assert "turno   2  B resultado" in out.read_text()
    with case.open(run_dir) as store:
        emails_before = len(store.world().emails())
    assert emails_before == 1

    assert run_forked(command("rewind", run_dir, case, "--to", "2-A"), {}, out) == 0, out.read_text()
    assert "pendente: send_email (toolu_01TE2)" in out.read_text()
    with case.open(run_dir) as store:
        state = store.load()
        assert state["status"] == "paused" and state["pending_tool_use"][0]["name"] == "send_email"
        assert [(p.turn, p.point) for p in store.points()] == [(1, "A"), (1, "B"), (2, "A")]
        assert len(store.world().emails()) == 1  # rewinding ran nothing

    assert run_forked(run_command(run_dir, case, "--resume"), {ENDPOINT_LOG_ENV: str(log)}, out) == 0, out.read_text()
    with case.open(run_dir) as store:
        # The receipt from before the rewind is reused: still exactly one email.
        assert final_run_problems(run_dir, log, store=store) == []


def test_a_fork_runs_in_dry_run_and_leaves_the_original_alone(tmp_path, sql_store_case):
    case, run_dir, out = sql_store_case, tmp_path / "run", tmp_path / "out.txt"
    assert run_forked(run_command(run_dir, case), {}, out) == 0, out.read_text()
    with case.open(run_dir) as store:
        before = snapshot(store)
        parent_line = store.timeline()["timeline_id"]
    into, fork_spec = fork_target(tmp_path, case)

    preview = command("fork", run_dir, case, "--to", "1", "--into", str(into), "--dry-run")
    assert run_forked(preview, {}, out) == 0 and "nada foi gravado" in out.read_text()
    assert not into.exists() or not any(into.iterdir())

    assert run_forked(command("fork", run_dir, case, "--to", "1", "--into", str(into)), {}, out) == 0, out.read_text()
    resume = ["run", "--scenario", "team-email", "--workdir", str(into), *fork_spec, "--resume"]
    assert run_forked(resume, {}, out) == 0, out.read_text()
    from harness.stores import open_store

    spec = "sqlite" if case.kind == "sqlite" else case.dsn
    with open_store(spec, into, run=into.name) as fork_store:
        info, state = fork_store.timeline(), fork_store.load()
        assert info["dry_run"] is True and info["parent"] == {"timeline_id": parent_line, "turn": 1, "point": "B"}
        assert state["status"] == "completed" and fork_store.world().emails() == []  # dry-run: nothing sent
        answer = state["messages"][4]["content"][0]["content"]
        assert answer.startswith("[dry-run] send_email")
    with case.open(run_dir) as store:
        assert snapshot(store) == before


def test_an_impossible_rewind_is_bad_input_and_changes_nothing(tmp_path, sql_store_case):
    case, run_dir, out = sql_store_case, tmp_path / "run", tmp_path / "out.txt"
    assert run_forked(run_command(run_dir, case), {}, out) == 0
    with case.open(run_dir) as store:
        before = snapshot(store), store.read_lease()
    assert run_forked(command("rewind", run_dir, case, "--to", "9"), {}, out) == 2
    assert "não há ponto gravado para 9" in out.read_text() and "turnos disponíveis: 1, 2, 3" in out.read_text()
    with case.open(run_dir) as store:
        assert (snapshot(store), store.read_lease()) == before


@pytest.mark.parametrize("args", [["rewind", "--to", "1"], ["timeline"], ["fork", "--to", "1", "--into", "x"]])
def test_the_lesson_commands_without_a_folder_say_what_is_missing(args, capsys):
    from harness import cli

    with pytest.raises(SystemExit) as stopped:
        cli.main(args)
    assert stopped.value.code == 2 and "--workdir PASTA" in capsys.readouterr().err
