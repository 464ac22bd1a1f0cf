"""Temporary folders that say whether the process that made them still runs, and the sweep of
those whose process is gone.

A process that ends normally removes its own temporary folder; one killed outright (SIGKILL) or
ended by ``os._exit`` (a Jupyter kernel whose server died) cannot. Beside each folder,
``<folder>.dono`` is a file on which its process keeps an exclusive ``flock`` for as long as it
runs: the kernel drops the lock when the process ends, however it ends, and the lock is seen the
same from every PID namespace (a container sharing /tmp with its host). The lock lives beside the
folder, not in it, so what a lesson lists in its folder is only what it wrote, and a sandboxed
kernel, which owns its grading folder, cannot touch it. The folder's name also carries the process
id, for folders without a lock file (one being made, or one from an older version): those are
removed only when that id is free here and the folder is more than a few seconds old.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import stat
import tempfile
import threading
import time
from pathlib import Path

LOCK_SUFFIX = ".dono"
_MAKING = ".dono-novo"  # inside the new folder: the lock file before it is locked and linked out
_UNLOCKED_GRACE = 10.0  # seconds a folder without its lock file is taken to be still being made
_PID_MAX = 4194304  # Linux's highest possible pid (PID_MAX_LIMIT): above it, not a pid

_held: dict[str, int] = {}  # lock file path -> descriptor this process holds it by
_shared: list[str] = []  # lock files later folders may link to (one inode, one descriptor)
_claimed: set[str] = set()  # every lock file this process put beside a folder of its own
_guard = threading.Lock()  # claim and release from several threads at once


def lock_file(folder: Path | str) -> str:
    return f"{folder}{LOCK_SUFFIX}"


def may_be_running(pid: int) -> bool:
    """False only when no process ``pid`` exists here; another user's process, or a number no
    process can have (a name someone else chose), counts as running: its folder is left alone."""
    if not 0 < pid <= _PID_MAX:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def claim(folder: Path, *, shared: bool = False) -> bool:
    """Put beside ``folder`` a lock file this process holds; False, and no lock, when the
    filesystem or the moment cannot give one (no flock or hard links, descriptors exhausted, a
    name already taken): the folder is still this process's, swept by its pid alone. ``shared``:
    a hard link to the lock file of an earlier ``shared`` folder of this process, when it can (a
    lock belongs to the inode, so a process with hundreds of folders keeps one descriptor)."""
    target = lock_file(folder)
    with _guard:
        if shared:
            _release_unlinked()
            for source in reversed(_shared):
                with contextlib.suppress(OSError):
                    os.link(source, target)
                    _claimed.add(target)
                    return True
        descriptor = _new_lock(folder, target)
        if descriptor is None:
            return False
        _held[target] = descriptor
        _claimed.add(target)
        if shared:
            _shared.append(target)
        return True


def _new_lock(folder: Path, target: str) -> int | None:
    """A locked file made inside ``folder`` and moved out to ``target``: a sweep only ever sees it locked."""
    making = os.path.join(folder, _MAKING)
    try:
        descriptor = os.open(making, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        try:
            os.link(making, target)  # never over a file someone else put there
        except OSError as error:  # a filesystem without hard links (FAT): a rename, if the name is free
            if isinstance(error, FileExistsError) or os.path.lexists(target):
                raise
            os.rename(making, target)
    except OSError:
        os.close(descriptor)
        descriptor = None
    with contextlib.suppress(OSError):
        os.unlink(making)
    return descriptor


def release(folder: Path | str) -> None:
    """Drop the lock file this process put beside ``folder`` (the folder is being removed); a
    folder it never claimed keeps its lock, whoever holds it."""
    path = lock_file(folder)
    with _guard:
        if path not in _claimed:
            return
        _claimed.discard(path)
        with contextlib.suppress(OSError):
            os.unlink(path)
        if path in _shared:
            return  # other folders may link to its inode: closed once none does (_release_unlinked)
        descriptor = _held.pop(path, None)
        if descriptor is not None:
            with contextlib.suppress(OSError):
                os.close(descriptor)


def remove(folder: Path | str) -> bool:
    """Remove ``folder`` with all it holds, then its lock file; True once it is gone. A folder
    that stays keeps its lock file, so that a later sweep, once the lock is free, takes both."""
    shutil.rmtree(folder, ignore_errors=True)
    if os.path.lexists(folder):
        return False
    release(folder)
    return True


def _release_unlinked() -> None:
    """Close the shared locks no folder links to any more (their folders were removed)."""
    for path in list(_shared):
        descriptor = _held.get(path)
        with contextlib.suppress(OSError):
            if descriptor is not None and os.fstat(descriptor).st_nlink > 0:
                continue
        _shared.remove(path)
        _held.pop(path, None)
        if descriptor is not None:
            with contextlib.suppress(OSError):
                os.close(descriptor)


def _owner_holds(path: str) -> bool | None:
    """True while the lock file's owner runs (or it cannot tell), False once nobody holds this
    user's lock file, None when there is none."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return True  # a link, a device, a FIFO: never opened, and the folder stays
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError:  # something unreadable: cannot tell, so the folder stays
        return True
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            return True
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return False
    finally:
        os.close(descriptor)  # drops the lock just taken, if any


