"""The crash-state explorer, as the grader runs it on a student's save function.

The model (which states a power loss can leave at each point of a save) is
``harness.crash_states`` (documented in docs/modelo-de-queda.md); this module runs the
student's code under it, wherever that code reaches the file system (the ``os`` module,
globals bound to its functions, ``open`` in every form the write spies cover), and words
what it finds in Portuguese:

- ``explore``: every state a crash may leave, each read back with a loader; before the
  save returns each must be the old or the new checkpoint (or none, when there was none),
  after it returns only the new one. Meanwhile every ``os.write`` to a file writes only
  part of what it was given (half, at least one byte) and says so in its return value, as
  POSIX allows: a save that ignores the count leaves a short file (``short_write_problem``);
- ``failed_swap``: ``os.replace``/``os.rename`` raise OSError; the old checkpoint must be
  left as it was and the error must reach the caller;
- ``two_writers``: two threads save into the same folder at once, held together just
  before their swaps; neither may share the other's temporary, both must return, and the
  checkpoint left must be one of the two.

The file saved is a checkpoint unless a ``Durable`` says otherwise (the effects ledger,
a lease): its name, and the words the messages use for it and for its loader.

Each takes ``bind(spies, real)``, a context manager that installs the ``os`` spies in the
student's namespace too (``write_spies.bound_everywhere``), and ``opens``, one that spies
on ``open`` (``write_spies.observed_writes``); without them only the ``os`` module and the
builtin ``open`` are watched, which is how the unit tests call them.
"""
from __future__ import annotations

import builtins
import copy
import io
import json
import os
import stat
import sys
import threading
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterator

from harness.crash_states import (
    REAL_CALLS,
    REAL_OS_CALLS,
    SWAPS,
    CrashState,
    SaveTrace,
    Verdict,
    crash_states,
    judge,
    materialise,
    recorded_os_calls,
)

CHECKPOINT_NAME = "checkpoint.json"
WRITERS_MEET_SECONDS = 2.0   # how long a writer waits at the swap for the other one
WRITERS_FINISH_SECONDS = 20.0



@dataclass(frozen=True)
class Durable:
    """The file a save writes, as the messages name it."""
    name: str = CHECKPOINT_NAME
    thing: str = "o checkpoint"          # with its article: "o checkpoint anterior some"
    loader: str = "load_checkpoint"
    nothing: str = "devolve None"        # what the loader makes of a missing file
    old_read: str = ""                   # what it makes of the old file ("devolve <thing> anterior")


CHECKPOINT = Durable()

Bind = Callable[[dict, dict], ContextManager]
Opens = Callable[..., ContextManager]


def explorer_state(label: str, turns: int) -> dict:
    """A run state of a few kilobytes: big enough to tear, small enough to read back dozens of times."""
    messages: list[dict] = [{"role": "user", "content": f"Tarefa {label}: resumir as atas."}]
    for number in range(1, 9):
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Turno {number}: decisões da reunião, com ação e prazo. " * 4}]})
        messages.append({"role": "user", "content": f"Continue a partir da ata {number}. " * 4})
    return {"version": 1, "task": f"Tarefa {label}", "turns": turns, "tokens_used": 900 * turns,
            "messages": messages, "pending_tool_use": None, "status": "running", "status_reason": None}


def _no_bind(spies: dict, real: dict) -> ContextManager:
    return nullcontext()


@contextmanager
def _builtin_opens(before_open: Callable[[Any, str], None] | None = None, **_: Any) -> Iterator[dict]:
    """The smallest ``opens``: the builtin and io ``open`` spied on, for callers with no notebook."""
    record: dict = {"opened_by": []}
    real_builtin, real_io = builtins.open, io.open

    def spied(file, mode="r", *args, **kwargs):
        writing = isinstance(mode, str) and any(flag in mode for flag in "wax+")
        named = isinstance(file, (str, bytes, os.PathLike)) and kwargs.get("opener") is None
        if writing and named and before_open is not None:
            before_open(file, mode)
        if writing and named:
            record["opened_by"].append((threading.get_ident(), Path(os.fsdecode(file)).resolve()))
        return real_io(file, mode, *args, **kwargs)

    builtins.open = io.open = spied
    try:
        yield record
    finally:
        builtins.open, io.open = real_builtin, real_io


