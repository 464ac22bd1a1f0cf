"""Lição 6: o ciclo de vida de uma execução: status, posse exclusiva e versão do checkpoint.

Retomar com segurança exige mais do que ler a última cena. O runtime precisa saber:

- em que situação a execução está (``status``): rodando, pausada, à espera de uma
  aprovação, falhada, cancelada ou concluída. Uma execução cancelada nunca volta a rodar;
- quem pode mexer nela agora (a posse, ``lease.json``): um único worker por vez, com prazo
  de validade e um fencing token que só cresce. Antes de cada gravação o
  worker confere o token: se outro worker assumiu a execução, o antigo não grava mais nada;
- quantas vezes ela já caiu seguidas sem avançar (``recovery_attempts``): uma execução que
  derruba o processo em toda retomada termina como ``failed`` em vez de girar para sempre;
- em que formato a cena foi gravada (``version``): a versão 1 (lições 2 a 5) é migrada de
  forma explícita para a 2; qualquer outra versão é recusada com uma mensagem clara.
"""
from __future__ import annotations

import contextlib
import copy
import fcntl
import hashlib
import json
import math
import os
import socket
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from harness import run_paths
from harness.checkpoint import CHECKPOINT_FIELDS, CHECKPOINT_VERSION, CheckpointError
from harness.crash import crash_point
from harness.loop import has_ended
from harness.state_json import StateFileError, read_state_json, read_state_object

RUN_STATUSES = ("running", "paused", "waiting_for_approval", "failed", "cancelled", "completed", "refused")
FINAL_STATUSES = ("completed", "refused", "failed", "cancelled")  # daqui a execução não sai mais
CHECKPOINT_VERSION_V2 = 2
SUPPORTED_VERSIONS = (CHECKPOINT_VERSION, CHECKPOINT_VERSION_V2)

CHECKPOINT_FILE = "checkpoint.json"
LEASE_FILE = "lease.json"
LEASE_LOCK_FILE = "lease.lock"
CONTROL_FILE = "control.json"

MAIN_TIMELINE_ID = "principal"  # a linha do tempo de uma execução que nunca foi bifurcada (lição 5)

LEASE_SECONDS = 30.0        # prazo da posse; o dono renova a cada turno (e em segundo plano, nas chamadas longas)
MAX_LEASE_SECONDS = 24 * 3600.0  # nenhuma posse dura mais que isto: uma que vence depois veio de um relógio errado
CLOCK_TOLERANCE_SECONDS = 60.0   # diferença tolerada entre o relógio de quem gravou a posse e o de quem a lê
LOCK_WAIT_SECONDS = 10.0    # quanto esperar pela trava do lease.json antes de desistir
MAX_RECOVERY_ATTEMPTS = 3   # retomadas seguidas depois de queda, sem avanço, antes de "failed"

# Os campos que a versão 2 acrescenta à cena da versão 1, com os tipos aceitos.
V2_FIELDS = {
    "run_id": str,
    "status": str,
    "pending_approval": (dict, type(None)),
    "recovery_attempts": int,
    "timeline": dict,
    "updated_at": str,
}


