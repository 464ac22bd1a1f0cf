"""A Python interpreter started once, with the SDK and the harness imported, that forks a child
for each command a test runs: ``python -m harness ...`` or ``python -c CODE ...`` in about a
tenth of a second instead of the 1.5 s an interpreter takes to import anthropic.

Each child is a real process, started from an interpreter that has imported modules and run
nothing else: the command runs at the child's own top level, so an exception it does not catch
reaches the interpreter itself (traceback on stderr, exit 1), ``sys.exit`` gives the exit code,
and a signal kills it as it would kill ``python``. What a child cannot change is what the
interpreter reads only when it starts (``PYTHONIOENCODING``, ``PYTHONPATH``, ``-X`` options,
the locale), and, the preloaded modules being frozen out of the collector (``gc.freeze``),
what only the collector's last pass at exit does (``__del__`` of an object in a reference
cycle that a module holds): commands whose test is about those keep
``subprocess.run([sys.executable, ...])``.

One warm interpreter per test process, started on first use and ended with that process.
``run_python`` runs a command to its end; ``start_python`` starts one and returns at once (a
``Popen``-like handle), so a test can run several side by side, each a process of its own.
"""
from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

# What the warm interpreter imports before it forks: what the harness, `grade` and `course` import.
PRELOADED = ("anthropic", "httpx2", "harness.cli", "harness.runner", "harness.model", "harness.fake_endpoint",
             "harness.exit_codes", "harness.cli_text", "nbformat", "jupyter_client", "grader.cli", "authoring.cli")

# The warm interpreter. Requests arrive one JSON line at a time on stdin; for each it forks and
# says the child's pid, then goes on reading while the child runs; when a child ends (its pidfd
# turns readable) it says that child's exit status. The child leaves the loop and runs the command
# at module level, so nothing of the loop catches what the command raises.
SERVER = r"""
import gc, json, os, select, signal, sys


def next_request():  # in the interpreter, forever; in each child, its request (from the fork)
    reply = os.fdopen(int(sys.argv[1]), "w", buffering=1)
    running = {}  # pidfd: pid
    try:
        while True:
            for fd in select.select([0, *running], [], [])[0]:
                if fd in running:
                    pid = running.pop(fd)
                    os.close(fd)
                    _, status = os.waitpid(pid, 0)
                    reply.write(json.dumps({"ended": pid, "code": os.waitstatus_to_exitcode(status)}) + "\n")
                    continue
                line = sys.stdin.readline()  # the client sends a request only once the last one has its pid
                if not line:
                    return None  # the test process ended: so do the commands it left running
                pid = os.fork()
                if pid == 0:
                    running.clear()
                    signal.signal(signal.SIGINT, signal.default_int_handler)
                    return json.loads(line)
                running[os.pidfd_open(pid)] = pid
                reply.write(json.dumps({"started": pid}) + "\n")
    finally:
        for pid in running.values():  # each command is a group of its own: it and all it started
            for kill in (os.killpg, os.kill):
                try:
                    kill(pid, signal.SIGKILL)
                except OSError:
                    pass


for name in sys.argv[2:]:
    __import__(name)
del name
# What is imported now lives as long as the interpreter: out of the collector's sight, a child's
# collections (and its exit) do not walk, and so copy, every page of it (gc.freeze's own purpose).
gc.freeze()
# Ctrl-C in the terminal reaches the whole group: the test process ends, and closing this
# interpreter's input ends the commands still running (a command gets Python's default back).
signal.signal(signal.SIGINT, signal.SIG_IGN)
request = next_request()
if request is None:
    os._exit(0)
sys.argv = sys.argv[:1]
os.setpgid(0, 0)  # a group of its own: a timeout kills the command and whatever it started
os.chdir(request["cwd"])
os.environ.clear()
os.environ.update(request["env"])
for fd, path, flags in ((0, request["stdin"], os.O_RDONLY), (1, request["stdout"], os.O_WRONLY),
                        (2, request["stderr"], os.O_WRONLY)):
    os.dup2(os.open(path, flags), fd)
os.closerange(3, 1024)
argv = request["argv"]
if argv[0] == "-m":
    import runpy
    sys.argv = [argv[1], *argv[2:]]
    del gc, json, os, select, signal, next_request, request, argv, fd, path, flags
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
else:
    code = compile(argv[1], "<string>", "exec")
    sys.argv = ["-c", *argv[2:]]
    del gc, json, os, select, signal, next_request, request, argv, fd, path, flags
    exec(code)
"""


