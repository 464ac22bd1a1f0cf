"""Lição 5 na linha de comando: rebobinar e bifurcar a pasta de uma execução.

``python -m harness rewind`` e ``fork`` chamam ``rewind_to`` e ``fork_from`` com o que uma
execução da lição 6 pede a mais. A rebobinagem confere tudo antes e depois toma a posse, para
nenhum worker gravar a mesma pasta enquanto a cena troca. A bifurcação leva uma cópia do
mundo do cenário (``world/``), que as ferramentas de leitura da nova linha vão consultar; em
dry-run, nada é escrito nem na caixa de saída da original nem na da cópia. E a nova linha é
outra execução: run_id próprio, o cenário da original e o status que o ponto copiado tinha.

Num banco (``--store sqlite`` ou ``postgresql://...``), ``rewind_in_store`` e ``fork_in_store``
fazem o mesmo com o armazenamento: rebobinar é mover a cabeça da execução para um ponto, e
bifurcar é começar outra execução com a cena dele.
"""
from __future__ import annotations

import errno
import json
import os
import re
import shutil
from pathlib import Path

from harness.lifecycle import (
    CHECKPOINT_FILE,
    acquire_lease,
    fenced,
    load_run_checkpoint,
    new_run_checkpoint,
    process_alive,
    release_lease,
    save_run_checkpoint,
    set_status,
    write_compact_atomic,
)
from harness.runner import WORLD_DIR
from harness.scenarios import load_scenario
from harness.timeline import (
    SCENE_FIELDS,
    TimelineError,
    check_fork_target,
    checkpoints_dir,
    fork_from,
    fork_source,
    inherited_receipts,
    list_points,
    new_timeline_id,
    parse_point_name,
    point_filename,
    read_point,
    rewind_scene,
    rewind_to,
    scene_only,
)

# --to 2 (o último ponto do turno 2), --to 2-A ou --to 2-B (um ponto específico)
POINT_SPEC = re.compile(r"(\d+)(?:-([AB]))?")


def parse_point_spec(text):
    """``"2" -> (2, None)``, ``"2-A" -> (2, "A")``; qualquer outra coisa é TimelineError."""
    match = POINT_SPEC.fullmatch(text.strip().upper())
    if match is None:
        raise TimelineError(f"--to {text!r} não é um ponto: use TURNO, TURNO-A ou TURNO-B (por exemplo 2 ou 2-A)")
    return int(match.group(1)), match.group(2)


def require_run_dir(run_dir):
    if not Path(run_dir).is_dir():
        raise TimelineError(f"{run_dir} não existe: não há execução para rebobinar ou bifurcar")


def rewind_run(run_dir, turn, point=None):
    """``rewind_to`` sob a posse da execução, e à prova de queda no meio.

    A cena é conferida antes (um pedido impossível não toca nem no lease.json) e a rebobinagem
    acontece com o fencing token conferido: com um worker rodando, LeaseHeld e nada muda.
    Rebobinar move vários arquivos (os pontos depois do escolhido, e o checkpoint.json), e
    nenhum rename junta todos: antes do primeiro, o plano vai para o rewind.json, e quem
    achar esse arquivo termina a rebobinagem (``settle_interrupted_rewind``).
    """
    require_run_dir(run_dir)
    rewind_scene(run_dir, turn, point)
    lease = acquire_lease(run_dir, owner=f"{os.getpid()}:rebobinar")
    try:
        with fenced(lease):
            finish_rewind(run_dir)  # uma rebobinagem anterior que caiu no meio termina primeiro
            path, _ = rewind_scene(run_dir, turn, point)
            write_compact_atomic(Path(run_dir) / REWIND_JOURNAL, {"point": path.name, "aside": free_aside_name(run_dir)})
            return finish_rewind(run_dir)
    finally:
        release_lease(lease)


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


def fork_preview(run_dir, turn, new_run_dir, point=None):
    """O que ``fork_run`` faria (o ponto e a cena copiados), sem criar nada."""
    require_run_dir(run_dir)
    check_fork_target(run_dir, new_run_dir)
    path, parent = fork_source(run_dir, turn, new_run_dir, point)
    return path, parent, scene_only(read_point(path))


