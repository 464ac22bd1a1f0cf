"""python -m harness: rodar, retomar e controlar uma execução durável pela linha de comando.

    python -m harness run --scenario team-email [--workdir PASTA] [--resume] [--approval]
    python -m harness status  --workdir PASTA
    python -m harness approve --workdir PASTA [--by NOME]
    python -m harness reject  --workdir PASTA --reason MOTIVO
    python -m harness pause   --workdir PASTA
    python -m harness cancel  --workdir PASTA
    python -m harness timeline --workdir PASTA
    python -m harness rewind  --workdir PASTA --to TURNO[-A|-B]
    python -m harness fork    --workdir PASTA --to TURNO[-A|-B] --into NOVA [--dry-run]
    python -m harness submit  --store postgresql://... --scenario team-email [--run NOME]
    python -m harness worker  --store postgresql://... [--max-runs N] [--idle-exit SEGUNDOS]

``--store`` diz onde a execução mora: ``files`` (padrão: os arquivos das lições, em PASTA),
``sqlite`` (PASTA/run.sqlite3) ou ``postgresql://...`` (um servidor; a execução é ``--run NOME``).
Todos os comandos aceitam os três; ``submit`` e ``worker`` são só do PostgreSQL.

O código de saída de ``run`` diz como a execução parou: 0 concluída, 10 pausada,
11 esperando aprovação, 12 cancelada, 13 falhada, 14 recusada pelo modelo (refusal),
137 derrubada (CRASH_AFTER), 130 interrompida com Ctrl-C (fica pausada), 4 outro worker tem a posse,
5 posse perdida no meio, 2 entrada ruim, erro da API ou disco que não aceita gravar.
"""
from __future__ import annotations

import argparse
import shlex
import socket
import sys
import time
from pathlib import Path

from harness.cli_args import UsageError, add_run_arguments, add_store_arguments, check_options
from harness.cli_run import execute_run
from harness.cli_text import ArgumentParser, seconds, seconds_or_zero
from harness.exit_codes import end, exit_for
from harness.lifecycle import (
    LEASE_SECONDS,
    MAX_RECOVERY_ATTEMPTS,
    control_run,
    lease_from_a_clock_ahead,
    owner_is_gone,
)
from harness.runner import NoCheckpoint, decide_pending_approval, no_run_here
from harness.scenarios import list_scenarios, load_scenario
from harness.stopping import pause_stopped_run
from harness.stores import is_postgres, open_store, refuse_another_stores_run
from harness.stores.addresses import without_password
from harness.stores.files import REWIND_JOURNAL, settle_interrupted_rewind
from harness.timeline import TimelineError, check_fork_target
from harness.timeline_commands import fork_in_store, parse_point_spec, rewind_in_store


def store_from(args: argparse.Namespace):
    """O armazenamento que as opções pedem: a pasta (--workdir) ou, no PostgreSQL, a execução (--run)."""
    if is_postgres(args.store):
        if not (args.run or args.workdir):
            raise UsageError("com --store postgresql://..., diga qual execução: --run NOME")
        return open_store(args.store, args.workdir or ".", run=args.run)
    if not args.workdir:
        raise UsageError(f"com --store {args.store}, diga a pasta da execução: --workdir PASTA")
    return open_store(args.store, args.workdir)


def show_status(args: argparse.Namespace) -> int:
    if is_postgres(args.store) and not (args.run or args.workdir):
        return list_runs(args)
    with store_from(args) as store:
        if not store.exists():  # antes de qualquer leitura: abrir um banco que não existe o criaria
            raise no_run_here(store)
        lease = store.read_lease()  # lido primeiro: um lease.json ruim não deixa meia saída na tela
        state = store.load()
        if state is None:
            raise NoCheckpoint(f"não há checkpoint em {store.describe()}")
        print(f"run_id={state['run_id']} status={state['status']} turns={state['turns']} "
              f"tokens_used={state['tokens_used']} recovery_attempts={state['recovery_attempts']}")
        scenario = store.scenario_name()
        print(f"cenário: {scenario}" if scenario else "cenário: não gravado (diga --scenario NOME ao retomar)")
        if state.get("status_reason"):
            print(f"motivo: {state['status_reason']}")
        if state["pending_approval"]:
            pending = state["pending_approval"]
            print(f"aguarda aprovação: {pending['name']} ({pending['id']}) entrada={pending['input']}")
        if lease is not None:
            print(f"posse: token {lease['token']}, {lease['owner']}, {lease_situation(lease)}")
    return 0


