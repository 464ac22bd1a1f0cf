"""What the course's command lines (`grade`, `course`) share with the terminal.

- ``ArgumentParser`` (argparse in Portuguese) and ``run`` (a quiet end when stdout's reader
  goes away, ``grade list | head``, or on Ctrl-C, exit 130) come from ``harness.cli_text``:
  ``python -m harness`` uses them too, and the harness never imports the grader.
- ``run_command``: ``run`` plus the one place a GraderError that reaches the top (a broken
  manifest, read by almost every command) becomes its Portuguese line and exit 2.
- ``seconds``, ``whole_number``, ``memory_mb``: argparse types that refuse nan, inf, negative
  or too-small values with a Portuguese reason.
- ``output_file_problem``: why a file a command will write cannot be written, asked first.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

from harness.cli_text import INTERRUPTED, ArgumentParser, run

__all__ = ["INTERRUPTED", "ArgumentParser", "run", "run_command", "seconds", "whole_number", "memory_mb", "output_file_problem"]


def run_command(prog: str, main: Callable[[], int | None]) -> int:
    """``run(main)``, with a GraderError that nothing below caught said as ``prog: message``
    (no traceback), exit 2."""
    from grader.core.errors import GraderError

    def reported() -> int | None:
        try:
            return main()
        except GraderError as error:
            print(f"{prog}: {error}", file=sys.stderr)
            return 2

    return run(reported)


def seconds(low: float = 0.0, high: float = 24 * 3600.0) -> Callable[[str], float]:
    """An argparse ``type``: a number of seconds above ``low`` and at most ``high`` (no nan, no inf)."""

    def convert(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"esperava um número de segundos, veio {text!r}") from None
        if not low < value <= high:  # also false for nan
            raise argparse.ArgumentTypeError(f"{text!r} segundos: use um número maior que {low:g} e até {high:g}")
        return value

    convert.__name__ = "segundos"
    return convert


def whole_number(low: int = 0) -> Callable[[str], int]:
    """An argparse ``type``: a whole number at least ``low``."""

    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"esperava um número inteiro, veio {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} é pouco: o mínimo é {low}")
        return value

    convert.__name__ = "inteiro"
    return convert


def memory_mb(text: str) -> int:
    """An argparse ``type`` for --memory-mb: 0 (no limit) or enough for a kernel to start, and no
    more than ``Limits`` takes (a huge number would break setrlimit instead of limiting)."""
    from grader.core.limits import MAX_MEMORY_MB, MIN_MEMORY_MB

    value = whole_number(0)(text)
    if 0 < value < MIN_MEMORY_MB:
        # Below it a kernel cannot even import what the exercises use (measured: ~200 MB), and
        # the grading would blame the student's first cell for the limit's fault.
        raise argparse.ArgumentTypeError(
            f"{value} MB não dá nem para o kernel começar: use pelo menos {MIN_MEMORY_MB} (ou 0 para sem limite)")
    if value > MAX_MEMORY_MB:
        shown = f"{value} MB" if value < 10 ** 15 else "esse número de MB"
        raise argparse.ArgumentTypeError(f"{shown} é demais: use no máximo {MAX_MEMORY_MB} (ou 0 para sem limite)")
    return value


def output_file_problem(path: Path, what: str, example: str) -> str | None:
    """Why ``what`` (a file a command will write) could not be written at ``path``, checked before
    the long work that produces it; None when it can."""
    from grader.core.errors import os_reason

    path = Path(path)
    if path.is_dir():
        return f"{path} é uma pasta; indique um arquivo para {what} (por exemplo {path / example})."
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", suffix=".teste"):
            pass
    except OSError as error:
        return f"não consigo gravar {what} em {path}: {os_reason(error)}."
    return None


def wants_color(stream: Any = None, environ: Any = None) -> bool:
    """Colour for a report on ``stream`` (stdout): FORCE_COLOR says yes and NO_COLOR no
    (https://force-color.org, https://no-color.org); otherwise only on a terminal that is not
    TERM=dumb. JupyterLab's terminal is a terminal: .lab/terminal.bashrc sets TERM there."""
    environ = os.environ if environ is None else environ
    stream = sys.stdout if stream is None else stream
    if environ.get("FORCE_COLOR", "") not in ("", "0"):
        return True
    if environ.get("NO_COLOR", ""):
        return False
    try:
        terminal = bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        terminal = False
    return terminal and environ.get("TERM", "") not in ("", "dumb")
