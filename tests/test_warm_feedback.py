"""`grade watch` and the notebook's `check()` grade each save from a warm kernel template.

Each save is graded in a fresh kernel forked from a template kept for the whole watch (or
kernel session, for `check()`). What a learner's notebook does to its kernel must end that
kernel only: a cell that kills its own process (``os._exit``, SIGKILL) or eats all the memory
leaves the template alive and the next save graded normally; two saves in quick succession
show the later notebook's result; a function that loops forever is reported within its cell
limit; and when the watch (or the kernel session) ends, nothing it started is left running.

The wrong implementations these tests stand against: a template shared with the learner's code
(one kernel reused between saves), a result cached from the first of two saves, a template that
outlives the watch or the kernel that called `check()`, an answer of an interrupted `check()`
read as the next one's.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from grader.core.forked_kernels import supported
from tests.grader_support import leftovers, make_notebook, write
from tests.test_grader_engine import RESUME_OK, SETUP

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not supported(), reason="kernels forked from a template need Linux (fork, pidfd)")]

GRADE = "import sys; from grader.cli import main; sys.exit(main())"
PASSING_SCORE = "Pontuação: 12/12 verificações (100%)."
RETURNS_NOTHING = "def resume_action(cp):\n    return {}"
KILLERS = {
    "os._exit": "import os\nos._exit(3)",
    "SIGKILL": "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)",
    # Touches every page: a bomb that only reserved memory would be caught by the limit at once.
    "memory bomb": "blocks = []\nwhile True:\n    blocks.append(b'x' * (64 * 2**20))",
}


def passing() -> object:
    return make_notebook(SETUP, RESUME_OK)


def save(notebook, path: Path) -> None:
    """As Jupyter saves: a new file renamed over the old one."""
    temporary = path.with_name(f".~{path.name}")
    write(notebook, temporary)
    os.replace(temporary, path)


def descendants(pid: int) -> dict[int, str]:
    """Every live process under ``pid`` (children, theirs, ...) -> its command line."""
    found: dict[int, str] = {}
    stack = [pid]
    while stack:
        parent = stack.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                children = (task / "children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                if child not in found and alive(child):
                    found[child] = command_line(child)
                    stack.append(child)
    return found


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
    except OSError:
        return ""


def alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return status.split("State:")[1].split()[0] != "Z"


def parent_of(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/status").read_text().split("PPid:")[1].split()[0])
    except (OSError, IndexError, ValueError):
        return None


def templates(root: int) -> list[int]:
    """The kernel templates ``root`` started (its kernels, forked from one, show the same command line)."""
    return [pid for pid, line in descendants(root).items() if "kernel_template" in line and parent_of(pid) == root]




def wait_until(condition, timeout: float, why: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(why)
        time.sleep(0.05)


class Watching:
    """`grade watch exercise-3 --level 1` on ``notebook``, in a process group of its own (as a terminal runs it)."""

    def __init__(self, notebook: Path, tmp_path: Path, *extra: str, prelude: str = ""):
        self.temp = tmp_path / "tmp"
        self.temp.mkdir(exist_ok=True)
        env = {**os.environ, "GRADE_STATE_FILE": str(tmp_path / "state.json"), "TMPDIR": str(self.temp), "NO_COLOR": "1"}
        self.process = subprocess.Popen(
            [sys.executable, "-c", prelude + GRADE, "watch", "exercise-3", "--notebook", str(notebook), "--level", "1",
             "--polling", "--interval", "0.2", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env, start_new_session=True)
        self.out: list[str] = []
        self.err: list[str] = []
        self.readers = [threading.Thread(target=self._read, args=(stream, into), daemon=True)
                        for stream, into in ((self.process.stdout, self.out), (self.process.stderr, self.err))]
        for reader in self.readers:
            reader.start()

    @staticmethod
    def _read(stream, into: list[str]) -> None:
        for line in stream:
            into.append(line)

    def text(self) -> str:
        return "".join(self.out)

    def scores(self) -> list[str]:
        return [line.strip() for line in list(self.out) if line.startswith("Pontuação:")]

    def reports(self) -> list[str]:
        """The text of each report shown so far (the header of the first to its score line)."""
        reports, current = [], []
        for line in list(self.out):
            current.append(line)
            if line.startswith("Pontuação:"):
                reports.append("".join(current))
                current = []
        return reports

    def wait_reports(self, count: int, timeout: float = 180) -> list[str]:
        wait_until(lambda: len(self.scores()) >= count or self.process.poll() is not None, timeout,
                   f"{count} relatórios não chegaram:\n{self.text()[-3000:]}\n{''.join(self.err)[-3000:]}")
        assert len(self.scores()) >= count, (self.text()[-3000:], "".join(self.err)[-3000:])
        return self.reports()

    def template(self) -> int:
        wait_until(lambda: len(templates(self.process.pid)) == 1, 60, "nenhum modelo de kernel")
        [pid] = templates(self.process.pid)
        return pid

    def stop(self, how: str = "SIGINT") -> int:
        if how == "SIGINT":  # Ctrl-C in a terminal: the whole foreground group gets it
            os.killpg(self.process.pid, signal.SIGINT)
        else:
            self.process.send_signal(getattr(signal, how))
        try:
            code = self.process.wait(timeout=60)
        finally:
            if self.process.poll() is None:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        for reader in self.readers:
            reader.join(timeout=10)
        return code

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


@pytest.fixture
def watching(tmp_path):
    sessions: list[Watching] = []

    def start(notebook: Path, *extra: str, prelude: str = "") -> Watching:
        sessions.append(Watching(notebook, tmp_path, *extra, prelude=prelude))
        return sessions[-1]

    yield start
    for session in sessions:
        session.close()


# ------------------------------------------------------------------ grade watch


@pytest.mark.parametrize("killer", list(KILLERS))
def test_a_cell_that_kills_its_kernel_leaves_the_template_alive_and_the_next_save_graded(tmp_path, watching, killer):
    notebook = write(passing(), tmp_path / "exercise-3.ipynb")
    session = watching(notebook)
    assert session.wait_reports(1)[-1].strip().endswith(PASSING_SCORE)
    template = session.template()
    save(make_notebook(SETUP, RESUME_OK, KILLERS[killer]), notebook)
    killed = session.wait_reports(2)[-1]
    assert "célula 3" in killed.lower(), killed  # the killing cell is named; the grading went on without it
    assert alive(template) and session.template() == template  # the template never ran the cell
    save(make_notebook(SETUP, RETURNS_NOTHING), notebook)  # a different result: not the previous one again
    assert PASSING_SCORE not in session.wait_reports(3)[-1]
    save(passing(), notebook)
    last = session.wait_reports(4)[-1]
    assert last.strip().endswith(PASSING_SCORE) and "célula" not in last.lower(), last
    assert session.template() == template
    assert session.stop() == 0


def test_a_cell_that_kills_the_template_itself_only_costs_the_warm_start(tmp_path, watching):
    """The forked kernel's parent is the template: a cell can kill it. The watch goes on and starts another."""
    notebook = write(passing(), tmp_path / "exercise-3.ipynb")
    session = watching(notebook)
    session.wait_reports(1)
    template = session.template()
    save(make_notebook(SETUP, RESUME_OK, "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)"), notebook)
    session.wait_reports(2)
    save(passing(), notebook)
    assert session.wait_reports(3)[-1].strip().endswith(PASSING_SCORE)
    wait_until(lambda: not alive(template), 30, "o modelo morto ainda aparece vivo")
    assert session.template() != template
    assert session.stop() == 0