def lease_situation(lease: dict) -> str:
    """Liberada, vencida, abandonada (o dono era um processo desta máquina que já morreu) ou em uso."""
    if lease.get("released"):
        return "liberada"
    if lease["expires_at"] <= time.time():
        return "vencida"
    if lease_from_a_clock_ahead(lease, time.time()):
        return ("inválida: gravada por um relógio adiantado (tomada no futuro deste relógio ou com prazo além de "
                "24 h); o próximo comando a assume")
    if lease.get("host") == socket.gethostname() and owner_is_gone(lease):
        return (f"abandonada: o processo {lease['pid']} desta máquina, que a tinha, morreu; "
                f"o próximo comando a assume")
    return "em uso"


def list_runs(args: argparse.Namespace) -> int:
    """``status --store postgresql://...`` sem --run: uma linha por execução do banco."""
    from harness.stores.postgres import connect

    with connect(args.store) as connection:
        rows = connection.execute("SELECT r.run, r.status, r.scenario, l.token, l.owner, l.released "
                                  "FROM runs r LEFT JOIN leases l ON l.run = r.run ORDER BY r.run").fetchall()
    for run, status, scenario, token, owner, released in rows:
        holder = "livre" if released or token is None else f"com {owner} (token {token})"
        print(f"{run:28} {status:21} {scenario or '':18} {holder}")
    print(f"{len(rows)} {'execução' if len(rows) == 1 else 'execuções'}")
    return 0


def decide(args: argparse.Namespace) -> int:
    approved = args.command == "approve"
    with store_from(args) as store:
        record = decide_pending_approval(None, approved, reason=getattr(args, "reason", ""), decided_by=args.by,
                                         store=store)
        command = resume_command(args, store)
    verdict = "aprovada" if approved else f"recusada ({record['reason']})"
    print(f"{record['name']} {verdict}; continue com: {command}")
    return 0


def control(args: argparse.Namespace) -> int:
    with store_from(args) as store:
        outcome = control_run(store, args.command, reason=args.reason)
    if outcome == "applied":
        print(f"execução {'cancelada' if args.command == 'cancel' else 'pausada'}")
    else:
        print("um worker está rodando esta execução: o pedido foi deixado e vale na próxima fronteira de turno")
    return 0


def submit(args: argparse.Namespace) -> int:
    from harness.worker import submit_run

    require_postgres(args)
    run = submit_run(args.store, load_scenario(args.scenario), run=args.run, requires_approval=args.approval)
    print(f"execução {run} na fila; um worker a pega com: python -m harness worker "
          f"--store {shlex.quote(without_password(args.store))}")
    return 0


def start_worker(args: argparse.Namespace) -> int:
    from harness.worker import work

    require_postgres(args)
    handled = work(args.store, lease_seconds=args.lease_seconds, max_recovery_attempts=args.max_recovery_attempts,
                   max_runs=args.max_runs, idle_exit=args.idle_exit, workdir=args.workdir, live=args.live,
                   say=lambda text: print(text, flush=True))
    print(f"worker encerrado depois de {handled} {'execução' if handled == 1 else 'execuções'}")
    return 0


def require_postgres(args: argparse.Namespace) -> None:
    if not is_postgres(args.store):
        raise UsageError(f"{args.command} divide execuções entre workers num servidor: use "
                         f"--store postgresql://... (recebi {without_password(args.store)!r})")


def show_timeline(args: argparse.Namespace) -> int:
    """``timeline``: os pontos da linha do tempo ativa e onde a cabeça está, com o que o armazenamento
    sabe de cada um (os arquivos leem a cena de cada ponto; um banco lista a sequência)."""
    with store_from(args) as store:
        view = store.timeline_view()
        if view is None:
            raise no_run_here(store)
        parent = view.timeline.get("parent")
        origin = (f", bifurcada de {parent['timeline_id']} no turno {parent['turn']} (ponto {parent['point']})"
                  if parent else "")
        print(f"linha do tempo {view.timeline['timeline_id']} em {view.where}{origin}; "
              f"dry-run: {'sim' if view.timeline['dry_run'] else 'não'}")
        if not view.frames:
            print("  nenhum ponto gravado na sequência")
        for frame in view.frames:
            print(frame_line(frame))
        for where, count in view.set_aside:
            print(f"  guardados por uma rebobinagem: {where} ({count} pontos)")
        head = store.head_scene()  # depois da lista: uma cena ilegível não esconde os pontos
        if head is not None:
            name, scene = head
            status = f", status {scene['status']}" if "status" in scene else ""
            print(f"{name}: turno {scene['turns']}{status}; {pending_note(scene)}")
    return 0


def frame_line(frame) -> str:
    """A linha de um ponto na ``timeline``: id, turno e momento, e o resumo da cena quando há."""
    if frame.error:
        return f"  {frame.id}  ILEGÍVEL: {frame.error}"
    moment = "A decisão  " if frame.point == "A" else "B resultado"
    line = f"  {frame.id}  turno {frame.turn:>3}  {moment}"
    if frame.summary is None:
        return line
    summary = frame.summary
    pending = f"  pendente: {', '.join(summary['pending'])}" if summary["pending"] else ""
    return f"{line}  tokens_used={summary['tokens_used']:<6} mensagens={summary['message_count']}{pending}"


def pending_note(scene: dict) -> str:
    calls = scene["pending_tool_use"] or []
    if not calls:
        return "nenhuma chamada pendente"
    names = ", ".join(f"{call['name']} ({call['id']})" for call in calls)
    return (f"pendente: {names}; nada foi executado: a próxima execução resolve pelo livro-razão e pela "
            f"válvula de aprovação")


def rewind(args: argparse.Namespace) -> int:
    turn, point = parse_point_spec(args.to)
    with store_from(args) as store:
        scene = rewind_in_store(store, turn, point)
    status = f", status {scene['status']}" if "status" in scene else ""
    print(f"rebobinada para o turno {turn}{status}; {pending_note(scene)}")
    with run_store(args) as store:
        print(f"continue com: {resume_command(args, store)}")
    return 0


def run_store(args: argparse.Namespace, workdir=None):
    """O armazenamento da execução (a de --workdir, ou a pasta ``workdir`` de uma bifurcação)."""
    if workdir is None:
        return store_from(args)
    return open_store(args.store, workdir, run=Path(workdir).name if is_postgres(args.store) else None)


def resume_command(args: argparse.Namespace, store, workdir=None) -> str:
    """O comando que retoma a execução, pronto para copiar: sem reticências nem nomes a preencher
    (o cenário vem da execução; só uma execução que não o gravou pede --scenario NOME)."""
    words = ["python", "-m", "harness", "run", "--resume"]
    if workdir or args.workdir:
        words += ["--workdir", str(workdir or args.workdir)]
    if args.store != "files":
        words += ["--store", without_password(args.store)]  # a senha não vai para a tela: PGPASSWORD ou ~/.pgpass
    if is_postgres(args.store):
        words += ["--run", Path(workdir).name if workdir else (args.run or Path(args.workdir).name)]
    command = shlex.join(words)
    return command if store.scenario_name() else f"{command} --scenario NOME"


