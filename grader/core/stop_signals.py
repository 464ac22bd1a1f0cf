"""Ctrl-C, SIGTERM and SIGHUP: held where a stop would leave something half-way, and a stop that
always ends the process.

A warm session (grader/core/warm_session.py) forks kernels, connects to them and ends its template;
a stop landing half-way through would leave a kernel, a client or a folder behind, and one landing
inside jupyter_client or zmq can leave a socket its client does not know of, whose end then
waits forever (zmq's ``term``). ``stops_deferred`` holds a stop until its block ends, then acts on
it as the process would have; inside the block, ``act_on_stop`` lets a held stop act at a point
the code chose (between the short slices of a wait), so Ctrl-C is still prompt.

The stop is held by a Python handler, not by masking the signal: a mask is per thread, and any
thread of the process that does not mask it (jupyter_client's heartbeat, a watchdog) would take
the signal, whose handler then runs in the main thread in the middle of the block anyway. A mask
is also inherited by every program started meanwhile (a kernel template started with Ctrl-C
masked would never see Ctrl-C, nor its kernels an interrupt). A handler is neither. Blocking calls
a held stop interrupts carry on (PEP 475: https://peps.python.org/pep-0475/).

``ends_within`` is the last resort of a command that must end on a stop (``grade watch``): once a
stop has been received, a timer ends the process after a grace period if the orderly ending is
stuck, killing what the process started and removing its folders itself.
"""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

from grader.core import scratch

STOPS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


class _Held:
    """The main thread's deferred blocks: how deep, the handlers the outermost one replaced, and the
    first stop received meanwhile."""

    def __init__(self) -> None:
        self.depth = 0
        self.previous: dict[int, Any] = {}
        self.pending: int | None = None


_held = _Held()
_on_receipt: list[Callable[[int], None]] = []  # run the moment a stop arrives, held or not


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _received(signum: int) -> None:
    for hook in list(_on_receipt):
        hook(signum)


def _hold(signum: int, _frame: Any) -> None:
    _received(signum)
    if _held.pending is None:
        _held.pending = signum


def _act(signum: int) -> None:
    """Do what the handler the outermost block replaced would have done with ``signum``."""
    handler = _held.previous.get(signum, signal.SIG_DFL)
    if callable(handler):
        handler(signum, None)
    elif handler == signal.SIG_DFL:  # the process would have ended: it ends
        signal.signal(signum, signal.SIG_DFL)
        signal.raise_signal(signum)


def stop_requested() -> bool:
    """Has a stop been received, and held, by the block running now?"""
    return _held.pending is not None


def act_on_stop() -> None:
    """Inside ``stops_deferred``, at a point where nothing is half-made: a held stop acts now (as
    Ctrl-C, it raises KeyboardInterrupt). Nothing happens when no stop is held."""
    signum, _held.pending = _held.pending, None
    if signum is not None:
        _act(signum)


@contextlib.contextmanager
def stops_deferred() -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP wait until the block ends (then act as usual), or until the
    block calls ``act_on_stop``. Outside the main thread signals cannot be handled, and nothing
    changes."""
    if not _in_main_thread():
        yield
        return
    outermost = _held.depth == 0
    if outermost:
        _held.previous = {signum: signal.getsignal(signum) for signum in STOPS}
        for signum in STOPS:
            signal.signal(signum, _hold)
    _held.depth += 1
    try:
        yield
    finally:
        _held.depth -= 1
        if outermost:
            for signum, handler in _held.previous.items():
                signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
            act_on_stop()


@contextlib.contextmanager
def stops_as_interrupt() -> Iterator[None]:
    """Ctrl-C, SIGTERM (a polite kill) and SIGHUP (the terminal closed) all raise KeyboardInterrupt
    in the block, so the program unwinds and ends what it started. Only the first does: a second
    Ctrl-C while it ends would cut the ending short (the last resort of ``ends_within`` is there
    for an ending that is stuck), and after the block, once stopped, later stops are ignored, so
    one landing while Python exits does not turn a clean end into status 130."""
    stopped = False

    def first_only(signum: int, _frame: Any) -> None:
        nonlocal stopped
        _received(signum)
        if not stopped:
            stopped = True
            raise KeyboardInterrupt

    try:
        previous = {signum: signal.signal(signum, first_only) for signum in STOPS}
    except ValueError:  # not the main thread: signals stay as they are
        previous = {}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_IGN if stopped else handler)


class LastResort:
    """Ends the process ``grace`` seconds after the first stop if it has not ended by then: every
    process it started is killed, the folders ``folders()`` names are removed, ``farewell`` is
    written, and the process exits with status 0. The orderly ending (unwinding, each kernel shut
    down, the template waited for) is tried first; this only guarantees that a stop ends it."""

    def __init__(self, grace: float, farewell: str, folders: Callable[[], list[Path]]) -> None:
        self.grace = grace
        self.farewell = farewell
        self.folders = folders
        self.armed = threading.Event()

    def arm(self, _signum: int = 0) -> None:
        if self.armed.is_set():
            return
        self.armed.set()
        # Started with the stops masked, the timer's thread inherits the mask: a later stop goes to
        # the main thread, whose handlers decide.
        masked = hasattr(signal, "pthread_sigmask")
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS) if masked else None
        try:
            threading.Thread(target=self._after_grace, name="grade-last-resort", daemon=True).start()
        finally:
            if masked:
                signal.pthread_sigmask(signal.SIG_SETMASK, previous)

    def _after_grace(self) -> None:
        threading.Event().wait(self.grace)
        kill_descendants(os.getpid())
        for folder in self.folders():
            scratch.remove(folder)
        with contextlib.suppress(OSError):
            sys.stdout.flush()
        with contextlib.suppress(OSError):
            os.write(1, self.farewell.encode())  # not print: the main thread may hold stdout's lock
        os._exit(0)


@contextlib.contextmanager
def ends_within(grace: float, farewell: str, folders: Callable[[], list[Path]]) -> Iterator[LastResort]:
    """A ``LastResort`` armed by the first stop the block receives."""
    last = LastResort(grace, farewell, folders)
    _on_receipt.append(last.arm)
    try:
        yield last
    finally:
        _on_receipt.remove(last.arm)


def descendants(pid: int) -> list[int]:
    """Every process under ``pid`` (children, theirs, ...), read from /proc; [] where there is none."""
    found: list[int] = []
    stack = [pid]
    while stack:
        parent = stack.pop()
        for task in _listing(Path(f"/proc/{parent}/task")):
            try:
                children = (task / "children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                if child not in found:
                    found.append(child)
                    stack.append(child)
    return found


def _listing(folder: Path) -> list[Path]:
    try:
        return list(folder.iterdir())
    except OSError:
        return []


def kill_descendants(pid: int) -> None:
    """SIGKILL every process under ``pid``; the tree is read first, since a killed parent's children
    move to another parent and could no longer be found."""
    for child in descendants(pid):
        with contextlib.suppress(OSError):
            os.kill(child, signal.SIGKILL)