def test_two_saves_in_quick_succession_show_the_later_notebook_s_result(tmp_path, watching):
    notebook = write(passing(), tmp_path / "exercise-3.ipynb")
    session = watching(notebook)
    session.wait_reports(1)
    save(make_notebook(SETUP, RETURNS_NOTHING), notebook)
    time.sleep(0.05)
    save(passing(), notebook)
    wait_until(lambda: len(session.scores()) >= 2, 180, session.text())
    time.sleep(3)  # a grading of the first save, if one started, has ended and the later one followed
    wait_until(lambda: session.scores()[-1] == PASSING_SCORE, 180, session.text())
    time.sleep(2)
    assert session.scores()[-1] == PASSING_SCORE, session.text()  # nothing older shown after it
    assert session.stop() == 0


def test_a_save_during_a_grading_shows_only_the_newer_notebook_s_result(tmp_path, watching):
    marker = tmp_path / "grading"
    notebook = write(passing(), tmp_path / "exercise-3.ipynb")
    session = watching(notebook)
    session.wait_reports(1)
    slow = f"import time\nopen({str(marker)!r}, 'w').close()\ntime.sleep(4)"
    save(make_notebook(SETUP, RETURNS_NOTHING, slow), notebook)
    wait_until(marker.exists, 120, session.text())
    save(passing(), notebook)  # while the older file is being graded
    session.wait_reports(2)
    time.sleep(1)
    assert session.scores() == [PASSING_SCORE, PASSING_SCORE], session.text()  # the older result never shown
    assert "foi salvo de novo durante a correção" in session.text()
    assert session.stop() == 0