class RunNotResumable(Exception):
    """A execução está num status de onde não se sai (cancelada ou falhada)."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


class LeaseHeld(Exception):
    """Outro worker vivo tem a posse desta execução: este não começa."""


class LeaseLost(Exception):
    """O token deste worker ficou velho (outro assumiu a execução): ele não pode mais gravar."""


class LeaseFileError(Exception):
    """lease.json existe, mas não dá para confiar nele: entrada ruim. Ninguém toma a posse nem
    grava até o arquivo ser corrigido (falha fechada, como o livro-razão corrompido)."""


def now_iso():
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


# --- A cena versão 2 ---------------------------------------------------------------------

def new_run_checkpoint(task, run_id=None, timeline=None, requires_approval=False):
    """A cena inicial de uma execução nova, já na versão 2 e com status ``running``.

    ``requires_approval`` fica gravado: uma retomada nunca esquece que esta execução só
    faz efeitos com aprovação, mesmo que quem retome não peça a válvula de novo.
    """
    return {
        "version": CHECKPOINT_VERSION_V2,
        "run_id": run_id or "run-" + os.urandom(6).hex(),
        "status": "running",
        "task": task,
        "turns": 0,
        "tokens_used": 0,
        "messages": [{"role": "user", "content": task}],
        "pending_tool_use": None,
        "pending_approval": None,
        "recovery_attempts": 0,
        "timeline": timeline or {"timeline_id": MAIN_TIMELINE_ID, "parent": None},
        "updated_at": now_iso(),
        "status_reason": None,
        "requires_approval": requires_approval,
    }


def scene_of(state):
    """Só a cena da decisão, no formato v1 (o da sequência de pontos da lição 5).

    Status, posse e tentativas são da execução, não de um turno: ficam no checkpoint.json.
    Assim rewind_to e fork_from leem os pontos de uma execução durável como leem os da lição 5.
    As listas são as mesmas de ``state`` (nada é copiado): quem grava a cena a serializa na hora.
    """
    scene = {field: state[field] for field in CHECKPOINT_FIELDS if field != "version"}
    return {"version": CHECKPOINT_VERSION, **scene}


def is_finished(state):
    """A tarefa terminou bem: o modelo encerrou (pelo status gravado ou, numa cena sem status,
    pela conversa). Uma cena v1 recusada ou cortada não conta: retomá-la repete o pedido."""
    return state["turns"] > 0 and has_ended(state) and state.get("status", "completed") == "completed"


def migrate_v1_to_v2(data):
    """v1 -> v2, explícito: nada da cena muda; os campos novos recebem valores que se explicam.

    - ``run_id`` é derivado do conteúdo (migrar o mesmo arquivo duas vezes dá o mesmo id);
    - ``status``: ``completed`` se a conversa terminou; senão ``paused`` (a v1 não sabia
      dizer se o processo caiu, então a retomada não conta isso como tentativa de recuperação);
    - nenhuma aprovação pendente, nenhuma tentativa, a linha do tempo principal;
    - ``migrated_from: 1`` fica registrado: quem retoma sabe que a cena veio de um código
      que talvez não gravasse intenções antes dos efeitos.
    """
    if data.get("version") != CHECKPOINT_VERSION:
        raise CheckpointError(f"migrate_v1_to_v2 recebeu uma cena v{data.get('version')}, não v1")
    canonical = json.dumps(data, sort_keys=True, ensure_ascii=False).encode("utf-8")
    migrated = copy.deepcopy(data)
    migrated.update({
        "version": CHECKPOINT_VERSION_V2,
        "run_id": "run-v1-" + hashlib.sha256(canonical).hexdigest()[:12],
        "status": "completed" if is_finished(data) else "paused",
        "pending_approval": None,
        "recovery_attempts": 0,
        "timeline": {"timeline_id": MAIN_TIMELINE_ID, "parent": None},
        "updated_at": now_iso(),
        "status_reason": "migrada da versão 1",
        "requires_approval": False,
        "migrated_from": CHECKPOINT_VERSION,
    })
    return migrated


def _read_json_object(path):
    """O objeto JSON em ``path``; None se o arquivo não existe; CheckpointError se não dá para ler."""
    try:
        return read_state_object(path)
    except StateFileError as error:
        raise CheckpointError(str(error)) from None


def _check_fields(data, fields, path):
    for field, expected in fields.items():
        if field not in data:
            raise CheckpointError(f"{path}: campo obrigatório ausente: {field}")
        value = data[field]
        if not isinstance(value, expected) or isinstance(value, bool):
            raise CheckpointError(f"{path}: campo '{field}' com tipo errado: {type(value).__name__}")


def load_run_checkpoint(path):
    """Lê a cena em qualquer versão conhecida e devolve sempre a versão 2 (None se não existe).

    v1 é migrada (sem regravar o arquivo: quem grava é o dono da posse); v2 é validada;
    qualquer outra versão é recusada dizendo a do arquivo e as que este código lê.
    """
    data = _read_json_object(path)
    if data is None:
        return None
    version = data.get("version")
    if version not in SUPPORTED_VERSIONS or isinstance(version, bool):
        raise CheckpointError(
            f"{path}: versão de checkpoint desconhecida: o arquivo é v{version}, este código lê "
            f"v{CHECKPOINT_VERSION} (migrando para v{CHECKPOINT_VERSION_V2}) e v{CHECKPOINT_VERSION_V2}. "
            f"Nada foi alterado; atualize o harness ou restaure um checkpoint compatível."
        )
    _check_fields(data, CHECKPOINT_FIELDS, path)
    if version == CHECKPOINT_VERSION:
        return migrate_v1_to_v2(data)
    check_run_scene(data, path)
    return data


def check_run_scene(data, where):
    """As regras da cena v2 além dos tipos de cada campo (as mesmas para arquivos e bancos):
    um status conhecido, contadores não negativos, mensagens e chamadas pendentes com a forma
    que o loop lê. ``where`` diz, na mensagem, o arquivo ou a linha do banco."""
    _check_fields(data, V2_FIELDS, where)
    if data["status"] not in RUN_STATUSES:
        raise CheckpointError(f"{where}: status desconhecido {data['status']!r}; use um de {', '.join(RUN_STATUSES)}")
    if not isinstance(data.get("status_reason"), (str, type(None))):
        raise CheckpointError(f"{where}: campo 'status_reason' com tipo errado: {type(data['status_reason']).__name__}")
    if not isinstance(data.get("scenario"), (str, type(None))):
        raise CheckpointError(f"{where}: campo 'scenario' precisa ser o nome de um cenário (texto)")
    if not isinstance(data.get("requires_approval", False), bool):
        raise CheckpointError(f"{where}: campo 'requires_approval' precisa ser true ou false")
    for field in ("recovery_attempts", "turns", "tokens_used"):
        if data[field] < 0:
            raise CheckpointError(f"{where}: campo '{field}' negativo ({data[field]})")
    for number, message in enumerate(data["messages"]):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant") \
                or not isinstance(message.get("content"), (str, list)):
            raise CheckpointError(f"{where}: campo 'messages[{number}]' não é uma mensagem "
                                  f"(role user/assistant e content texto ou lista)")
    for number, call in enumerate(data["pending_tool_use"] or []):
        if not isinstance(call, dict) or not isinstance(call.get("id"), str) \
                or not isinstance(call.get("name"), str) or not isinstance(call.get("input"), dict):
            raise CheckpointError(f"{where}: campo 'pending_tool_use[{number}]' não é uma chamada "
                                  f"(id e name em texto, input um objeto)")
    pending = data["pending_approval"]
    if pending is not None and not all(isinstance(pending.get(key), str) for key in ("id", "name", "input_hash")):
        raise CheckpointError(f"{where}: campo 'pending_approval' sem id, name e input_hash em texto")


def stored_version(path):
    """A versão gravada no arquivo (antes de qualquer migração); None se não há arquivo."""
    data = _read_json_object(path)
    return None if data is None else data.get("version")


def save_run_checkpoint(state, path, crash_points=True):
    """Grava a cena v2 de forma atômica, com um ponto de queda entre o .tmp e o os.replace."""
    state["updated_at"] = now_iso()
    write_compact_atomic(path, state, crash_points)


def write_compact_atomic(path, data, crash_points=False, root=None, create_folders=False):
    """A escrita atômica da lição 2 (``write_json_atomic``), endurecida para a pasta de uma execução.

    Três diferenças, cada uma por um motivo:

    - JSON compacto: ninguém lê estes arquivos à mão a cada turno, e ``json.dumps`` sem
      ``indent`` usa o codificador em C do Python (várias vezes mais rápido);
    - o temporário tem nome único e é criado com ``O_CREAT | O_EXCL``, e nenhum caminho segue
      links abaixo de ``root`` (padrão: a pasta do arquivo): um ``checkpoint.json.tmp`` plantado
      como link para fora da execução nunca tem o alvo sobrescrito (``harness.run_paths``);
    - o ponto de queda "mid-checkpoint-write" fica entre o temporário completo e o ``os.replace``.
    """
    hook = (lambda: crash_point("mid-checkpoint-write")) if crash_points else None
    run_paths.write_json(path, data, root=root, before_replace=hook, create_folders=create_folders)


# --- Status e tentativas de recuperação --------------------------------------------------

def set_status(state, status, reason=None):
    """Muda o status (validado) e guarda o motivo, que aparece para quem for retomar."""
    if status not in RUN_STATUSES:
        raise ValueError(f"status desconhecido {status!r}; use um de {', '.join(RUN_STATUSES)}")
    state["status"] = status
    state["status_reason"] = reason
    return state


def check_resumable(state):
    """True se há trabalho a fazer; False se o modelo já encerrou (completed ou refused); erro se
    ela não pode voltar."""
    status = state["status"]
    if status in ("completed", "refused"):
        return False
    if status in ("cancelled", "failed"):
        reason = f" ({state['status_reason']})" if state.get("status_reason") else ""
        raise RunNotResumable(
            f"a execução {state['run_id']} está '{status}'{reason} e não volta a rodar; "
            f"para refazer a tarefa, comece uma execução nova (sem --resume)",
            status,
        )
    return True


def note_recovery_attempt(state, max_attempts=MAX_RECOVERY_ATTEMPTS):
    """Ao retomar: se o status gravado ainda é ``running``, o processo anterior caiu no meio.

    Conta a tentativa; passando de ``max_attempts`` seguidas sem avanço, a execução vira
    ``failed`` (uma tarefa que derruba o processo sempre no mesmo ponto não gira para sempre).
    Devolve True se a execução ainda pode seguir.
    """
    if state["status"] != "running":
        return True
    state["recovery_attempts"] += 1
    if state["recovery_attempts"] > max_attempts:
        set_status(state, "failed",
                   f"{state['recovery_attempts'] - 1} retomadas seguidas caíram sem avançar "
                   f"(limite: {max_attempts})")
        return False
    return True


def note_progress(state):
    """Um turno terminou depois da retomada: as quedas anteriores deixam de contar."""
    state["recovery_attempts"] = 0


# --- A posse (lease) e o fencing token --------------------------------------------------

@dataclass(frozen=True)
class Lease:
    """A posse de uma execução: quem, com qual token e até quando (segundos desde a época)."""

    run_dir: str
    owner: str
    token: int
    expires_at: float


def default_owner():
    return f"{socket.gethostname()}:{os.getpid()}"


BOOT_ID_FILE = "/proc/sys/kernel/random/boot_id"


def boot_id():
    """O identificador desta inicialização da máquina (Linux); None onde não há /proc."""
    try:
        with open(BOOT_ID_FILE, encoding="ascii") as file:
            return file.read().strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def process_start(pid):
    """Quando o processo ``pid`` começou (campo 22 de /proc/PID/stat, em tiques desde o boot).

    Com o pid, é o que identifica um processo: um pid é reaproveitado, o par (pid, início) não.
    None se o processo não existe ou não há /proc (macOS, Windows): aí só o pid diz algo.
    """
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as file:
            after_name = file.read().rsplit(")", 1)[1].split()
        return int(after_name[19])
    except (OSError, IndexError, ValueError):
        return None


def process_identity(pid):
    """Quem é o processo ``pid`` desta máquina: host, boot e início (os dois últimos podem ser None)."""
    return {"host": socket.gethostname(), "boot_id": boot_id(), "started": process_start(pid)}


def check_lease_seconds(seconds):
    """Um prazo de posse precisa ser um número de segundos entre 0 e MAX_LEASE_SECONDS."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds <= MAX_LEASE_SECONDS:
        raise ValueError(f"prazo de posse {seconds!r}: use um número de segundos maior que 0 e de no máximo "
                         f"{MAX_LEASE_SECONDS:.0f} (24 h); uma posse mais longa que isso é tratada como inválida")
    return float(seconds)


