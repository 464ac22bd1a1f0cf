"""Lessons, exercises and the harness a verification drives write under folders of their own
that go away with the Python that made them: nothing piles up in the temporary folder."""
from __future__ import annotations

import gc
import os
import subprocess
import sys
import time
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


def folders(parent: Path) -> list[Path]:
    return sorted(path for path in parent.iterdir() if path.is_dir())


def old(path: Path) -> Path:
    """Backdate ``path`` past the grace a folder without a lock file gets (it may be being made)."""
    os.utime(path, (time.time() - 60, time.time() - 60), follow_symlinks=False)
    return path


def test_a_scratch_folder_is_there_while_python_runs_and_gone_when_it_ends(tmp_path):
    said = python_in(tmp_path, (
        "import os\n"
        "from harness.display.scratch_folder import scratch_folder\n"
        "folder = scratch_folder('licao-9-')\n"
        "print(folder, os.listdir(folder) == [], os.path.isfile(str(folder) + '.dono'))\n"
        "(folder / 'sub').mkdir(); (folder / 'sub' / 'a.json').write_text('{}')\n"
    ))
    path, empty, locked = said.split()
    assert Path(path).parent == tmp_path and Path(path).name.startswith("licao-9-")
    assert (empty, locked) == ("True", "True")  # what a lesson lists in its folder is only its own
    assert list(tmp_path.iterdir()) == []  # the folder and its lock file


def test_a_python_killed_outright_leaves_its_folder_until_the_next_one_asks_for_a_folder(tmp_path):
    """atexit does not run on SIGKILL nor on os._exit (a kernel whose Jupyter server died ends so):
    the folder stays with its lock file, now free, and the next scratch_folder removes both, for
    another lesson's prefix too."""
    names = []
    for ending in ("os.kill(os.getpid(), signal.SIGKILL)", "os._exit(1)"):
        done = subprocess.run([sys.executable, "-c", (
            "import os, signal\n"
            "from harness.display.scratch_folder import scratch_folder\n"
            "(scratch_folder('licao-9-') / 'a.json').write_text('{}')\n"
            "scratch_folder('licao-9-')\n" + ending)],
            cwd=ROOT, env=dict(os.environ, TMPDIR=str(tmp_path)), timeout=120)
        assert done.returncode != 0
        left = folders(tmp_path)  # the second run swept the first's folders, and left its own
        assert len(left) == 2 and all(path.name.startswith("licao-9-") for path in left)
        assert sorted(tmp_path.glob("*.dono")) == [Path(f"{path}.dono") for path in left]
        names.append(left[0].name)
    assert names[0] != names[1]
    python_in(tmp_path, "from harness.display.scratch_folder import scratch_folder\nscratch_folder('licao-8-')")
    assert list(tmp_path.iterdir()) == []


def test_a_folder_whose_lock_is_held_stays_whatever_its_pid_says(tmp_path):
    """A process in another PID namespace (a container sharing /tmp): its pid means nothing here,
    its lock does."""
    elsewhere = tmp_path / f"licao-9-{dead_pid()}-abcdefgh"  # that pid is free here
    elsewhere.mkdir()
    old(elsewhere)  # made long ago
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        f"fd = os.open({str(elsewhere) + '.dono'!r}, os.O_CREAT | os.O_WRONLY, 0o600)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        python_in(tmp_path, "from harness.display.scratch_folder import scratch_folder\nscratch_folder('licao-9-')")
        assert elsewhere.is_dir()
    finally:
        holder.kill()
        holder.wait()
    python_in(tmp_path, "from harness.display.scratch_folder import scratch_folder\nscratch_folder('licao-9-')")
    assert not elsewhere.exists() and not Path(f"{elsewhere}.dono").exists()  # the holder is gone now


