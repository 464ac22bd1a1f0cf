"""Os códigos de saída de ``python -m harness`` e a tabela que traduz cada erro num código e numa linha.

Um supervisor (o systemd, um orquestrador, um laço num script) não lê o que o harness
imprime: lê o código de saída. O do ``run`` diz como a execução parou:

    0 concluída, 10 pausada, 11 esperando aprovação, 12 cancelada, 13 falhada,
    14 recusada pelo modelo, 137 derrubada (CRASH_AFTER), 130 interrompida com Ctrl-C,
    4 outro worker tem a posse, 5 posse perdida no meio,
    2 entrada ruim, erro da API ou disco que não aceita gravar.

Quando um comando para num erro, ``FAILURES`` diz o código e a linha (em stderr), com duas
colunas: ``running``, enquanto o loop do ``run`` roda (ali a linha diz se a execução não
começou, parou sem gravar ou ficou pausada), e ``anywhere``, em todos os comandos (e no
``run`` antes de o loop começar). Um erro que a tabela não trata ali sobe como sempre: um
Ctrl-C vira a linha de ``harness.cli_text.run`` (código 130); qualquer outro, o traceback do
Python e o código 1.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Callable

from harness import api_errors
from harness.approval import ApprovalError
from harness.checkpoint import CheckpointError
from harness.cli_args import BadInput, UsageError
from harness.cli_endpoint import EndpointSettingError
from harness.cli_text import INTERRUPTED
from harness.crash import EXIT_CODE_KILLED, SimulatedCrash
from harness.effects import EffectsLedgerError
from harness.lifecycle import LeaseFileError, LeaseHeld, LeaseLost, RunNotResumable
from harness.model import LiveModeUnavailable
from harness.runner import NoCheckpoint, ScenarioUnknown
from harness.state_json import StateFileError
from harness.stopping import describe_api_error, describe_disk_error
from harness.stores.base import StoreError
from harness.timeline import TimelineError

# O código de saída diz ao supervisor em que status a execução parou.
EXIT_CODES = {"completed": 0, "paused": 10, "waiting_for_approval": 11, "cancelled": 12, "failed": 13,
              "refused": 14}
EXIT_BAD_INPUT = 2     # checkpoint ausente ou ilegível, livro-razão ou lease.json corrompidos...
EXIT_LEASE_HELD = 4    # outro worker vivo tem a posse
EXIT_LEASE_LOST = 5    # este worker perdeu a posse no meio do caminho e parou sem gravar


@dataclass(frozen=True)
class Exit:
    """Como um erro encerra o comando: o código de saída e a linha dita em stderr.

    ``line`` é um modelo de ``str.format``: {error} é o erro; {verb}, "começar" ou "retomar";
    {disk} e {api}, a linha de ``harness.stopping`` sobre o erro de disco ou da API; {after},
    como a execução ficou depois que ``run`` a gravou como pausada, com o motivo ``pause``.
    Sem ``line``, quem fala é o argparse: o uso do comando e "erro: ...".
    """
    code: int | Callable[[BaseException], int]
    line: str | None
    pause: str | None = None


@dataclass(frozen=True)
class Failure:
    """Uma linha da tabela: os erros, o que eles dão enquanto o ``run`` roda e em qualquer comando.

    ``running`` vazio: o ``run`` diz o mesmo que os outros comandos. ``anywhere`` vazio: fora do
    loop do ``run``, a tabela não trata o erro, e ele sobe.
    """
    errors: tuple[type[BaseException], ...]
    running: Exit | None
    anywhere: Exit | None


def code_of_the_status(error: RunNotResumable) -> int:
    return EXIT_CODES[error.status]


UNREADABLE = (NoCheckpoint, CheckpointError, EffectsLedgerError, ApprovalError, LeaseFileError, StateFileError,
              StoreError)
NOT_DONE = Exit(EXIT_BAD_INPUT, "não deu: {error}")
CANNOT_START = Exit(EXIT_BAD_INPUT, "não dá para {verb}: {error}")

FAILURES = (
    Failure((SimulatedCrash,), Exit(EXIT_CODE_KILLED, "processo derrubado: {error}"), None),
    Failure((LeaseHeld,), Exit(EXIT_LEASE_HELD, "não começou: {error}"), Exit(EXIT_LEASE_HELD, "agora não: {error}")),
    Failure((LeaseLost,), Exit(EXIT_LEASE_LOST, "parou sem gravar: {error}"), None),
    Failure((RunNotResumable,), Exit(code_of_the_status, "não dá para retomar: {error}"), NOT_DONE),
    Failure(UNREADABLE, CANNOT_START, NOT_DONE),
    Failure((EndpointSettingError, ScenarioUnknown, LiveModeUnavailable), CANNOT_START, None),
    Failure((TimelineError, BadInput), None, NOT_DONE),
    Failure((UsageError,), None, Exit(EXIT_BAD_INPUT, None)),
    # Ctrl-C e um erro da API deixam a execução pausada, não "caída" (harness.stopping).
    Failure((KeyboardInterrupt,), Exit(INTERRUPTED, "interrompida (Ctrl-C): {after}", pause="interrompida com Ctrl-C"),
            None),
    Failure((api_errors.APIError,), Exit(EXIT_BAD_INPUT, "parou: {api}. {after}", pause="{api}"), None),
    # Um disco que recusa a gravação não grava mais nada: a última cena gravada continua inteira.
    Failure((OSError,), Exit(EXIT_BAD_INPUT, "parou: {disk}. A última cena gravada continua inteira; resolvido isso, "
                                             "retome com --resume"),
            Exit(EXIT_BAD_INPUT, "não deu: {disk}")),
)


def exit_for(error: BaseException, running: bool = False) -> Exit | None:
    """A saída que a tabela dá a ``error`` (a primeira linha que o nomeia), ou None se ela não o trata."""
    for failure in FAILURES:
        exit_ = failure.running if running else failure.anywhere
        if exit_ is not None and isinstance(error, failure.errors):
            return exit_
    return None


def end(error: BaseException, exit_: Exit, *, resuming: bool = False, stop=None, parser=None) -> int:
    """Diz em stderr a linha de ``exit_`` sobre ``error`` e devolve o código de saída.

    ``stop(motivo)`` grava a execução como pausada e diz como ela ficou (o {after} da linha);
    ``parser`` fala quando a linha é do argparse (e sai com 2).
    """
    if exit_.line is None:
        parser.error(str(error))
    words = {"error": error, "verb": "retomar" if resuming else "começar"}
    if isinstance(error, OSError):
        words["disk"] = describe_disk_error(error)
    if isinstance(error, api_errors.APIError):
        words["api"] = describe_api_error(error)
    if exit_.pause is not None:
        words["after"] = stop(exit_.pause.format(**words))
    print(exit_.line.format(**words), file=sys.stderr)
    return exit_.code(error) if callable(exit_.code) else exit_.code
