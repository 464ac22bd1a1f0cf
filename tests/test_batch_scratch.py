"""`grade batch` leaves nothing in the temp folder, however it ends: the folders of workers it
had to kill (Ctrl-C) go with the batch's scratch folder, and a batch killed outright leaves one
folder that the next batch removes."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from grader.instructor.scratch import PREFIX, batch_scratch, remove_abandoned

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = ROOT / "solutions" / "exercise-3.ipynb"


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def start_batch(tmp_path: Path, copies: int, jobs: int) -> tuple[subprocess.Popen, Path]:
    """`grade batch` as typed in a terminal (its own process group, SIGINT at its default), with
    its own temp folder."""
    submissions = tmp_path / "entregas"
    submissions.mkdir(exist_ok=True)
    for index in range(copies):
        shutil.copyfile(SOLUTION, submissions / f"aluno-{index:02d}.ipynb")
    temp = tmp_path / "tmp"
    temp.mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(temp), "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "grader.cli", "batch", str(submissions), "exercise-3", "-j", str(jobs),
         "--csv", str(tmp_path / "notas.csv")],
        env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    return process, temp


def wait_for_first_row(process: subprocess.Popen) -> None:
    for line in process.stderr:
        if "1/" in line:
            return
    raise AssertionError("the batch ended before grading one submission")


def test_ctrl_c_leaves_no_temporary_folder_behind(tmp_path):
    process, temp = start_batch(tmp_path, copies=6, jobs=2)
    wait_for_first_row(process)
    assert any(temp.iterdir()), "the batch should be working inside its temp folder"
    os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C in the terminal sends
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "Lote interrompido" in err
    assert (tmp_path / "notas.csv").exists()
    # The workers were killed mid-grading; their grading folders, kernels' files and the
    # template's socket folder all went with the batch's scratch folder.
    assert sorted(p.name for p in temp.iterdir()) == []


def test_a_batch_killed_outright_leaves_one_folder_the_next_batch_removes(tmp_path):
    process, temp = start_batch(tmp_path, copies=4, jobs=1)
    wait_for_first_row(process)
    process.kill()  # kill -9 of the batch itself: nothing of it runs to clean up
    process.wait()
    left = [p.name for p in temp.iterdir()]
    assert left == [name for name in left if name.startswith(f"{PREFIX}{process.pid}-")] and len(left) == 1, left

    again, _ = start_batch(tmp_path, copies=1, jobs=1)
    again.communicate(timeout=300)
    assert again.returncode == 0
    assert list(temp.iterdir()) == []


def test_only_this_users_folders_of_ended_batches_are_removed(tmp_path):
    ended = tmp_path / f"{PREFIX}{dead_pid()}-abc"
    (ended / "grade-x").mkdir(parents=True)
    (ended / "grade-x" / "kernel.log").write_text("x")
    running = tmp_path / f"{PREFIX}{os.getpid()}-def"  # this process is alive: a batch still running
    running.mkdir()
    outside = tmp_path / "fora"
    (outside / "keep").mkdir(parents=True)
    trap = tmp_path / f"{PREFIX}{dead_pid()}-link"  # a name that matches, pointing elsewhere
    trap.symlink_to(outside, target_is_directory=True)
    unrelated = tmp_path / "grade-lote-nao-e-numero-x"
    unrelated.mkdir()

    assert remove_abandoned(tmp_path) == [ended]
    assert not ended.exists()
    assert running.is_dir() and unrelated.is_dir() and trap.is_symlink()
    assert (outside / "keep").is_dir()


def test_the_scratch_folder_goes_even_when_the_batch_raises(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    try:
        with batch_scratch() as scratch:
            (scratch / "grade-abc").mkdir()
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    assert not scratch.exists()
    assert scratch.name.startswith(f"{PREFIX}{os.getpid()}-")