# As travas de lease.lock que ESTE processo segura agora (pasta -> quantas), e o guarda que
# impede uma delas de ser solta enquanto a batida da posse (outra thread) grava sob ela.
_held_guard = threading.Lock()
_held_locks = {}
# Uma gravação do lease.json por vez neste processo (a thread principal e a batida).
_lease_writes = threading.RLock()


@contextlib.contextmanager
def lease_lock(run_dir, wait_seconds=LOCK_WAIT_SECONDS):
    """Trava exclusiva (flock) em ``lease.lock``: ler e trocar o lease.json sem corrida.

    O kernel solta a trava quando o processo morre, até por SIGKILL: uma queda nunca a
    deixa presa.
    """
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    key = os.path.realpath(run_dir)
    # Sem seguir links: um lease.lock plantado como link não cria nem abre nada fora da execução.
    descriptor = run_paths.open_file(run_dir, LEASE_LOCK_FILE, os.O_RDWR | os.O_CREAT)
    locked = False
    try:
        deadline = time.monotonic() + wait_seconds
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LeaseHeld(f"a trava de posse de {run_dir} ficou ocupada por mais de "
                                    f"{wait_seconds:.0f} s; outro worker a segura (por exemplo, no meio de uma "
                                    f"chamada de ferramenta): tente de novo em instantes") from None
                time.sleep(0.01)
        with _held_guard:
            _held_locks[key] = _held_locks.get(key, 0) + 1
            locked = True
        yield
    finally:
        with _held_guard:
            if locked:
                _held_locks[key] -= 1
                if not _held_locks[key]:
                    del _held_locks[key]
            os.close(descriptor)  # fechar o descritor solta a trava


