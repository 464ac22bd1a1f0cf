"""Level 1's probe: the student's ``save_checkpoint`` run with the operating system's calls observed, a write that dies midway, a state that cannot be written."""
from __future__ import annotations

import copy
import json
import os
import shutil
import stat
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from grader.checks.framework import CheckFailed, Context, StudentProblem, show
from grader.checks.write_spies import observed_writes, replaced_globals


CHECKPOINT_NAME = "checkpoint.json"
SWAP_EVENTS = ("replace", "rename", "link")


CRASH_AFTER_CHARACTERS = 300


def state_to_save(label: str, turns: int) -> dict:
    """A run state big enough (~100 KB) that writing it takes many write() calls."""
    messages: list[dict] = [{"role": "user", "content": f"Tarefa {label}: resumir as atas do trimestre."}]
    for number in range(1, 61):
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Turno {number}: decisões e pendências da reunião, com ação e prazo. " * 12},
        ]})
        messages.append({"role": "user", "content": f"Continue a partir da ata {number}. " * 20})
    return {"version": 1, "task": f"Tarefa {label}", "turns": turns, "tokens_used": 950 * turns,
            "messages": messages, "pending_tool_use": None, "save_point": "B"}


@dataclass
class SaveRun:
    folder: Path
    path: Path
    state: dict
    events: list[tuple] = field(default_factory=list)
    files_after: list[str] = field(default_factory=list)
    written: Any = None  # the parsed checkpoint, or the reason it could not be parsed
    opened: list[Path] = field(default_factory=list)  # files the second save opened for writing

    def temporaries(self) -> list[str]:
        """Names of the files, other than the checkpoint, that the second save wrote or moved."""
        moved = [Path(event[1]).resolve() for event in self.events if event[0] in SWAP_EVENTS]
        target = self.path.resolve()
        return sorted({path.name for path in self.opened + moved if path != target})


@contextmanager
def os_spies(ctx: Context, events: list) -> Iterator[None]:
    """Record the swaps (os.replace, os.rename, os.link, and shutil.move, Path.rename and
    Path.replace, named as the student wrote them) and the os.fsync calls, then do them for
    real, wherever the student's code reaches them: the modules and any global bound to the
    real function. A swap event is (kind, src, dst, via): src and dst as full paths when
    given relative to a folder descriptor (src_dir_fd, dst_dir_fd); via is "shutil.move" when
    the os.rename came from inside one, None when the student called os.* directly. An fsync
    (or fdatasync: both make a file's bytes durable) event is ("fsync", "file" | "folder",
    inode, size, folder shown)."""
    from harness.crash_states import REAL_MOVES, folder_shown, opened_folder

    real = {"replace": os.replace, "rename": os.rename, "link": os.link, "fsync": os.fsync,
            "fdatasync": os.fdatasync}
    outer = threading.local()

    def at(path, dir_fd):
        text = os.fspath(path)
        if dir_fd is None or os.path.isabs(text):
            return text
        return os.path.join(opened_folder(dir_fd), os.fsdecode(text))

    def swapping(name):
        def spy(src, dst, *args, **kwargs):
            events.append((name, at(src, kwargs.get("src_dir_fd")), at(dst, kwargs.get("dst_dir_fd")),
                           getattr(outer, "via", None)))
            return real[name](src, dst, *args, **kwargs)
        return spy

    def via(label):
        function = REAL_MOVES[label]

        def spy(src, dst, *args, **kwargs):
            if getattr(outer, "via", None) is not None:
                return function(src, dst, *args, **kwargs)
            outer.via = label
            try:
                return function(src, dst, *args, **kwargs)
            finally:
                outer.via = None
        return spy

    def syncing(name):
        def spy(descriptor):
            number = descriptor if isinstance(descriptor, int) else descriptor.fileno()
            info = os.fstat(number)
            kind = "folder" if stat.S_ISDIR(info.st_mode) else "file"
            events.append(("fsync", kind, info.st_ino, info.st_size, folder_shown(number) if kind == "folder" else ""))
            return real[name](descriptor)
        return spy

    spies = {"replace": swapping("replace"), "rename": swapping("rename"), "link": swapping("link"),
             "fsync": syncing("fsync"), "fdatasync": syncing("fdatasync")}
    moves = {label: via(label) for label in REAL_MOVES}
    bound = [(key, spies[name]) for name, function in real.items() for key in ctx.names_bound_to(function)]
    bound += [(key, moves[label]) for label, function in REAL_MOVES.items() for key in ctx.names_bound_to(function)]
    for name, spy in spies.items():
        setattr(os, name, spy)
    shutil.move, Path.rename, Path.replace = moves["shutil.move"], moves["Path.rename"], moves["Path.replace"]
    try:
        with replaced_globals(ctx, bound):
            yield
    finally:
        for name, function in real.items():
            setattr(os, name, function)
        shutil.move, Path.rename, Path.replace = (REAL_MOVES["shutil.move"], REAL_MOVES["Path.rename"],
                                                  REAL_MOVES["Path.replace"])


