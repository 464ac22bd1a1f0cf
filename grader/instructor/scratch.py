"""The batch's one scratch folder: every temporary folder its workers and kernels make lives
inside it, so nothing is left in the system's temp folder when the batch ends, however it ends.

A worker killed by the batch (Ctrl-C, a submission past its deadline) cannot remove its own
grading folders; the batch removes the whole scratch folder once its workers are gone. A batch
that was itself killed (kill -9, a closed terminal) leaves its folder behind; the next batch of
the same user removes it, recognising it by the dead process id in its name.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

PREFIX = "grade-lote-"
_NAME = re.compile(rf"^{re.escape(PREFIX)}(\d+)-")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def remove_abandoned(parent: Path) -> list[Path]:
    """Scratch folders of this user's batches whose process is gone; removed, and returned."""
    removed = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(parent):
            match = _NAME.match(entry.name)
            if not match or not entry.is_dir(follow_symlinks=False):
                continue
            with contextlib.suppress(OSError):
                # Only our own folders, and never one whose batch still runs (or whose pid now
                # belongs to another live process: then it waits for a later batch).
                if entry.stat(follow_symlinks=False).st_uid != os.geteuid() or _alive(int(match.group(1))):
                    continue
                shutil.rmtree(entry.path, ignore_errors=True)
                removed.append(Path(entry.path))
    return removed


@contextlib.contextmanager
def batch_scratch() -> Iterator[Path]:
    """A private folder for the batch's temporary files, removed with everything in it at the end."""
    parent = Path(tempfile.gettempdir())
    remove_abandoned(parent)
    folder = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=parent))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
