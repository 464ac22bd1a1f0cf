"""Writing a file someone keeps (a gradebook, a feedback page, a generated exercise) atomically.

A reader sees the old file or the new one, never half of either, even when the writer is
killed or the machine loses power mid-write:

1. the bytes go to a temporary file in the same folder, under a name no other writer can take
   (created with O_CREAT | O_EXCL, so two writers of the same file never share a temporary);
2. the temporary is flushed and fsynced, so its bytes are on disk before it gets the name;
3. ``os.replace`` gives it the final name in one step (atomic within a file system: POSIX
   rename(2), https://pubs.opengroup.org/onlinepubs/9799919799/functions/rename.html);
4. the folder is fsynced, so the new name itself survives a power cut (the rename is an
   entry of the folder: https://man7.org/linux/man-pages/man2/fsync.2.html, NOTES).

A file being replaced keeps its permission bits; a new one gets the usual 0o666 less the
umask, as ``open(path, "w")`` would give it. On any error the temporary is removed and the
old file is left as it was.

This is the only place in ``grader/`` and ``authoring/`` that moves a file into place
(``tests/test_atomic_write.py`` scans for others).
"""
from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)


def _open_temporary(path: Path) -> tuple[int, Path]:
    """A new, empty file beside ``path`` under a name of its own: (descriptor, name)."""
    while True:
        temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(temporary, _NEW_FILE, 0o666), temporary
        except FileExistsError:  # another writer's temporary (one chance in 2**48): draw again
            continue


def _keep_permissions(descriptor: int, path: Path) -> None:
    try:
        kept = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return
    if hasattr(os, "fchmod"):
        os.fchmod(descriptor, kept)


def _sync_folder(folder: Path) -> None:
    if not hasattr(os, "O_DIRECTORY"):  # Windows: a folder cannot be opened, and NTFS journals the rename
        return
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


@contextmanager
def atomic_file(path: Path | str) -> Iterator[BinaryIO]:
    """A binary file to write ``path``'s new content into; it takes the name only when the block
    ends without an error. For writers that stream (a zip archive)."""
    path = Path(path)
    descriptor, temporary = _open_temporary(path)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            _keep_permissions(handle.fileno(), path)
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    _sync_folder(path.parent)


def write_atomic(path: Path | str, content: str | bytes) -> None:
    """Replace ``path`` with ``content`` (text is written as UTF-8) in one step; the folder must exist."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    with atomic_file(path) as handle:
        handle.write(data)