def _abandoned(entry: os.DirEntry, pid: int, by_pid: bool) -> bool:
    holds = _owner_holds(lock_file(entry.path))
    if holds is not None:
        return not holds  # this user's lock file, and nobody holds it: the folder was ours
    if not by_pid:
        return False
    info = entry.stat(follow_symlinks=False)
    if info.st_uid != os.geteuid():
        return False  # never another user's folder
    # No lock file: a folder being made, or one from before they had one. A pid now taken by
    # another live process keeps its folder until a later sweep.
    return time.time() - info.st_mtime >= _UNLOCKED_GRACE and not may_be_running(pid)


def _remove_lock_if_free(path: str) -> None:
    if _owner_holds(path) is False:
        with contextlib.suppress(OSError):
            os.unlink(path)


def remove_abandoned(parent: Path, name: re.Pattern[str], *, by_pid: bool = True) -> list[Path]:
    """This user's folders in ``parent`` whose whole name matches ``name`` (group 1: the process
    id) and whose process is gone; removed, and returned. Symlinks and other users' folders are
    never followed nor removed. ``by_pid=False``: only folders whose free lock file proves they
    were this user's (for a name shape other programs might also use)."""
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return []
    removed = []
    for entry in entries:
        with contextlib.suppress(OSError, ValueError):
            if entry.name.endswith(LOCK_SUFFIX) and name.fullmatch(entry.name[:-len(LOCK_SUFFIX)]):
                if not os.path.lexists(entry.path[:-len(LOCK_SUFFIX)]):
                    _remove_lock_if_free(entry.path)  # its folder is gone; the lock was left
                continue
            match = name.fullmatch(entry.name)
            if not match or not entry.is_dir(follow_symlinks=False) or not _abandoned(entry, int(match.group(1)), by_pid):
                continue
            shutil.rmtree(entry.path, ignore_errors=True)
            if not os.path.lexists(entry.path):
                removed.append(Path(entry.path))
                _remove_lock_if_free(lock_file(entry.path))
    return removed


_swept: set[tuple[str, str]] = set()  # (parent folder, pattern) already swept by this process
# mkdtemp's random tail is 8 of [a-z0-9_]: no hyphen, so "x-" never claims "x-1-<pid>-…".
_TAIL = r"([0-9]+)-[a-z0-9_]{8}"
# The prefixes ``new_claimed_folder`` takes: no separator (the folder stays in its parent) and a
# last character that is not a digit (the pid after it stays apart), so the sweep below finds
# every folder it names.
_PREFIX = r"[A-Za-z0-9_.-]*[A-Za-z_.-]"
# Any folder ``new_claimed_folder`` names (a prefix, the pid, the tail): swept only on a free lock.
_ANY_FOLDER = _PREFIX + _TAIL


def _sweep(parent: str, prefix: str) -> None:
    """Once per process and folder: every folder whose free lock says it was left (any prefix's),
    and this prefix's older folders without a lock whose process is gone."""
    for pattern, by_pid in ((_ANY_FOLDER, False), (re.escape(prefix) + _TAIL, True)):
        if (parent, pattern) not in _swept:
            _swept.add((parent, pattern))
            remove_abandoned(Path(parent), re.compile(pattern), by_pid=by_pid)


def new_claimed_folder(parent: Path | str, prefix: str) -> Path:
    """A new empty folder ``<prefix><pid>-<random>`` in ``parent``, with this process's lock
    beside it. The first call per parent and prefix also removes what processes gone without
    cleaning up left there (``_sweep``). ``prefix`` is made of ASCII letters, digits, ``_``,
    ``.`` and ``-`` and ends in a character that is not a digit (``"licao-1-"``)."""
    if not re.fullmatch(_PREFIX, prefix):
        raise ValueError(f"o prefixo {prefix!r} precisa ter só letras sem acento, dígitos, '_', '.' ou '-' e "
                         "terminar num caractere que não seja dígito, como 'licao-1-'")
    parent = os.path.abspath(parent)  # a relative TMPDIR would move with os.chdir
    _sweep(parent, prefix)
    folder = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=parent))
    claim(folder, shared=True)
    return folder