# Os campos que _write_lease grava, com os tipos aceitos: um lease.json sem algum deles, ou
# com outro tipo, não diz quem tem a posse e até quando.
LEASE_FIELDS = {
    "owner": (str,),
    "host": (str,),
    "pid": (int,),
    "token": (int,),
    "expires_at": (int, float),
    "acquired_at": (int, float, type(None)),
    "released": (bool,),
}
# Opcionais (um lease.json de antes deles continua valendo): quem é o processo dono.
LEASE_IDENTITY_FIELDS = {"boot_id": (str, type(None)), "started": (int, type(None))}
PID_MAX = 2 ** 22  # o maior pid que o Linux dá (/proc/sys/kernel/pid_max não passa disso)
LEASE_FIELD_KINDS = {str: "texto", int: "inteiro", float: "número", bool: "true/false", type(None): "null"}


def read_lease(run_dir):
    """O conteúdo de lease.json, ou None se a execução nunca teve dono.

    Qualquer outro conteúdo ruim (vazio, JSON quebrado, uma lista, um campo ausente ou do
    tipo errado) é LeaseFileError, com o arquivo e o campo: na dúvida sobre quem tem a posse,
    ninguém grava.
    """
    path = os.path.join(run_dir, LEASE_FILE)
    try:
        # NaN e Infinity passam na leitura: um prazo assim não vale nada, mas o token ainda vale (abaixo).
        data = read_state_json(path, allow_non_finite=True)
    except StateFileError as error:
        raise lease_file_error(path, error.problem) from None
    if data is None:
        return None
    if not isinstance(data, dict):
        raise lease_file_error(path, f"esperava um objeto JSON com {', '.join(LEASE_FIELDS)}; "
                                     f"encontrei {type(data).__name__}")
    for field in ("expires_at", "acquired_at"):
        if isinstance(data.get(field), float) and not math.isfinite(data[field]):
            # Um prazo NaN ou infinito (de um --lease-seconds nan de antes) não é prazo nenhum: a
            # posse conta como vencida. O token continua valendo, então quem a tomar recebe um
            # maior, e um dono antigo que ainda exista para na cerca antes de gravar.
            data[field] = 0.0 if field == "expires_at" else None
    for field, kinds in LEASE_FIELDS.items():
        if field not in data:
            raise lease_file_error(path, f"campo '{field}' ausente")
        value = data[field]
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds) \
                or (isinstance(value, float) and not math.isfinite(value)):
            raise lease_file_error(path, f"campo '{field}' com valor {value!r} ({type(value).__name__}); "
                                         f"esperava {' ou '.join(LEASE_FIELD_KINDS[kind] for kind in kinds)}")
    for field, kinds in LEASE_IDENTITY_FIELDS.items():
        value = data.get(field)
        if not isinstance(value, kinds) or isinstance(value, bool):
            raise lease_file_error(path, f"campo '{field}' com valor {value!r} ({type(value).__name__}); "
                                         f"esperava {' ou '.join(LEASE_FIELD_KINDS[kind] for kind in kinds)}")
    if data["token"] < 0:
        raise lease_file_error(path, f"campo 'token' negativo ({data['token']})")
    if not 0 < data["pid"] <= PID_MAX:  # 0 e -1 são "o grupo" e "todos" para os.kill, não um processo
        raise lease_file_error(path, f"campo 'pid' fora do intervalo de um processo ({data['pid']})")
    return data


