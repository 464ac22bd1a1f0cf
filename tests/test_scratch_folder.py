"""Lessons, exercises and the harness a verification drives write under folders of their own
that go away with the Python that made them: nothing piles up in the temporary folder."""
from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

from grader.buggy_harnesses import REFERENCE, make_harness

ROOT = Path(__file__).resolve().parents[1]


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


def test_a_python_killed_outright_leaves_its_folder_to_the_system(tmp_path):
    """What the docstring promises and no more: atexit does not run on SIGKILL."""
    python_in(tmp_path, (
        "import os, signal\n"
        "from harness.display.scratch_folder import scratch_folder\n"
        "scratch_folder('licao-9-')\n"
        "import subprocess, sys\n"
        "child = subprocess.run([sys.executable, '-c', "
        "'import os, signal; from harness.display.scratch_folder import scratch_folder; "
        "scratch_folder(\"morto-\"); os.kill(os.getpid(), signal.SIGKILL)'])\n"
        "assert child.returncode == -signal.SIGKILL\n"
    ))
    assert [p.name.split("-")[0] for p in tmp_path.iterdir()] == ["morto"]


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
