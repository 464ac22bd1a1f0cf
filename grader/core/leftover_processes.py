"""What a batch started, however far down, ends with the batch.

A batch kills its workers outright (Ctrl-C, a submission past its deadline). What a killed
worker had started lives on without it: a kernel it launched itself (jupyter_client gives each
kernel a session of its own, so killing the worker's group misses it), and whatever a
submission's code started in a session of its own. Until their own checks notice, such
processes keep working in the batch's folder, and one that makes a folder there after the batch
removed it leaves that folder behind (its ``mkdir(parents=True)`` makes the whole path again).

Each batch gives its workers a name of its own in their environment (``GRADE_BATCH_ID``); their
kernels, and what those start, inherit it. Before removing its folder, the batch kills every
process that carries its name, at any depth, in one sweep of /proc repeated until none is
left; nothing else is touched (its caller's other children, a database server, another batch).
A process that emptied its environment escapes this, as it escapes anything short of the
sandbox: without ``--sandbox`` the submission's code runs with the instructor's own rights.
"""
from __future__ import annotations

import os
import secrets
import signal
import time
from pathlib import Path

BATCH_ID_ENV = "GRADE_BATCH_ID"
# Killed processes are gone within milliseconds; one stuck in the kernel (a dead network
# mount) is not waited for past this.
END_WAIT_SECONDS = 5.0


def new_batch_id() -> str:
    """A name no other batch, in this process or another, carries."""
    return f"{os.getpid()}-{secrets.token_hex(8)}"


def _holds(pid: int, entry: bytes) -> bool:
    """Whether the process ``pid`` has ``entry`` (NAME=value) in its environment (a process that
    ended has none left to read)."""
    try:
        return entry in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


def processes_with(entry: str) -> list[int]:
    """The pids of other live processes whose environment holds ``entry`` exactly (Linux); [] elsewhere."""
    wanted = entry.encode()
    proc = Path("/proc")
    return [int(path.name) for path in (proc.iterdir() if proc.is_dir() else [])
            if path.name.isdigit() and int(path.name) != os.getpid() and _holds(int(path.name), wanted)]


def carrying(batch_id: str) -> list[int]:
    """The pids of live processes that carry this batch's name."""
    return processes_with(f"{BATCH_ID_ENV}={batch_id}")


def _kill_if_carrying(pid: int, batch_id: str) -> bool:
    """SIGKILL ``pid`` if it carries the name, through a pidfd: the environment is read, and the
    signal sent, to the process the pidfd holds, even if ``pid`` is freed and given to another."""
    try:
        handle = os.pidfd_open(pid)
    except (OSError, AttributeError):
        return False
    try:
        if not _holds(pid, f"{BATCH_ID_ENV}={batch_id}".encode()):
            return False
        signal.pidfd_send_signal(handle, signal.SIGKILL)
        return True
    except OSError:
        return False
    finally:
        os.close(handle)


def end_batch_processes(batch_id: str, wait_seconds: float = END_WAIT_SECONDS) -> list[int]:
    """Kill every process carrying ``batch_id``, repeating while new ones appear (a chain forking
    as it dies); the pids killed."""
    ended: set[int] = set()
    deadline = time.monotonic() + wait_seconds
    while (left := carrying(batch_id)) and time.monotonic() < deadline:
        # A process signalled in the last sweep may not have died yet: it is signalled again,
        # and counted once.
        ended.update(pid for pid in left if _kill_if_carrying(pid, batch_id))
        time.sleep(0.01)
    return sorted(ended)