def _write_old(path: Path, old: Any) -> None:
    if old is not None:
        path.write_text(json.dumps(old, ensure_ascii=False), encoding="utf-8")


# --- every state a crash may leave ---------------------------------------------------------------

@dataclass
class Exploration:
    verdicts: list[Verdict]
    calls: list[str]            # the file-system calls the save made, in order
    short_writes: list[tuple[int, int]] = field(default_factory=list)   # (bytes asked, bytes written)

    def bad(self) -> list[Verdict]:
        """The states that do not load as they should, the most telling first: a torn or
        empty checkpoint, then a lost one, then an undone save."""
        wrong = [verdict for verdict in self.verdicts if not verdict.acceptable]
        rank = {"nenhum": 1, "anterior": 2}
        return sorted(wrong, key=lambda verdict: rank.get(verdict.outcome, 0))


def explore(save: Callable, load: Callable, old: Any, new: Any, folder: Path,
            bind: Bind = _no_bind, opens: Opens = _builtin_opens, name: str = CHECKPOINT_NAME,
            prepare: Callable[[Path], None] | None = None) -> Exploration:
    """Save ``new`` over ``old`` (None: an empty folder) into the file ``name`` with every call
    recorded, then read each state a crash may leave with ``load``, which must give None for a
    missing file. ``prepare(folder)`` puts the save's other files in place first (they are part
    of every state, as durable as the old file). The save's own exceptions propagate."""
    work = folder / "gravacao"
    work.mkdir(parents=True)
    path = work / name
    _write_old(path, old)
    if prepare is not None:
        prepare(work)
    trace = SaveTrace(work)

    def before_open(file, mode):
        if isinstance(file, (str, bytes, os.PathLike)):
            again = trace.existing(file)
            trace.before(f"`open({trace.shown(file)}, {mode!r})`")
            if again:  # an existing file opened for writing: rewritten in place until its next fsync
                trace.rewriting(file)

    short: list[tuple[int, int]] = []
    with recorded_os_calls(trace) as spies, short_writes(short) as partial, \
            bind({**spies, **partial}, {**REAL_CALLS, "write": REAL_WRITE}), opens(before_open=before_open):
        save(copy.deepcopy(new), path)
    trace.finished()
    verdicts = []
    for number, state in enumerate(crash_states(trace, name)):
        place = materialise(state, folder / f"estado-{number}")
        try:
            loaded, error = load(place / name), None
        except NotImplementedError:
            raise
        except Exception as raised:  # noqa: BLE001 - the loader's error is the finding
            loaded, error = None, raised
        verdicts.append(judge(state, loaded, error, old, new, place / name))
    return Exploration(verdicts, list(trace.calls), short)


REAL_WRITE = os.write
_LOW_MODULE = sys.modules.get("posix") or sys.modules.get("nt")


