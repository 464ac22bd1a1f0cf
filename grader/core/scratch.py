"""Private temporary folders that never outlive their process for long.

A grading (``grade-PID-…``), a batch (``grade-lote-PID-…``) and a kernel template's socket
(``grade-template-PID-…``, grader/core/forked_kernels.py) each make one folder and remove it when
they end, after Ctrl-C too. Both live in one folder per user inside the system's temp
folder (``grade-tmp-UID``, mode 700), so looking for abandoned ones reads a handful of names,
not a shared /tmp of thousands. Everything a batch's workers
and kernels make goes inside the batch's folder, so the workers it had to kill (Ctrl-C, a
submission past its deadline) leave nothing elsewhere. A process killed outright (kill -9) cannot
clean up, and one whose terminal closed (SIGHUP) may not: the next grading or batch of the same
user removes its folder, recognising it by the lock the process no longer holds
(harness/abandoned_folders.py).
"""
from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
import time
from pathlib import Path
from typing import Iterator

from harness import abandoned_folders

BATCH = "lote"
TEMPLATE = "template"
# The whole name mkdtemp gives: the pid, then 8 of [a-z0-9_].
_NAME = re.compile(rf"grade-(?:{BATCH}-|{TEMPLATE}-)?([0-9]+)-[a-z0-9_]{{8}}")


def remove_abandoned(parent: Path) -> list[Path]:
    """This user's grading, batch and template folders in ``parent`` whose process is gone; removed, and returned."""
    return abandoned_folders.remove_abandoned(parent, _NAME)


_placed_in: Path | None = None


def place_in(folder: Path) -> None:
    """Make every later grading folder of this process directly in ``folder`` (a sandboxed
    worker's folder of grading folders: mode 711, so that each kernel, running as its own user,
    reaches its own folder and cannot list the others')."""
    global _placed_in
    _placed_in = Path(folder)


def _private_parent(root: str | None = None) -> Path | None:
    """This user's folder of grading folders in ``root`` (the temp folder), made if needed; None when
    the name is taken by something that is not this user's private folder (a file, a symlink,
    another user's folder)."""
    parent = Path(root or tempfile.gettempdir()) / f"grade-tmp-{os.geteuid()}"
    try:
        os.mkdir(parent, 0o700)
    except FileExistsError:
        pass
    except OSError:  # a temp folder we cannot write to: the mkdtemp after this says so
        return None
    try:
        info = os.lstat(parent)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        return None
    return parent


def new_scratch(kind: str = "", root: str | None = None) -> Path:
    """A private folder (mode 700) for this process's temporary files, in ``root`` when given (else
    the temp folder); the caller removes it (``remove``). Abandoned folders of this user are removed first."""
    parent = _private_parent(root) if root else _placed_in or _private_parent()
    if parent is None:  # never sweep a folder someone else controls: just make ours beside it,
        parent = Path(root or tempfile.gettempdir())  # and sweep there only what our free locks prove ours
        abandoned_folders.remove_abandoned(parent, _NAME, by_pid=False)
    else:
        remove_abandoned(parent)
    prefix = f"grade-{kind}-" if kind else "grade-"
    folder = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=parent))
    abandoned_folders.claim(folder)
    return folder


def remove(folder: Path, attempts: int = 20) -> None:
    """Remove ``folder``; try again for a moment if something still writing in it (a kernel a
    killed worker left, still dying) made a file after the walk passed, so the folder survives."""
    for attempt in range(attempts):
        if abandoned_folders.remove(folder):
            return
        time.sleep(0.05 * (attempt + 1))


@contextlib.contextmanager
def scratch_folder(kind: str = "") -> Iterator[Path]:
    """``new_scratch``, removed with all it holds when the block ends (an exception included)."""
    folder = new_scratch(kind)
    try:
        yield folder
    finally:
        remove(folder)
