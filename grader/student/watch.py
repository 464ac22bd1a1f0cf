"""`grade watch exercise-N`: grade again every time the notebook is saved.

A save is noticed through the operating system's file events (watchfiles: inotify,
FSEvents, ReadDirectoryChangesW), and between events the file's modification time
and size are still read every ``interval`` seconds, so a save whose event never
arrives (some network mounts, shared folders of containers and VMs) is graded
anyway, just later. ``--polling`` or GRADE_WATCH_POLLING=1 skips the events and
only polls; a watcher that cannot start (no inotify slots left) falls back to
polling by itself. A changed file that parses as a whole JSON document is a finished save
(Jupyter writes a new file and renames it over the notebook; a prefix of a JSON document never
parses), graded at once; anything else is waited for until the file stops changing, so a save
still being written is not graded half-way. Ctrl-C (or SIGTERM, or the terminal closing) ends it
cleanly, and always: if the orderly ending is stuck for ``STOP_GRACE`` seconds, what the watch
started is killed outright and its folders removed (grader/core/stop_signals.py).

Each save is graded in a fresh kernel, as ``grade exercise-N`` grades, but without paying the
kernel's start again: for as long as it runs, the watcher keeps a kernel template that has
imported ipykernel and anthropic once, and a kernel forked from it waiting for the next save
(grader/core/warm_session.py). The limits, the restarts and the report are those of
``grade exercise-N``; what a notebook does to its kernel ends that kernel only.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterator, TextIO

from grader.reports import console

DEFAULT_INTERVAL = 1.0
# How many extra polls to wait for a file that keeps changing before grading anyway.
MAX_SETTLE_POLLS = 10
# Set to 1 (or pass --polling) where file events are unreliable: only the file is polled.
POLLING_ENV = "GRADE_WATCH_POLLING"

Signature = tuple[int, int] | None
POLL_SETTLE = 0.25  # seconds between the two equal readings of a changed file, when polling
EVENT_SETTLE = 0.05  # the same after a file event
# After Ctrl-C (or SIGTERM, SIGHUP), how long the orderly ending (each kernel shut down, the template
# waited for) may take before what the watch started is killed outright and its folders removed.
STOP_GRACE = 10.0
EVENT_STEP_MS = 20  # watchfiles yields a batch of events after this long without more (its default: 50)


def file_signature(path: Path) -> Signature:
    """(mtime in ns, size) of `path`, or None when it does not exist right now."""
    try:
        stat = Path(path).stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


def whole_document(path: Path, signature: Signature) -> bool:
    """Is ``path``, still as ``signature`` says, a whole JSON document? Then its save is finished."""
    try:
        json.loads(Path(path).read_bytes())
    except (OSError, ValueError, RecursionError):
        return False
    return file_signature(path) == signature  # and nothing was written while it was read


def polling_forced(flag: bool = False) -> bool:
    """True when --polling was given or GRADE_WATCH_POLLING asks for it."""
    return flag or os.environ.get(POLLING_ENV, "").strip().lower() not in ("", "0", "no", "nao", "não", "false")


def _poll_ticks(interval: float, sleep: Callable[[float], None]) -> Iterator[None]:
    while True:
        sleep(interval)
        yield


def _event_ticks(path: Path, interval: float) -> Iterator[None]:
    """A tick for each batch of file events on ``path`` (its folder is watched, since editors
    save by writing a new file and renaming it over the old one) and one every ``interval``
    seconds without events, when the caller reads the file's signature anyway."""
    from watchfiles import watch as file_events

    yield from file_events(
        path.parent,
        watch_filter=lambda _change, changed: Path(changed).name == path.name,
        recursive=False,
        step=EVENT_STEP_MS,
        rust_timeout=max(1, int(interval * 1000)),
        yield_on_timeout=True,
        raise_interrupt=True,
    )