def test_a_function_that_loops_forever_is_reported_within_its_cell_limit_plus_five_seconds(tmp_path, watching):
    limit = 3.0
    notebook = write(passing(), tmp_path / "exercise-3.ipynb")
    session = watching(notebook, "--cell-timeout", str(limit))
    session.wait_reports(1)
    time.sleep(1)  # the next save's kernel is forked
    loops = "def resume_action(cp):\n    while True:\n        pass"
    saved = time.monotonic()
    save(make_notebook(SETUP, loops, 'resume_action({"pending_tool_use": []})'), notebook)
    report = session.wait_reports(2)[-1]
    seconds = time.monotonic() - saved
    assert "não terminou em 3 s" in report, report
    assert PASSING_SCORE not in report
    assert seconds <= limit + 5, f"{seconds:.1f} s do salvar ao relatório"
    assert session.stop() == 0


@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("moment", ["waiting", "grading"])
def test_when_watch_ends_nothing_it_started_is_left(tmp_path, watching, how, moment):
    marker = tmp_path / "kernel-pid"
    notebook = write(passing(), tmp_path / "exercise-3.ipynb")
    session = watching(notebook)
    session.wait_reports(1)
    template = session.template()
    # The template and the kernel forked for the next save.
    wait_until(lambda: len(descendants(session.process.pid)) >= 2, 60, str(descendants(session.process.pid)))
    if moment == "grading":
        long_cell = f"import os, time\nopen({str(marker)!r}, 'w').write(str(os.getpid()))\ntime.sleep(120)"
        save(make_notebook(SETUP, RESUME_OK, long_cell), notebook)
        wait_until(marker.exists, 120, session.text())
    started = descendants(session.process.pid)
    assert template in started
    if moment == "grading":
        assert int(marker.read_text()) in started
    code = session.stop(how)
    assert code == 0 and "grade watch encerrado." in session.text(), (code, "".join(session.err)[-2000:])
    wait_until(lambda: not any(alive(pid) for pid in started), 10,
               f"ainda vivos: {[started[pid] for pid in started if alive(pid)]}")
    assert leftovers(session.temp) == []


STUCK_ON_STOP = """
import time
from grader.core import forked_kernels, prelaunch

def never_ends(*args, **kwargs):  # an ending that waits forever
    time.sleep(3600)

if "{step}" == "template":
    forked_kernels.TemplateProcess.close = never_ends
else:  # the waiting kernel's shutdown, once the watch is ending (gradings discard theirs as usual)
    from grader.core import warm_session

    closing, close, discard = [], warm_session.WarmGrader.close, prelaunch.PrelaunchedKernel.discard
    warm_session.WarmGrader.close = lambda self: closing.append(1) or close(self)
    prelaunch.PrelaunchedKernel.discard = lambda self: never_ends() if closing else discard(self)
"""


@pytest.mark.parametrize("step", ["template", "kernel"])
def test_a_stop_whose_orderly_ending_is_stuck_still_ends_the_watch_and_all_it_started(step):
    """Whatever hangs while the watch ends (waiting for its template, or for a kernel to shut down),
    Ctrl-C ends it: after the grace period what it started is killed and every folder it made is
    removed, also those whose owner it had already let go of, and it says so."""
    import shutil
    import tempfile

    short = Path(tempfile.mkdtemp(prefix="gw-", dir="/tmp"))  # the template's socket folder lands in this temp folder
    session = None
    try:
        (short / "stuck_on_stop.py").write_text(STUCK_ON_STOP.replace("{step}", step))
        notebook = write(passing(), short / "exercise-3.ipynb")
        session = Watching(notebook, short, prelude="import stuck_on_stop; ")  # imported from the watch's folder
        session.wait_reports(1)
        template = session.template()
        wait_until(lambda: len(descendants(session.process.pid)) >= 2, 60, str(descendants(session.process.pid)))
        started = descendants(session.process.pid)
        assert template in started and template_folders(session.temp), leftovers(session.temp)
        assert session.stop() == 0  # within stop()'s 60 s: the grace period is 10 s
        assert "grade watch encerrado" in session.text() and "à força" in session.text(), session.text()[-2000:]
        wait_until(lambda: not any(alive(pid) for pid in started), 10,
                   f"ainda vivos: {[started[pid] for pid in started if alive(pid)]}")
        assert leftovers(session.temp) == []
    finally:
        if session is not None:
            session.close()
        shutil.rmtree(short, ignore_errors=True)


def test_a_second_ctrl_c_while_the_watch_ends_changes_nothing(tmp_path, watching):
    notebook = write(passing(), tmp_path / "exercise-3.ipynb")
    session = watching(notebook)
    session.wait_reports(1)
    wait_until(lambda: len(descendants(session.process.pid)) >= 2, 60, str(descendants(session.process.pid)))
    started = descendants(session.process.pid)
    os.killpg(session.process.pid, signal.SIGINT)
    for _ in range(20):  # more Ctrl-C while it ends, and while Python exits
        time.sleep(0.02)
        if session.process.poll() is not None:
            break
        os.killpg(session.process.pid, signal.SIGINT)
    assert session.process.wait(timeout=60) == 0, "".join(session.err)[-2000:]
    for reader in session.readers:
        reader.join(timeout=10)
    assert "Traceback" not in "".join(session.err) and "grade watch encerrado." in session.text()
    wait_until(lambda: not any(alive(pid) for pid in started), 10, "ainda vivos")
    assert leftovers(session.temp) == []


# ------------------------------------------------------------------ check() in the notebook


def test_check_grades_every_call_through_one_warm_process_that_survives_a_killing_notebook(tmp_path, monkeypatch, capsys):
    from grader.student import notebook_api

    monkeypatch.setenv("GRADE_STATE_FILE", str(tmp_path / "state.json"))
    notebook = write(passing(), tmp_path / "exercise-3.ipynb")
    try:
        notebook_api.check("exercise-3", level=1, notebook=notebook)
        assert PASSING_SCORE in capsys.readouterr().out
        server = notebook_api._checker.process.pid
        template = templates(server)
        assert len(template) == 1
        for killer in KILLERS.values():
            write(make_notebook(SETUP, RESUME_OK, killer), notebook)
            notebook_api.check("exercise-3", level=1, notebook=notebook)
            assert "célula 3" in capsys.readouterr().out.lower()
        write(make_notebook(SETUP, RETURNS_NOTHING), notebook)
        notebook_api.check("exercise-3", level=1, notebook=notebook)
        assert PASSING_SCORE not in capsys.readouterr().out  # each call grades the file as it is now
        write(passing(), notebook)
        notebook_api.check("exercise-3", level=1, notebook=notebook)
        assert PASSING_SCORE in capsys.readouterr().out
        assert notebook_api._checker.process.pid == server and templates(server) == template
        started = {server: "", **descendants(server)}
    finally:
        notebook_api._close_checker()
    wait_until(lambda: not any(alive(pid) for pid in started), 15,
               f"ainda vivos: {[started[pid] for pid in started if alive(pid)]}")


# A kernel session that calls check() and then ends as argv[2] says; it prints what check started.
_SESSION = textwrap.dedent("""
    import json, os, signal, sys, threading
    from grader.student import notebook_api
    from tests.test_warm_feedback import descendants
    notebook, end = sys.argv[1], sys.argv[2]
    if end == "interrupted":  # the stop button in the middle of a check: then check again
        threading.Timer(4.0, os.kill, (os.getpid(), signal.SIGINT)).start()
        try:
            notebook_api.check("exercise-3", level=1, notebook=notebook + ".long")
        except KeyboardInterrupt:
            print("INTERROMPIDO", flush=True)
    notebook_api.check("exercise-3", level=1, notebook=notebook)
    server = notebook_api._checker.process.pid
    print(json.dumps([server, *descendants(server)]), flush=True)
    if end == "killed":
        os.kill(os.getpid(), signal.SIGKILL)
""")


@pytest.mark.parametrize("end", ["exits", "killed", "interrupted"])
def test_what_check_started_ends_with_the_kernel_session(tmp_path, end):
    notebook = write(passing(), tmp_path / "exercise-3.ipynb")
    long_cell = "import time\ntime.sleep(120)"
    write(make_notebook(SETUP, RESUME_OK, long_cell), Path(f"{notebook}.long"))
    (tmp_path / "tmp").mkdir()
    done = subprocess.run([sys.executable, "-c", _SESSION, str(notebook), end], capture_output=True, text=True,
                          timeout=300, cwd=Path(__file__).resolve().parent.parent,
                          env={**os.environ, "GRADE_STATE_FILE": str(tmp_path / "state.json"),
                               "TMPDIR": str(tmp_path / "tmp"), "NO_COLOR": "1"})
    lines = done.stdout.strip().splitlines()
    assert PASSING_SCORE in done.stdout, (done.stdout[-2000:], done.stderr[-2000:])
    if end == "interrupted":
        assert "INTERROMPIDO" in done.stdout
        assert done.stdout.count("Pontuação:") == 1  # the interrupted check's answer is never shown
    started = json.loads(lines[-1])
    assert len(started) >= 2  # the grading process and its template
    wait_until(lambda: not any(alive(pid) for pid in started), 30,
               f"ainda vivos: {[command_line(pid) for pid in started if alive(pid)]}")
    wait_until(lambda: leftovers(tmp_path / "tmp") == [], 10, f"{leftovers(tmp_path / 'tmp')} {started}")


def test_ctrl_c_during_a_grading_ends_the_watch_without_a_traceback_and_leaves_nothing(tmp_path, watching):
    """Ctrl-C reaches the terminal's whole foreground group. A template in that group dies of it and
    kills the running kernel while the watch is still unwinding (a "Task exception was never
    retrieved ... DeadKernelError" on stderr); only the watch must decide when the template ends."""
    for attempt in range(3):
        _ctrl_c_mid_grading(tmp_path, watching, pause=1 + attempt)


def _ctrl_c_mid_grading(tmp_path: Path, watching, pause: float) -> None:
    marker = tmp_path / "kernel-pid"
    marker.unlink(missing_ok=True)
    notebook = write(passing(), tmp_path / "exercise-3.ipynb")
    long_cell = f"import os, time\nopen({str(marker)!r}, 'w').write(str(os.getpid()))\ntime.sleep(20)"
    session = watching(notebook)
    session.wait_reports(1)
    template = session.template()
    assert os.getsid(template) != os.getsid(session.process.pid), "the template shares the terminal's session"
    wait_until(lambda: len(descendants(session.process.pid)) >= 2, 60, str(descendants(session.process.pid)))
    save(make_notebook(SETUP, RESUME_OK, long_cell), notebook)
    wait_until(marker.exists, 120, session.text())
    time.sleep(pause)  # the cell is running
    started = descendants(session.process.pid)
    code = session.stop("SIGINT")
    err = "".join(session.err)
    assert code == 0 and "grade watch encerrado." in session.text(), (pause, code, err[-2000:])
    assert "Traceback" not in err and "never retrieved" not in err, (pause, err[-3000:])
    wait_until(lambda: not any(alive(pid) for pid in started), 10,
               f"ainda vivos: {[started[pid] for pid in started if alive(pid)]}")
    assert leftovers(session.temp) == []


def test_a_watch_killed_outright_takes_its_template_and_kernels_with_it(tmp_path, watching):
    """Out of the terminal's group, the template no longer dies of a kill of the whole group: it must
    see its owner gone (the control socket closes) and end, with every kernel, the running one too."""
    marker = tmp_path / "kernel-pid"
    notebook = write(passing(), tmp_path / "exercise-3.ipynb")
    session = watching(notebook)
    session.wait_reports(1)
    session.template()
    wait_until(lambda: len(descendants(session.process.pid)) >= 2, 60, str(descendants(session.process.pid)))
    long_cell = f"import os, time\nopen({str(marker)!r}, 'w').write(str(os.getpid()))\ntime.sleep(120)"
    save(make_notebook(SETUP, RESUME_OK, long_cell), notebook)
    wait_until(marker.exists, 120, session.text())
    started = descendants(session.process.pid)
    assert int(marker.read_text()) in started
    session.process.kill()  # the watch alone, as `kill -9 PID` does
    session.process.wait()
    wait_until(lambda: not any(alive(pid) for pid in started), 15,
               f"ainda vivos: {[started[pid] for pid in started if alive(pid)]}")


