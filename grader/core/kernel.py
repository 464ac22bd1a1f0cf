"""The grading kernel: how it is started, limited and watched (one place for all of it).

``start_kernel`` starts a fresh IPython kernel for nbclient (once more if the first start
fails), ``memory_limit_cell`` is the first thing the kernel runs when grading has a memory
limit, and ``Watchdog`` kills the kernel's process group when a deadline passes: the
notebook's, a cell's (a cell that ignores the interrupt), or a check's (a check whose
code swallows the grader's timeout). It also samples the kernel's memory, so a kernel
that dies near its memory limit is reported as out of memory rather than as a crash.
"""
from __future__ import annotations

import contextlib
import os
import secrets
import re
import signal
import threading
from contextlib import ExitStack
from pathlib import Path
from time import monotonic
from typing import Any, Callable

from grader.core.error_text import describe_error
from grader.core import grading_files

KILL_GRACE = 10.0  # seconds after the notebook's or the checks' deadline before an unresponsive kernel is killed
INTERRUPT_GRACE = 5.0  # seconds a cell or a check gets, after its own limit, to obey the interrupt
START_ATTEMPTS = 2  # a kernel that fails to start is started once more before grading gives up
STARTUP_TIMEOUT = 60  # seconds one start may take (until the kernel answers) before it counts as failed
LOG_READ_LIMIT = 1 << 20  # the end of a kernel log or of the results file: enough to judge by
NEAR_MEMORY_LIMIT = 0.9  # a kernel that dies after using this much of its limit ran out of memory
_UNIX_SOCKET_PATH_LIMIT = 100  # sun_path holds 104 bytes on macOS, 108 on Linux
_MEMORY_WORDS = re.compile(r"MemoryError|Cannot allocate memory|out of memory|bad_alloc", re.I)


class KernelStartFailed(Exception):
    """No attempt to start a kernel succeeded; ``str()`` is the Portuguese explanation."""


def kernel_connection(workdir: Path, attempt: int = 1, generation: int = 1) -> dict[str, Any]:
    """How the grader talks to the kernel: settings for jupyter_client's KernelManager.

    Over TCP, jupyter_client chooses the kernel's five ports by binding to port 0 and
    closing the socket; the kernel binds them only once it has started, a second or
    more later on a busy machine. Any process that binds one of them in between (another
    kernel starting at the same time, say) makes the new kernel exit at once with
    "Address already in use". Unix sockets named inside this grading's own folder
    cannot be taken by anyone else, so the first attempt uses them wherever they exist;
    a second attempt uses TCP, in case that folder cannot hold sockets (some mounted drives).
    Each kernel of one grading (``generation``: a restarted kernel is the next one) gets
    its own socket names.
    """
    prefix = workdir / ("kernel" if generation == 1 else f"kernel{generation}")
    # The connection file in the grading's folder too (jupyter_client's default is a loose file
    # in the temp folder), so a grading killed outright leaves nothing outside that folder. Its
    # name is drawn at random: the kernel's code writes in that folder, and a folder it planted
    # under a name known in advance would stop the next kernel from starting.
    settings: dict[str, Any] = {"connection_file": f"{prefix}-{secrets.token_hex(8)}-connection.json"}
    short_enough = len(os.fsencode(str(prefix))) + len("-5") < _UNIX_SOCKET_PATH_LIMIT
    if os.name == "posix" and short_enough and attempt == 1:
        return {**settings, "transport": "ipc", "ip": str(prefix)}
    return {**settings, "transport": "tcp"}


def _discard(client: Any) -> None:
    """Stop whatever a failed start left behind (nbclient cleans up most, not every, case)."""
    if client.km is None:
        return
    try:
        client._cleanup_kernel()
    except Exception:  # noqa: BLE001 - the kernel is gone already, or never started
        pass


