"""As opções de ``python -m harness``: as que vários comandos dividem, e a conferência antes de qualquer um.

- ``add_store_arguments``: ``--store`` e ``--run``, os mesmos em todos os comandos;
- ``add_run_arguments``: as opções do ``run`` (cenário, pasta, tetos, prazo da posse...);
- ``check_options``: o que se confere antes de o comando tocar em qualquer coisa (uma pasta
  vazia, CRASH_AFTER digitado errado, um prazo de posse fora do limite).

Uma opção que não serve levanta ``UsageError`` (o argparse a diz, com o uso do comando) ou
``BadInput`` (uma linha); ``harness.exit_codes`` diz o código de saída de cada uma.
"""
from __future__ import annotations

import argparse

from harness.cli_text import seconds
from harness.crash import check_crash_variables
from harness.lifecycle import LEASE_SECONDS, MAX_RECOVERY_ATTEMPTS, check_lease_seconds
from harness.loop import MAX_TURNS
from harness.model import MAX_TOKENS
from harness.run_names import run_name_problem
from harness.scenarios import list_scenarios
from harness.stores import STORE_KINDS


class UsageError(Exception):
    """Uma combinação de opções que não diz qual execução usar."""


class BadInput(Exception):
    """Uma opção ou variável de ambiente que não serve, vista antes de o comando começar."""


def add_store_arguments(parser):
    """``--store`` e ``--run``: onde a execução mora (os mesmos em todos os comandos)."""
    parser.add_argument("--store", default="files", metavar="|".join(STORE_KINDS),
                        help="onde a execução grava: files (padrão, os arquivos das lições), sqlite "
                             "(PASTA/run.sqlite3) ou postgresql://... (um servidor, para vários workers)")
    parser.add_argument("--run", metavar="NOME", type=run_name_argument,
                        help="no PostgreSQL, o nome da execução no banco (padrão: o nome da pasta)")
    return parser


def run_name_argument(text):
    """``--run NOME``: conferido na entrada, antes de virar chave de linha ou nome de pasta."""
    problem = run_name_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


def add_run_arguments(parser):
    parser.add_argument("--scenario", choices=list_scenarios(),
                        help="o cenário; numa retomada, o padrão é o que a execução gravou ao começar")
    parser.add_argument("--workdir", metavar="PASTA", help="pasta da execução (padrão: runs/CENÁRIO)")
    parser.add_argument("--resume", action="store_true", help="continua do checkpoint")
    parser.add_argument("--max-turns", type=int, default=MAX_TURNS, metavar="N",
                        help="teto de turnos da execução")
    parser.add_argument("--max-tokens", type=int, default=MAX_TOKENS, metavar="N",
                        help="limite de tokens de saída por resposta do modelo (max_tokens)")
    parser.add_argument("--token-budget", type=int, default=None, metavar="N",
                        help="orçamento de tokens da execução inteira, gravado na cena: a execução para em "
                             "paused quando tokens_used chega nele (numa retomada, troca o orçamento gravado)")
    parser.add_argument("--live", action="store_true", help="usa a API real (exige ANTHROPIC_API_KEY)")
    parser.add_argument("--approval", action="store_true",
                        help="ferramentas de alto impacto esperam a decisão de uma pessoa (approve/reject)")
    parser.add_argument("--lease-seconds", type=seconds, default=LEASE_SECONDS, metavar="SEGUNDOS",
                        help="prazo da posse da execução, renovada a cada turno e, durante chamadas longas, "
                             "a cada terço do prazo (no máximo 24 h: uma posse tomada no futuro deste relógio, "
                             "ou que vence além de 24 h, é tratada como inválida)")
    parser.add_argument("--max-recovery-attempts", type=int, default=MAX_RECOVERY_ATTEMPTS, metavar="N",
                        help="retomadas seguidas depois de queda, sem avanço, antes de marcar failed")
    return add_store_arguments(parser)


def check_options(args: argparse.Namespace) -> None:
    """Antes de qualquer comando: um erro de digitação é dito agora, não no meio da execução."""
    for option in ("workdir", "into"):
        if getattr(args, option, None) == "":  # Path("") seria a pasta atual, e None / "" um TypeError
            raise BadInput(f"--{option} está vazio: diga uma pasta (. para a pasta atual)")
    try:
        check_crash_variables()
    except ValueError as error:  # um rótulo digitado errado em CRASH_AFTER
        raise BadInput(str(error)) from None
    if getattr(args, "lease_seconds", None) is not None:
        try:
            check_lease_seconds(args.lease_seconds)
        except ValueError as error:
            raise UsageError(f"--lease-seconds: {error}") from None
