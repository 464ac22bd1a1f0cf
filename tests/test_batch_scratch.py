"""`grade` and `grade batch` leave nothing in the temp folder, however they end: the folders of
workers a batch had to kill (Ctrl-C) go with the batch's scratch folder, and a grading or batch
killed outright leaves one folder that the next one removes."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import nbformat
import pytest

from grader.core.leftover_processes import processes_with
from grader.core.scratch import BATCH, remove, remove_abandoned, scratch_folder

PREFIX = f"grade-{BATCH}-"

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = ROOT / "solutions" / "exercise-3.ipynb"


def leftovers(temp: Path) -> list[str]:
    """What is left in ``temp``, inside this user's folder of grading folders (which stays)."""
    home = temp / f"grade-tmp-{os.geteuid()}"
    others = [p.name for p in temp.iterdir() if p != home]
    return others + ([p.name for p in home.iterdir()] if home.is_dir() else [])


def one_folder_and_its_lock(left: list[str], prefix: str) -> bool:
    """A process that could not clean up leaves its folder and, beside it, the lock it held."""
    [folder] = [name for name in left if not name.endswith(".dono")] or [""]
    return folder.startswith(prefix) and sorted(left) == sorted([folder, f"{folder}.dono"])


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def start_batch(tmp_path: Path, copies: int, jobs: int, temp: Path | None = None) -> tuple[subprocess.Popen, Path]:
    """`grade batch` as typed in a terminal (its own process group, SIGINT at its default), with
    its own temp folder (``temp``, or one in ``tmp_path``)."""
    submissions = tmp_path / "entregas"
    submissions.mkdir(exist_ok=True)
    for index in range(copies):
        shutil.copyfile(SOLUTION, submissions / f"aluno-{index:02d}.ipynb")
    temp = temp or tmp_path / "tmp"
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


@pytest.mark.slow
def test_ctrl_c_leaves_no_temporary_folder_behind(tmp_path):
    process, temp = start_batch(tmp_path, copies=6, jobs=2)
    wait_for_first_row(process)
    assert leftovers(temp), "the batch should be working inside its temp folder"
    os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C in the terminal sends
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "Lote interrompido" in err
    assert (tmp_path / "notas.csv").exists()
    # The workers were killed mid-grading; their grading folders, kernels' files and the
    # template's socket folder all went with the batch's scratch folder.
    assert leftovers(temp) == []


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM], ids=["terminal-closed", "sigterm"])
def test_a_closed_terminal_or_sigterm_still_writes_what_was_graded(tmp_path, signum):
    process, temp = start_batch(tmp_path, copies=6, jobs=1)
    wait_for_first_row(process)
    os.killpg(process.pid, signum)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 128 + signum, err
    rows = (tmp_path / "notas.csv").read_text(encoding="utf-8").splitlines()
    assert len(rows) == 1 + 6 and any("aprovado" in row for row in rows[1:]), rows
    assert any("nao_corrigido" in row for row in rows[1:]), rows
    assert leftovers(temp) == []


@pytest.mark.slow
def test_a_batch_killed_outright_leaves_one_folder_the_next_batch_removes(tmp_path):
    process, temp = start_batch(tmp_path, copies=4, jobs=1)
    wait_for_first_row(process)
    process.kill()  # kill -9 of the batch itself: nothing of it runs to clean up
    process.wait()
    left = leftovers(temp)
    assert one_folder_and_its_lock(left, f"{PREFIX}{process.pid}-"), left

    again, _ = start_batch(tmp_path, copies=1, jobs=1)
    again.communicate(timeout=300)
    assert again.returncode == 0
    assert leftovers(temp) == []


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGHUP], ids=["killed-outright", "terminal-closed"])
def test_a_grading_that_dies_midway_leaves_at_most_its_folder_and_the_next_grading_removes_it(tmp_path, signum):
    """kill -9 cannot clean up: its folder stays, and the next grading of the same user removes it.
    A closed terminal (SIGHUP) may or may not get to clean up first; either way nothing outlives
    the next grading."""
    notebook = tmp_path / "exercise-3.ipynb"
    slow = nbformat.read(SOLUTION, as_version=4)  # still grading when the signal comes, however fast the machine
    slow.cells.append(nbformat.v4.new_code_cell("import time\ntime.sleep(30)"))
    nbformat.write(slow, notebook)
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp), "PYTHONPATH": str(ROOT), "GRADE_STATE_FILE": str(tmp_path / "s.json")}
    command = [sys.executable, "-m", "grader.cli", "exercise-3", "--notebook", str(notebook)]
    process = subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while not any(temp.glob("grade-tmp-*/grade-*/checks")):  # the grading has started in its folder
        assert process.poll() is None and time.monotonic() < deadline, "the grading never started"
        time.sleep(0.05)
    os.killpg(process.pid, signum)
    process.wait()
    left = leftovers(temp)
    if signum == signal.SIGKILL or left:
        assert one_folder_and_its_lock(left, f"grade-{process.pid}-"), left

    shutil.copyfile(SOLUTION, notebook)
    done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert leftovers(temp) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kernel's parent-death signal is Linux's")
