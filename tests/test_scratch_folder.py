"""Lessons, exercises and the harness a verification drives write under folders of their own
that go away with the Python that made them: nothing piles up in the temporary folder."""
from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader.buggy_harnesses import REFERENCE, make_harness

ROOT = Path(__file__).resolve().parents[1]


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def python_in(temporary: Path, code: str) -> str:
    env = dict(os.environ, TMPDIR=str(temporary))
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_scratch_folder_is_there_while_python_runs_and_gone_when_it_ends(tmp_path):
    said = python_in(tmp_path, (
        "from harness.display.scratch_folder import scratch_folder\n"
        "folder = scratch_folder('licao-9-')\n"
        "(folder / 'sub').mkdir(); (folder / 'sub' / 'a.json').write_text('{}')\n"
        "print(folder, folder.is_dir(), (folder / 'sub' / 'a.json').is_file())\n"
    ))
    path, is_dir, has_file = said.split()
    assert Path(path).parent == tmp_path and Path(path).name.startswith("licao-9-")
    assert (is_dir, has_file) == ("True", "True")
    assert list(tmp_path.iterdir()) == []


def test_a_python_killed_outright_leaves_its_folder_until_the_next_one_asks_for_that_prefix(tmp_path):
    """atexit does not run on SIGKILL nor on os._exit (a kernel whose Jupyter server died ends so):
    the folder stays, named with the dead pid, and the next scratch_folder of that prefix removes it."""
    names = []
    for ending in ("os.kill(os.getpid(), signal.SIGKILL)", "os._exit(1)"):
        done = subprocess.run([sys.executable, "-c", (
            "import os, signal\n"
            "from harness.display.scratch_folder import scratch_folder\n"
            "(scratch_folder('licao-9-') / 'a.json').write_text('{}')\n" + ending)],
            cwd=ROOT, env=dict(os.environ, TMPDIR=str(tmp_path)), timeout=120)
        assert done.returncode != 0
        left = list(tmp_path.iterdir())  # the second run swept the first's folder, and left its own
        assert len(left) == 1 and left[0].name.startswith("licao-9-") and (left[0] / "a.json").is_file()
        names.append(left[0].name)
    assert names[0] != names[1]
    python_in(tmp_path, "from harness.display.scratch_folder import scratch_folder\nscratch_folder('outra-')")
    assert sorted(tmp_path.iterdir()) == left  # another prefix's sweep leaves them
    python_in(tmp_path, "from harness.display.scratch_folder import scratch_folder\nscratch_folder('licao-9-')")
    assert list(tmp_path.iterdir()) == []


def test_the_sweep_keeps_what_is_not_an_ended_folder_of_that_prefix(tmp_path):
    dead = dead_pid()
    outside = tmp_path / "fora"
    (outside / "guardar").mkdir(parents=True)
    kept = {
        "live": tmp_path / f"licao-9-{os.getpid()}-abcdefgh",  # this test's process: alive
        "other prefix": tmp_path / f"licao-10-{dead}-abcdefgh",
        "longer prefix": tmp_path / f"licao-9-x-{dead}-abcdefgh",
        "no pid": tmp_path / "licao-9-abcdefgh",
        "not mkdtemp's tail": tmp_path / f"licao-9-{dead}-minha-pasta",
        "impossible pid": tmp_path / "licao-9-99999999999999999999-abcdefgh",
    }
    for folder in kept.values():
        folder.mkdir()
    trap = tmp_path / f"licao-9-{dead}-zzzzzzzz"  # the right name, pointing elsewhere
    trap.symlink_to(outside, target_is_directory=True)
    a_file = tmp_path / f"licao-9-{dead}-yyyyyyyy"
    a_file.write_text("x")
    if os.geteuid() == 0:  # as root, a folder of another user with the right name stays too
        kept["another user's"] = tmp_path / f"licao-9-{dead}-outrousr"
        kept["another user's"].mkdir()
        os.chown(kept["another user's"], 65534, 65534)
    ended = tmp_path / f"licao-9-{dead}-a1b2c3_d"
    (ended / "sub").mkdir(parents=True)
    python_in(tmp_path, "from harness.display.scratch_folder import scratch_folder\nscratch_folder('licao-9-')")
    assert not ended.exists()
    assert {what: path.is_dir() for what, path in kept.items()} == {what: True for what in kept}
    assert trap.is_symlink() and (outside / "guardar").is_dir() and a_file.is_file()


@pytest.mark.slow
def test_the_harness_a_verification_drives_cleans_its_own_folder_when_python_ends(tmp_path):
    said = python_in(tmp_path, (
        "from grader.buggy_harnesses import REFERENCE, make_harness\n"
        "harness = make_harness(REFERENCE)\n"
        "run_dir = harness.new_run_dir()\n"
        "print(harness.run(run_dir), run_dir.parent.parent)\n"
    ))
    code, parent = said.split()
    assert code == "0" and Path(parent) == tmp_path
    assert list(tmp_path.iterdir()) == []


def test_a_run_folder_outlives_the_harness_object_that_made_it(tmp_path):
    """A verification may keep a run folder and drop the harness: the folder stays until Python
    ends (removing it with the object would pull it from under the student's feet)."""
    harness = make_harness(REFERENCE)
    run_dir = harness.new_run_dir()
    assert harness.run(run_dir) == 0
    del harness
    gc.collect()
    assert (run_dir / "checkpoint.json").is_file() or any(run_dir.iterdir())


def test_a_harness_given_a_folder_leaves_it_to_its_owner(tmp_path):
    harness = make_harness(REFERENCE, root=tmp_path / "dono")
    run_dir = harness.new_run_dir()
    assert harness.run(run_dir) == 0
    del harness
    gc.collect()
    assert run_dir.is_dir()
