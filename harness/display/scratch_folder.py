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
import tempfile
from pathlib import Path

from harness.abandoned_folders import new_claimed_folder, remove

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
    ended without cleaning up left (harness/abandoned_folders.py). ``prefix`` ends in a character
    that is not a digit (``"licao-1-"``), or the pid after it could be read as part of it."""
    folder = new_claimed_folder(tempfile.gettempdir(), prefix)
    _made.append((folder, os.getpid()))
    return folder