@contextmanager
def death_at_the_first_sync_or_swap(ctx: Context) -> Iterator[dict]:
    """The process 'dies' (``TornWrite``) just before the save's first os.fsync, os.fdatasync,
    os.replace, os.rename or os.link: for a save whose bytes go where no write spy sees them
    (an mmap), the last moment before they would be made durable or swapped in."""
    from grader.checks.write_spies import TornWrite

    names = ("fsync", "fdatasync", "replace", "rename", "link")
    real = {name: getattr(os, name) for name in names}
    seen: dict = {"died": None}

    def dying(name):
        def spy(*args, **kwargs):
            seen["died"] = f"os.{name}"
            raise TornWrite(f"queda simulada logo antes de os.{name}")
        return spy

    spies = {name: dying(name) for name in names}
    bound = [(key, spies[name]) for name, function in real.items() for key in ctx.names_bound_to(function)]
    for name, spy in spies.items():
        setattr(os, name, spy)
    try:
        with replaced_globals(ctx, bound):
            yield seen
    finally:
        for name, function in real.items():
            setattr(os, name, function)


def read_checkpoint_file(path: Path) -> Any:
    """The parsed file, or a string saying why it is not a readable JSON object."""
    if not path.exists():
        return "o arquivo não existe"
    data = path.read_bytes()
    if not data.strip():
        return f"o arquivo está vazio ({len(data)} bytes)"
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        return f"o arquivo tem {len(data)} bytes e não é JSON completo ({error})"


def save_run(ctx: Context) -> SaveRun:
    """The student's save_checkpoint, called twice on a fresh folder with os spies (memoized)."""

    def compute() -> SaveRun:
        save = ctx.student_function("save_checkpoint")
        folder = ctx.fresh_dir("save")
        path = folder / CHECKPOINT_NAME
        first, second = state_to_save("primeira", 3), state_to_save("segunda", 4)
        run = SaveRun(folder, path, second)
        ctx.call(save, copy.deepcopy(first), path)
        with os_spies(ctx, run.events), observed_writes(ctx) as writes:
            ctx.call(save, copy.deepcopy(second), path)
        run.opened = list(writes["opened"])
        run.files_after = sorted(p.name for p in folder.iterdir())
        run.written = read_checkpoint_file(path)
        return run

    return ctx.memo("save_run", compute)


def last_good_checkpoint(ctx: Context, label: str) -> tuple[Path, dict]:
    """A folder holding a good checkpoint written by the reference harness (not by the student)."""
    from grader.checks.reference import write_json_atomic

    folder = ctx.fresh_dir(label)
    path = folder / CHECKPOINT_NAME
    good = state_to_save("anterior", 5)
    write_json_atomic(path, good)
    return path, good


def summary(found: Any, fields: int = 6) -> str:
    """A checkpoint in a line: each field with its value cut short, lists by their length
    (a torn or lossy checkpoint of 100 KB must not fill the message)."""
    if isinstance(found, str):
        return found
    if not isinstance(found, dict):
        return show(found, 80)
    parts = [f"{key}: " + (f"[{len(value)} itens]" if isinstance(value, list) else show(value, 40))
             for key, value in list(found.items())[:fields]]
    more = f", … (+{len(found) - fields} campos)" if len(found) > fields else ""
    return "{" + ", ".join(parts) + more + "}"


def found_described(found: Any) -> str:
    """What is in the file now, for a sentence: why it cannot be read, or a short summary."""
    return found if isinstance(found, str) else f"o arquivo tem outro conteúdo, {summary(found)}"


def returned_or_raised(problem: StudentProblem | None) -> None:
    """For checks where raising is a fine answer: a save that never returns (it ran out of
    time, or tried to end the process, now or in an earlier check) is not one, and fails the
    check as it is."""
    if problem is not None and problem.kind in ("timeout", "exit", "refused"):
        raise problem


def folder_files(folder: Path) -> dict[str, bytes]:
    """Every file of ``folder`` with its bytes: what a process that dies now leaves behind."""
    return {entry.name: entry.read_bytes() for entry in folder.iterdir() if entry.is_file()}


def left_as_at_death(folder: Path, files: dict[str, bytes]) -> None:
    """Put back what the save's own cleanup took away after the simulated death: a process
    that really dies runs no ``except`` and no ``finally``."""
    for name, data in files.items():
        target = folder / name
        if not target.is_file() or target.read_bytes() != data:
            target.write_bytes(data)


def torn_checkpoint(found: Any) -> CheckFailed:
    """The failure for a save that, dying midway, did not leave the last good checkpoint whole
    (``found`` is what is there now: the parsed file, or why it could not be read)."""
    return CheckFailed(
        f"Depois da falha, {found_described(found)}: o último checkpoint bom foi destruído. É o que acontece "
        "ao sobrescrever no lugar (open(path, \"w\") esvazia o arquivo antes de escrever). Escreva num "
        "temporário e só troque pelo verdadeiro quando ele estiver completo.",
        expected="o checkpoint anterior, inteiro",
        observed=summary(found),
    )


@contextmanager
def json_refusals() -> Iterator[dict]:
    """Note whether the json encoder was asked to write a ``NotSerializable`` (``seen["json"]``):
    a save that returns quietly after that swallowed the TypeError; one that never got there
    did not try to save at all."""
    seen = {"json": False}
    real_default = json.JSONEncoder.default

    def default(self, value):
        if isinstance(value, NotSerializable):
            seen["json"] = True
        return real_default(self, value)

    json.JSONEncoder.default = default
    try:
        yield seen
    finally:
        json.JSONEncoder.default = real_default


class NotSerializable:
    def __repr__(self) -> str:
        return "<objeto que o json não sabe gravar>"
