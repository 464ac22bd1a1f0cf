"""Private temporary folders that never outlive their process for long.

A grading (``grade-PID-…``) and a batch (``grade-lote-PID-…``) each make one folder in the
system's temp folder and remove it when they end, after Ctrl-C too. Everything a batch's workers
and kernels make goes inside the batch's folder, so the workers it had to kill (Ctrl-C, a
submission past its deadline) leave nothing elsewhere. A process killed outright (kill -9, a
closed terminal's SIGHUP) cannot clean up: the next grading or batch of the same user removes
its folder, recognising it by the dead process id in the name.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

BATCH = "lote"
_NAME = re.compile(r"^grade-(?:lote-)?(\d+)-")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def remove_abandoned(parent: Path) -> list[Path]:
    """This user's grading and batch folders in ``parent`` whose process is gone; removed, and returned."""
    removed = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(parent):
            match = _NAME.match(entry.name)
            if not match or not entry.is_dir(follow_symlinks=False):
                continue
            with contextlib.suppress(OSError):
                # Never another user's folder, nor one whose process still runs (a pid now taken
                # by another live process keeps its folder until a later run).
                if entry.stat(follow_symlinks=False).st_uid != os.geteuid() or _alive(int(match.group(1))):
                    continue
                shutil.rmtree(entry.path, ignore_errors=True)
                removed.append(Path(entry.path))
    return removed


@contextlib.contextmanager
def scratch_folder(kind: str = "") -> Iterator[Path]:
    """A private folder (mode 700) for this process's temporary files, removed with all it holds at the end."""
    parent = Path(tempfile.gettempdir())
    remove_abandoned(parent)
    prefix = f"grade-{kind}-" if kind else "grade-"
    folder = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=parent))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