def lease_file_error(path, problem):
    return LeaseFileError(
        f"{path}: {problem}. Sem saber quem tem a posse, ninguém grava nesta execução. Corrija o "
        f"arquivo ou, se nenhum worker está rodando, apague-o (a próxima posse recomeça do token 1)"
    )


def process_alive(pid):
    """O processo ``pid`` desta máquina ainda roda? (um zumbi, já morto, conta como morto)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # existe, só é de outro usuário
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as file:
            state = file.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


def lease_is_free(record, now):
    """Pode ser tomada: nunca teve dono, foi liberada, venceu, veio de um relógio adiantado, ou o
    dono (nesta máquina) morreu."""
    if record is None or record.get("released"):
        return True
    if now >= record["expires_at"]:
        return True
    if lease_from_a_clock_ahead(record, now):
        return True
    if record.get("host") == socket.gethostname() and isinstance(record.get("pid"), int):
        return owner_is_gone(record)
    return False


def lease_from_a_clock_ahead(record, now):
    """A posse foi tomada no futuro deste relógio, ou vence mais adiante do que qualquer posse pode
    durar: o relógio de quem a gravou estava adiantado, e o prazo dela não quer dizer nada aqui.
    Sem esta regra, uma posse assim bloquearia a execução até aquele futuro chegar."""
    acquired_at = record.get("acquired_at")
    if isinstance(acquired_at, (int, float)) and acquired_at > now + CLOCK_TOLERANCE_SECONDS:
        return True
    return record["expires_at"] - now > MAX_LEASE_SECONDS + CLOCK_TOLERANCE_SECONDS


def owner_is_gone(record):
    """O dono (um processo desta máquina) já não existe: outro boot, pid morto, ou o pid agora é
    de outro processo (começou em outra hora). Sem boot e início gravados, só o pid diz algo."""
    here = process_identity(record["pid"])
    if record.get("boot_id") and here["boot_id"] and record["boot_id"] != here["boot_id"]:
        return True  # a máquina reiniciou: nenhum processo daquele boot está vivo
    if not process_alive(record["pid"]):
        return True
    started = record.get("started")
    return started is not None and here["started"] is not None and started != here["started"]


def acquire_lease(run_dir, owner=None, seconds=LEASE_SECONDS, clock=time.time):
    """Toma a posse da execução, ou LeaseHeld se outro worker vivo a tem.

    Cada posse nova recebe um token maior que todos os anteriores (o lease.json nunca é
    apagado, nem num começo limpo): é isso que deixa qualquer dono antigo para trás.
    """
    run_dir = os.fspath(run_dir)
    owner = owner or default_owner()
    seconds = check_lease_seconds(seconds)
    with lease_lock(run_dir):
        record = read_lease(run_dir)
        now = clock()
        if not lease_is_free(record, now):
            raise LeaseHeld(
                f"a execução em {run_dir} está com outro worker ({record['owner']}, token "
                f"{record['token']}, posse válida por mais {record['expires_at'] - now:.0f} s); "
                f"só um worker por vez pode retomá-la"
            )
        token = (record["token"] if record else 0) + 1
        lease = Lease(run_dir, owner, token, now + seconds)
        _write_lease(lease, released=False, acquired_at=now)
    return lease


def _write_lease(lease, released, acquired_at=None):
    with _lease_writes:
        _write_lease_record(lease, released, acquired_at)


def _write_lease_record(lease, released, acquired_at):
    previous = read_lease(lease.run_dir) or {}
    identity = process_identity(os.getpid())
    write_compact_atomic(os.path.join(lease.run_dir, LEASE_FILE), {
        "owner": lease.owner,
        "host": identity["host"],
        "pid": os.getpid(),
        "boot_id": identity["boot_id"],
        "started": identity["started"],
        "token": lease.token,
        "expires_at": lease.expires_at,
        "acquired_at": acquired_at if acquired_at is not None else previous.get("acquired_at"),
        "released": released,
    })


def check_fence(run_dir, token):
    """Confere, antes de gravar, que ``token`` ainda é o token da posse atual.

    Um worker que ficou parado (pausa longa, máquina suspensa) e perdeu a posse tem um
    token menor que o do novo dono: aqui ele para, sem gravar nada.
    """
    record = read_lease(os.fspath(run_dir))
    if record is None:
        raise LeaseLost(f"sem lease.json em {run_dir}: este worker (token {token}) não tem posse")
    if record["token"] != token:
        raise LeaseLost(
            f"posse perdida: este worker tem o token {token}, mas a execução agora é de "
            f"{record['owner']} com o token {record['token']}; nada foi gravado"
        )
    if record.get("released"):
        raise LeaseLost(f"a posse do token {token} já foi liberada; nada foi gravado")


@contextlib.contextmanager
def fenced(lease):
    """Gravações protegidas: a conferência do token e a gravação acontecem sob a mesma trava,
    então nenhuma troca de dono consegue se enfiar entre as duas."""
    with lease_lock(lease.run_dir):
        check_fence(lease.run_dir, lease.token)
        yield


def renew_lease(lease, seconds=LEASE_SECONDS, clock=time.time):
    """Estende o prazo da posse; LeaseLost se outro worker já a tomou (mesmo que a nossa tenha vencido)."""
    with lease_lock(lease.run_dir):
        return _renew_under_lock(lease, seconds, clock)


def _renew_under_lock(lease, seconds, clock):
    with _lease_writes:
        check_fence(lease.run_dir, lease.token)
        renewed = Lease(lease.run_dir, lease.owner, lease.token, clock() + seconds)
        _write_lease(renewed, released=False)
    return renewed


def renew_lease_in_background(lease, seconds=LEASE_SECONDS, clock=time.time):
    """A renovação da batida (``harness.heartbeat``), feita de outra thread deste processo.

    Enquanto uma ferramenta roda, a thread principal segura a trava do lease.json (``fenced``),
    e esperar por ela seria esperar a ferramenta inteira. Se é ESTE processo que segura a
    trava, nenhum outro lê nem troca a posse agora: a batida grava sob ela, e o guarda não
    deixa a trava ser solta no meio da gravação. Senão, toma a trava como qualquer um.
    """
    key = os.path.realpath(lease.run_dir)
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    while True:
        with _held_guard:
            if _held_locks.get(key):
                return _renew_under_lock(lease, seconds, clock)
        try:
            with lease_lock(lease.run_dir, wait_seconds=0.05):
                return _renew_under_lock(lease, seconds, clock)
        except LeaseHeld:
            if time.monotonic() >= deadline:
                raise


def release_lease(lease):
    """Devolve a posse (o token fica gravado, para o próximo dono receber um maior)."""
    with lease_lock(lease.run_dir), _lease_writes:
        record = read_lease(lease.run_dir)
        if record is None or record["token"] != lease.token:
            return False  # já não era nossa: nada a devolver
        _write_lease(lease, released=True)
    return True


# --- Pedidos de fora: pausar e cancelar ------------------------------------------------

CONTROL_ACTIONS = ("pause", "cancel")


def request_control(run_dir, action, reason=""):
    """Deixa um pedido (pausar ou cancelar) que o dono da posse atende na próxima fronteira de turno."""
    if action not in CONTROL_ACTIONS:
        raise ValueError(f"pedido desconhecido {action!r}; use um de {', '.join(CONTROL_ACTIONS)}")
    write_compact_atomic(os.path.join(run_dir, CONTROL_FILE),
                         {"action": action, "reason": reason, "requested_at": now_iso()})


def pending_control(run_dir):
    """O pedido de controle à espera, ou None.

    Um control.json que não se deixa ler (vazio, bytes estragados, outra forma) é recusado,
    nunca tomado como um pedido: lê-lo como "cancelar" tornaria irreversível um arquivo
    estragado. Nada muda na execução; apagado ou corrigido o arquivo, ela continua.
    """
    path = os.path.join(run_dir, CONTROL_FILE)
    try:
        data = read_state_object(path)
    except StateFileError as error:
        raise control_file_error(path, error.problem) from None
    if data is None:
        return None
    return check_control_request(data, path)


def check_control_request(data, where):
    """Um pedido só vale com uma ação conhecida e um motivo em texto (ou sem motivo)."""
    if data.get("action") not in CONTROL_ACTIONS:
        raise control_file_error(where, f"campo 'action' vale {data.get('action')!r}; "
                                        f"esperava um de {', '.join(CONTROL_ACTIONS)}")
    if not isinstance(data.get("reason", ""), (str, type(None))):
        raise control_file_error(where, f"campo 'reason' precisa ser texto, encontrei "
                                        f"{type(data['reason']).__name__}")
    return data


def control_file_error(where, problem):
    return StateFileError(where, f"{problem}. O pedido de pausa ou cancelamento não foi lido e nada mudou "
                                 f"na execução: apague ou corrija o pedido e retome")


def clear_control(run_dir):
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(run_dir, CONTROL_FILE))


def apply_control(state, request):
    """Aplica um pedido à cena: cancel -> ``cancelled``; pause -> ``paused``."""
    status = "cancelled" if request["action"] == "cancel" else "paused"
    reason = request.get("reason") or ("cancelada a pedido" if status == "cancelled" else "pausada a pedido")
    return set_status(state, status, reason)


def control_run(store, action, reason="", owner=None):
    """Pausa ou cancela a execução de um armazenamento (``store``, um ``harness.stores.base.RunStore``).

    Se ninguém tem a posse (execução pausada, à espera de aprovação, ou caída), este
    processo a toma e grava o novo status na hora. Se um worker vivo a tem, deixa o pedido
    (control.json, ou a tabela de pedidos no banco) e esse worker o atende na próxima
    fronteira de turno. Devolve ``"applied"`` ou ``"requested"``.
    """
    if action not in CONTROL_ACTIONS:
        raise ValueError(f"pedido desconhecido {action!r}; use um de {', '.join(CONTROL_ACTIONS)}")
    if not store.exists():  # antes da posse: numa pasta digitada errado, nem lease.json nem banco
        raise CheckpointError(f"não há execução em {store.describe()}: nada para {action}; nada foi criado")
    try:
        lease = store.acquire_lease(owner=owner or f"{default_owner()}:{action}")
    except LeaseHeld:
        store.request_control(action, reason)
        return "requested"
    try:
        state = store.load()
        if state is None:
            raise CheckpointError(f"não há checkpoint em {store.describe()}: nada para {action}")
        if state["status"] in FINAL_STATUSES:
            raise RunNotResumable(f"a execução {state['run_id']} já está '{state['status']}'; "
                                  f"não há o que {'cancelar' if action == 'cancel' else 'pausar'}",
                                  state["status"])
        apply_control(state, {"action": action, "reason": reason})
        store.save(lease, state, crash_points=False)
        store.clear_control(lease)
    finally:
        store.release_lease(lease)
    return "applied"
