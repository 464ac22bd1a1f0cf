"""O que as linhas de comando do curso (``python -m harness``, ``grade``, ``course``) dividem com o terminal.

- ``ArgumentParser``: o argparse com as palavras dele ("usage:", "options:", "show this help
  message and exit", "error:", "the following arguments are required"...) em português. O
  argparse busca cada palavra pelas funções ``_`` e ``ngettext`` do módulo (gettext) na hora
  em que precisa dela; elas são trocadas só enquanto um dos nossos parsers monta, lê ou
  imprime, então nenhum outro parser do processo muda.
- ``run``: chama o ``main`` de um comando e termina sem traceback quando quem lia a saída
  foi embora (``python -m harness timeline ... | head -1``: o código de saída continua o do
  comando, porque o trabalho terminou) ou num Ctrl-C (uma linha e o código 130).
"""
from __future__ import annotations

import argparse
import functools
import math
import os
import sys
from contextlib import contextmanager
from typing import Callable, Iterator

# As mensagens do argparse (Python 3.10 a 3.13), pelo texto em inglês que ele pede ao gettext.
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
    """argparse.ArgumentParser que fala português (os subparsers também: usam a mesma classe)."""

    __init__ = _in_portuguese(argparse.ArgumentParser.__init__)
    add_subparsers = _in_portuguese(argparse.ArgumentParser.add_subparsers)
    add_argument_group = _in_portuguese(argparse.ArgumentParser.add_argument_group)
    parse_args = _in_portuguese(argparse.ArgumentParser.parse_args)
    parse_known_args = _in_portuguese(argparse.ArgumentParser.parse_known_args)
    format_usage = _in_portuguese(argparse.ArgumentParser.format_usage)
    format_help = _in_portuguese(argparse.ArgumentParser.format_help)
    error = _in_portuguese(argparse.ArgumentParser.error)


class _OutputWhoseReaderMayLeave:
    """O sys.stdout de sempre, até o leitor ir embora: daí em diante a saída vai para /dev/null.

    É a receita da documentação do Python (módulo signal, "Note on SIGPIPE"): apontar o
    descritor 1 para devnull, para que nem a última descarga do interpretador reclame.
    """

    def __init__(self, stream):
        self._stream = stream

    def _reader_left(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, self._stream.fileno())
        os.close(devnull)

    def write(self, text):
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._reader_left()
            return len(text)

    def flush(self):
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._reader_left()

    def __getattr__(self, name):
        return getattr(self._stream, name)


def seconds(text: str, allow_zero: bool = False) -> float:
    """O ``type`` do argparse para uma opção em segundos: um número finito, maior que zero (ou,
    com ``allow_zero``, maior ou igual). ``float`` sozinho aceitaria "nan" e "inf", e um prazo
    NaN nunca vence nem deixa de vencer."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        limit = "maior ou igual a zero" if allow_zero else "maior que zero"
        raise argparse.ArgumentTypeError(f"esperava um número finito de segundos, {limit}; recebi {text!r}")
    return value


def seconds_or_zero(text: str) -> float:
    return seconds(text, allow_zero=True)


INTERRUPTED = 130  # o código que o shell dá a um comando encerrado por Ctrl-C (128 + SIGINT)


def run(main: Callable[[], int | None]) -> int:
    """O código de saída de ``main()``; um leitor que foi embora (``| head``) não vira traceback,
    e um Ctrl-C vira uma linha (a limpeza do próprio comando, ``finally`` e ``with``, já rodou)."""
    original = sys.stdout
    guarded = _OutputWhoseReaderMayLeave(original)
    sys.stdout = guarded
    try:
        try:
            code = main()
        finally:  # também quando main() termina por SystemExit (o --help do argparse, por exemplo)
            guarded.flush()
        return int(code or 0)
    except KeyboardInterrupt:
        print("\ninterrompido (Ctrl-C).", file=sys.stderr)
        return INTERRUPTED
    finally:
        sys.stdout = original
