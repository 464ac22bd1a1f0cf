"""The grader's files in a grading folder: a folder the student's code may write too.

Under ``--sandbox`` the kernel runs as a user of its own, but its grading folder is its
own as well: code in it can put a symbolic link (to /etc/shadow, /root/.bashrc, another
student's notebook), a FIFO or a directory under any name the grader uses later. The
grader runs outside the sandbox, as the instructor or as root, so it never follows such a
name: it makes its files afresh (whatever had the name is removed first, and the new file
is created with O_EXCL, which never follows a link), opens without following a link, and
reads only regular files, and only so much of them.
"""
from __future__ import annotations

import errno
import os
import shutil
import stat
from pathlib import Path
from typing import BinaryIO

_NO_FOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC


def _not_regular(path: Path) -> OSError:
    return OSError(errno.EINVAL, "não é um arquivo comum (um link, uma pasta ou um pipe postos ali?)", str(path))


def clear_name(path: Path) -> None:
    """Remove whatever has this name: a file, a link (not what it points to), a folder and its tree."""
    try:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            shutil.rmtree(path)  # works on descriptors and removes links without following them
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass


def write_new(path: Path, text: str) -> None:
    """Write ``text`` to a new file at ``path``, replacing (never following) whatever had the name."""
    clear_name(path)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NO_FOLLOW, 0o644)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(text)


def open_append(path: Path) -> BinaryIO:
    """The regular file at ``path`` opened for appending; anything else under that name (a link, a
    folder, a pipe, a file with other names) is replaced by a new empty file."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | _NO_FOLLOW, 0o644)
    except OSError:  # a link (ELOOP), a folder (EISDIR)...
        descriptor = None
    if descriptor is not None:
        found = os.fstat(descriptor)
        if stat.S_ISREG(found.st_mode) and found.st_nlink == 1:
            os.set_blocking(descriptor, True)
            return os.fdopen(descriptor, "ab")
        os.close(descriptor)
    clear_name(path)
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | _NO_FOLLOW, 0o644), "ab")


def read_bytes(path: Path, limit: int, tail: bool = False) -> bytes:
    """At most ``limit`` bytes of the regular file at ``path`` (its end when ``tail``); OSError otherwise."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | _NO_FOLLOW)
    try:
        found = os.fstat(descriptor)
        if not stat.S_ISREG(found.st_mode):
            raise _not_regular(path)
        if tail and found.st_size > limit:
            os.lseek(descriptor, found.st_size - limit, os.SEEK_SET)
        chunks, left = [], limit
        while left > 0:
            chunk = os.read(descriptor, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(descriptor)


def read_text(path: Path, limit: int, tail: bool = False) -> str:
    return read_bytes(path, limit, tail).decode("utf-8", errors="replace")


def size(path: Path) -> int:
    """The size of the regular file at ``path``, 0 for anything else (a link is not followed)."""
    try:
        found = os.lstat(path)
    except OSError:
        return 0
    return found.st_size if stat.S_ISREG(found.st_mode) else 0