def fork_run(run_dir, turn, new_run_dir, point=None, say=print):
    """``fork_from`` e o que uma execução da lição 6 pede a mais: uma cópia do mundo do cenário e
    um checkpoint.json v2 com identidade própria (veja ``forked_run``).

    Tudo ou nada: a nova linha é montada numa pasta de obra ao lado do destino e só ganha o
    nome dele no fim, com um rename. Um processo morto no meio deixa, no máximo, uma pasta de
    obra, que a próxima bifurcação para o mesmo destino apaga (e diz que apagou).
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


def forked_run(source, scene, point_id, timeline):
    """A cena v2 de uma bifurcação: outra execução, com run_id próprio e a origem registrada.

    Leva da original o cenário e a exigência de aprovação, e a cena do ponto copiado. O status
    é o que a execução tinha naquele ponto: se ele é o último da original e o modelo já tinha
    encerrado ali (completed, refused), a nova linha também terminou; em qualquer outro caso
    a execução seguiu depois do ponto (um pause_turn, uma queda, uma aprovação à espera...),
    e a nova linha fica pausada, pronta para --resume.
    """
    source = source or {}
    state = new_run_checkpoint(scene["task"], timeline=timeline,
                               requires_approval=source.get("requires_approval", False))
    state.update({field: scene[field] for field in SCENE_FIELDS})
    if source.get("scenario"):
        state["scenario"] = source["scenario"]
    at_the_end = all(source.get(field) == scene[field] for field in SCENE_FIELDS)
    if at_the_end and source.get("status") in ("completed", "refused"):
        set_status(state, source["status"], source.get("status_reason"))
    else:
        set_status(state, "paused", f"bifurcada de {point_id}")
    return state


# --- O mesmo num banco (--store sqlite ou postgresql://...) -------------------------------------

def point_in_store(store, turn, point=None):
    """O último ponto ativo do turno (ou o ponto ``point`` dele) num armazenamento; TimelineError se não há."""
    points = store.points()
    chosen = [saved for saved in points if saved.turn == turn and (point is None or saved.point == point)]
    if not chosen:
        available = ", ".join(str(number) for number in sorted({saved.turn for saved in points})) or "nenhum"
        asked = f"{turn}-{point}" if point else str(turn)
        raise TimelineError(f"não há ponto gravado para {asked} em {store.describe()}; turnos disponíveis: {available}")
    return chosen[-1]


def rewind_in_store(store, turn, point=None):
    """A rebobinagem num banco: a cabeça da execução volta ao ponto escolhido.

    Como na lição 5, só move estado: nenhuma ferramenta roda, chamadas pendentes continuam
    pendentes e a execução fica pausada, pronta para --resume. Nada é apagado: os pontos
    depois dele saem da linha do tempo ativa. A troca acontece sob a posse, com o token
    conferido pelo banco.
    """
    target = point_in_store(store, turn, point)
    scene = store.read_point(target.id)
    lease = store.acquire_lease(owner=f"{os.getpid()}:rebobinar")
    try:
        run = store.load()
        run.update({field: scene[field] for field in SCENE_FIELDS})
        run.update(status="paused", status_reason=f"rebobinada para {target.id}", recovery_attempts=0,
                   pending_approval=None)
        store.rewind(lease, target.id, run)
    finally:
        store.release_lease(lease)
    return run


def fork_in_store(store, turn, new_store, point=None):
    """A bifurcação num banco: uma execução nova com a cena do ponto, em dry-run.

    A original só é lida. A nova registra a origem (parent) e começa a própria sequência pelo
    ponto copiado; chamadas pendentes vão pendentes, com os registros que a original tem delas
    (``inherited_receipts``), e a retomada as fecha pelo livro-razão, em dry-run.
    """
    target = point_in_store(store, turn, point)
    scene = store.read_point(target.id)
    inherited = inherited_receipts(store.effects(), scene)
    if new_store.exists():
        raise TimelineError(f"{new_store.describe()} já tem uma execução; escolha um destino novo")
    parent = store.timeline()
    timeline = {"timeline_id": new_timeline_id(),
                "parent": {"timeline_id": parent["timeline_id"], "turn": target.turn, "point": target.point}}
    state = forked_run(store.load(), scene, target.id, timeline)
    lease = new_store.acquire_lease(owner=f"{os.getpid()}:bifurcar")
    try:
        new_store.start(lease, state, load_scenario(store.scenario_name()), timeline={**timeline, "dry_run": True},
                        point=target.point, effects=inherited)
    finally:
        new_store.release_lease(lease)
    return {**timeline, "dry_run": True}
