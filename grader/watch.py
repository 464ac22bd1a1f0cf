"""`grade watch exercise-N`: grade again every time the notebook is saved.

Change detection polls the file's modification time and size. Polling works
everywhere, including shared folders, containers and network mounts where
file-system events are not delivered. After a change is seen, the watcher waits
until the file stops changing, so a save still being written is not graded
half-way. Ctrl-C ends it cleanly.
"""
from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, TextIO

from grader import console

DEFAULT_INTERVAL = 1.0
# How many extra polls to wait for a file that keeps changing before grading anyway.
MAX_SETTLE_POLLS = 10

Signature = tuple[int, int] | None


def file_signature(path: Path) -> Signature:
    """(mtime in ns, size) of `path`, or None when it does not exist right now."""
    try:
        stat = Path(path).stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


def watch(
    path: Path,
    grade_once: Callable[[], Any],
    *,
    interval: float = DEFAULT_INTERVAL,
    max_polls: int | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    sleep: Callable[[float], None] = time.sleep,
    out: TextIO = sys.stdout,
) -> int:
    """Grade now, then once more after each change of `path`. Returns how many grades ran.

    `max_polls` and `should_stop` end the loop (tests and embedding); by default it
    runs until Ctrl-C, which propagates as KeyboardInterrupt to the caller.
    """
    path = Path(path)
    settle = min(interval, 0.25)
    last = file_signature(path)
    grade_once()
    grades = 1
    print(f"\nObservando {path.name} (a cada {interval:g} s). Salve o notebook para corrigir de novo; Ctrl-C encerra.", file=out, flush=True)
    polls = 0
    while not should_stop() and (max_polls is None or polls < max_polls):
        sleep(interval)
        polls += 1
        current = file_signature(path)
        if current == last:
            continue
        # Wait for the editor to finish writing: two equal readings in a row.
        for _ in range(MAX_SETTLE_POLLS):
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
    return grades


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("exercise", metavar="exercise-N", help="o exercício, por exemplo exercise-3")
    parser.add_argument("--notebook", type=Path, default=None, metavar="CAMINHO", help="notebook a observar (padrão: exercises/exercise-N.ipynb)")
    parser.add_argument("--level", type=console.whole_number(1), default=None, metavar="K", help="corrige só este nível")
    parser.add_argument("--fixtures", type=Path, action="append", default=[], metavar="PASTA", help="pasta extra de fixtures (pode repetir)")
    parser.add_argument("--interval", type=console.seconds(0.0, 3600.0), default=DEFAULT_INTERVAL, metavar="S", help=f"segundos entre verificações do arquivo (padrão: {DEFAULT_INTERVAL:g})")


def run(args: argparse.Namespace) -> int:
    from grader import render
    from grader.cli import record_progress
    from grader.fixture_loader import load_fixtures
    from grader.progress import course_root
    from grader.engine import grade, load_exercise
    from grader.errors import GraderError

    try:  # a wrong name, fixture folder or course fails now, not on every save
        spec = load_exercise(args.exercise, args.level)
        load_fixtures(args.exercise, args.fixtures, spec.validate_fixture)
        notebook = args.notebook or course_root() / "exercises" / f"{args.exercise}.ipynb"
    except GraderError as error:
        print(f"grade watch: {error}", file=sys.stderr)
        return 2

    def grade_once() -> None:
        try:
            report = grade(args.exercise, notebook, level=args.level, fixture_dirs=args.fixtures)
        except GraderError as error:
            print(f"grade watch: {error}", file=sys.stderr)
            return
        record_progress(args.exercise, report, notebook)
        sys.stdout.write(render.text_report(report))
        sys.stdout.flush()

    try:
        watch(notebook, grade_once, interval=args.interval)
    except KeyboardInterrupt:
        print("\ngrade watch encerrado.")
    return 0
