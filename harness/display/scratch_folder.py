"""A temporary folder that goes away with the Python process that made it.

Lessons and exercises write their runs under one of these: a kernel shut down or restarted from
Jupyter ends normally, its `atexit` handlers run (https://docs.python.org/3/library/atexit.html),
and nothing is left in the system's temporary folder run after run.
"""
from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path


def scratch_folder(prefix: str) -> Path:
    """A new empty folder under the system's temporary folder, removed when this process ends
    normally (a process killed outright leaves it to the system's own clean-up of /tmp)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder
