"""python -m harness: rodar, retomar e controlar uma execução durável pela linha de comando.

    python -m harness run --scenario team-email [--workdir DIR] [--resume] [--approval]
    python -m harness status  --workdir DIR
    python -m harness approve --workdir DIR [--by NOME]
    python -m harness reject  --workdir DIR --reason MOTIVO
    python -m harness pause   --workdir DIR
    python -m harness cancel  --workdir DIR

O código de saída de ``run`` diz como a execução parou: 0 concluída, 10 pausada,
11 esperando aprovação, 12 cancelada, 13 falhada, 14 recusada pelo modelo (refusal),
137 derrubada (CRASH_AFTER), 4 outro worker tem a posse, 5 posse perdida no meio,
2 entrada ruim.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from harness.approval import ApprovalError
from harness.checkpoint import CheckpointError
from harness.lifecycle import (
    CHECKPOINT_FILE,
    LeaseFileError,
    LeaseHeld,
    RunNotResumable,
    control_run,
    load_run_checkpoint,
    read_lease,
)
from harness.runner import (
    EXIT_BAD_INPUT,
    EXIT_LEASE_HELD,
    NoCheckpoint,
    add_run_arguments,
    decide_pending_approval,
    describe_message,  # noqa: F401  (continua disponível aqui para quem já o importava)
    execute_run,
)


def show_status(args: argparse.Namespace) -> int:
    workdir = Path(args.workdir)
    lease = read_lease(workdir)  # lido primeiro: um lease.json ruim não deixa meia saída na tela
    state = load_run_checkpoint(workdir / CHECKPOINT_FILE)
    if state is None:
        raise NoCheckpoint(f"não há checkpoint em {workdir / CHECKPOINT_FILE}")
    print(f"run_id={state['run_id']} status={state['status']} turns={state['turns']} "
          f"tokens_used={state['tokens_used']} recovery_attempts={state['recovery_attempts']}")
    if state.get("status_reason"):
        print(f"motivo: {state['status_reason']}")
    if state["pending_approval"]:
        pending = state["pending_approval"]
        print(f"aguarda aprovação: {pending['name']} ({pending['id']}) entrada={pending['input']}")
    if lease is not None:
        situation = "liberada" if lease.get("released") else (
            "vencida" if lease["expires_at"] <= time.time() else "em uso")
        print(f"posse: token {lease['token']}, {lease['owner']}, {situation}")
    return 0


def decide(args: argparse.Namespace) -> int:
    approved = args.command == "approve"
    record = decide_pending_approval(args.workdir, approved, reason=getattr(args, "reason", ""),
                                     decided_by=args.by)
    verdict = "aprovada" if approved else f"recusada ({record['reason']})"
    print(f"{record['name']} {verdict}; continue com: python -m harness run --resume --workdir {args.workdir} ...")
    return 0


def control(args: argparse.Namespace) -> int:
    outcome = control_run(args.workdir, args.command, reason=args.reason)
    if outcome == "applied":
        print(f"execução {'cancelada' if args.command == 'cancel' else 'pausada'}")
    else:
        print("um worker está rodando esta execução: o pedido foi deixado e vale na próxima fronteira de turno")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m harness", description="Aparato do curso.",
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run_parser = add_run_arguments(sub.add_parser("run", help="roda (ou retoma) um cenário"))
    run_parser.set_defaults(func=execute_run)

    status_parser = sub.add_parser("status", help="mostra status, turnos, aprovação pendente e posse")
    status_parser.add_argument("--workdir", required=True)
    status_parser.set_defaults(func=show_status)

    for name, text in (("approve", "aprova a chamada que espera aprovação"),
                       ("reject", "recusa a chamada que espera aprovação")):
        decide_parser = sub.add_parser(name, help=text)
        decide_parser.add_argument("--workdir", required=True)
        decide_parser.add_argument("--by", default="", help="quem decidiu (fica registrado)")
        if name == "reject":
            decide_parser.add_argument("--reason", required=True, help="o motivo, que o modelo vai ler")
        decide_parser.set_defaults(func=decide)

    for name, text in (("pause", "pausa a execução na próxima fronteira de turno"),
                       ("cancel", "cancela a execução: ela nunca mais roda")):
        control_parser = sub.add_parser(name, help=text)
        control_parser.add_argument("--workdir", required=True)
        control_parser.add_argument("--reason", default="", help="o motivo, registrado no checkpoint")
        control_parser.set_defaults(func=control)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "run":
        return args.func(args)
    try:
        return args.func(args)
    except LeaseHeld as error:
        print(f"agora não: {error}", file=sys.stderr)
        return EXIT_LEASE_HELD
    except (NoCheckpoint, CheckpointError, ApprovalError, RunNotResumable, LeaseFileError) as error:
        print(f"não deu: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
