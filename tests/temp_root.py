"""Where the suite's temporary files go: a memory-backed folder when the machine has one with room.

Most tests write checkpoints, ledgers and notebooks and swap them in atomically; on a disk each
new file and each rename costs a journal write (about ten times a tmpfs's cost on a 2-core CI
machine), and each fsync a flush. The tests kill processes, never the machine, so what they
check (a file whole or absent after a crash) is the same on tmpfs: the page cache outlives a
killed process either way. The Linux kernel documents tmpfs at
https://docs.kernel.org/filesystems/tmpfs.html.

A TMPDIR the caller set is kept. Without one, the suite uses /dev/shm when it is a tmpfs this
user can write with enough room free, and the system's default otherwise.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping

MEMORY_FOLDER = "/dev/shm"
# A whole run, keeping every test's folder, peaks near 400 MB; a run on a tmpfs smaller than
# this could fill it, and memory with it.
MINIMUM_FREE_BYTES = 2 * 1024**3


def mounted_as_tmpfs(mounts: str, folder: str) -> bool:
    """Whether `folder` is a mount point of type tmpfs in the text of /proc/self/mounts."""
    kinds = [fields[2] for fields in map(str.split, mounts.splitlines()) if len(fields) >= 3 and fields[1] == folder]
    return bool(kinds) and kinds[-1] == "tmpfs"  # the last mount on a point is the one in use


def free_bytes(folder: str) -> int:
    status = os.statvfs(folder)
    return status.f_bavail * status.f_frsize


def memory_backed_temp_root(environ: Mapping[str, str], read_mounts: Callable[[], str],
                            free: Callable[[str], int] = free_bytes,
                            writable: Callable[[str], bool] = lambda folder: os.access(folder, os.W_OK | os.X_OK),
                            folder: str = MEMORY_FOLDER) -> str | None:
    """The folder to give the suite as TMPDIR, or None to leave the temporary root alone."""
    if environ.get("TMPDIR") or environ.get("PYTEST_DEBUG_TEMPROOT"):
        return None  # the caller chose
    try:
        if not mounted_as_tmpfs(read_mounts(), folder) or not writable(folder):
            return None
        return folder if free(folder) >= MINIMUM_FREE_BYTES else None
    except OSError:  # no /proc (not Linux), or the folder went away
        return None


def read_proc_mounts() -> str:
    with open("/proc/self/mounts", encoding="utf-8", errors="replace") as mounts:
        return mounts.read()