def test_the_sweep_keeps_what_is_not_an_ended_folder_of_that_prefix(tmp_path):
    dead = dead_pid()
    outside = tmp_path / "fora"
    (outside / "guardar").mkdir(parents=True)
    kept = {
        "live": tmp_path / f"licao-9-{os.getpid()}-abcdefgh",  # this test's process: alive
        "being made": tmp_path / f"licao-9-{dead}-novinha_",  # no lock yet, and a second old
        "other prefix": tmp_path / f"licao-10-{dead}-abcdefgh",
        "longer prefix": tmp_path / f"licao-9-x-{dead}-abcdefgh",
        "no pid": tmp_path / "licao-9-abcdefgh",
        "not mkdtemp's tail": tmp_path / f"licao-9-{dead}-minha-pasta",
        "tail then a newline": tmp_path / f"licao-9-{dead}-abcdefgh\n",
        "a digit that is not ASCII": tmp_path / "licao-9-\u0661\u0662-abcdefgh",
        "impossible pid": tmp_path / "licao-9-99999999999999999999-abcdefgh",
        "pid above Linux's maximum": tmp_path / "licao-9-2147483647-abcdefgh",
        "a lock that is a link": tmp_path / f"licao-9-{dead}-linkdono",
        "a lock that is a folder": tmp_path / f"licao-9-{dead}-pastadon",
    }
    for what, folder in kept.items():
        folder.mkdir()
        if what != "being made":
            old(folder)
    os.symlink(outside, f"{kept['a lock that is a link']}.dono")
    os.mkdir(f"{kept['a lock that is a folder']}.dono")
    trap = tmp_path / f"licao-9-{dead}-zzzzzzzz"  # the right name, pointing elsewhere
    trap.symlink_to(outside, target_is_directory=True)
    a_file = tmp_path / f"licao-9-{dead}-yyyyyyyy"
    a_file.write_text("x")
    if os.geteuid() == 0:  # as root, another user's folder, or folder and lock, stay too
        theirs, their_lock = tmp_path / f"licao-9-{dead}-outrousr", tmp_path / f"licao-9-{dead}-outrodon"
        for folder in (theirs, their_lock):
            folder.mkdir()
            os.chown(folder, 65534, 65534)
            old(folder)
        Path(f"{their_lock}.dono").write_text("")
        os.chown(f"{their_lock}.dono", 65534, 65534)
        kept.update({"another user's": theirs, "another user's lock": their_lock})
    ended = tmp_path / f"licao-9-{dead}-a1b2c3_d"  # an older version's: no lock file
    (ended / "sub").mkdir(parents=True)
    old(ended)
    freed = tmp_path / f"licao-9-{dead}-livre___"  # its lock file is there and nobody holds it
    freed.mkdir()
    Path(f"{freed}.dono").write_text("")
    orphan_lock = Path(tmp_path / f"licao-7-{dead}-semnada_.dono")  # the folder went, the lock stayed
    orphan_lock.write_text("")
    python_in(tmp_path, "from harness.display.scratch_folder import scratch_folder\nscratch_folder('licao-9-')")
    assert not ended.exists() and not freed.exists() and not Path(f"{freed}.dono").exists()
    assert not orphan_lock.exists()
    assert {what: path.is_dir() for what, path in kept.items()} == {what: True for what in kept}
    assert trap.is_symlink() and (outside / "guardar").is_dir() and a_file.is_file()


def test_a_forked_child_that_ends_normally_leaves_its_parent_s_folder(tmp_path):
    said = python_in(tmp_path, (
        "import os, sys\n"
        "from harness.display.scratch_folder import scratch_folder\n"
        "folder = scratch_folder('licao-9-')\n"
        "child = os.fork()\n"
        "if child == 0:\n"
        "    sys.exit(0)\n"
        "os.waitpid(child, 0)\n"
        "print(folder.is_dir())\n"
    ))
    assert said.split() == ["True"]
    assert list(tmp_path.iterdir()) == []  # and the parent removed it at its own end


def test_hundreds_of_folders_hold_one_descriptor(tmp_path):
    said = python_in(tmp_path, (
        "import os\n"
        "from harness.display.scratch_folder import scratch_folder\n"
        "scratch_folder('licao-9-')\n"
        "before = len(os.listdir('/proc/self/fd'))\n"
        "for _ in range(300):\n"
        "    scratch_folder('exercicio-2-')\n"
        "print(len(os.listdir('/proc/self/fd')) - before)\n"
    ))
    assert int(said) <= 1


def test_a_prefix_that_ends_in_a_digit_is_refused(tmp_path):
    """"licao-1" and pid 23 would read as "licao-12" and pid 3: a sweep could take a live folder."""
    from harness.display.scratch_folder import scratch_folder

    with pytest.raises(ValueError, match="dígito"):
        scratch_folder("licao-1")


