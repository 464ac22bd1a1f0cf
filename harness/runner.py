"""Lição 6: o loop durável completo, com tudo o que as lições 2 a 6 construíram.

Cada turno segue a mesma ordem, e cada passo que pode ser interrompido tem um ponto de
queda com nome (``crash_point``), para o aparato de verificação derrubar o processo ali:

    pega a posse (lease) -> modelo responde          [after-model-response]
    -> ponto A: sequência + checkpoint.json          [mid-checkpoint-write, after-save-A]
    -> ferramentas: livro-razão -> aprovação -> executar -> registrar
                                                     [after-tool-run, after-effect-write]
    -> ponto B: sequência + checkpoint.json          [mid-checkpoint-write, after-save-B]

Tudo o que precisa sobreviver passa por um armazenamento (``harness.stores``). O padrão são
os arquivos que as lições constroem, na pasta da execução (RUN_DIR):

    checkpoint.json    a cena mais recente (v2: run_id, status, tentativas...)
    checkpoints/       a sequência por turno (turn-001-A.json, turn-001-B.json...)
    effects.json       o livro-razão de efeitos
    approvals.json     as decisões da válvula de aprovação
    lease.json         quem tem a posse e o fencing token
    world/             o mundo externo do cenário (sandbox, caixa de saída, chamados)

Com ``--store sqlite`` a mesma execução mora em RUN_DIR/run.sqlite3; com
``--store postgresql://...``, num servidor, onde vários workers podem dividir as execuções.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from harness.approval import (
    DEFAULT_APPROVAL_TTL,
    PENDING,
    ApprovalError,
    WaitingForApproval,
    approve,
    decision_record,
    reject,
)
from harness.checkpoint import CheckpointError
from harness.cli_text import ArgumentParser, seconds
from harness.crash import EXIT_CODE_KILLED, SimulatedCrash, crash_point
from harness.effects import EffectsLedgerError
from harness.fake_endpoint import ScriptedEndpoint
from harness.heartbeat import LeaseHeartbeat
from harness.lifecycle import (
    FINAL_STATUSES,
    LEASE_SECONDS,
    MAX_RECOVERY_ATTEMPTS,
    LeaseFileError,
    LeaseHeld,
    LeaseLost,
    RunNotResumable,
    apply_control,
    check_resumable,
    new_run_checkpoint,
    note_progress,
    note_recovery_attempt,
    set_status,
)
from harness.loop import CUT_OFF_STOP_REASONS, MAX_TURNS, call_model, take_response
from harness.model import MAX_TOKENS, LiveModeUnavailable, make_client
from harness.request_log import append_request
from harness.run_names import run_name_problem
from harness.resume import reconcile as reconcile_without_ledger
from harness.scenarios import ScenarioError, is_scenario_name, list_scenarios, load_scenario, shown_name
from harness.state_json import StateFileError
from harness.stores import STORE_KINDS, StoreError, open_store
from harness.stores.files import FileStore
from harness.token_budget import over_budget, stop_for_budget
from harness.tool_runner import run_tool_uses
from harness.tools import workspace_in_use

WORLD_DIR = "world"

# O código de saída diz ao supervisor em que status a execução parou.
EXIT_CODES = {"completed": 0, "paused": 10, "waiting_for_approval": 11, "cancelled": 12, "failed": 13,
              "refused": 14}
EXIT_BAD_INPUT = 2     # checkpoint ausente ou ilegível, livro-razão ou lease.json corrompidos...
EXIT_LEASE_HELD = 4    # outro worker vivo tem a posse
EXIT_LEASE_LOST = 5    # este worker perdeu a posse no meio do caminho e parou sem gravar

ENDPOINT_LOG_ENV = "HARNESS_ENDPOINT_LOG"  # arquivo onde cada pedido ao endpoint offline vira uma linha
# Segundos que o endpoint offline espera antes de cada resposta: a API real leva segundos por
# chamada, e um worker passa a maior parte do tempo esperando o modelo, não gravando.
ENDPOINT_LATENCY_ENV = "HARNESS_ENDPOINT_LATENCY"


class EndpointSettingError(ValueError):
    """Uma variável do endpoint offline (HARNESS_ENDPOINT_LATENCY) com valor que não serve."""


class NoCheckpoint(Exception):
    """--resume numa pasta sem checkpoint.json: não há execução para continuar."""


def no_checkpoint(store):
    return NoCheckpoint(f"não há checkpoint em {store.describe()}; rode sem --resume primeiro")


def no_run_here(store):
    """Um comando que só lê ou controla uma execução, onde não há nenhuma (uma pasta digitada errado)."""
    return NoCheckpoint(f"não há execução em {store.describe()}: confira a pasta (--workdir) ou o nome "
                        f"(--run); nada foi criado")


class ScenarioUnknown(Exception):
    """Não dá para saber que cenário rodar: nem --scenario, nem um cenário gravado na execução."""


def ask_a_person(call):
    """Política de aprovação "pergunte a uma pessoa": fica pendente até alguém decidir
    (``python -m harness approve`` ou ``reject``), com a execução em waiting_for_approval."""
    return PENDING


# --- Gravações sob a posse ----------------------------------------------------------------

def save_progress(store, state, lease, point=None):
    """Grava a cena sob o fencing token; com ``point``, também o ponto da sequência.

    Nos arquivos, o ponto vem antes do checkpoint.json (a sequência nunca fica atrás dele);
    num banco, os dois entram na mesma transação.
    """
    store.save(lease, state, point)


def start_clean(store, scenario, lease, requires_approval=False):
    """Uma execução nova: o armazenamento apaga a anterior, recria o mundo e grava a cena inicial.

    O nome do cenário fica na execução: a retomada não precisa que alguém o lembre.
    """
    state = new_run_checkpoint(scenario.task, requires_approval=requires_approval)
    state["scenario"] = scenario.name
    store.start(lease, state, scenario)
    return state


def reopen(store, lease, max_recovery_attempts):
    """Retomada: lê a cena (v1 é migrada), respeita o status e conta a tentativa de recuperação.

    Devolve a cena pronta para seguir ou já num status final/de espera (o chamador para).
    """
    state = store.load()
    if state is None:
        raise no_checkpoint(store)
    if not check_resumable(state):  # já concluída: nada a fazer, nada a gravar
        return state
    if store.scene_predates_ledger():
        close_v1_calls_without_ledger(store, state, lease)
    can_go_on = note_recovery_attempt(state, max_recovery_attempts)
    request = store.pending_control()
    if request is not None:
        apply_control(state, request)   # um cancelamento pedido enquanto ninguém rodava
    elif can_go_on:
        set_status(state, "running")
    # Gravada sem ponto de queda: a contagem de tentativas precisa sobreviver à próxima queda.
    store.save(lease, state, crash_points=False)
    if request is not None:
        store.clear_control(lease)
    return state


def close_v1_calls_without_ledger(store, state, lease):
    """Uma cena v1 com chamadas pendentes e sem livro-razão veio de um código que não gravava
    intenção antes dos efeitos (lições 2 e 3): nada prova que uma chamada de alto impacto
    "nunca começou". Vale a regra da lição 3: leitura roda de novo, alto impacto vira
    is_error "estado desconhecido". Com livro-razão (lições 4 e 5), a divisão em três vias decide.
    """
    if not state["pending_tool_use"]:
        return
    with workspace_in_use(store.world()), store.tool_phase(lease, state["pending_tool_use"]):
        reconcile_without_ledger(state)
    save_progress(store, state, lease, "B")


# --- O loop ---------------------------------------------------------------------------------

def answer_pending(store, state, lease, approver, dry_run):
    """Fecha as chamadas pendentes por run_tool_uses; False se uma delas espera aprovação.

    O livro-razão e o mundo só mudam com o token válido: quem garante isso é o
    armazenamento (``tool_phase``), sem segurar nenhuma trava de banco durante a ferramenta.
    """
    try:
        with store.tool_phase(lease, state["pending_tool_use"], approver, dry_run) as ctx:
            results = run_tool_uses(state["pending_tool_use"], ctx)
    except WaitingForApproval as waiting:
        state["pending_approval"] = waiting.pending_approval
        set_status(state, "waiting_for_approval",
                   f"{waiting.pending_approval['name']} aguarda uma decisão (approve ou reject)")
        save_progress(store, state, lease)
        return False
    state["messages"].append({"role": "user", "content": results})
    state["pending_tool_use"] = None
    state["pending_approval"] = None
    note_progress(state)
    save_progress(store, state, lease, "B")
    crash_point("after-save-B")
    return True


def stop_requested(store, state, lease, max_turns):
    """Na fronteira do turno: um pedido de pausa/cancelamento, o teto de turnos ou o orçamento de
    tokens da cena (apêndice 2) param aqui."""
    request = store.pending_control()
    if request is not None:
        apply_control(state, request)
    elif state["turns"] >= max_turns:
        set_status(state, "paused", f"teto de {max_turns} turnos atingido; retome com um teto maior")
    elif over_budget(state):
        stop_for_budget(state)
    else:
        return False
    save_progress(store, state, lease)
    if request is not None:
        store.clear_control(lease)
    return True


def drive(client, store, state, lease, approver, dry_run, max_turns, lease_seconds, max_tokens=MAX_TOKENS):
    """Turno a turno até parar: pelo stop_reason, num status de espera, ou no teto de turnos."""
    while True:
        if state["pending_tool_use"] and not answer_pending(store, state, lease, approver, dry_run):
            return state
        if stop_requested(store, state, lease, max_turns):
            return state
        lease = store.renew_lease(lease, lease_seconds)
        state["turns"] += 1
        response = call_model(client, state["messages"], max_tokens)
        crash_point("after-model-response")
        tool_uses = take_response(state, response)  # a regra do stop_reason (lição 1)
        state["pending_tool_use"] = tool_uses or None
        if tool_uses is None:
            note_progress(state)
            if response.stop_reason == "max_tokens":
                # Nada da resposta cortada entrou na conversa: com um limite maior, o mesmo pedido segue.
                set_status(state, "paused", f"{state['status_reason']}; retome com --resume e um "
                                            f"--max-tokens maior que {max_tokens}")
            elif response.stop_reason in CUT_OFF_STOP_REASONS:
                # A janela conta entrada e saída juntas: um limite de saída maior não cabe nela.
                set_status(state, "paused", f"{state['status_reason']}; a conversa encheu a janela de "
                                            "contexto do modelo, e um --max-tokens maior não resolve: "
                                            "encurte a conversa ou use um modelo de janela maior antes de retomar")
        save_progress(store, state, lease, "A")
        crash_point("after-save-A")
        if tool_uses is None:
            return state


def run_durable(client, run_dir, scenario=None, *, resume=False, max_turns=MAX_TURNS, approver=None,
                lease_seconds=LEASE_SECONDS, max_recovery_attempts=MAX_RECOVERY_ATTEMPTS, owner=None,
                max_tokens=MAX_TOKENS, store=None, lease=None, token_budget=None):
    """Roda (ou retoma, com ``resume=True``) a execução de ``run_dir`` e devolve a cena final.

    Sem ``resume``, é um começo limpo do ``scenario``. ``store`` diz onde a execução mora
    (padrão: os arquivos de ``run_dir``); um worker que já tomou a posse passa o ``lease``.
    Só um worker por vez passa daqui (LeaseHeld para o segundo); um worker que perde a
    posse no meio para com LeaseLost sem gravar nada. O status da cena devolvida diz como
    a execução parou. ``token_budget`` grava um orçamento de tokens na cena (ou troca o que
    ela tem): como mora na cena, ele vale para as retomadas que não disserem outro.
    """
    store = store or FileStore(run_dir)
    if not resume and scenario is None:
        raise ValueError("um começo limpo precisa do cenário (scenario)")
    if resume and lease is None and not store.exists():  # antes da posse: não cria pasta à toa
        raise no_checkpoint(store)
    lease = lease or store.acquire_lease(owner=owner, seconds=lease_seconds)
    # A batida renova a posse durante as chamadas longas; antes de cada efeito de alto impacto,
    # o armazenamento confere que a posse ainda é nossa (a batida pode ter visto a perda).
    heartbeat = LeaseHeartbeat(store, lease, lease_seconds).start()
    store.effect_guard = lambda: (heartbeat.check(), store.confirm_lease(lease))
    try:
        if resume:
            state = reopen(store, lease, max_recovery_attempts)
            if state["status"] != "running":
                return state
        else:
            state = start_clean(store, scenario, lease, requires_approval=approver is not None)
        if token_budget is not None:
            state["token_budget"] = token_budget
        if approver is None and state.get("requires_approval"):
            approver = ask_a_person  # a válvula vem com a execução, não com quem a retoma
        with workspace_in_use(store.world(scenario)):
            return drive(client, store, state, lease, approver, store.timeline()["dry_run"], max_turns,
                         lease_seconds, max_tokens)
    finally:
        heartbeat.stop()
        store.effect_guard = None
        store.release_lease(lease)  # sem efeito se a posse já não é nossa


def decide_pending_approval(run_dir, approved, reason="", decided_by="", ttl_seconds=DEFAULT_APPROVAL_TTL,
                            clock=None, store=None):
    """Grava a decisão de uma pessoa sobre a chamada que espera aprovação em ``run_dir``.

    A decisão fica presa ao hash da entrada exata que está no pedido; a execução continua
    na próxima retomada. Toma a posse para gravar: com um worker rodando, LeaseHeld.
    """
    store = store or FileStore(run_dir)
    if not store.exists():  # antes da posse: numa pasta digitada errado, nem lease.json nem banco
        raise no_run_here(store)
    lease = store.acquire_lease(owner=f"{os.getpid()}:decisão")
    try:
        state = store.load()
        if state is None:
            raise NoCheckpoint(f"não há checkpoint em {store.describe()}")
        if state["status"] in FINAL_STATUSES:
            raise RunNotResumable(f"a execução {state['run_id']} está '{state['status']}': "
                                  f"não há mais o que aprovar", state["status"])
        pending = state["pending_approval"]
        if pending is None:
            raise ApprovalError(f"a execução {state['run_id']} não tem nada esperando aprovação "
                                f"(status: {state['status']})")
        call = {key: pending[key] for key in ("id", "name", "input")}
        decision = approve() if approved else reject(reason or "recusada por uma pessoa")
        record = decision_record(call, decision, (clock or time.time)(), ttl_seconds, decided_by)
        store.save_approval(lease, call["id"], record)
        return record
    finally:
        store.release_lease(lease)


# --- Linha de comando -------------------------------------------------------------------------

def make_run_client(responses, live=False):
    """O cliente da execução. Com HARNESS_ENDPOINT_LOG, cada pedido que o endpoint offline
    recebe vira uma linha JSON nesse arquivo (de todos os processos que retomam a execução),
    para um teste conferir que o modelo nunca recebeu um tool_use órfão."""
    if live:
        return make_client(live=True)
    endpoint = ScriptedEndpoint(responses)
    log_path = os.environ.get(ENDPOINT_LOG_ENV)
    if log_path:
        endpoint.handle = logged_handler(endpoint.handle, log_path)
    latency = endpoint_latency()
    if latency:
        endpoint.handle = delayed_handler(endpoint.handle, latency)
    return endpoint.client()


def endpoint_latency():
    """HARNESS_ENDPOINT_LATENCY em segundos (0 se ausente); um valor que não é um número
    não negativo é erro de quem chamou, dito com o nome da variável."""
    raw = os.environ.get(ENDPOINT_LATENCY_ENV, "").strip()
    if not raw:
        return 0.0
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not (seconds >= 0 and seconds != float("inf")):
        raise EndpointSettingError(f"{ENDPOINT_LATENCY_ENV}={raw!r}: esperava um número de segundos >= 0")
    return seconds


def delayed_handler(handle, seconds):
    def handle_after_a_while(request):
        time.sleep(seconds)
        return handle(request)
    return handle_after_a_while


def logged_handler(handle, log_path):
    def handle_and_log(request):
        append_request(log_path, json.loads(request.content))
        return handle(request)
    return handle_and_log


def describe_message(message):
    """Uma linha legível por mensagem, para acompanhar a execução no terminal."""
    content = message["content"]
    if isinstance(content, str):
        return f"{message['role']}: {content}"
    parts = []
    for block in content:
        if block["type"] == "text":
            parts.append(block["text"])
        elif block["type"] == "tool_use":
            parts.append(f"[tool_use {block['name']} {block['id']}]")
        elif block["type"] == "tool_result":
            flag = " is_error" if block.get("is_error") else ""
            parts.append(f"[tool_result {block['tool_use_id']}{flag}]")
    return f"{message['role']}: " + " ".join(parts)


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


def run_scenario(args, store):
    """O cenário do ``run``: o de --scenario ou, numa retomada, o que a execução gravou."""
    if args.scenario:
        name = args.scenario
    elif not args.resume:
        raise ScenarioUnknown("diga o cenário: --scenario NOME")
    elif not store.exists():
        raise no_checkpoint(store)
    else:
        name = recorded_scenario(store)
    try:
        return load_scenario(name)
    except ScenarioError as error:
        raise ScenarioUnknown(str(error)) from None


def recorded_scenario(store):
    """O nome de cenário que a execução gravou, conferido: um dado lido da pasta ou do banco, não um caminho.

    Só vale o nome de um cenário do curso; um caminho, um ``..`` ou um nome inventado param aqui,
    antes da posse, sem tocar em nada: corrigido o valor, a execução retoma como estava.
    """
    name = store.scenario_name()
    if name is None:
        raise ScenarioUnknown(f"{store.describe()} não gravou o cenário (veio da lição 5 ou de uma versão "
                              f"anterior): diga qual é com --scenario NOME")
    if not is_scenario_name(name):
        raise ScenarioUnknown(f"{store.scenario_source()}: o cenário gravado {shown_name(name)} não é o nome de um "
                              f"cenário do curso (um cenário é um nome, nunca um caminho; disponíveis: "
                              f"{', '.join(list_scenarios())}). Nada foi executado: corrija o valor ou retome com "
                              f"--scenario NOME")
    return name


def execute_run(args):
    """O comando ``run``: roda ou retoma e devolve o código de saída (137 numa queda simulada)."""
    try:
        if not (args.workdir or args.scenario or args.run):
            raise ScenarioUnknown("diga o cenário (--scenario NOME) ou a pasta da execução (--workdir PASTA)")
        workdir = Path(args.workdir or Path("runs") / (args.scenario or args.run))
        store = open_store(args.store, workdir, run=args.run)
        scenario = run_scenario(args, store)
        client = make_run_client(scenario.responses, live=args.live)
        if args.resume:
            print(f"retomando '{scenario.name}' ({store.describe()})")
        else:
            print(f"iniciando '{scenario.name}': {scenario.task}")
        state = run_durable(
            client, workdir, scenario, resume=args.resume, max_turns=args.max_turns,
            approver=ask_a_person if args.approval else None, lease_seconds=args.lease_seconds,
            max_recovery_attempts=args.max_recovery_attempts, max_tokens=args.max_tokens, store=store,
            token_budget=args.token_budget,
        )
    except SimulatedCrash as crash:
        print(f"processo derrubado: {crash}", file=sys.stderr)
        return EXIT_CODE_KILLED
    except LeaseHeld as error:
        print(f"não começou: {error}", file=sys.stderr)
        return EXIT_LEASE_HELD
    except LeaseLost as error:
        print(f"parou sem gravar: {error}", file=sys.stderr)
        return EXIT_LEASE_LOST
    except RunNotResumable as error:
        print(f"não dá para retomar: {error}", file=sys.stderr)
        return EXIT_CODES[error.status]
    except (NoCheckpoint, CheckpointError, EffectsLedgerError, ApprovalError, LeaseFileError, StateFileError,
            StoreError, EndpointSettingError, ScenarioUnknown, LiveModeUnavailable) as error:
        print(f"não dá para {'retomar' if args.resume else 'começar'}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for message in state["messages"][1:]:
        print("  " + describe_message(message))
    reason = f" ({state['status_reason']})" if state.get("status_reason") else ""
    print(f"status={state['status']}{reason} turns={state['turns']} tokens_used={state['tokens_used']} "
          f"run_id={state['run_id']} checkpoint={store.describe()}")
    return EXIT_CODES[state["status"]]


def main(argv=None):
    """``python -m harness.runner --scenario ...``: o mesmo que ``python -m harness run ...``."""
    parser = add_run_arguments(ArgumentParser(prog="python -m harness run"))
    return execute_run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
