"""Level 1's probe: the student's ``save_checkpoint`` run with the operating system's calls observed, a write that dies midway, a state that cannot be written."""
from __future__ import annotations

import copy
import json
import os
import stat
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from grader.checks.framework import CheckFailed, Context, show
from grader.checks.write_spies import observed_writes, replaced_globals


CHECKPOINT_NAME = "checkpoint.json"


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
            "messages": messages, "pending_tool_use": None}


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
        moved = [Path(event[1]).resolve() for event in self.events if event[0] in ("replace", "rename")]
        target = self.path.resolve()
        return sorted({path.name for path in self.opened + moved if path != target})


@contextmanager
def os_spies(ctx: Context, events: list) -> Iterator[None]:
    """Record os.replace / os.rename / os.fsync calls (then do them for real), wherever the
    student's code reaches them: the ``os`` module and any global bound to the real function."""
    real = {"replace": os.replace, "rename": os.rename, "fsync": os.fsync}

    def replace(src, dst, *args, **kwargs):
        events.append(("replace", os.fspath(src), os.fspath(dst)))
        return real["replace"](src, dst, *args, **kwargs)

    def rename(src, dst, *args, **kwargs):
        events.append(("rename", os.fspath(src), os.fspath(dst)))
        return real["rename"](src, dst, *args, **kwargs)

    def fsync(descriptor):
        number = descriptor if isinstance(descriptor, int) else descriptor.fileno()
        info = os.fstat(number)
        kind = "folder" if stat.S_ISDIR(info.st_mode) else "file"
        events.append(("fsync", kind, info.st_ino, info.st_size))
        return real["fsync"](descriptor)

    spies = {"replace": replace, "rename": rename, "fsync": fsync}
    bound = [(key, spies[name]) for name, function in real.items() for key in ctx.names_bound_to(function)]
    for name, spy in spies.items():
        setattr(os, name, spy)
    try:
        with replaced_globals(ctx, bound):
            yield
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


def torn_checkpoint(found: Any) -> CheckFailed:
    """The failure for a save that, dying midway, did not leave the last good checkpoint whole
    (``found`` is what is there now: the parsed file, or why it could not be read)."""
    return CheckFailed(
        f"Depois da falha, {found}: o último checkpoint bom foi destruído. É o que acontece ao "
        "sobrescrever no lugar (open(path, \"w\") esvazia o arquivo antes de escrever). Escreva num "
        "temporário e só troque pelo verdadeiro quando ele estiver completo.",
        expected="o checkpoint anterior, inteiro",
        observed=found if isinstance(found, str) else show(found, 160),
    )


class NotSerializable:
    def __repr__(self) -> str:
        return "<objeto que o json não sabe gravar>"