@pytest.mark.parametrize("prefix", ["", "../fora-", "/raiz-", "a/b-", "com espaço-", "ü-", "a+b-"])
def test_a_prefix_that_would_leave_its_parent_or_escape_the_sweep_is_refused(tmp_path, prefix):
    """A separator would put the folder outside its parent, and a character the sweep's pattern
    does not know would leave it there for good once its process was killed."""
    from harness.abandoned_folders import new_claimed_folder

    parent = tmp_path / "pai"
    parent.mkdir()
    with pytest.raises(ValueError, match="prefixo"):
        new_claimed_folder(parent, prefix)
    assert list(tmp_path.iterdir()) == [parent] and list(parent.iterdir()) == []


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


@pytest.mark.slow
def test_an_xdist_worker_leaves_none_of_the_folders_its_tests_made(tmp_path):
    """The tests run exercise notebooks in the worker process; a worker slow to end is ended by
    os._exit (execnet), so the conftest removes their folders when its session finishes."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "1", "-p", "no:cacheprovider",
         "tests/test_scratch_folder.py::test_a_run_folder_outlives_the_harness_object_that_made_it"],
        cwd=ROOT, env=dict(os.environ, TMPDIR=str(temp)), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout
    assert [path.name for path in temp.iterdir() if not path.name.startswith("pytest-of-")] == []


def test_without_hard_links_or_locks_a_folder_is_still_made_and_removed_at_exit(tmp_path):
    """A filesystem with no hard links (FAT) gets the lock by a rename; one with no flock, or a
    process out of descriptors, gets a folder with no lock, swept by its pid: never a traceback."""
    said = python_in(tmp_path, (
        "import errno, fcntl, os\n"
        "from harness import abandoned_folders\n"
        "from harness.display.scratch_folder import scratch_folder\n"
        "def refuse(*args, **kwargs):\n"
        "    raise PermissionError(errno.EPERM, 'not here')\n"
        "os.link = refuse\n"
        "renamed = scratch_folder('licao-9-')\n"
        "fcntl.flock = refuse\n"
        "bare = scratch_folder('licao-8-')\n"
        "print(os.path.isfile(f'{renamed}.dono'), os.path.exists(f'{bare}.dono'), os.listdir(renamed), os.listdir(bare))\n"
    ))
    assert said.split() == ["True", "False", "[]", "[]"]
    assert list(tmp_path.iterdir()) == []


def test_release_never_takes_the_lock_of_a_folder_this_process_did_not_claim(tmp_path):
    from harness.abandoned_folders import release

    folder = tmp_path / "licao-9-1-abcdefgh"
    folder.mkdir()
    Path(f"{folder}.dono").write_text("")  # another process's lock
    release(folder)
    assert Path(f"{folder}.dono").is_file()


def test_folders_made_from_many_threads_at_once_while_their_locks_go_raise_nothing_and_all_go(tmp_path):
    said = python_in(tmp_path, (
        "import os, threading\n"
        "from harness.display.scratch_folder import scratch_folder\n"
        "made, errors = [], []\n"
        "def make():\n"
        "    try:\n"
        "        for _ in range(30):\n"
        "            folder = scratch_folder('licao-9-')\n"
        "            os.unlink(f'{folder}.dono')  # its lock file gone: the next one needs a new lock\n"
        "            made.append(folder)\n"
        "    except Exception as error:\n"
        "        errors.append(repr(error))\n"
        "threads = [threading.Thread(target=make) for _ in range(8)]\n"
        "[thread.start() for thread in threads]; [thread.join() for thread in threads]\n"
        "print(len(made), errors)\n"
    ))
    assert said.split() == ["240", "[]"]
    assert list(tmp_path.iterdir()) == []


def test_a_fifo_for_a_lock_file_is_never_opened_and_its_folder_stays(tmp_path):
    folder = tmp_path / f"licao-9-{dead_pid()}-fifofifo"
    folder.mkdir()
    old(folder)
    os.mkfifo(f"{folder}.dono")
    python_in(tmp_path, "from harness.display.scratch_folder import scratch_folder\nscratch_folder('licao-9-')")
    assert folder.is_dir()
