"""A Python interpreter started once, with the SDK and the harness imported, that forks a child
for each command a test runs: ``python -m harness ...`` or ``python -c CODE ...`` in about a
tenth of a second instead of the 1.5 s an interpreter takes to import anthropic.

Each child is a real process, started from an interpreter that has imported modules and run
nothing else: the command runs at the child's own top level, so an exception it does not catch
reaches the interpreter itself (traceback on stderr, exit 1), ``sys.exit`` gives the exit code,
and a signal kills it as it would kill ``python``. What a child cannot change is what the
interpreter reads only when it starts (``PYTHONIOENCODING``, ``PYTHONPATH``, ``-X`` options,
the locale): commands whose test is about those keep ``subprocess.run([sys.executable, ...])``.

One warm interpreter per test process, started on first use and ended with that process; it
runs one command at a time (a test process runs one test at a time).
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

# The warm interpreter. Requests arrive one JSON line at a time on stdin; for each it forks, says
# the child's pid, waits for it and says its exit status. The child leaves the loop and runs the
# command at module level, so nothing of the loop catches what the command raises.
SERVER = r"""
import gc, json, os, sys
reply = os.fdopen(int(sys.argv[1]), "w", buffering=1)
for name in sys.argv[2:]:
    __import__(name)
sys.argv = sys.argv[:1]
# What is imported now lives as long as the interpreter: out of the collector's sight, a child's
# collections (and its exit) do not walk, and so copy, every page of it (gc.freeze's own purpose).
gc.freeze()
while True:
    line = sys.stdin.readline()
    if not line:
        os._exit(0)
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        break
    reply.write(json.dumps({"pid": pid}) + "\n")
    _, status = os.waitpid(pid, 0)
    reply.write(json.dumps({"code": os.waitstatus_to_exitcode(status)}) + "\n")

del reply
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
    del gc, json, os, line, request, pid, argv, name, fd, path, flags
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
else:
    code = compile(argv[1], "<string>", "exec")
    sys.argv = ["-c", *argv[2:]]
    del gc, json, os, line, request, pid, argv, name, fd, path, flags
    exec(code)
"""


class WarmPython:
    def __init__(self, preloaded=PRELOADED):
        read_end, self._write_end = os.pipe()
        env = {key: value for key, value in os.environ.items() if key not in ("CRASH_AFTER", "CRASH_MODE")}
        env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        self._process = subprocess.Popen([sys.executable, "-c", SERVER, str(self._write_end), *preloaded],
                                         stdin=subprocess.PIPE, pass_fds=(self._write_end,), cwd=REPO_ROOT,
                                         env=env, text=True)
        os.close(self._write_end)
        self._replies = os.fdopen(read_end, "r")
        self._lock = threading.Lock()

    def run(self, argv, *, env=None, cwd=None, timeout=60.0, input=None) -> subprocess.CompletedProcess:
        """Like ``subprocess.run([sys.executable, *argv], capture_output=True, text=True)``."""
        with self._lock, tempfile.TemporaryDirectory(prefix="warm-python-") as scratch:
            paths = {name: os.path.join(scratch, name) for name in ("stdin", "stdout", "stderr")}
            Path(paths["stdin"]).write_text(input or "", encoding="utf-8")
            for name in ("stdout", "stderr"):
                Path(paths[name]).touch()
            request = {"argv": list(argv), "env": dict(os.environ if env is None else env),
                       "cwd": str(cwd or REPO_ROOT), **paths}
            self._process.stdin.write(json.dumps(request) + "\n")
            self._process.stdin.flush()
            pid = self._reply("pid")
            timer = threading.Timer(timeout, _kill_group, (pid,))
            timer.start()
            try:
                code = self._reply("code")
            finally:
                timer.cancel()
            timed_out = pid in _timed_out
            out, err = (Path(paths[name]).read_text(encoding="utf-8", errors="replace") for name in ("stdout", "stderr"))
        if timed_out:
            raise subprocess.TimeoutExpired([sys.executable, *argv], timeout, out, err)
        return subprocess.CompletedProcess([sys.executable, *argv], code, out, err)

    def _reply(self, key: str) -> int:
        line = self._replies.readline()
        if not line:  # killed (by a command that killed its parent, say): the next call starts another
            raise RuntimeError(f"the warm interpreter ended (exit {self._process.wait(timeout=10)}) before "
                               f"saying the command's {key}")
        return json.loads(line)[key]

    def close(self) -> None:
        if self._process.poll() is None:
            self._process.stdin.close()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()


_timed_out: set[int] = set()


def _kill_group(pid: int) -> None:
    _timed_out.add(pid)
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


def run_python(argv, **options) -> subprocess.CompletedProcess:
    """``python ARGV`` (``-m module ...`` or ``-c code ...``) through the warm interpreter."""
    return warm_python().run(argv, **options)