def children() -> set[int]:
    """This process's children, where the system lists them (Linux); empty elsewhere."""
    found: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").glob("*/children"):
        try:
            found.update(int(pid) for pid in task.read_text().split())
        except (OSError, ValueError):
            continue
    return found


def _kill_started(client: Any, children_before: set[int]) -> None:
    """Kill a kernel whose start was abandoned halfway (nothing else would stop it). Cut inside
    Popen, the child may exist before its pid is known: then it is the child that was not there
    before the start."""
    pid, _ = kernel_ids(client) if getattr(client, "km", None) is not None else (None, None)
    if pid:
        kill_kernel_of(client)
        return
    kill_new_children(children_before)


def kill_new_children(before: set[int]) -> None:
    """Kill this process's children that were not there ``before`` (a kernel whose start was cut
    short: nbclient's unfinished start can still launch it when its event loop runs again)."""
    for target in sorted(children() - before):
        with contextlib.suppress(OSError):
            os.kill(target, signal.SIGKILL)


def kill_kernel_of(client: Any) -> None:
    """Kill the kernel ``client`` started, and its process group, if its pid is known."""
    if client is None or getattr(client, "km", None) is None:
        return
    pid, pgid = kernel_ids(client)
    for target in [pid] if pid else []:
        try:
            if pgid and hasattr(os, "killpg") and pgid != os.getpgid(0):
                os.killpg(pgid, signal.SIGKILL)
            else:
                os.kill(target, signal.SIGKILL)
        except OSError:
            pass


def stderr_tail(path: Path, lines: int = 5) -> str:
    try:
        text = grading_files.read_text(path, LOG_READ_LIMIT, tail=True)
    except OSError:
        return ""
    kept = [line for line in text.splitlines() if "WARNING" not in line][-lines:]
    return "\n".join(kept)


def start_kernel(stack: ExitStack, make_client: Callable[[int], Any], env: dict[str, str], workdir: Path,
                 generation: int = 1) -> tuple[Any, Path]:
    """Start a kernel, once more if the first start fails; (client, its stderr log).

    A failed start never ran any of the student's code, so a second start is safe, and
    it keeps a passing hiccup of the machine from costing a student a grade.
    """
    failures: list[tuple[BaseException, Path]] = []
    for attempt in range(1, START_ATTEMPTS + 1):
        client = make_client(attempt)
        stderr_path = workdir / f"kernel-stderr-{generation}-{attempt}.log"
        # A prelaunched kernel may be writing it already; a restarted kernel's log is in a folder the
        # student's code could write, so it is never opened through a link planted there.
        stderr = stack.enter_context(grading_files.open_append(stderr_path))
        children_before = children()
        try:
            stack.enter_context(client.setup_kernel(env=env, stderr=stderr, stdout=stderr))
        except Exception as error:  # the kernel died at start, never answered, or could not be launched
            _discard(client)
            failures.append((error, stderr_path))
            continue
        except BaseException:  # Ctrl-C while it starts: the kernel, in its own session, must not outlive us
            _kill_started(client, children_before)
            raise
        return client, stderr_path
    error, stderr_path = failures[-1]
    tail = stderr_tail(stderr_path)
    raise KernelStartFailed(
        f"Não consegui iniciar o kernel do Python que executaria o notebook (tentei {len(failures)} "
        f"vezes; {describe_error(error)}). O problema está na máquina ou na instalação do "
        "Jupyter, não no seu notebook: rode a correção de novo e, se o erro continuar, avise o instrutor."
        + (f"\n{tail}" if tail else "")
    )


def kernel_ids(client: Any) -> tuple[int | None, int | None]:
    provisioner = getattr(client.km, "provisioner", None)
    pid, pgid = getattr(provisioner, "pid", None), getattr(provisioner, "pgid", None)
    return (pid if isinstance(pid, int) else None, pgid if isinstance(pgid, int) else None)


