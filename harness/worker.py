"""Vários workers dividindo muitas execuções num PostgreSQL: ``submit`` enfileira, ``worker`` trabalha.

    python -m harness submit --store postgresql://... --scenario team-email [--run NOME]
    python -m harness worker --store postgresql://... [--max-runs N] [--idle-exit SEGUNDOS]

Cada worker repete o mesmo ciclo: pega a próxima execução que precisa de trabalho
(``claim_run``: ``FOR UPDATE SKIP LOCKED``, então dois workers nunca pegam a mesma), roda-a
com ``run_durable`` até ela parar (concluída, pausada, esperando aprovação...) e volta à fila.
Uma execução cujo worker morreu volta à fila sozinha: quando a posse vence, ou na hora, se o
worker era desta máquina e o processo não existe mais. A cerca no banco garante que um worker
que só parecia morto (congelado, sem rede) não grava mais nada quando acorda.

Se o banco sai do ar (reinício, manutenção, rede), o worker não cai: diz uma linha, espera
(0,2 s, depois o dobro a cada tentativa, até 5 s) e volta a pedir trabalho. A execução que ele
tinha nas mãos fica como o último COMMIT a deixou; ao reconectar, ele devolve a posse dela (se
ainda é dele) e ela volta para a fila, para ele ou outro worker.
"""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from harness.approval import ApprovalError
from harness.checkpoint import CheckpointError
from harness.cli_endpoint import make_run_client
from harness.effects import EffectsLedgerError
from harness.lifecycle import LEASE_SECONDS, MAX_RECOVERY_ATTEMPTS, LeaseLost, default_owner, new_run_checkpoint
from harness.run_names import run_name_problem
from harness.runner import ScenarioUnknown, recorded_scenario, run_durable
from harness.scenarios import ScenarioError, load_scenario
from harness.state_json import StateFileError
from harness.stores.base import StoreError
from harness.stores.postgres import PostgresStore, claim_run, connection_lost, refused_run_names

POLL_SECONDS = 0.2   # quanto esperar entre duas consultas à fila vazia
RECONNECT_FIRST_SECONDS = 0.2   # a primeira espera depois que o banco sai do ar
RECONNECT_MAX_SECONDS = 5.0     # a espera dobra a cada tentativa, até este teto


class Outage:
    """Uma queda do banco vista por um worker: uma linha quando começa, esperas que dobram até o teto."""

    def __init__(self, owner, say, sleep=time.sleep):
        self.owner, self.say, self.sleep = owner, say, sleep
        self.delay = None   # None: o banco está respondendo

    def begin(self, error):
        if self.delay is None:
            first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
            self.say(f"{self.owner}: conexão com o PostgreSQL perdida ({first_line}); tentando de novo a cada "
                     f"{RECONNECT_FIRST_SECONDS:g} s, dobrando até {RECONNECT_MAX_SECONDS:g} s")
            self.delay = RECONNECT_FIRST_SECONDS

    def wait(self, error):
        self.begin(error)
        self.sleep(self.delay)
        self.delay = min(self.delay * 2, RECONNECT_MAX_SECONDS)

    def over(self):
        self.delay = None


def submit_run(dsn, scenario, run=None, requires_approval=False):
    """Grava uma execução nova, ``running`` e sem dono: o primeiro worker livre a pega. Devolve o nome."""
    run = run or f"{scenario.name}-{os.urandom(4).hex()}"
    problem = run_name_problem(run)
    if problem:
        raise StoreError(problem)
    with PostgresStore(dsn, run, world_root=tempfile.gettempdir()) as store:
        lease = store.acquire_lease(owner=f"{default_owner()}:submit")
        try:
            state = new_run_checkpoint(scenario.task, requires_approval=requires_approval)
            store.start(lease, state, scenario, make_world=False)  # o mundo nasce na máquina do worker
        finally:
            store.release_lease(lease)
    return run


