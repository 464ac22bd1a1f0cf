"""Folders whose name carries the id of the process that made them, and the sweep of those whose
process is gone.

A process that ends normally removes its own temporary folder; one killed outright (SIGKILL) or
ended by ``os._exit`` (a Jupyter kernel whose server died) cannot. Putting the process id in the
folder's name lets the next process of the same kind find such folders and remove them.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
from pathlib import Path


def may_be_running(pid: int) -> bool:
    """False only when no process ``pid`` exists; another user's process, or a number no process
    can have (a name someone else chose), counts as running: its folder is left alone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


def remove_abandoned(parent: Path, name: re.Pattern[str]) -> list[Path]:
    """This user's folders in ``parent`` whose name matches ``name`` (group 1: the process id)
    and whose process is gone; removed, and returned. Symlinks and other users' folders are never
    followed nor removed."""
    removed = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(parent):
            match = name.match(entry.name)
            if not match or not entry.is_dir(follow_symlinks=False):
                continue
            with contextlib.suppress(OSError):
                # A pid now taken by another live process keeps its folder until a later sweep.
                if entry.stat(follow_symlinks=False).st_uid != os.geteuid() or may_be_running(int(match.group(1))):
                    continue
                shutil.rmtree(entry.path, ignore_errors=True)
                removed.append(Path(entry.path))
    return removed