def test_ctrl_c_ends_the_watch_at_once_while_a_stopped_template_does_not_answer(tmp_path, watching):
    """A cell can stop the template (``os.kill(os.getppid(), signal.SIGSTOP)``): the next kernel's fork
    then waits for an answer that never comes. Ctrl-C must still end the watch within seconds, not
    when that wait gives up a minute later, and leave nothing behind."""
    notebook = write(passing(), tmp_path / "exercise-3.ipynb")
    session = watching(notebook)
    session.wait_reports(1)
    template = session.template()
    wait_until(lambda: len(descendants(session.process.pid)) >= 2, 60, str(descendants(session.process.pid)))
    started = descendants(session.process.pid)
    os.kill(template, signal.SIGSTOP)
    try:
        save(make_notebook(SETUP, RETURNS_NOTHING), notebook)  # graded in the kernel forked before
        session.wait_reports(2)
        time.sleep(2)  # the next kernel's fork is waiting for the stopped template
        os.killpg(session.process.pid, signal.SIGINT)
        asked = time.monotonic()
        try:
            code = session.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            code = None
        seconds = time.monotonic() - asked
        assert code == 0 and seconds < 8, f"{seconds:.1f} s do Ctrl-C ao fim (código {code})"
        for reader in session.readers:
            reader.join(timeout=10)
        err = "".join(session.err)
        assert "grade watch encerrado." in session.text() and "Traceback" not in err, err[-3000:]
        wait_until(lambda: not any(alive(pid) for pid in started), 10,
                   f"ainda vivos: {[started[pid] for pid in started if alive(pid)]}")
        assert leftovers(session.temp) == []
    finally:
        for pid in started:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def template_folders(temp: Path) -> list[str]:
    """The template socket folders left (each has its lock file beside it, not counted here)."""
    return sorted(name for name in leftovers(temp) if "grade-template-" in name and not name.endswith(".dono"))


def test_the_template_folder_of_a_watch_killed_outright_goes_with_the_next_grading(tmp_path):
    """kill -9 leaves the socket's folder behind; the next grading of the same user removes it, as it
    removes a killed grading's, and never the folder of a watch still running."""
    import shutil
    import tempfile

    short = Path(tempfile.mkdtemp(prefix="gw-", dir="/tmp"))  # room for the socket's path, in the temp folder
    sessions: list[Watching] = []
    try:
        notebook = write(passing(), short / "exercise-3.ipynb")
        for _ in range(2):
            sessions.append(Watching(notebook, short))
            sessions[-1].wait_reports(1)
        killed, live = sessions
        temp = killed.temp
        killed_template, live_template = killed.template(), live.template()
        assert len(template_folders(temp)) == 2, leftovers(temp)
        killed.process.kill()  # kill -9: nothing of it cleans up
        killed.process.wait()
        wait_until(lambda: not alive(killed_template), 15, "o modelo do watch morto continua vivo")
        assert len(template_folders(temp)) == 2, leftovers(temp)
        done = subprocess.run([sys.executable, "-c", GRADE, "exercise-3", "--notebook", str(notebook), "--level", "1"],
                              capture_output=True, text=True, timeout=300, cwd=short,
                              env={**os.environ, "GRADE_STATE_FILE": str(short / "state.json"), "TMPDIR": str(temp),
                                   "NO_COLOR": "1"})
        assert PASSING_SCORE in done.stdout, (done.stdout[-2000:], done.stderr[-2000:])
        remaining = template_folders(temp)
        assert len(remaining) == 1, leftovers(temp)  # the live watch's, untouched
        assert alive(live_template)
        save(make_notebook(SETUP, RETURNS_NOTHING), notebook)  # and it still grades from its template
        assert PASSING_SCORE not in live.wait_reports(2)[-1]
        assert live.template() == live_template
        assert live.stop() == 0
        assert leftovers(temp) == []
    finally:
        for session in sessions:
            session.close()
        shutil.rmtree(short, ignore_errors=True)