def test_the_workers_of_a_batch_killed_outright_die_with_it(tmp_path):
    looping = tmp_path / "entregas" / "laco.ipynb"
    looping.parent.mkdir()
    notebook = nbformat.read(SOLUTION, as_version=4)
    notebook.cells.insert(0, nbformat.v4.new_code_cell("while True:\n    pass"))
    nbformat.write(notebook, looping)
    process, _ = start_batch(tmp_path, copies=1, jobs=2)
    marker = f"GRADE_BATCH_PID={process.pid}"
    deadline = time.monotonic() + 120
    while len(processes_with(marker)) < 2:  # both workers started
        assert process.poll() is None and time.monotonic() < deadline, "the workers never started"
        time.sleep(0.1)
    process.kill()
    process.wait()
    deadline = time.monotonic() + 10
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with(marker) == []  # not grading on for the submission's 300 s


@pytest.mark.slow
def test_what_a_graded_notebook_makes_with_tempfile_goes_with_its_grading_folder(tmp_path):
    """A student's own tempfile.mkdtemp(), never removed: graded, those folders must not pile up."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    notebook_path = tmp_path / "exercise-1.ipynb"
    notebook = nbformat.read(ROOT / "solutions" / "exercise-1.ipynb", as_version=4)
    where = tmp_path / "onde.txt"  # the cell says where its folder went, so the test has something to observe
    leaked = ("import tempfile, pathlib\npasta = tempfile.mkdtemp()\n"
              f"pathlib.Path(pasta, 'rascunho.txt').write_text('x')\npathlib.Path({str(where)!r}).write_text(pasta)")
    notebook.cells.insert(1, nbformat.v4.new_code_cell(leaked))  # no cleanup, no atexit
    nbformat.write(notebook, notebook_path)
    notebook = notebook_path
    env = {**os.environ, "TMPDIR": str(temp), "PYTHONPATH": str(ROOT), "GRADE_STATE_FILE": str(tmp_path / "s.json")}
    done = subprocess.run([sys.executable, "-m", "grader.cli", "exercise-1", "--notebook", str(notebook)],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    made = Path(where.read_text())
    assert made.is_relative_to(temp) and not made.exists()
    assert leftovers(temp) == []


def test_a_folder_named_with_an_impossible_pid_is_left_alone(tmp_path):
    for name in ("grade-2147483648-x", "grade-99999999999999999999-abc", "grade-lote-99999999999999999999-y"):
        (tmp_path / name).mkdir()
    assert remove_abandoned(tmp_path) == []
    assert len(list(tmp_path.iterdir())) == 3


def test_only_this_users_folders_of_ended_batches_are_removed(tmp_path):
    long_ago = time.time() - 60  # past the grace a folder without its lock gets while being made
    ended = tmp_path / f"{PREFIX}{dead_pid()}-abcdefgh"
    (ended / "grade-x").mkdir(parents=True)
    (ended / "grade-x" / "kernel.log").write_text("x")
    Path(f"{ended}.dono").write_text("")  # the lock it held, free now
    running = tmp_path / f"{PREFIX}{os.getpid()}-defghijk"  # this process is alive: a batch still running
    running.mkdir()
    outside = tmp_path / "fora"
    (outside / "keep").mkdir(parents=True)
    trap = tmp_path / f"{PREFIX}{dead_pid()}-linklink"  # a name that matches, pointing elsewhere
    trap.symlink_to(outside, target_is_directory=True)
    unrelated = tmp_path / "grade-lote-nao-e-numero-x"
    unrelated.mkdir()
    lookalike = tmp_path / "grade-12345678"  # a folder tempfile named at random, no pid in it
    lookalike.mkdir()
    ended_grading = tmp_path / f"grade-{dead_pid()}-xyzxyzxy"  # an older grader's: no lock file
    ended_grading.mkdir()
    being_made = tmp_path / f"grade-{dead_pid()}-novinha_"  # no lock yet, made a moment ago
    being_made.mkdir()
    for folder in (ended, running, unrelated, lookalike, ended_grading):
        os.utime(folder, (long_ago, long_ago))

    assert sorted(remove_abandoned(tmp_path)) == sorted([ended, ended_grading])
    assert not ended.exists() and not ended_grading.exists() and not Path(f"{ended}.dono").exists()
    assert running.is_dir() and unrelated.is_dir() and lookalike.is_dir() and trap.is_symlink()
    assert being_made.is_dir() and (outside / "keep").is_dir()


def test_a_grading_folder_keeps_its_lock_beside_it_while_it_lives_and_drops_it_when_removed(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    with scratch_folder() as scratch:
        lock = Path(f"{scratch}.dono")
        assert lock.is_file() and list(scratch.iterdir()) == []  # beside: the kernel's folder holds only its files
        done = subprocess.run([sys.executable, "-c", (
            "import sys; from grader.core.scratch import remove_abandoned; from pathlib import Path\n"
            f"print(remove_abandoned(Path({str(scratch.parent)!r})))")],
            cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert done.stdout.strip() == "[]" and scratch.is_dir()  # another process sees it held
    assert not scratch.exists() and not lock.exists()


def test_the_socket_folder_of_a_template_whose_owner_died_is_swept_and_a_live_one_s_kept(tmp_path, monkeypatch):
    from grader.core.forked_kernels import socket_folder

    short = Path(tempfile.mkdtemp(prefix="gw-", dir="/tmp"))  # room for the socket's path: never the real /tmp's folders
    monkeypatch.setattr("tempfile.tempdir", str(short))
    try:
        live = Path(socket_folder(None))  # this process owns it, and is alive
        assert live.parent == short / f"grade-tmp-{os.geteuid()}"
        assert live.name.startswith(f"grade-template-{os.getpid()}-")
        ended = live.parent / f"grade-template-{dead_pid()}-abcdefgh"
        ended.mkdir()
        (ended / "template.sock").write_text("")
        Path(f"{ended}.dono").write_text("")  # its lock, which nobody holds any more
        assert remove_abandoned(live.parent) == [ended]
        assert live.is_dir()
        remove(live)
        assert not live.exists() and not Path(f"{live}.dono").exists()
    finally:
        shutil.rmtree(short, ignore_errors=True)


def test_a_folder_of_grading_folders_someone_else_planted_is_never_swept(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    elsewhere = tmp_path / "alheia"
    abandoned = elsewhere / f"grade-{dead_pid()}-abcdefgh"
    abandoned.mkdir(parents=True)
    (tmp_path / f"grade-tmp-{os.geteuid()}").symlink_to(elsewhere)  # planted before our first run
    with scratch_folder() as scratch:
        assert scratch.parent == tmp_path  # made beside it, not inside the planted link
    assert abandoned.is_dir()
    loose = tmp_path / f"grade-tmp-{os.geteuid()}"
    loose.unlink()
    loose.mkdir(mode=0o755)  # ours, but others may read it: not private, not used
    os.chmod(loose, 0o755)
    with scratch_folder() as scratch:
        assert scratch.parent == tmp_path


def test_the_scratch_folder_goes_even_when_the_batch_raises(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    try:
        with scratch_folder(BATCH) as scratch:
            (scratch / "grade-abc").mkdir()
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    assert not scratch.exists()
    assert scratch.name.startswith(f"{PREFIX}{os.getpid()}-")
    assert scratch.parent == tmp_path / f"grade-tmp-{os.geteuid()}"
    assert (scratch.parent.stat().st_mode & 0o777) == 0o700


def test_with_the_private_folder_taken_a_killed_grading_s_locked_folder_in_the_temp_folder_still_goes(tmp_path, monkeypatch):
    """grade-tmp-UID taken by something else: gradings make their folders in the temp folder itself,
    where only what a free lock of ours proves ours is swept (a lockless look-alike stays)."""
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    (tmp_path / f"grade-tmp-{os.geteuid()}").write_text("not a folder")
    killed = tmp_path / f"grade-{dead_pid()}-abcdefgh"
    killed.mkdir()
    Path(f"{killed}.dono").write_text("")  # the lock its grading held, free now
    lookalike = tmp_path / f"grade-{dead_pid()}-semdono_"
    lookalike.mkdir()
    os.utime(lookalike, (time.time() - 60, time.time() - 60))
    with scratch_folder() as scratch:
        assert scratch.parent == tmp_path
    assert not killed.exists() and not Path(f"{killed}.dono").exists()
    assert lookalike.is_dir()


# A child the submission starts in a session of its own, so that killing the kernel's group
# misses it: it says its pid, then keeps making a folder inside its grading folder (by the
# absolute path, which makes the whole path again once the batch has removed it).
LINGERER = textwrap.dedent("""\
    import os, sys, time
    here, pid_file = sys.argv[1], sys.argv[2]
    with open(pid_file, "w") as out:
        out.write(str(os.getpid()))
    while True:
        try:
            os.makedirs(os.path.join(here, "escondido"), exist_ok=True)
        except OSError:
            pass
        time.sleep(0.02)
