"""Watching how student code writes files: which files it opens for writing, and a
process "dying" in the middle of a write (the file stops accepting bytes after a budget of
characters and the write raises ``TornWrite``, a BaseException no ``except Exception``
catches, like a real death).

Every way the student's code can open a file goes through the spy: ``builtins.open``,
``io.open`` (pathlib, os.fdopen, tempfile, the harness's own atomic write) and the
notebook's own ``open`` (IPython binds one there).
"""
from __future__ import annotations

import builtins
import io
import os
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from grader.checks.framework import Context


class TornWrite(BaseException):
    """The grader's crash in the middle of a write."""


def _died(budget: dict) -> None:
    budget["left"] = 0
    budget["crashed"] = True
    if budget.get("on_crash") is not None:
        budget["on_crash"]()
    raise TornWrite("queda simulada no meio da gravação")


class CrashingFile:
    """A file that accepts ``budget["left"]`` more characters and then 'dies' mid-write."""

    def __init__(self, real, budget: dict):
        self._real = real
        self._budget = budget

    def write(self, data):
        left = self._budget["left"]
        if left is None or len(data) <= left:
            if left is not None:
                self._budget["left"] -= len(data)
            return self._real.write(data)
        self._real.write(data[:left])
        self._real.flush()
        _died(self._budget)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return self._real.__exit__(*exc_info)

    def __iter__(self):
        return iter(self._real)

    def __getattr__(self, name):
        return getattr(self._real, name)


def named_by_descriptor(handle) -> Path | None:
    """The path of the file open in ``handle`` (Linux: /proc/self/fd), or None."""
    try:
        return named_by_descriptor_number(handle.fileno())
    except (OSError, ValueError, AttributeError):
        return None


def named_by_descriptor_number(descriptor: int) -> Path | None:
    """The path of the file open as ``descriptor`` (Linux: /proc/self/fd), or None."""
    try:
        where = os.readlink(f"/proc/self/fd/{descriptor}")
    except OSError:
        return None
    return Path(where) if where.startswith("/") and not where.endswith(" (deleted)") else None


@contextmanager
def bound_everywhere(ctx: Context, spies: dict[str, Any], real: dict[str, Any]) -> Iterator[None]:
    """Each spy (name -> function) also bound to every student global holding the real
    function of that name (``from os import replace``); the module attributes themselves are
    the caller's job."""
    pairs = [(key, spy) for name, spy in spies.items() for key in ctx.names_bound_to(real[name])]
    with replaced_globals(ctx, pairs):
        yield


@contextmanager
def replaced_globals(ctx: Context, pairs: list[tuple[str, Any]]) -> Iterator[None]:
    """``ctx.replaced_global`` for several names at once."""
    if not pairs:
        yield
        return
    name, value = pairs[0]
    with ctx.replaced_global(name, value), replaced_globals(ctx, pairs[1:]):
        yield


@contextmanager
def observed_writes(ctx: Context, crash_after: int | None = None,
                    before_open: Callable[[Any, str], None] | None = None,
                    on_crash: Callable[[], None] | None = None) -> Iterator[dict]:
    """Record every file opened for writing (``budget["opened"]``, resolved paths, by name or
    by descriptor (``os.fdopen``);
    ``budget["opened_by"]``, (thread id, path) pairs; ``budget["modes"]``, (path, mode)
    pairs; ``budget["handles"]``, how many files were opened for writing, by name or by
    descriptor); with ``crash_after``, the writes die after that many characters in all
    (``budget["crashed"]``), and ``on_crash()`` runs at that moment, before the student's
    code can clean anything up. ``before_open(file, mode)`` runs before each real open for
    writing (the crash-state explorer's snapshot); ``file`` is what the code passed, a
    descriptor (an int) for ``os.fdopen``."""
    budget: dict = {"left": crash_after, "crashed": False, "opened": [], "opened_by": [], "modes": [],
                    "handles": 0, "on_crash": on_crash}
    real_builtin, real_io = builtins.open, io.open

    def spied_open(file, mode="r", *args, **kwargs):
        writing = isinstance(mode, str) and any(flag in mode for flag in "wax+")
        # with an opener, ``file`` need not name the file opened (NamedTemporaryFile passes its folder)
        named = isinstance(file, (str, bytes, os.PathLike)) and kwargs.get("opener") is None
        if writing and before_open is not None and named:
            before_open(file, mode)
        elif writing and before_open is not None and isinstance(file, int):
            # os.fdopen(os.open(...)), as the harness's own atomic write does: the hook gets the descriptor
            try:
                before_open(file, mode)
            except BaseException:
                os.close(file)  # a process that dies closes its descriptors
                raise
        handle = real_io(file, mode, *args, **kwargs)
        if writing:
            budget["handles"] += 1
            if named:
                opened = Path(os.fsdecode(file)).resolve()
                budget["modes"].append((opened, mode))
            else:  # os.fdopen(fd) (mkstemp's): the file the descriptor names, if it still has a name
                opened = named_by_descriptor(handle)
            if opened is not None:
                budget["opened"].append(opened)
                budget["opened_by"].append((threading.get_ident(), opened))
            return CrashingFile(handle, budget)
        return handle

    real_write = os.write

    def spied_write(descriptor, data):  # a save written with os.open/os.write tears the same way
        left = budget["left"]
        if left is None or len(data) <= left:
            if left is not None:
                budget["left"] -= len(data)
            return real_write(descriptor, data)
        real_write(descriptor, bytes(data[:left]))
        _died(budget)

    bound = [("open", spied_open)] + [
        (name, spied_open) for function in {real_builtin, real_io}
        for name in ctx.names_bound_to(function) if name != "open"
    ]
    if crash_after is not None:
        bound += [(name, spied_write) for name in ctx.names_bound_to(real_write)]
        os.write = spied_write
    builtins.open = io.open = spied_open
    try:
        with replaced_globals(ctx, bound):
            yield budget
    finally:
        builtins.open, io.open = real_builtin, real_io
        os.write = real_write


_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def opened_path(file: Any, dir_fd: int | None = None) -> Path | None:
    """The absolute path an open names: a descriptor's file (os.fdopen), or a name relative to
    ``dir_fd`` (os.open(..., dir_fd=...), as the harness's atomic write does) or to the cwd."""
    if isinstance(file, int):
        return named_by_descriptor_number(file)
    if not isinstance(file, (str, bytes, os.PathLike)):
        return None
    name = os.fsdecode(file)
    if dir_fd is not None and not os.path.isabs(name):
        base = named_by_descriptor_number(dir_fd)
        if base is None:
            return None
        name = os.path.join(base, name)
    name = os.path.abspath(name)
    return Path(os.path.realpath(os.path.dirname(name))) / os.path.basename(name)


@contextmanager
def dying_os_open(ctx: Context, hook: Any) -> Iterator[None]:
    """``os.open`` for writing runs ``hook(path)`` first (mkstemp, NamedTemporaryFile and the harness's
    own save all open through it); the student's ``from os import open as ...`` names too."""
    real = os.open

    def spied(path, flags, mode=0o777, *, dir_fd=None):
        if flags & _WRITE_FLAGS:
            where = opened_path(path, dir_fd)
            if where is not None:
                hook(where)
        return real(path, flags, mode, dir_fd=dir_fd)

    os.open = spied
    try:
        with bound_everywhere(ctx, {"open": spied}, {"open": real}):
            yield
    finally:
        os.open = real


__all__ = ["CrashingFile", "TornWrite", "bound_everywhere", "dying_os_open", "named_by_descriptor_number",
           "observed_writes", "opened_path", "replaced_globals"]
