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
import re
from collections.abc import Callable, Mapping

MEMORY_FOLDER = "/dev/shm"
# A whole run, keeping every test's folder, peaks near 400 MB; a run on a tmpfs smaller than
# this could fill it, and memory with it.
MINIMUM_FREE_BYTES = 2 * 1024**3
# Set beside TMPDIR when the suite chose the folder itself, so its xdist workers and children,
# which inherit both, know the TMPDIR they see was the suite's choice and not their caller's.
CHOSEN_BY_SUITE = "COURSE_TESTS_TEMP_ROOT"
# What Python's tempfile reads, in its order (https://docs.python.org/3/library/tempfile.html#tempfile.gettempdir),
# and pytest's own override of its root.
CALLER_CHOICES = ("TMPDIR", "TEMP", "TMP", "PYTEST_DEBUG_TEMPROOT")


def unescape_mount_field(field: str) -> str:
    """A field of /proc/self/mounts as the path it names: the kernel writes a space, tab, newline
    and backslash in a path as three octal digits after a backslash (`\\040` for a space)."""
    return re.sub(r"\\([0-7]{3})", lambda escape: chr(int(escape.group(1), 8)), field)


def mount_entries(mounts: str) -> list[tuple[str, str, set[str]]]:
    """(mount point, type, options) per well-formed line of /proc/self/mounts, in mount order."""
    # Only a space parts the fields and only a newline ends a line: the kernel escapes those in a
    # path, and nothing else, so str.split()'s other whitespace (a no-break space, \x0b) is
    # part of the path.
    lines = (line.split(" ") for line in mounts.split("\n"))
    return [(unescape_mount_field(fields[1]), fields[2], set(fields[3].split(",")))
            for fields in lines if len(fields) >= 4]


def mounted_as_tmpfs(mounts: str, folder: str) -> bool:
    """Whether `folder` is a mount point of type tmpfs whose files may be run.

    Tests write small programs into their folders and run them (a stand-in `python3` on PATH),
    which a `noexec` mount (Docker's /dev/shm) refuses."""
    entries = [(kind, options) for point, kind, options in mount_entries(mounts) if point == folder]
    if not entries:
        return False
    kind, options = entries[-1]  # the last mount on a point is the one in use
    return kind == "tmpfs" and "noexec" not in options


def filesystem_of(mounts: str, path: str) -> str:
    """The type of the mount that holds `path` (an absolute, resolved path), "" when none is listed."""
    holding = [(point, kind) for point, kind, _ in mount_entries(mounts)
               if path == point or path.startswith(point.rstrip("/") + "/")]
    if not holding:
        return ""
    longest = max(len(point) for point, _ in holding)
    return [kind for point, kind in holding if len(point) == longest][-1]


def free_bytes(folder: str) -> int:
    status = os.statvfs(folder)
    return status.f_bavail * status.f_frsize


def memory_backed_temp_root(environ: Mapping[str, str], read_mounts: Callable[[], str],
                            free: Callable[[str], int] = free_bytes,
                            writable: Callable[[str], bool] = lambda folder: os.access(folder, os.W_OK | os.X_OK),
                            folder: str = MEMORY_FOLDER) -> str | None:
    """The folder to give the suite as TMPDIR, or None to leave the temporary root alone."""
    chosen = environ.get(CHOSEN_BY_SUITE)
    if chosen and environ.get("TMPDIR") == chosen and not environ.get("PYTEST_DEBUG_TEMPROOT"):
        return chosen  # a worker or child of a session that chose it
    if any(environ.get(name) for name in CALLER_CHOICES):
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