def fork(args: argparse.Namespace) -> int:
    """``fork``: a nova linha vai para --into (nos arquivos e no SQLite, a pasta; no PostgreSQL, o nome
    da pasta vira o nome da nova execução)."""
    turn, point = parse_point_spec(args.to)
    with store_from(args) as store:
        check_fork_target(args.workdir, args.into)  # antes de abrir o destino: abrir um banco já o cria
        if not Path(args.into).resolve().name:
            raise TimelineError(f"{args.into} não dá nome à nova execução; escolha uma pasta com nome")
        if args.dry_run:
            preview = store.fork_preview(store.find_point(turn, point))
            line = f" da linha {preview.line}" if preview.line else ""
            print(f"--dry-run: nada foi gravado. A bifurcação copiaria {preview.point.id} (turno "
                  f"{preview.scene['turns']}){line} para {args.into}, com dry-run ligado e, no livro-razão, só os "
                  f"registros que a original tem das chamadas pendentes; {pending_note(preview.scene)}")
            return 0
        with open_store(args.store, args.into, run=Path(args.into).name) as new_store:
            info = fork_in_store(store, turn, new_store, point, say=lambda text: print(text, file=sys.stderr))
    origin = info["parent"]
    print(f"nova linha {info['timeline_id']} em {args.into}, bifurcada de {origin['timeline_id']} no turno "
          f"{origin['turn']} (ponto {origin['point']}); dry-run: ferramentas de alto impacto não tocam o mundo")
    with run_store(args, args.into) as store:
        print(f"continue com: {resume_command(args, store, args.into)}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="python -m harness", description="Aparato do curso.",
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMANDO")
    run_parser = add_run_arguments(sub.add_parser("run", help="roda (ou retoma) um cenário"))
    run_parser.set_defaults(func=run_command)

    status_parser = sub.add_parser("status", help="mostra status, turnos, aprovação pendente e posse")
    status_parser.add_argument("--workdir", metavar="PASTA", help="pasta da execução")
    add_store_arguments(status_parser).set_defaults(func=show_status)

    for name, text in (("approve", "aprova a chamada que espera aprovação"),
                       ("reject", "recusa a chamada que espera aprovação")):
        decide_parser = sub.add_parser(name, help=text)
        decide_parser.add_argument("--workdir", metavar="PASTA", help="pasta da execução")
        decide_parser.add_argument("--by", default="", metavar="NOME", help="quem decidiu (fica registrado)")
        if name == "reject":
            decide_parser.add_argument("--reason", required=True, metavar="MOTIVO", help="o motivo, que o modelo vai ler")
        add_store_arguments(decide_parser).set_defaults(func=decide)

    for name, text in (("pause", "pausa a execução na próxima fronteira de turno"),
                       ("cancel", "cancela a execução: ela nunca mais roda")):
        control_parser = sub.add_parser(name, help=text)
        control_parser.add_argument("--workdir", metavar="PASTA", help="pasta da execução")
        control_parser.add_argument("--reason", default="", metavar="MOTIVO", help="o motivo, registrado no checkpoint")
        add_store_arguments(control_parser).set_defaults(func=control)

    timeline_parser = sub.add_parser("timeline", help="lista a sequência de pontos de gravação da execução")
    timeline_parser.add_argument("--workdir", metavar="PASTA", help="pasta da execução")
    add_store_arguments(timeline_parser).set_defaults(func=show_timeline)

    point_help = "TURNO (o último ponto do turno), TURNO-A ou TURNO-B"
    rewind_parser = sub.add_parser("rewind", help="volta a execução a um ponto gravado (não executa nada)")
    rewind_parser.add_argument("--workdir", metavar="PASTA", help="pasta da execução")
    rewind_parser.add_argument("--to", required=True, metavar="TURNO[-A|-B]", help=point_help)
    add_store_arguments(rewind_parser).set_defaults(func=rewind)

    fork_parser = sub.add_parser("fork", help="abre uma nova linha do tempo, em dry-run, a partir de um ponto")
    fork_parser.add_argument("--workdir", metavar="PASTA", help="pasta da execução")
    fork_parser.add_argument("--to", required=True, metavar="TURNO[-A|-B]", help=point_help)
    fork_parser.add_argument("--into", required=True, metavar="PASTA", help="a pasta da nova linha (nova ou vazia)")
    fork_parser.add_argument("--dry-run", action="store_true", help="só mostra o que seria criado; não grava nada")
    add_store_arguments(fork_parser).set_defaults(func=fork)

    submit_parser = sub.add_parser("submit", help="põe uma execução nova na fila dos workers (PostgreSQL)")
    submit_parser.add_argument("--scenario", required=True, choices=list_scenarios())
    submit_parser.add_argument("--approval", action="store_true",
                               help="ferramentas de alto impacto esperam a decisão de uma pessoa")
    add_store_arguments(submit_parser).set_defaults(func=submit)

    worker_parser = sub.add_parser("worker", help="pega execuções da fila e as roda, uma por vez (PostgreSQL)")
    worker_parser.add_argument("--workdir", metavar="PASTA", help="pasta local para as sandboxes (padrão: uma pasta temporária)")
    worker_parser.add_argument("--max-runs", type=int, metavar="N", help="encerra depois de tantas execuções")
    worker_parser.add_argument("--idle-exit", type=seconds_or_zero, metavar="SEGUNDOS", help="encerra depois de tantos segundos com a fila vazia")
    worker_parser.add_argument("--lease-seconds", type=seconds, default=LEASE_SECONDS, metavar="SEGUNDOS",
                               help="prazo da posse de cada execução (uma posse vencida volta à fila), renovada "
                                    "durante chamadas longas; no máximo 24 h")
    worker_parser.add_argument("--max-recovery-attempts", type=int, default=MAX_RECOVERY_ATTEMPTS, metavar="N",
                               help="retomadas seguidas sem avanço antes de marcar failed")
    worker_parser.add_argument("--live", action="store_true", help="usa a API real (exige ANTHROPIC_API_KEY)")
    add_store_arguments(worker_parser).set_defaults(func=start_worker)
    return parser


def run_workdir(args: argparse.Namespace):
    """A pasta do ``run``: a de --workdir, ou o padrão runs/CENÁRIO (o mesmo de ``execute_run``)."""
    if args.workdir or not (args.scenario or args.run):
        return args.workdir and Path(args.workdir)
    return Path("runs") / (args.scenario or args.run)


def files_run_dir(args: argparse.Namespace):
    """A pasta da execução em arquivos que o comando vai usar; None num banco ou sem pasta."""
    if args.store != "files":
        return None
    if args.command == "run":
        return run_workdir(args)
    return Path(args.workdir) if getattr(args, "workdir", None) else None


def run_command(args: argparse.Namespace) -> int:
    """``run``: ``execute_run``; quando ele para num erro, o código e a linha são os da tabela
    de ``harness.exit_codes`` para quem está rodando (um erro que ela não trata ali segue para ``main``).

    Ctrl-C (130) e um erro da API (2) deixam a execução pausada, não "caída" (veja
    ``harness.stopping``); um disco que recusa a gravação (2) não grava mais nada: a última
    cena gravada continua inteira, e a retomada segue dela.
    """
    try:
        return execute_run(args)
    except BaseException as error:
        exit_ = exit_for(error, running=True)
        if exit_ is None:
            raise
        return end(error, exit_, resuming=args.resume,
                   stop=lambda reason: after_the_stop(args, pause_run_of(args, reason)))


def pause_run_of(args: argparse.Namespace, reason: str):
    """``pause_stopped_run`` na execução do ``run`` (a cena, ou None se não havia o que pausar)."""
    if run_workdir(args) is None:
        return None
    with open_store(args.store, run_workdir(args), run=args.run) as store:
        return pause_stopped_run(store, reason)


def after_the_stop(args: argparse.Namespace, state) -> str:
    """Como a execução ficou depois de um ``run`` interrompido, e o comando que a retoma."""
    if state is None:
        return "nenhuma cena tinha sido gravada ainda"
    if state["status"] != "paused":
        return f"a execução ficou '{state['status']}'"
    located = argparse.Namespace(**{**vars(args), "workdir": str(run_workdir(args))})
    with run_store(located) as store:
        command = resume_command(located, store)
    return (f"a execução ficou pausada no turno {state['turns']} (não conta como queda); "
            f"continue com: {command}")


def settle_what_a_crash_left(args: argparse.Namespace) -> None:
    """Antes de qualquer comando numa pasta: uma rebobinagem que caiu no meio é terminada, e dito."""
    run_dir = files_run_dir(args)
    if run_dir is not None and (run_dir / REWIND_JOURNAL).exists():
        refuse_another_stores_run("files", run_dir)
        note = settle_interrupted_rewind(run_dir)
        if note:
            print(note, file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        check_options(args)
        settle_what_a_crash_left(args)
        return args.func(args)
    except BaseException as error:  # the table says which errors end a command, and how
        exit_ = exit_for(error)
        if exit_ is None:
            raise
        return end(error, exit_, parser=parser)