def watch(
    path: Path,
    grade_once: Callable[[], Any],
    *,
    interval: float = DEFAULT_INTERVAL,
    max_polls: int | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    sleep: Callable[[float], None] = time.sleep,
    out: TextIO = sys.stdout,
    use_events: bool = False,
) -> int:
    """Grade now, then once more after each change of `path`. Returns how many grades ran.

    With ``use_events`` a file event wakes the watcher at once; without, it polls every
    ``interval`` seconds. `max_polls` and `should_stop` end the loop (tests and embedding);
    by default it runs until Ctrl-C, which propagates as KeyboardInterrupt to the caller.
    """
    path = Path(path)
    # File events come after EVENT_STEP_MS without more of them (watchfiles' step): a short second look
    # is enough there; polled, the file gets a longer one. A save that still lands during the
    # grading is caught after it (``run`` shows no result of a file that changed meanwhile).
    settle = min(interval, EVENT_SETTLE if use_events else POLL_SETTLE)
    last = file_signature(path)
    grade_once()
    grades = 1
    ticks = _event_ticks(path, interval) if use_events else _poll_ticks(interval, sleep)
    how = f"pelos eventos do sistema de arquivos, conferindo a cada {interval:g} s" if use_events else f"a cada {interval:g} s"
    print(f"\nObservando {path.name} ({how}). Salve o notebook para corrigir de novo; Ctrl-C encerra.", file=out, flush=True)
    polls = 0
    try:
        while not should_stop() and (max_polls is None or polls < max_polls):
            try:
                next(ticks)
            except (ImportError, OSError, RuntimeError) as error:
                if not use_events:
                    raise
                # The watcher could not start (no inotify slots, a folder it cannot watch): poll.
                print(f"Eventos de arquivo indisponíveis aqui ({error}); conferindo o arquivo a cada {interval:g} s.", file=out, flush=True)
                ticks, use_events = _poll_ticks(interval, sleep), False
                continue
            polls += 1
            current = file_signature(path)
            if current == last:
                continue
            # Unless it is a whole document already, wait for the editor to finish writing: two
            # equal readings in a row.
            for _ in range(0 if current is not None and whole_document(path, current) else MAX_SETTLE_POLLS):
                sleep(settle)
                again = file_signature(path)
                if again == current:
                    break
                current = again
            last = current
            if current is None:
                print(f"{path.name} sumiu; esperando o arquivo voltar...", file=out, flush=True)
                continue
            stamp = datetime.now().strftime("%H:%M:%S")
            print(f"\n── {stamp} · {path.name} mudou; corrigindo de novo ──\n", file=out, flush=True)
            grade_once()
            grades += 1
    finally:
        ticks.close()  # stops the file watcher, if one runs
    return grades


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("exercise", metavar="exercise-N", help="o exercício, por exemplo exercise-3")
    parser.add_argument("--notebook", type=Path, default=None, metavar="CAMINHO", help="notebook a observar (padrão: exercises/exercise-N.ipynb)")
    parser.add_argument("--level", type=console.whole_number(1), default=None, metavar="K", help="corrige só este nível")
    parser.add_argument("--fixtures", type=Path, action="append", default=[], metavar="PASTA", help="pasta extra de fixtures (pode repetir)")
    parser.add_argument("--interval", type=console.seconds(0.0, 3600.0), default=DEFAULT_INTERVAL, metavar="S", help=f"segundos entre verificações do arquivo (padrão: {DEFAULT_INTERVAL:g})")
    for option in ("--cell-timeout", "--total-timeout", "--check-timeout"):  # as `grade exercise-N` has them
        parser.add_argument(option, type=console.seconds(), default=None, help=argparse.SUPPRESS)
    parser.add_argument("--polling", action="store_true", help=f"não usa os eventos do sistema de arquivos, só confere o arquivo a cada --interval (para pastas de rede ou de contêiner onde salvar não avisa; o mesmo que {POLLING_ENV}=1)")


def run(args: argparse.Namespace) -> int:
    from grader.core.course_folder import course_root
    from grader.core.engine import load_exercise
    from grader.core.errors import GraderError
    from grader.core.fixture_loader import load_fixtures
    from grader.reports import render
    from grader.student.progress import record_progress

    try:  # a wrong name, fixture folder or course fails now, not on every save
        spec = load_exercise(args.exercise, args.level)
        load_fixtures(args.exercise, args.fixtures, spec.validate_fixture)
        notebook = args.notebook or course_root() / "exercises" / f"{args.exercise}.ipynb"
    except GraderError as error:
        print(f"grade watch: {error}", file=sys.stderr)
        return 2

    from grader.core.limits import Limits
    from grader.core.stop_signals import ends_within, stops_as_interrupt
    from grader.core.warm_session import WarmGrader

    limits = Limits.from_grade_flags(args)  # the same flags, and defaults, as `grade exercise-N`

    def grade_once() -> None:
        before = file_signature(notebook)
        try:
            report = warm.grade(notebook, limits=limits, level=args.level, fixture_dirs=args.fixtures)
        except GraderError as error:
            print(f"grade watch: {error}", file=sys.stderr)
            return
        if file_signature(notebook) != before:  # saved again meanwhile: only the newer file's result is shown
            print(f"{notebook.name} foi salvo de novo durante a correção; corrigindo a versão nova...", flush=True)
            warm.prepare()
            return
        record_progress(args.exercise, report, notebook)
        text = render.text_report(report)
        sys.stdout.write(render.colored(text) if console.wants_color() else text)
        sys.stdout.flush()
        warm.prepare()  # the next save's kernel starts now, while the student reads this one

    warm = WarmGrader(args.exercise)
    forced = f"\ngrade watch encerrado (a limpeza não terminou em {STOP_GRACE:g} s: os kernels foram encerrados à força).\n"
    try:
        with stops_as_interrupt(), ends_within(STOP_GRACE, forced, warm.folders), warm:
            watch(notebook, grade_once, interval=args.interval, use_events=not polling_forced(getattr(args, "polling", False)))
    except KeyboardInterrupt:
        print("\ngrade watch encerrado.")
    return 0