def work(dsn, *, owner=None, lease_seconds=LEASE_SECONDS, max_recovery_attempts=MAX_RECOVERY_ATTEMPTS,
         max_runs=None, idle_exit=None, workdir=None, live=False, say=print):
    """O ciclo do worker. Para depois de ``max_runs`` execuções, ou de ``idle_exit`` segundos com a
    fila vazia (sem nenhum dos dois, roda até ser interrompido). Devolve quantas execuções tocou."""
    owner = owner or default_owner()
    workdir = Path(workdir or tempfile.mkdtemp(prefix="worker-"))
    handled, idle_since = 0, time.monotonic()
    outage, abandoned, connected = Outage(owner, say), None, False
    refused = set()   # as linhas de nome ruim já ditas: uma linha por execução, não uma por consulta
    while max_runs is None or handled < max_runs:
        try:
            if abandoned is not None:
                give_back(dsn, *abandoned, owner=owner, say=say)
                abandoned = None
            claim = claim_run(dsn, owner=owner, seconds=lease_seconds)
            if claim is None:
                say_refused_runs(dsn, refused, owner, say)
        except Exception as error:
            if not (connected and connection_lost(error)):
                raise  # um endereço errado na partida é dito uma vez, com código 2
            outage.wait(error)
            idle_since = time.monotonic()  # o tempo fora do ar não conta como fila vazia
            continue
        connected = True
        outage.over()
        if claim is None:
            if idle_exit is not None and time.monotonic() - idle_since >= idle_exit:
                break
            time.sleep(POLL_SECONDS)
            continue
        run, lease = claim
        say(f"{owner}: peguei {run} (token {lease.token})")
        if run_name_problem(run):  # claim_run já não oferece esse nome; se oferecer, nada vira pasta
            with PostgresStore(dsn, run, world_root=workdir) as store:
                store.release_lease(lease)
            refused.add(run)
            say(f"{owner}: ignorei uma execução da fila: {run_name_problem(run)}")
            continue
        with PostgresStore(dsn, run, world_root=workdir / run, lease_seconds=lease_seconds) as store:
            try:
                scenario = load_scenario(recorded_scenario(store))
                state = run_durable(make_run_client(scenario.responses, live=live), None, scenario, resume=True,
                                    store=store, lease=lease, lease_seconds=lease_seconds,
                                    max_recovery_attempts=max_recovery_attempts)
                say(f"{owner}: {run} parou em {state['status']} (turns={state['turns']})")
            except LeaseLost as error:
                say(f"{owner}: {run}: {error}")
            except (ScenarioUnknown, ScenarioError, CheckpointError, EffectsLedgerError, ApprovalError,
                    StateFileError) as error:
                # Ilegível ou de um cenário desconhecido: fica para uma pessoa olhar (a posse vence sozinha).
                say(f"{owner}: {run} não pôde ser retomada: {error}")
            except Exception as error:
                if not connection_lost(error):
                    raise
                # O banco caiu no meio: nada depois do último COMMIT conta. Devolve a posse ao voltar.
                outage.begin(error)
                abandoned = (run, lease)
        handled += 1
        idle_since = time.monotonic()
    return handled


def give_back(dsn, run, lease, owner, say):
    """Depois de uma queda do banco: devolve a posse de ``run`` se ela ainda é deste worker, para a
    execução voltar à fila na hora (e não só quando a posse vencer)."""
    with PostgresStore(dsn, run, world_root=tempfile.gettempdir()) as store:
        if store.release_lease(lease):
            return
        record = store.read_lease()
        if record is None or record["token"] != lease.token:  # (o mesmo token: já devolvida por este worker)
            say(f"{owner}: {run}: a posse do token {lease.token} já é de outro worker; nada do que este gravava "
                f"depois do último COMMIT conta")


def say_refused_runs(dsn, refused, owner, say):
    """Uma linha por execução da fila cujo nome não serve (plantada direto no banco): o worker não a
    pega, não cria pasta nenhuma para ela e a deixa como está, para uma pessoa olhar."""
    for run in refused_run_names(dsn):
        if run not in refused:
            refused.add(run)
            say(f"{owner}: ignorei uma execução da fila: {run_name_problem(run)}")
