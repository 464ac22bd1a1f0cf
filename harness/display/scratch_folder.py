"""A temporary folder that goes away with the Python process that made it.

Lessons and exercises write their runs under one of these: a kernel shut down or restarted from
Jupyter ends normally, its `atexit` handlers run (https://docs.python.org/3/library/atexit.html),
and nothing is left in the system's temporary folder run after run. A kernel that cannot run
them (killed outright, or ended by ``os._exit`` when its Jupyter server dies) leaves its folder;
the folder's name holds the kernel's process id, so the next kernel that asks for a folder with
the same prefix removes it.
"""
from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
from pathlib import Path

from harness.abandoned_folders import remove_abandoned

_swept: set[tuple[str, str]] = set()  # (temp folder, prefix) already swept by this process


def _named(prefix: str) -> re.Pattern[str]:
    # mkdtemp's random tail is 8 of [a-z0-9_]: no hyphen, so "x-" never claims "x-1-<pid>-…".
    return re.compile(rf"^{re.escape(prefix)}(\d+)-[a-z0-9_]{{8}}$")


def scratch_folder(prefix: str) -> Path:
    """A new empty folder ``<prefix><pid>-<random>`` under the system's temporary folder, removed
    when this process ends normally. The first call for a prefix also removes the folders of that
    prefix whose process is gone."""
    parent = tempfile.gettempdir()
    if (parent, prefix) not in _swept:
        _swept.add((parent, prefix))
        remove_abandoned(Path(parent), _named(prefix))
    folder = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=parent))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder
