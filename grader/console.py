"""What the course's command lines (`grade`, `course`) share with the terminal.

- ``ArgumentParser``: argparse with its own words ("usage:", "options:", "show this help
  message and exit", "error:", "the following arguments are required"...) in Portuguese.
  argparse looks its words up through the module-level ``_`` and ``ngettext`` (gettext) each
  time it needs one; they are swapped only while one of our parsers builds, parses or
  prints, so no other parser in the process changes.
- ``seconds``, ``whole_number``, ``memory_mb``: argparse types that refuse nan, inf, negative
  or too-small values with a Portuguese reason.
- ``run``: calls a command's main and ends quietly, without a traceback, when the reader of
  stdout goes away (``grade list | head``) or on Ctrl-C (exit 130).
"""
from __future__ import annotations

import argparse
import functools
import os
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

# argparse's messages (Python 3.10-3.13), keyed by the English text argparse asks gettext for.
PORTUGUESE = {
    "usage: ": "uso: ",
    "options": "opções",
    "optional arguments": "opções",
    "positional arguments": "argumentos",
    "subcommands": "subcomandos",
    "show this help message and exit": "mostra esta ajuda e sai",
    "show program's version number and exit": "mostra a versão do programa e sai",
    "%(prog)s: error: %(message)s\n": "%(prog)s: erro: %(message)s\n",
    "the following arguments are required: %s": "faltou informar: %s",
    "unrecognized arguments: %s": "argumentos não reconhecidos: %s",
    "argument %(argument_name)s: %(message)s": "argumento %(argument_name)s: %(message)s",
    "invalid %(type)s value: %(value)r": "valor inválido: %(value)r",
    "invalid choice: %(value)r (choose from %(choices)s)": "opção inválida: %(value)r (escolha entre %(choices)s)",
    "expected one argument": "esperava um valor",
    "expected at most one argument": "esperava no máximo um valor",
    "expected at least one argument": "esperava pelo menos um valor",
    "ambiguous option: %(option)s could match %(matches)s": "opção ambígua: %(option)s pode ser %(matches)s",
    "not allowed with argument %s": "não pode ser usado junto com %s",
    "one of the arguments %s is required": "é preciso informar um destes: %s",
    "ignored explicit argument %r": "valor ignorado: %r",
    "unexpected option string: %s": "opção inesperada: %s",
}
PORTUGUESE_PLURALS = {"expected %s argument": ("esperava %s valor", "esperava %s valores")}


def _gettext(message: str) -> str:
    return PORTUGUESE.get(message, message)


def _ngettext(singular: str, plural: str, count: int) -> str:
    one, many = PORTUGUESE_PLURALS.get(singular, (singular, plural))
    return one if count == 1 else many


@contextmanager
def _portuguese() -> Iterator[None]:
    saved = argparse._, argparse.ngettext
    argparse._, argparse.ngettext = _gettext, _ngettext
    try:
        yield
    finally:
        argparse._, argparse.ngettext = saved


def _in_portuguese(method: Callable) -> Callable:
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        with _portuguese():
            return method(*args, **kwargs)

    return wrapper


class ArgumentParser(argparse.ArgumentParser):
    """argparse.ArgumentParser that speaks Portuguese (subparsers too: they share the class)."""

    __init__ = _in_portuguese(argparse.ArgumentParser.__init__)
    add_subparsers = _in_portuguese(argparse.ArgumentParser.add_subparsers)
    add_argument_group = _in_portuguese(argparse.ArgumentParser.add_argument_group)
    parse_args = _in_portuguese(argparse.ArgumentParser.parse_args)
    parse_known_args = _in_portuguese(argparse.ArgumentParser.parse_known_args)
    format_usage = _in_portuguese(argparse.ArgumentParser.format_usage)
    format_help = _in_portuguese(argparse.ArgumentParser.format_help)
    error = _in_portuguese(argparse.ArgumentParser.error)


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


# Below this a kernel cannot even import what the exercises use (measured: ~200 MB), and the
# grading would blame the student's first cell for the limit's fault.
MIN_MEMORY_MB = 512


def memory_mb(text: str) -> int:
    """An argparse ``type`` for --memory-mb: 0 (no limit) or enough for a kernel to start."""
    value = whole_number(0)(text)
    if 0 < value < MIN_MEMORY_MB:
        raise argparse.ArgumentTypeError(
            f"{value} MB não dá nem para o kernel começar: use pelo menos {MIN_MEMORY_MB} (ou 0 para sem limite)")
    return value


def output_file_problem(path: Path, what: str, example: str) -> str | None:
    """Why ``what`` (a file a command will write) could not be written at ``path``, checked before
    the long work that produces it; None when it can."""
    from grader.errors import os_reason

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


def run(main: Callable[[], int | None]) -> int:
    """``main()``'s exit code; when stdout's reader has gone (a pipe into `head`), exit 1 quietly.

    The recipe of the Python docs (signal module, "Note on SIGPIPE"): point stdout at devnull so
    the interpreter's last flush does not complain again.
    """
    try:
        try:
            code = main()
        finally:  # also when main() ends by SystemExit (argparse's --help, say)
            sys.stdout.flush()
        return int(code or 0)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:  # Ctrl-C: the grading's own cleanup (kernel, temporary folder) has run
        print("\ninterrompido (Ctrl-C).", file=sys.stderr)
        return INTERRUPTED


INTERRUPTED = 130  # the shell's code for a command ended by Ctrl-C (128 + SIGINT)
