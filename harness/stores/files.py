"""O armazenamento em arquivos: exatamente o que as lições 2 a 6 constroem, numa pasta por execução.

    checkpoint.json    a cena mais recente (v2)
    checkpoints/       a sequência por turno (turn-001-A.json, turn-001-B.json...)
    effects.json       o livro-razão de efeitos
    approvals.json     as decisões da válvula de aprovação
    lease.json         a posse e o fencing token (com a trava lease.lock)
    control.json       um pedido de pausa ou cancelamento à espera
    timeline.json      a identidade da linha do tempo (numa bifurcação)
    world/             o mundo externo do cenário

Cada método só chama as funções das lições. O fencing token é conferido pelo worker
(``fenced``: a trava e a conferência antes de cada gravação), não pelo arquivo: um sistema
de arquivos não sabe recusar uma escrita velha. É isso que os bancos mudam.
"""
from __future__ import annotations

import contextlib
import shutil
import time
from pathlib import Path

from harness.approval import APPROVALS_FILE, load_approvals
from harness import run_paths
from harness.checkpoint import CHECKPOINT_VERSION
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
from harness.stores.base import RunStore, SavePoint
from harness.timeline import (
    CHECKPOINTS_DIR,
    TIMELINE_FILE,
    checkpoints_dir,
    list_points,
    load_timeline,
    parse_point_name,
    point_filename,
    read_point,
    scene_only,
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
        """O livro-razão é gravado pelas funções da lição 4 (``save_effect`` -> ``write_json_atomic`` da
        lição 2), que abrem ``effects.json.tmp`` com ``open(..., "w")`` e seguiriam um link plantado ali.
        Sob a trava da posse, antes das ferramentas: um effects.json que é link é recusado, e o
        ``.tmp`` que estiver lá (sobra de queda ou link plantado) sai; apagar um link não toca o alvo."""
        for name in (EFFECTS_FILE, APPROVALS_FILE):
            run_paths.refuse_link(self.run_dir / name)
            (self.run_dir / (name + ".tmp")).unlink(missing_ok=True)

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
