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

A linha de comando que chama este loop (``python -m harness run``) é ``harness.cli_run``; os
códigos de saída de cada jeito de parar, ``harness.exit_codes``.
"""
from __future__ import annotations

import os
import time

from harness.approval import (
    DEFAULT_APPROVAL_TTL,
    PENDING,
    ApprovalError,
    WaitingForApproval,
    approve,
    decision_record,
    reject,
)
from harness.crash import crash_point
from harness.heartbeat import LeaseHeartbeat
from harness.lifecycle import (
    FINAL_STATUSES,
    LEASE_SECONDS,
    MAX_RECOVERY_ATTEMPTS,
    RunNotResumable,
    apply_control,
    check_resumable,
    new_run_checkpoint,
    note_progress,
    note_recovery_attempt,
    set_status,
)
from harness.loop import CUT_OFF_STOP_REASONS, MAX_TURNS, call_model, take_response
from harness.model import MAX_TOKENS
from harness.resume import reconcile as reconcile_without_ledger
from harness.scenarios import is_scenario_name, list_scenarios, shown_name
from harness.stores.files import FileStore
from harness.token_budget import over_budget, stop_for_budget
from harness.tool_runner import run_tool_uses
from harness.tools import workspace_in_use

WORLD_DIR = "world"


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


# --- O cenário gravado -------------------------------------------------------------------------

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
