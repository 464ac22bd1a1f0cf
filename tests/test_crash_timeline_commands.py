"""`python -m harness fork` and `rewind` on the file store, SIGKILLed before each filesystem call they make.

A command killed at any step must leave either nothing or the whole result: a fork target
that exists resumes to exactly the world it copied, and a rewind is either not begun or
finished by the next command, with the checkpoint and the sequence telling the same story.
The rewind goes through the store contract (``rewind_in_store`` and ``FileStore.rewind``), and
a rewind cut between its plan (rewind.json) and the swap is finished by whatever command comes next.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from harness.crash import SimulatedCrash
from harness.stores.files import FileStore
from harness.timeline_commands import rewind_in_store
from tests.durability_checks import (
    emails,
    filesystem_calls,
    final_run_problems,
    kill_before_filesystem_call,
    run_forked,
)

KILLED = -signal.SIGKILL


@pytest.fixture
def finished(tmp_path):
    """A team-email run that sent its one email and completed."""
    run_dir = tmp_path / "original"
    assert run_forked(["run", "--scenario", "team-email", "--workdir", str(run_dir)]) == 0
    assert len(emails(run_dir)) == 1
    return run_dir


def killed_at_each_step(command, tmp_path):
    """Run ``command(step)`` once to count its filesystem calls, then once per call with a
    SIGKILL right before it; yields (step, exit code) for each killed run."""
    tally = tmp_path / "tally-count"
    assert run_forked(command(0), in_child=lambda: kill_before_filesystem_call(0, tally)) == 0
    total = filesystem_calls(tally)
    assert total > 5, f"the command made only {total} filesystem calls"
    for step in range(1, total + 1):
        tally = tmp_path / f"tally-{step}"
        yield step, run_forked(command(step), in_child=lambda tally=tally, step=step:
                               kill_before_filesystem_call(step, tally))


def leftovers_beside(target: Path) -> list[str]:
    return sorted(path.name for path in target.parent.iterdir() if path.name.startswith(f".{target.name}."))


@pytest.mark.slow
def test_a_fork_killed_at_any_step_leaves_nothing_or_a_run_that_resumes_to_the_copied_email(finished, tmp_path,
                                                                                             capfd):
    outbox = (finished / "world" / "outbox.jsonl").read_bytes()
    targets = tmp_path / "forks"
    targets.mkdir()

    def fork(step):
        return ["fork", "--workdir", str(finished), "--to", "2-A", "--into", str(targets / f"fork-{step}")]

    killed = left_behind = 0
    for step, code in killed_at_each_step(fork, tmp_path):
        target = targets / f"fork-{step}"
        if code == 0:
            continue  # the kill point was after the fork's last filesystem call
        assert code == KILLED, (step, code, capfd.readouterr())
        killed += 1
        if not target.exists():
            # A later fork into the same folder is not blocked, and says what it cleared away.
            staging = leftovers_beside(target)
            left_behind += bool(staging)
            capfd.readouterr()
            assert run_forked(fork(step)) == 0, (step, capfd.readouterr())
            err = capfd.readouterr().err
            for name in staging:
                assert f"para {target} foi interrompida no meio; a pasta incompleta {name} foi apagada" in err, err
        assert leftovers_beside(target) == [], (step, leftovers_beside(target))
        assert run_forked(["run", "--workdir", str(target), "--resume"]) == 0, (step, capfd.readouterr())
        assert FileStore(target).load()["status"] == "completed", step
        assert (target / "world" / "outbox.jsonl").read_bytes() == outbox, step  # the copied email, no other
    assert killed > 5 and left_behind > 5, (killed, left_behind)


def test_a_fork_under_way_in_a_live_process_is_left_alone(finished, tmp_path, capsys):
    """Only the work folder of a dead process is cleared; a live one's is another fork's, under way."""
    from harness import cli

    target = tmp_path / "ramo"
    other = subprocess.Popen(["sleep", "60"])
    try:
        live = tmp_path / f".ramo.bifurcando-{other.pid}"
        live.mkdir()
        (live / "meio.json").write_text("{}")
        assert cli.main(["fork", "--workdir", str(finished), "--to", "1", "--into", str(target)]) == 0
    finally:
        other.kill()
        other.wait()
    assert "interrompida" not in capsys.readouterr().err
    assert (live / "meio.json").exists() and (target / "checkpoint.json").exists()


def point_names(run_dir: Path) -> dict[str, list[str]]:
    """Every save point file of the run, by the folder it sits in (checkpoints/ or a rewound-NNN/)."""
    folders = {}
    for path in sorted((run_dir / "checkpoints").rglob("turn-*.json")):
        folders.setdefault(str(path.parent.relative_to(run_dir)), []).append(path.name)
    return folders


@pytest.mark.slow
def test_a_rewind_killed_at_any_step_is_finished_or_never_begun_for_the_next_command(finished, tmp_path, capfd):
    originals = tmp_path / "runs"
    originals.mkdir()
    every_point = point_names(finished)["checkpoints"]

    def copy_for(step):
        run_dir = originals / f"run-{step}"
        if not run_dir.exists():
            shutil.copytree(finished, run_dir)
        return run_dir

    def rewind(step):
        return ["rewind", "--workdir", str(copy_for(step)), "--to", "2-A"]

    killed = interrupted = 0
    for step, code in killed_at_each_step(rewind, tmp_path):
        run_dir = copy_for(step)
        assert code in (0, KILLED), (step, code, capfd.readouterr())
        killed += code == KILLED
        planned = (run_dir / "rewind.json").exists()
        interrupted += planned
        capfd.readouterr()
        assert run_forked(["run", "--workdir", str(run_dir), "--resume"]) == 0, (step, capfd.readouterr())
        if planned:
            assert "uma rebobinagem para turn-002-A.json tinha sido interrompida no meio; ela foi concluída agora" \
                in capfd.readouterr().err, step
        folders = point_names(run_dir)
        # Never begun: the whole sequence in place. Finished: turns 2-B and 3-A set aside together in
        # one folder, and written again by the resumed run. Never anything in between.
        assert folders.pop("checkpoints") == every_point, (step, folders)
        assert list(folders.values()) in ([], [["turn-002-B.json", "turn-003-A.json"]]), (step, folders)
        assert final_run_problems(run_dir) == [], step
        assert not (run_dir / "rewind.json").exists(), step
    assert killed > 5 and interrupted > 3, (killed, interrupted)


@pytest.mark.parametrize("plan", ["{", '{"point": "turn-002-A.json", "aside": "../fora"}', '{"point": "x", "aside": "rewound-001"}'])
def test_an_unreadable_rewind_plan_is_bad_input_and_moves_nothing(finished, capsys, plan):
    from harness import cli

    (finished / "rewind.json").write_text(plan)
    before = point_names(finished)
    for command in (["status"], ["run", "--resume"], ["rewind", "--to", "1"]):
        assert cli.main([*command, "--workdir", str(finished)]) == 2, command
        err = capsys.readouterr().err
        assert "rewind.json ilegível" in err and "apague o rewind.json e rebobine de novo" in err, err
    assert point_names(finished) == before


def cut_at_the_swap(monkeypatch):
    """The rewind dies at its first move of a point aside: rewind.json is written, nothing moved yet."""
    real_replace = os.replace

    def replace(source, target, *args, **kwargs):
        if not kwargs and "rewound-" in str(target):
            raise SimulatedCrash("queda entre o plano e a troca")
        return real_replace(source, target, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)


@pytest.fixture
def cut_rewind(tmp_path, monkeypatch):
    """A completed run whose rewind to 2-A (through the store contract) died between its plan and the swap."""
    from harness import cli

    run_dir = tmp_path / "original"
    assert cli.main(["run", "--scenario", "team-email", "--workdir", str(run_dir)]) == 0
    every_point = point_names(run_dir)["checkpoints"]
    with monkeypatch.context() as patched:
        cut_at_the_swap(patched)
        with pytest.raises(SimulatedCrash):
            rewind_in_store(FileStore(run_dir), 2, "A")
    assert (run_dir / "rewind.json").exists() and point_names(run_dir) == {"checkpoints": every_point}
    return run_dir


@pytest.mark.parametrize("command", [["timeline"], ["status"], ["rewind", "--to", "1"], ["run", "--resume"],
                                     ["fork", "--to", "1", "--into", "RAMO"]])
def test_a_rewind_cut_between_its_plan_and_the_swap_is_finished_by_the_next_command(cut_rewind, capsys, command):
    from harness import cli

    command = [str(cut_rewind.parent / "ramo") if word == "RAMO" else word for word in command]
    capsys.readouterr()
    assert cli.main([*command, "--workdir", str(cut_rewind)]) == 0
    err = capsys.readouterr().err
    assert "uma rebobinagem para turn-002-A.json tinha sido interrompida no meio; ela foi concluída agora" in err, err
    assert not (cut_rewind / "rewind.json").exists()
    assert point_names(cut_rewind)["checkpoints/rewound-001"] == ["turn-002-B.json", "turn-003-A.json"]


def test_the_next_rewind_through_the_store_finishes_a_cut_one_first(cut_rewind):
    scene = rewind_in_store(FileStore(cut_rewind), 1)
    assert scene["turns"] == 1 and not (cut_rewind / "rewind.json").exists()
    assert point_names(cut_rewind) == {"checkpoints": ["turn-001-A.json", "turn-001-B.json"],
                                       "checkpoints/rewound-001": ["turn-002-B.json", "turn-003-A.json"],
                                       "checkpoints/rewound-002": ["turn-002-A.json"]}
    assert FileStore(cut_rewind).load()["status_reason"] == "rebobinada para turn-001-B.json"


def test_a_rewind_plan_never_moves_points_into_a_planted_link(finished, tmp_path, capsys):
    from harness import cli

    outside = tmp_path / "fora"
    outside.mkdir()
    (finished / "checkpoints" / "rewound-009").symlink_to(outside)
    (finished / "rewind.json").write_text('{"point": "turn-001-A.json", "aside": "rewound-009"}')
    before = point_names(finished)
    assert cli.main(["status", "--workdir", str(finished)]) == 2
    err = capsys.readouterr().err
    assert "rewound-009" in err and "link simbólico" in err and "Traceback" not in err, err
    assert list(outside.iterdir()) == [] and point_names(finished) == before