def memory_limit_cell(limit_mb: int | None) -> str | None:
    """The source the kernel runs first to cap its own memory, or None when there is no limit.

    RLIMIT_DATA counts heap and private anonymous mappings (Linux >= 4.7): the memory
    student code allocates, without the shared libraries that RLIMIT_AS would also count
    (a kernel with anthropic loaded maps ~800 MB of them).
    """
    if not limit_mb or os.name != "posix":
        return None
    limit = int(limit_mb) * 1024 * 1024
    return f"__import__('resource').setrlimit(__import__('resource').RLIMIT_DATA, ({limit}, {limit}))"


def data_bytes(pid: int | None) -> int | None:
    """The kernel's data memory (what RLIMIT_DATA counts), where the system says it (Linux)."""
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def died_of_memory(limit_mb: int | None, peak: int | None, stderr_path: Path) -> bool:
    """Did a kernel that just died run out of memory? Near its limit, or said so on stderr."""
    if limit_mb and peak is not None and peak >= NEAR_MEMORY_LIMIT * limit_mb * 1024 * 1024:
        return True
    try:
        text = grading_files.read_text(stderr_path, LOG_READ_LIMIT, tail=True)
    except OSError:
        return False
    return bool(_MEMORY_WORDS.search(text))


class Watchdog:
    """Kills the kernel's process group when the armed deadline passes, or when a check of
    the grading has been running longer than its limit allows (``watch_checks``)."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.pgid: int | None = None
        self.fired: str | None = None  # the reason of the armed deadline that passed, or "check"
        self.peak: int | None = None  # the most data memory seen since the last ``arm``
        self._deadline: float | None = None
        self._reason = ""
        self._results: Path | None = None
        self._check_limit = 0.0
        self._seen = (0, monotonic())  # (size of the results file, when it last changed)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="grader-watchdog", daemon=True)
        self._thread.start()

    def follow(self, client: Any) -> None:
        """Watch this (new) kernel."""
        self.pid, self.pgid = kernel_ids(client)
        self.fired, self.peak = None, None

    def arm(self, deadline: float, reason: str) -> None:
        self._deadline, self._reason, self.peak = deadline, reason, None

    def watch_checks(self, results: Path | None, limit: float = 0.0) -> None:
        """Kill the kernel when the last line of ``results`` (a check started, or called student
        code) is older than ``limit``: the check ignored its own time limit."""
        self._results, self._check_limit = results, limit
        self._seen = (self._size(results), monotonic())

    @staticmethod
    def _size(path: Path | None) -> int:
        return grading_files.size(path) if path is not None else 0

    def _check_overdue(self) -> bool:
        if self._results is None:
            return False
        size = self._size(self._results)
        if size != self._seen[0]:
            self._seen = (size, monotonic())
            return False
        if monotonic() - self._seen[1] <= self._check_limit:
            return False
        try:
            last = grading_files.read_bytes(self._results, LOG_READ_LIMIT, tail=True).rstrip(b"\n").rsplit(b"\n", 1)[-1]
        except OSError:
            return False
        return last.startswith((b'{"started"', b'{"calling"'))

    def _watch(self) -> None:
        while not self._stop.wait(0.2):
            if not self.pid or self.fired:
                continue
            used = data_bytes(self.pid)
            if used is not None and (self.peak is None or used > self.peak):
                self.peak = used
            if self._deadline is not None and monotonic() > self._deadline:
                self._kill(self._reason)
            elif self._check_overdue():
                self._kill("check")

    def _kill(self, reason: str) -> None:
        self.fired = reason
        self._deadline = None
        try:
            if self.pgid and hasattr(os, "killpg") and self.pgid != os.getpgid(0):
                os.killpg(self.pgid, signal.SIGKILL)  # the kernel and anything it spawned
            else:
                os.kill(self.pid, getattr(signal, "SIGKILL", signal.SIGTERM))
        except OSError:
            pass

    def kill_now(self) -> None:
        """Kill the kernel at once (the grading is abandoned: Ctrl-C, SIGTERM)."""
        if self.pid:
            self._kill("interrupted")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
