"""What the course's command lines (`grade`, `course`) share with the terminal.

- ``ArgumentParser``: argparse with its own words ("usage:", "options:", "show this help
  message and exit", "error:", "the following arguments are required"...) in Portuguese.
  argparse looks its words up through the module-level ``_`` and ``ngettext`` (gettext) each
  time it needs one; they are swapped only while one of our parsers builds, parses or
  prints, so no other parser in the process changes.
- ``run``: calls a command's main and ends quietly, without a traceback, when the reader of
  stdout goes away (``grade list | head``).
"""
from __future__ import annotations

import argparse
import functools
import os
import sys
from contextlib import contextmanager
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
    "invalid %(type)s value: %(value)r": "valor inválido (%(type)s): %(value)r",
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
