"""O armazenamento em arquivos: exatamente o que as lições 2 a 6 constroem, numa pasta por execução.

    checkpoint.json    a cena mais recente (v2)
    checkpoints/       a sequência por turno (turn-001-A.json, turn-001-B.json...)
    effects.json       o livro-razão de efeitos
    approvals.json     as decisões da válvula de aprovação
    lease.json         a posse e o fencing token (com a trava lease.lock)
    control.json       um pedido de pausa ou cancelamento à espera
    timeline.json      a identidade da linha do tempo (numa bifurcação)
    world/             o mundo externo do cenário
    rewind.json        o plano de uma rebobinagem em curso (some quando ela termina)

Cada método só chama as funções das lições. O fencing token é conferido pelo worker
(``fenced``: a trava e a conferência antes de cada gravação), não pelo arquivo: um sistema
de arquivos não sabe recusar uma escrita velha. É isso que os bancos mudam.

A rebobinagem e a bifurcação (``python -m harness rewind`` e ``fork``) são as da lição 5
(``rewind_to``, ``fork_from``) com o que uma pasta precisa para aguentar uma queda no meio:
o plano da rebobinagem gravado antes de mover o primeiro arquivo (``rewind.json``, que o
próximo comando termina) e a bifurcação montada numa pasta de obra, que só ganha o nome do
destino no fim, com um rename.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import time
from pathlib import Path

from harness.approval import APPROVALS_FILE, load_approvals
from harness import run_paths
from harness.checkpoint import CHECKPOINT_VERSION, load_checkpoint
from harness.effects import EFFECTS_FILE, load_effects
from harness.lifecycle import (
    CHECKPOINT_FILE,
    CONTROL_FILE,
    LEASE_SECONDS,
    acquire_lease,
    check_fence,
    clear_control,
    fenced,
    load_run_checkpoint,
    pending_control,
    process_alive,
    read_lease,
    release_lease,
    renew_lease,
    renew_lease_in_background,
    request_control,
    save_run_checkpoint,
    scene_of,
    stored_version,
    write_compact_atomic,
)
from harness.stores.base import ForkPreview, RunStore, SavePoint, StoreError, TimelineFrame, TimelineView
from harness.timeline import (
    CHECKPOINTS_DIR,
    TIMELINE_FILE,
    TimelineError,
    check_fork_target,
    checkpoints_dir,
    declared_version,
    fork_from,
    forked_run,
    latest_point_or_error,
    list_points,
    load_timeline,
    parse_point_name,
    point_filename,
    read_point,
    rewind_scene,
    rewind_to,
    scene_only,
    timeline_frames,
)
from harness.tool_runner import ToolContext
from harness.tools import Workspace

WORLD_DIR = "world"


def remove_run_files(run_dir):
    """Começo limpo (a lição 6): apaga cena, sequência, livro-razão, aprovações, pedidos e o mundo.

    O checkpoint.json sai primeiro: uma pasta meio limpa nunca parece retomável. O
    lease.json fica, para o próximo token continuar maior que todos os anteriores.
    """
    run_dir = Path(run_dir)
    for name in (CHECKPOINT_FILE, CHECKPOINT_FILE + ".tmp", EFFECTS_FILE, EFFECTS_FILE + ".tmp",
                 APPROVALS_FILE, APPROVALS_FILE + ".tmp", CONTROL_FILE, TIMELINE_FILE):
        (run_dir / name).unlink(missing_ok=True)
    for folder in (CHECKPOINTS_DIR, WORLD_DIR):
        shutil.rmtree(run_dir / folder, ignore_errors=True)


class GuardedWorkspace(Workspace):
    """O mundo da pasta, com a conferência da posse logo antes de cada efeito de alto impacto."""

    def __init__(self, root, guard, boundary=None):
        super().__init__(root, boundary)
        self.guard = guard

    def add_email(self, email):
        self.guard()
        super().add_email(email)

    def add_ticket(self, ticket):
        self.guard()
        super().add_ticket(ticket)


class FileStore(RunStore):
    """Uma execução numa pasta (``run_dir``), gravada pelas funções das lições."""

    kind = "arquivos"

    def __init__(self, run_dir):
        self.run_dir = Path(run_dir)

    def describe(self):
        return str(self.checkpoint_path)

    @property
    def checkpoint_path(self):
        return self.run_dir / CHECKPOINT_FILE

    # --- a posse ------------------------------------------------------------------------

    def acquire_lease(self, owner=None, seconds=None):
        lease = acquire_lease(self.run_dir, owner=owner, seconds=seconds or LEASE_SECONDS)
        # Os temporários que quedas antigas deixaram (nomes únicos: não são sobrescritos, então somem aqui).
        for folder in (self.run_dir, checkpoints_dir(self.run_dir)):
            run_paths.remove_leftover_temporaries(folder)
        return lease

    def renew_lease(self, lease, seconds=None):
        """Confere o token a cada turno; regrava o lease.json só quando falta menos da metade do prazo."""
        seconds = seconds or LEASE_SECONDS
        if lease.expires_at - time.time() > seconds / 2:
            with fenced(lease):  # a mesma conferência de antes de cada gravação
                return lease
        return renew_lease(lease, seconds)

    def renew_now(self, lease, seconds=None):
        # A batida roda noutra thread; a thread principal pode estar segurando a trava (ferramenta).
        return renew_lease_in_background(lease, seconds or LEASE_SECONDS)

    def confirm_lease(self, lease):
        check_fence(self.run_dir, lease.token)

    def release_lease(self, lease):
        return release_lease(lease)

    def read_lease(self):
        return read_lease(self.run_dir)

    # --- a cena e a sequência -------------------------------------------------------------

    def exists(self):
        return self.checkpoint_path.exists()

    def load(self):
        state = load_run_checkpoint(self.checkpoint_path)
        if state is not None and stored_version(self.checkpoint_path) == CHECKPOINT_VERSION:
            # Uma cena v1 (lições 2 a 5, ou uma rebobinagem) não sabe se a execução usava a
            # válvula: se já houve decisões gravadas aqui, a válvula continua valendo.
            state["requires_approval"] = (self.run_dir / APPROVALS_FILE).exists()
            timeline = load_timeline(self.run_dir)  # uma bifurcação (lição 5) diz de onde veio
            state["timeline"] = {"timeline_id": timeline["timeline_id"], "parent": timeline["parent"]}
        return state

    def scene_predates_ledger(self):
        return stored_version(self.checkpoint_path) == CHECKPOINT_VERSION \
            and not (self.run_dir / EFFECTS_FILE).exists()

    def start(self, lease, state, scenario):
        with fenced(lease):
            remove_run_files(self.run_dir)
            scenario.make_workspace(self.run_dir / WORLD_DIR, boundary=self.run_dir)
            save_run_checkpoint(state, self.checkpoint_path, crash_points=False)

    def save(self, lease, state, point=None, crash_points=True):
        # A ordem garante que a sequência nunca fica atrás do checkpoint.json. O ponto é o
        # turn-NNN-P.json do save_point da lição 5, gravado em JSON compacto.
        with fenced(lease):
            if point is not None:
                write_compact_atomic(checkpoints_dir(self.run_dir) / point_filename(state["turns"], point),
                                     scene_of(state), root=self.run_dir, create_folders=True)
            save_run_checkpoint(state, self.checkpoint_path, crash_points=crash_points)

    def points(self):
        return [SavePoint(path.name, *parse_point_name(path.name)) for path in list_points(self.run_dir)]

    def read_point(self, point_id):
        return scene_only(read_point(checkpoints_dir(self.run_dir) / point_id))

    # --- livro-razão e aprovações ----------------------------------------------------------

    def effects(self):
        return load_effects(self.run_dir / EFFECTS_FILE)

    def approvals(self):
        return load_approvals(self.run_dir / APPROVALS_FILE)

    def save_approval(self, lease, tool_use_id, record):
        with fenced(lease):
            approvals = load_approvals(self.run_dir / APPROVALS_FILE)
            approvals[tool_use_id] = record
            write_compact_atomic(self.run_dir / APPROVALS_FILE, approvals)

    @contextlib.contextmanager
    def tool_phase(self, lease, calls, approver=None, dry_run=False):
        # O livro-razão e o mundo só mudam com o token válido: a trava fica com este worker
        # enquanto as ferramentas rodam (o preço dos arquivos: ninguém mais lê a posse).
        with fenced(lease):
            self.guard_lesson_writes()
            yield ToolContext(effects_path=self.run_dir / EFFECTS_FILE, approver=approver,
                              approvals_path=self.run_dir / APPROVALS_FILE, dry_run=dry_run)

    def guard_lesson_writes(self):
        """O livro-razão é gravado e lido pelas funções da lição 4 (``save_effect`` -> ``write_json_atomic``
        da lição 2): a gravação usa um temporário de nome único e nunca segue um link, mas a leitura abre
        ``effects.json`` com ``open`` e seguiria um link plantado no lugar dele. Sob a trava da posse,
        antes das ferramentas: um effects.json (ou approvals.json) que é link é recusado."""
        for name in (EFFECTS_FILE, APPROVALS_FILE):
            run_paths.refuse_link(self.run_dir / name)

    def world(self, scenario=None):
        return GuardedWorkspace(self.run_dir / WORLD_DIR, self.check_before_effect, boundary=self.run_dir)

    # --- pedidos de fora e linha do tempo -------------------------------------------------

    def request_control(self, action, reason=""):
        request_control(self.run_dir, action, reason)

    def pending_control(self):
        return pending_control(self.run_dir)

    def clear_control(self, lease):
        with fenced(lease):
            clear_control(self.run_dir)

    def timeline(self):
        return load_timeline(self.run_dir)

    # --- timeline, rewind e fork (lição 5) ---------------------------------------------------

    def timeline_view(self):
        """Os pontos da sequência, cada um com o resumo da cena, e as pastas rewound-NNN/.

        Uma pasta que não existe, ou sem checkpoint.json nem pontos, é TimelineError que diz o que falta.
        """
        require_run_dir(self.run_dir)
        if not (self.checkpoint_path.exists() or list_points(self.run_dir)):  # uma pasta vazia não é uma linha do tempo
            raise TimelineError(f"não há execução em {self.run_dir}: nem {CHECKPOINT_FILE} nem pontos em "
                                f"{CHECKPOINTS_DIR}/; confira a pasta (--workdir)")
        info = load_timeline(self.run_dir)
        frames = [TimelineFrame(frame["name"], frame["turn"], frame["point"], error=frame["error"],
                                summary=None if frame["error"] else
                                {key: frame[key] for key in ("tokens_used", "message_count", "pending")})
                  for frame in timeline_frames(self.run_dir)]
        folder = checkpoints_dir(self.run_dir)
        asides = sorted(folder.glob("rewound-*")) if folder.is_dir() else []
        return TimelineView(str(self.run_dir), info, frames,
                            [(f"{CHECKPOINTS_DIR}/{aside.name}/", len(list(aside.glob("*.json")))) for aside in asides])

    def head_scene(self):
        # Na versão em que foi gravado: o checkpoint.json v1 de uma linha do tempo da lição 5 não vira v2.
        path = self.checkpoint_path
        scene = load_run_checkpoint(path) if declared_version(path) == 2 else load_checkpoint(path)
        return None if scene is None else (CHECKPOINT_FILE, scene)

    def find_point(self, turn, point=None):
        require_run_dir(self.run_dir)
        path = latest_point_or_error(self.run_dir, turn, point)
        check_point_file(path)  # o nome escolheu o ponto: o arquivo precisa ser o que o nome diz
        return SavePoint(path.name, *parse_point_name(path.name))

    def rewound_state(self, point_id):
        return rewind_scene(self.run_dir, *point_of(point_id))[1]

    def rewind(self, lease, point_id, state):
        """``rewind_to`` sob a posse, e à prova de queda no meio.

        Rebobinar move vários arquivos (os pontos depois do escolhido, e o checkpoint.json), e
        nenhum rename junta todos: antes do primeiro, o plano vai para o rewind.json, e quem
        achar esse arquivo termina a rebobinagem (``settle_interrupted_rewind``). O plano guarda
        só o ponto e a pasta dos que saem; a cena gravada é refeita do disco por ``rewind_to``
        e é a mesma ``state`` que ``rewound_state`` deu.
        """
        turn, point = point_of(point_id)
        with fenced(lease):
            finish_rewind(self.run_dir)  # uma rebobinagem anterior que caiu no meio termina primeiro
            path, _ = rewind_scene(self.run_dir, turn, point)
            write_compact_atomic(self.run_dir / REWIND_JOURNAL,
                                 {"point": path.name, "aside": free_aside_name(self.run_dir)})
            return finish_rewind(self.run_dir)

    def fork_preview(self, saved):
        line = load_timeline(self.run_dir)["timeline_id"]  # a origem que a bifurcação copia: ilegível, nada feito
        return ForkPreview(saved, self.read_point(saved.id), line)

    def fork(self, saved, new_store, say=print):
        """``fork_run``: a nova linha é outra pasta, com uma cópia do mundo desta."""
        if not isinstance(new_store, FileStore):
            raise StoreError(f"uma execução em arquivos bifurca para outra pasta de arquivos, não para "
                             f"{new_store.describe()}")
        return fork_run(self.run_dir, saved.turn, new_store.run_dir, saved.point, say=say)


# --- A rebobinagem e a bifurcação, à prova de queda --------------------------------------------

def require_run_dir(run_dir):
    if not Path(run_dir).is_dir():
        raise TimelineError(f"{run_dir} não existe: não há execução para rebobinar ou bifurcar")


def check_point_file(path):
    """TimelineError se o ponto ``path`` não é o que o nome dele diz: um link simbólico, ou uma cena
    de outro turno ou de outro momento do turno (um arquivo copiado ou renomeado à mão). Rebobinar
    para ele gravaria outra cena com a mensagem do ponto pedido, e deixaria os pontos reais depois
    dele na linha ativa, para a próxima retomada sobrescrever."""
    path = Path(path)
    advice = "nada foi alterado. Apague o arquivo (ou devolva o original) e tente de novo"
    if path.is_symlink():
        raise TimelineError(f"{path}: o ponto é um link simbólico, e a execução não segue links (pode ter sido "
                            f"plantado para levar a leitura para fora dela); {advice}")
    turn, point = parse_point_name(path.name)
    scene = read_point(path)
    messages = scene["messages"]
    moment = "A" if scene["pending_tool_use"] or (messages and messages[-1].get("role") == "assistant") else "B"
    if (scene["turns"], moment) != (turn, point):
        raise TimelineError(f"{path}: o conteúdo é a cena do turno {scene['turns']} (ponto {moment}), mas o nome diz "
                            f"turno {turn} (ponto {point}): o arquivo foi copiado ou renomeado; {advice}")


def point_of(point_id):
    """``"turn-002-A.json" -> (2, "A")``; um id que não é de um ponto da sequência é TimelineError."""
    parsed = parse_point_name(str(point_id))
    if parsed is None:
        raise TimelineError(f"{point_id!r} não é um ponto da sequência (turn-NNN-A.json ou turn-NNN-B.json)")
    return parsed


REWIND_JOURNAL = "rewind.json"  # a rebobinagem em curso: o ponto escolhido e a pasta dos que saem
ASIDE_NAME = re.compile(r"rewound-\d{3,}")


def free_aside_name(run_dir):
    """O nome da próxima pasta rewound-NNN, o mesmo que ``set_aside_points_after`` escolheria."""
    number = 1
    while (checkpoints_dir(run_dir) / f"rewound-{number:03d}").exists():
        number += 1
    return f"rewound-{number:03d}"


def read_rewind_journal(run_dir):
    """O plano de uma rebobinagem em curso (ou interrompida); None se não há."""
    path = Path(run_dir) / REWIND_JOURNAL
    try:
        journal = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        journal = error
    if not (isinstance(journal, dict) and isinstance(journal.get("point"), str) and parse_point_name(journal["point"])
            and isinstance(journal.get("aside"), str) and ASIDE_NAME.fullmatch(journal["aside"])):
        raise TimelineError(f"{path} ilegível: ele guarda uma rebobinagem interrompida, mas não diz qual. "
                            f"Confira a linha do tempo (timeline), apague o {REWIND_JOURNAL} e rebobine de novo")
    return journal


def finish_rewind(run_dir):
    """Leva até o fim a rebobinagem do rewind.json (sob a posse); a cena gravada, ou None se não há.

    Cada passo pode ser repetido: os pontos depois do escolhido que ainda estão na sequência
    vão para a pasta do plano, e ``rewind_to`` (que já não acha nada para tirar) grava o
    checkpoint.json. Só então o plano some.
    """
    journal = read_rewind_journal(run_dir)
    if journal is None:
        return None
    turn, point = parse_point_name(journal["point"])
    aside = checkpoints_dir(run_dir) / journal["aside"]
    for folder in (checkpoints_dir(run_dir), aside):  # o plano veio do disco: os pontos nunca saem da execução
        run_paths.refuse_link(folder)
    for path in list_points(run_dir):
        if parse_point_name(path.name) > (turn, point):
            aside.mkdir(exist_ok=True)
            os.replace(path, aside / path.name)
    state = rewind_to(run_dir, turn, point)
    (Path(run_dir) / REWIND_JOURNAL).unlink()
    return state


def settle_interrupted_rewind(run_dir):
    """Termina, sob a posse, uma rebobinagem que um processo morto deixou no meio.

    Devolve a frase que conta o que aconteceu, ou None se não havia nada a terminar. Com a
    posse nas mãos de um processo vivo (a rebobinagem ainda está andando), LeaseHeld.
    """
    journal = read_rewind_journal(run_dir)
    if journal is None:
        return None
    lease = acquire_lease(run_dir, owner=f"{os.getpid()}:rebobinar")
    try:
        with fenced(lease):
            if finish_rewind(run_dir) is None:
                return None  # outro processo terminou antes
    finally:
        release_lease(lease)
    return (f"uma rebobinagem para {journal['point']} tinha sido interrompida no meio; ela foi concluída "
            f"agora, antes deste comando")


def fork_run(run_dir, turn, new_run_dir, point=None, say=print):
    """``fork_from`` e o que uma execução da lição 6 pede a mais: uma cópia do mundo do cenário e
    um checkpoint.json v2 com identidade própria (veja ``forked_run``).

    A cópia do mundo (``world/``) é o que as ferramentas de leitura da nova linha vão consultar;
    em dry-run, nada é escrito nem na caixa de saída da original nem na da cópia. Tudo ou nada:
    a nova linha é montada numa pasta de obra ao lado do destino e só ganha o nome dele no fim,
    com um rename. Um processo morto no meio deixa, no máximo, uma pasta de obra, que a próxima
    bifurcação para o mesmo destino apaga (e diz que apagou).
    """
    require_run_dir(run_dir)
    check_fork_target(run_dir, new_run_dir)
    source = load_run_checkpoint(Path(run_dir) / CHECKPOINT_FILE)  # lido antes de criar qualquer coisa
    target = Path(new_run_dir)
    for leftover in abandoned_fork_folders(target):
        shutil.rmtree(leftover)
        say(f"uma bifurcação anterior para {target} foi interrompida no meio; a pasta incompleta "
            f"{leftover.name} foi apagada e a bifurcação recomeça do zero")
    staging = target.parent / f"{STAGING_PREFIX.format(name=target.name)}{os.getpid()}"
    try:
        info = fork_from(run_dir, turn, staging, point)
        world = Path(run_dir) / WORLD_DIR
        if world.is_symlink():  # o mundo de uma execução nunca aponta para fora dela
            raise TimelineError(f"{world} é um link simbólico: a bifurcação não copia um mundo de fora da execução")
        if world.is_dir():  # links plantados dentro dele seguem links (as ferramentas os recusam), não cópias
            shutil.copytree(world, staging / WORLD_DIR, symlinks=True)
        scene = scene_only(read_point(staging / CHECKPOINT_FILE))  # a cena que fork_from copiou
        copied = point_filename(info["parent"]["turn"], info["parent"]["point"])
        state = forked_run(source, scene, copied, {"timeline_id": info["timeline_id"], "parent": info["parent"]})
        save_run_checkpoint(state, staging / CHECKPOINT_FILE, crash_points=False)
        put_in_place(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)  # um erro comum não deixa obra; uma queda, a próxima apaga
        raise
    return info


# A pasta de obra de uma bifurcação: oculta, ao lado do destino, com o pid de quem a monta.
STAGING_PREFIX = ".{name}.bifurcando-"


def abandoned_fork_folders(target):
    """As pastas de obra de bifurcações para ``target`` cujo processo já morreu."""
    prefix = STAGING_PREFIX.format(name=target.name)
    if not target.parent.is_dir():
        return []
    found = []
    for folder in target.parent.iterdir():
        pid = folder.name[len(prefix):]
        if folder.name.startswith(prefix) and pid.isdigit() and not process_alive(int(pid)):
            found.append(folder)
    return sorted(found)


def put_in_place(staging, target):
    """O rename que publica a bifurcação: atômico, e só sobre uma pasta vazia (ou nenhuma)."""
    try:
        os.rename(staging, target)
    except OSError as error:
        if error.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
            raise TimelineError(f"{target.name} deixou de estar vazia enquanto a bifurcação era montada; "
                                f"escolha uma pasta nova") from None
        raise
    fsync_folder(target.parent)


def fsync_folder(folder):
    """O rename sobrevive também a uma queda de energia (o passo 4 de ``write_json_atomic``)."""
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