class WarmProcess:
    """One command running in a child of the warm interpreter, read as a ``subprocess.Popen``."""

    def __init__(self, warm: WarmPython, pid: int, argv, scratch: tempfile.TemporaryDirectory, paths: dict):
        self.pid, self.args, self.returncode = pid, [sys.executable, *argv], None
        self._warm, self._scratch, self._paths = warm, scratch, paths
        self._read: tuple[str, str] | None = None

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            try:
                self.returncode = self._warm._exit_code(self.pid, timeout, self.args)
            except RuntimeError:  # the warm interpreter died: nobody would ever end this command
                _kill_group(self.pid)
                raise
        return self.returncode

    def kill(self) -> None:
        """SIGKILL the command and all it started (nothing, once it has ended: its pid may be reused)."""
        if self.returncode is None and not self._warm._has_ended(self.pid):
            _kill_group(self.pid)

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        """Wait for the command to end (killing it and all it started past ``timeout``); its output."""
        try:
            self.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            self.wait(10)
            out, err = self._output()
            raise subprocess.TimeoutExpired(self.args, timeout, out, err) from None
        return self._output()

    def _output(self) -> tuple[str, str]:
        if self._read is None:
            self._read = tuple(Path(self._paths[name]).read_text(encoding="utf-8", errors="replace")
                               for name in ("stdout", "stderr"))
            self._scratch.cleanup()
        return self._read


class WarmPython:
    def __init__(self, preloaded=PRELOADED):
        read_end, self._write_end = os.pipe()
        env = {key: value for key, value in os.environ.items() if key not in ("CRASH_AFTER", "CRASH_MODE")}
        env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        self._process = subprocess.Popen([sys.executable, "-c", SERVER, str(self._write_end), *preloaded],
                                         stdin=subprocess.PIPE, pass_fds=(self._write_end,), cwd=REPO_ROOT,
                                         env=env, text=True)
        os.close(self._write_end)
        self._starting = threading.Lock()  # one request in flight: the next waits for this one's pid
        self._replies = threading.Condition()
        self._started: list[int] = []
        self._ended: dict[int, int] = {}
        self._gone = False
        threading.Thread(target=self._read_replies, args=(os.fdopen(read_end, "r"),), daemon=True).start()

    def start(self, argv, *, env=None, cwd=None, input=None) -> WarmProcess:
        """Like ``subprocess.Popen([sys.executable, *argv], stdout=PIPE, stderr=PIPE, text=True)``."""
        scratch = tempfile.TemporaryDirectory(prefix="warm-python-")
        paths = {name: os.path.join(scratch.name, name) for name in ("stdin", "stdout", "stderr")}
        Path(paths["stdin"]).write_text(input or "", encoding="utf-8")
        for name in ("stdout", "stderr"):
            Path(paths[name]).touch()
        request = {"argv": list(argv), "env": dict(os.environ if env is None else env),
                   "cwd": str(cwd or REPO_ROOT), **paths}
        with self._starting:
            self._process.stdin.write(json.dumps(request) + "\n")
            self._process.stdin.flush()
            with self._replies:
                self._replies.wait_for(lambda: self._started or self._gone)
                if not self._started:
                    scratch.cleanup()
                    raise self._ended_error("pid")
                pid = self._started.pop(0)
        return WarmProcess(self, pid, argv, scratch, paths)

    def run(self, argv, *, env=None, cwd=None, timeout=60.0, input=None) -> subprocess.CompletedProcess:
        """Like ``subprocess.run([sys.executable, *argv], capture_output=True, text=True)``."""
        process = self.start(argv, env=env, cwd=cwd, input=input)
        out, err = process.communicate(timeout)
        return subprocess.CompletedProcess(process.args, process.returncode, out, err)

    def _exit_code(self, pid: int, timeout: float | None, args) -> int:
        with self._replies:
            if not self._replies.wait_for(lambda: pid in self._ended or self._gone, timeout):
                raise subprocess.TimeoutExpired(args, timeout)
            if pid not in self._ended:
                raise self._ended_error("exit code")
            return self._ended.pop(pid)

    def _has_ended(self, pid: int) -> bool:
        with self._replies:
            return pid in self._ended

    def _read_replies(self, replies) -> None:
        for line in replies:
            message = json.loads(line)
            with self._replies:
                if "started" in message:
                    self._started.append(message["started"])
                else:
                    self._ended[message["ended"]] = message["code"]
                self._replies.notify_all()
        with self._replies:  # killed (by a command that killed its parent, say): the next call starts another
            self._gone = True
            self._replies.notify_all()

    def _ended_error(self, what: str) -> RuntimeError:
        return RuntimeError(f"the warm interpreter ended (exit {self._process.wait(timeout=10)}) before "
                            f"saying the command's {what}")

    def close(self) -> None:
        if self._process.poll() is None:
            self._process.stdin.close()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()


def _kill_group(pid: int) -> None:
    for kill in (os.killpg, os.kill):  # os.kill: the child may not have made its group yet
        try:
            kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


_warm: WarmPython | None = None


def warm_python() -> WarmPython:
    """This test process's warm interpreter (started on first use)."""
    global _warm
    if _warm is None or _warm._process.poll() is not None:
        _warm = WarmPython()
        atexit.register(_warm.close)
    return _warm


def start_python(argv, **options) -> WarmProcess:
    """``python ARGV`` started through the warm interpreter; returns while it runs."""
    return warm_python().start(argv, **options)


def run_python(argv, **options) -> subprocess.CompletedProcess:
    """``python ARGV`` (``-m module ...`` or ``-c code ...``) through the warm interpreter."""
    return warm_python().run(argv, **options)