""")


def lingering_submission(folder: Path, pid_file: Path, start: str = "exec") -> None:
    """``exec``: the child is a new program; ``fork``: a double fork of the kernel itself, which
    never execs (so /proc shows the environment the kernel's own process started with)."""
    notebook = nbformat.read(SOLUTION, as_version=4)
    if start == "exec":
        starts_it = (f"import os, subprocess, sys\nsubprocess.Popen([sys.executable, '-c', {LINGERER!r}, os.getcwd(), "
                     f"{str(pid_file)!r}], start_new_session=True, stdin=subprocess.DEVNULL, "
                     "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)")
    else:
        starts_it = (f"import os, sys\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
                     f"        sys.argv = ['-c', os.getcwd(), {str(pid_file)!r}]\n"
                     f"        try:\n            exec({LINGERER!r})\n        finally:\n            os._exit(0)\n"
                     f"    os._exit(0)\nos.wait()")
    notebook.cells.insert(0, nbformat.v4.new_code_cell(starts_it))
    folder.mkdir(exist_ok=True)
    nbformat.write(notebook, folder / "aa-demora.ipynb")  # graded first


def still_lingering(pid_file: Path) -> bool:
    """Whether the process that wrote ``pid_file`` still runs (never another one given its pid:
    it must still hold the pid file's folder as its argument)."""
    try:
        pid = int(pid_file.read_text())
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        arguments = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError, IndexError):
        return False
    return state != "Z" and (b"escondido" in arguments or b"ipykernel" in arguments or b"kernel_template" in arguments)