@contextmanager
def short_writes(record: list[tuple[int, int]]) -> Iterator[dict]:
    """Every os.write to a regular file writes half of what it was given (at least one byte)
    and returns that count, as POSIX allows; each short write is noted in ``record``."""

    def spy(descriptor, data):
        try:
            regular = stat.S_ISREG(os.fstat(descriptor).st_mode)
        except (OSError, TypeError, ValueError):
            regular = False
        size = len(memoryview(data).cast("B")) if regular else 0
        if size < 2:
            return REAL_WRITE(descriptor, data)
        part = max(1, size // 2)
        written = REAL_WRITE(descriptor, memoryview(data).cast("B")[:part])
        record.append((size, written))
        return written

    low = _LOW_MODULE is not None and getattr(_LOW_MODULE, "write", None) is REAL_WRITE
    os.write = spy
    if low:
        _LOW_MODULE.write = spy
    try:
        yield {"write": spy}
    finally:
        os.write = REAL_WRITE
        if low:
            _LOW_MODULE.write = REAL_WRITE


def short_write_problem(found: Exploration, saver: str, durable: "Durable | None" = None) -> str | None:
    """The sentence for a save that took a short os.write for a whole one: the state left after
    it returned is not the new one, and some os.write wrote less than it was given."""
    name = (durable or CHECKPOINT).name
    if not found.short_writes or any(call.startswith((f"`open({name},", f"`os.open({name},")) for call in found.calls):
        return None  # the file itself rewritten in place: that mistake is named first (crash_problem)
    if not any(verdict.state.returned and not verdict.acceptable for verdict in found.verdicts):
        return None
    thing = (durable or CHECKPOINT).thing
    asked, written = found.short_writes[0]
    return (f"os.write(fd, dados) gravou só {written} de {asked} bytes e devolveu esse número (o sistema pode "
            f"fazer isso, e o número devolvido diz quantos bytes foram), mas {saver} seguiu como se tivesse gravado "
            f"tudo: depois que a gravação voltou, {thing} ficou curto, e não é o novo. Repita o os.write com o que "
            "faltou até acabar (while dados: n = os.write(fd, dados); dados = dados[n:]), ou escreva com "
            "os.fdopen(fd, \"wb\"), que faz isso por você.")


def crash_problem(verdict: Verdict, calls: list[str], first_save: bool, durable: Durable = CHECKPOINT) -> str:
    """The Portuguese sentence for one state that does not load as it should: where the
    machine fell, what the disk may hold, what the loader made of it, and the rule broken."""
    state, thing, name = verdict.state, durable.thing, durable.name
    removed = [call for call in calls if call.startswith(("`os.remove(", "`os.unlink(")) and name + ")" in call]
    in_place = [call for call in calls if call.startswith((f"`open({name},", f"`os.open({name},",
                                                           f"`os.truncate({name},"))]
    where = f"Se a máquina cair {state.where()}, o disco pode ficar com {state.describe()}"
    if verdict.outcome == "nenhum":
        what = f"e {durable.loader} {durable.nothing}"
        if state.returned:
            rule = ("a gravação voltou, mas o arquivo novo ainda pode não ter nome no disco: a criação e a troca de "
                    "nome só ficam duráveis com o fsync da pasta depois do os.replace")
        elif removed:
            after = calls[calls.index(removed[0]) + 1:]
            swap = next((call for call in after if call.startswith(SWAPS)), "a troca")
            rule = (f"{thing} anterior some. Não apague {thing} antes da troca: os.replace já substitui o "
                    f"destino de uma vez, e entre {removed[0]} e {swap} não há {thing.split(' ', 1)[1]} nenhum")
        else:
            rule = f"{thing} anterior some: ele só pode deixar de existir quando o novo já está no lugar"
    elif verdict.outcome == "anterior":
        what = f"e {durable.loader} {durable.old_read or f'devolve {thing} anterior'}"
        rule = ("a gravação voltou como feita, mas uma queda ainda a desfaz: a troca de nome só fica durável com o "
                "fsync da pasta do checkpoint (os.open(pasta, os.O_RDONLY) e os.fsync) depois do os.replace")
    else:
        outcome = verdict.outcome
        if durable != CHECKPOINT and not outcome.startswith("levanta"):
            outcome = f"devolve um conteúdo que não é nem {thing} anterior nem o novo"
        what = f"e {durable.loader} {outcome}"
        swapped_in = [call for call in calls if call.startswith(SWAPS) and f", {name})`" in call]
        if in_place and swapped_in and calls.index(swapped_in[0]) < calls.index(in_place[0]):
            rule = (f"depois da troca, {thing} foi aberto de novo para escrita ({in_place[0]}). Mesmo que no fim "
                    "ele tenha os mesmos bytes, no meio dessa reescrita ele esteve vazio ou pela metade, e uma queda "
                    f"o deixa assim: depois do os.replace, não abra {thing} para escrever (para conferir, só leia)")
        elif in_place:
            rule = (f"{thing} é escrito no próprio arquivo, então uma queda o deixa vazio ou pela metade: "
                    "escreva num temporário e troque-o pelo verdadeiro com os.replace")
        else:
            rule = (f"{thing} fica vazio ou pela metade: os bytes do temporário só estão no disco depois de "
                    "f.flush() e os.fsync(f.fileno()), antes do os.replace")
    before = " (a pasta começava vazia)" if first_save else ""
    return f"{where}{before}, {what}. {as_sentences(rule)}."


def as_sentences(text: str) -> str:
    """Short sentences instead of clauses chained by colons (a beginner reads one idea at a time)."""
    parts = text.split(": ")
    return ". ".join(part[:1].upper() + part[1:] for part in parts)


# --- a swap that fails -----------------------------------------------------------------------------

@dataclass
class SwapOutcome:
    tried: bool                 # the save reached os.replace / os.rename
    raised: BaseException | None
    left: bytes | None          # the checkpoint's bytes afterwards (None: gone)
    swaps: list[str] = field(default_factory=list)   # the swaps tried, as the messages show them


def failed_swap(save: Callable, old: Any, new: Any, folder: Path, bind: Bind = _no_bind,
                name: str = CHECKPOINT_NAME) -> SwapOutcome:
    """Save ``new`` over ``old`` into the file ``name`` with every swap (os.replace, os.rename,
    os.link and what goes through them) raising OSError."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    _write_old(path, old)
    trace = SaveTrace(folder)
    raised = None
    with recorded_os_calls(trace, fail_replace=True) as spies, bind(spies, REAL_CALLS):
        try:
            save(copy.deepcopy(new), path)
        except Exception as error:  # noqa: BLE001 - raising is the right answer here
            raised = error
    swaps = [call for call in trace.calls if call.startswith(SWAPS)]
    return SwapOutcome(bool(swaps), raised, path.read_bytes() if path.exists() else None, swaps)


# --- two writers at once ---------------------------------------------------------------------------

@dataclass
class WritersOutcome:
    errors: list[BaseException | None]
    shared: list[str] = field(default_factory=list)   # temporaries both writers wrote or moved
    unfinished: bool = False
    left: bytes | None = None
    swapped: bool = True        # some writer called os.replace / os.rename


def two_writers(save: Callable, first: dict, second: dict, folder: Path,
                bind: Bind = _no_bind, opens: Opens = _builtin_opens) -> WritersOutcome:
    """Two threads save into the same folder at once; each waits just before its first swap
    (os.replace / os.rename / os.link) until the other gets there too, so both have written their
    temporaries before either moves one."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / CHECKPOINT_NAME
    meeting = threading.Barrier(2, timeout=WRITERS_MEET_SECONDS)
    waited: set[int] = set()
    moved: list[tuple[int, Path]] = []
    guard = threading.Lock()

    def meeting_first(name):
        real = REAL_OS_CALLS[name]

        def spy(src, dst, *args, **kwargs):
            me = threading.get_ident()
            with guard:
                moved.append((me, Path(os.fsdecode(src)).resolve()))
                first_time = me not in waited
                waited.add(me)
            if first_time:
                try:
                    meeting.wait()
                except threading.BrokenBarrierError:
                    pass
            return real(src, dst, *args, **kwargs)
        return spy

    spies = {name: meeting_first(name) for name in ("replace", "rename", "link")}
    errors: list[BaseException | None] = [None, None]
    identities: list[int] = [0, 0]

    def writer(number: int, state: dict) -> None:
        identities[number] = threading.get_ident()
        try:
            save(copy.deepcopy(state), path)
        except BaseException as error:  # noqa: BLE001 - a writer's error is the finding
            errors[number] = error

    real = {name: getattr(os, name) for name in spies}
    for name, spy in spies.items():
        setattr(os, name, spy)
    try:
        with bind(spies, REAL_OS_CALLS), opens() as record:
            threads = [threading.Thread(target=writer, args=(n, s), daemon=True)
                       for n, s in enumerate((first, second))]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(WRITERS_FINISH_SECONDS)
            unfinished = any(thread.is_alive() for thread in threads)
            opened = list(record.get("opened_by", []))
    finally:
        for name, function in real.items():
            setattr(os, name, function)
    target = path.resolve()
    by_writer: list[set[Path]] = [set(), set()]
    for ident, written in opened + moved:
        if written != target and ident in identities:
            by_writer[identities.index(ident)].add(written)
    shared = sorted(p.name for p in by_writer[0] & by_writer[1])
    return WritersOutcome(errors, shared, unfinished, path.read_bytes() if path.exists() else None, bool(moved))


def loads_as(load: Callable, data: bytes | None, folder: Path,
             name: str = CHECKPOINT_NAME) -> tuple[Any, BaseException | None]:
    """What ``load`` makes of a file ``name`` holding ``data`` (None: no file), in a fresh folder."""
    state = CrashState(() if data is None else ((name, data),), "", None)
    place = materialise(state, folder)
    try:
        return load(place / name), None
    except NotImplementedError:
        raise
    except Exception as error:  # noqa: BLE001
        return None, error


__all__ = ["CHECKPOINT", "Durable", "Exploration", "SwapOutcome", "WritersOutcome", "crash_problem", "explore", "explorer_state",
           "failed_swap", "loads_as", "short_write_problem", "two_writers"]
