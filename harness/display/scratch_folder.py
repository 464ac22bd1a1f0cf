"""A temporary folder that goes away with the Python process that made it.

Lessons and exercises write their runs under one of these: a kernel shut down or restarted from
Jupyter ends normally, its `atexit` handlers run (https://docs.python.org/3/library/atexit.html),
and nothing is left in the system's temporary folder run after run. A kernel that cannot run
them (killed outright, or ended by ``os._exit`` when its Jupyter server dies) leaves its folder;
beside it is a lock the kernel held while it ran (harness/abandoned_folders.py), so the next
kernel that asks for a folder, in any lesson, sees it is abandoned and removes it.
"""
from __future__ import annotations

import atexit
import contextlib
import os
import re
import tempfile
from pathlib import Path

from harness.abandoned_folders import claim, remove, remove_abandoned

_swept: set[tuple[str, str]] = set()  # (temp folder, pattern) already swept by this process
# mkdtemp's random tail is 8 of [a-z0-9_]: no hyphen, so "x-" never claims "x-1-<pid>-…".
_TAIL = r"([0-9]+)-[a-z0-9_]{8}"
# Any folder this module names (a prefix, the pid, the tail): swept only on a free lock.
_ANY_FOLDER = rf"[A-Za-z0-9_.-]*[A-Za-z_.-]{_TAIL}"


def _sweep(parent: str, prefix: str) -> None:
    """Once per process and folder: every folder whose free lock says it was left (any lesson's),
    and this prefix's older folders without a lock whose process is gone."""
    for pattern, by_pid in ((_ANY_FOLDER, False), (re.escape(prefix) + _TAIL, True)):
        if (parent, pattern) not in _swept:
            _swept.add((parent, pattern))
            remove_abandoned(Path(parent), re.compile(pattern), by_pid=by_pid)


_made: list[tuple[Path, int]] = []  # (folder, pid of the process that made it)


def remove_made_folders() -> None:
    """Remove the folders this process made: at its normal end, or sooner when it may not end
    normally (a pytest-xdist worker slow to finish is ended by ``os._exit``). A child forked from
    the maker inherits the list and the handler: it never takes its parent's folders with it."""
    for folder, maker in list(_made):
        if os.getpid() == maker:
            remove(folder)
            with contextlib.suppress(ValueError):  # another thread got there first
                _made.remove((folder, maker))


atexit.register(remove_made_folders)


def scratch_folder(prefix: str) -> Path:
    """A new empty folder ``<prefix><pid>-<random>`` under the system's temporary folder, removed
    when this process ends normally. The first call also removes the folders a process that
    ended without cleaning up left (``_sweep``). ``prefix`` ends in a character that is not a digit (``"licao-1-"``),
    or the pid after it could be read as part of it."""
    if not prefix or prefix[-1].isdigit():
        raise ValueError(f"o prefixo {prefix!r} precisa terminar num caractere que não seja dígito, como 'licao-1-'")
    parent = os.path.abspath(tempfile.gettempdir())  # a relative TMPDIR would move with os.chdir
    _sweep(parent, prefix)
    folder = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=parent))
    claim(folder, shared=True)
    _made.append((folder, os.getpid()))
    return folder