def end_lingerer(pid_file: Path) -> None:
    if still_lingering(pid_file):
        os.kill(int(pid_file.read_text()), signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the batch finds what carries its name in /proc")
@pytest.mark.parametrize("start", ["exec", "fork"])
@pytest.mark.parametrize("ending", ["finished", "ctrl-c"])
def test_what_a_submission_started_in_a_session_of_its_own_ends_with_the_batch(tmp_path, ending, start):
    """Unless the batch ends what carries its name, the child lives on after the batch and makes
    its folder again inside the removed batch folder."""
    pid_file = tmp_path / "pid"
    lingering_submission(tmp_path / "entregas", pid_file, start)
    # A short temp folder, so the kernels are forked from the batch's template (a socket path in
    # pytest's long folders is too long for it): a forked kernel never execs, and /proc shows it
    # the environment the template started with.
    short = Path(tempfile.mkdtemp(prefix="gb-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    process, temp = start_batch(tmp_path, copies=0 if ending == "finished" else 4, jobs=1, temp=short)
    try:
        if ending == "ctrl-c":
            wait_for_first_row(process)
            os.killpg(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=300)
        assert process.returncode == (0 if ending == "finished" else 130), err
        assert pid_file.exists(), "the submission's child never started"
        time.sleep(0.3)  # what lingers has time to make its folder again
        assert not still_lingering(pid_file)
        assert leftovers(temp) == []
    finally:
        end_lingerer(pid_file)
        shutil.rmtree(short, ignore_errors=True)


@pytest.mark.slow
def test_a_batch_inside_another_process_leaves_that_process_s_other_children_alone(tmp_path):
    """The batch ends what carries its own name only: not its caller's other children (a test's
    database server, a helper the caller started)."""
    from grader.cli import main

    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        submissions = tmp_path / "entregas"
        submissions.mkdir()
        shutil.copyfile(SOLUTION, submissions / "ana.ipynb")
        assert main(["batch", str(submissions), "exercise-3", "--csv", str(tmp_path / "notas.csv"), "--no-report"]) == 0
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()
