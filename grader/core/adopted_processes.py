"""What a batch started, however far down, ends with the batch.

A batch kills its workers outright (Ctrl-C, a submission past its deadline). What a killed
worker had started lives on without it: a kernel it launched itself (jupyter_client gives each
kernel a session of its own, so killing the worker's group misses it), and whatever a
submission's code started in a session of its own. Until their own checks notice, such
orphans keep working in the batch's folder, and one that makes a folder there after the batch
removed it leaves that folder behind (its ``mkdir(parents=True)`` makes the whole path again).

On Linux a process can ask to be given its orphaned descendants instead of init
(``PR_SET_CHILD_SUBREAPER``, https://man7.org/linux/man-pages/man2/prctl.2.html). The batch's
command asks, and before it removes its folder it kills and reaps every child it still has:
by then its own children (the workers, the kernel template) are gone, so whatever is left
was adopted. Elsewhere, or when the request fails, nothing changes.
"""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import time

from grader.core.kernel import children

_PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
# Killed processes are gone within milliseconds; a process stuck in the kernel (a dead NFS
# mount) is not waited for past this.
END_WAIT_SECONDS = 5.0


def adopt_orphans() -> bool:
    """Ask to be given this process's orphaned descendants (Linux); True when the system agreed."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _kill(pid: int) -> None:
    """SIGKILL ``pid``, and the group it leads (what it started there), never this process's own group."""
    with contextlib.suppress(OSError):
        if os.getpgid(pid) == pid and pid != os.getpgrp():
            os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)


def end_adopted(wait_seconds: float = END_WAIT_SECONDS) -> list[int]:
    """Kill and reap every child this process still has, and those that arrive as each one's own
    children are orphaned in turn; the pids ended. Only for a process whose own children have
    all ended (a batch after its workers and template), and that asked to adopt orphans."""
    ended: list[int] = []
    deadline = time.monotonic() + wait_seconds
    while (left := children()) and time.monotonic() < deadline:
        for pid in sorted(left):
            _kill(pid)
            try:
                reaped, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # reaped already (a Popen's wait)
                continue
            if reaped:
                ended.append(pid)
        time.sleep(0.01)
    return ended
