"""Lição 5: a sequência de checkpoints por turno, a rebobinagem e a bifurcação.

Um único ``checkpoint.json`` guarda só a cena mais recente: cada gravação apaga a
anterior. Para voltar a um turno antigo (rebobinar) ou abrir uma rota alternativa a
partir dele (bifurcar), o harness guarda UMA cena por ponto de gravação:

    RUN_DIR/
      checkpoint.json          a cena mais recente (o que a retomada lê)
      checkpoints/
        turn-001-A.json        turno 1, ponto A: o modelo decidiu, chamadas pendentes
        turn-001-B.json        turno 1, ponto B: os resultados foram registrados
        turn-002-A.json        ...
      effects.json             o livro-razão de efeitos (lição 4)
      timeline.json            a identidade desta linha do tempo e a sua origem

O que a sequência rebobina é a cena da decisão (messages, turns, tokens_used,
pending_tool_use). Ela não desfaz nada do mundo externo: um e-mail enviado continua
enviado depois de qualquer rebobinagem. E rebobinar ou bifurcar só move estado: nenhuma
ferramenta roda. Chamadas que ficaram pendentes no ponto escolhido continuam pendentes,
e a próxima execução as resolve pelo livro-razão e pela válvula, como depois de uma queda.

Este módulo lê também as execuções da lição 6 (checkpoint.json na versão 2), por isso
importa ``lifecycle``; o contrário nunca acontece.
"""
from __future__ import annotations

import re
import shutil
import uuid
from datetime import datetime, timezone
from pathlib import Path

from harness.approval import WaitingForApproval
from harness.checkpoint import CHECKPOINT_VERSION, CheckpointError, load_checkpoint, save_checkpoint, write_json_atomic
from harness.effects import EFFECTS_FILE, load_effects
from harness.lifecycle import MAIN_TIMELINE_ID, load_run_checkpoint, new_run_checkpoint, set_status, write_compact_atomic
from harness.loop import MAX_TURNS, call_model, has_ended, take_response
from harness.resume import orphan_ids
from harness.state_json import StateFileError, read_state_json, read_state_object
from harness.tool_runner import ToolContext, close_pending, run_tool_uses

CHECKPOINTS_DIR = "checkpoints"
CHECKPOINT_FILE = "checkpoint.json"
TIMELINE_FILE = "timeline.json"
SAVE_POINTS = ("A", "B")  # A = antes das ferramentas, B = depois dos resultados
SCENE_FIELDS = ("task", "turns", "tokens_used", "messages", "pending_tool_use")  # a cena, além de version

# turn-014-A.json: o número do turno com zeros à esquerda e a letra do ponto.
POINT_NAME = re.compile(r"turn-(\d{3,})-([AB])\.json")


class TimelineError(Exception):
    """Pedido impossível sobre a sequência (turno inexistente, destino ocupado...): a mensagem diz qual."""


# --- A sequência de checkpoints -------------------------------------------------------

def point_filename(turn, point):
    """``(14, "A") -> "turn-014-A.json"``: o nome já diz o turno e o momento do turno."""
    if not isinstance(turn, int) or isinstance(turn, bool) or turn < 0:
        raise TimelineError(f"turno inválido: {turn!r} (use um inteiro >= 0)")
    if point not in SAVE_POINTS:
        raise TimelineError(f"ponto de gravação inválido: {point!r} (use 'A' ou 'B')")
    return f"turn-{turn:03d}-{point}.json"


def parse_point_name(name):
    """``"turn-014-A.json" -> (14, "A")``; None para qualquer outro nome (.tmp, notas...)."""
    match = POINT_NAME.fullmatch(name)
    if match is None:
        return None
    return int(match.group(1)), match.group(2)


def checkpoints_dir(run_dir):
    return Path(run_dir) / CHECKPOINTS_DIR


def save_point(run_dir, state, point):
    """Grava a cena atual como ``turn-NNN-P.json`` (atômico, como o checkpoint.json)."""
    folder = checkpoints_dir(run_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / point_filename(state["turns"], point)
    write_json_atomic(path, state)
    return path


def list_points(run_dir):
    """Os pontos gravados, do mais antigo ao mais recente; ignora .tmp e qualquer outro arquivo."""
    folder = checkpoints_dir(run_dir)
    if not folder.is_dir():
        return []
    points = [path for path in folder.iterdir() if path.is_file() and parse_point_name(path.name)]
    # (turno, letra): o número compara como número e "A" < "B" põe a decisão antes do resultado.
    return sorted(points, key=lambda path: parse_point_name(path.name))


def pick_latest_point(run_dir, turn=None):
    """O último ponto gravado de um turno (ou da execução inteira, se turn for None); None se não há."""
    points = list_points(run_dir)
    if turn is not None:
        points = [path for path in points if parse_point_name(path.name)[0] == turn]
    return points[-1] if points else None


def read_point(path):
    """Lê um ponto da sequência com a mesma validação do checkpoint.json, na versão em que foi gravado.

    A lição 6 grava a cena na versão 2 (status, run_id...); ela é lida pelo leitor
    dessa versão, igualmente estrito. Nada é migrado aqui: o ponto volta como está.
    """
    if declared_version(path) == 2:
        state = load_run_checkpoint(path)
    else:
        state = load_checkpoint(path)
    if state is None:
        raise TimelineError(f"o ponto {Path(path).name} não existe")
    return state


def declared_version(path):
    """O campo version do arquivo, ou None se não der para ler (o leitor estrito explica o porquê)."""
    try:
        data = read_state_json(path)
    except StateFileError:
        return None
    return data.get("version") if isinstance(data, dict) else None


def turns_available(run_dir):
    return sorted({parse_point_name(path.name)[0] for path in list_points(run_dir)})


def latest_point_or_error(run_dir, turn, point=None):
    """O ponto ``point`` ("A" ou "B") do turno, ou o último dele sem ``point``; TimelineError se não há."""
    path = pick_latest_point(run_dir, turn)
    if point is not None and path is not None:
        path = checkpoints_dir(run_dir) / point_filename(turn, point)
        if not path.is_file():
            raise TimelineError(f"não há {path.name} em {Path(run_dir).name}; pontos do turno {turn}: "
                                + ", ".join(p.name for p in list_points(run_dir) if parse_point_name(p.name)[0] == turn))
    if path is None:
        available = ", ".join(str(t) for t in turns_available(run_dir)) or "nenhum"
        raise TimelineError(f"não há ponto gravado para o turno {turn} em {Path(run_dir).name}; "
                            f"turnos disponíveis: {available}")
    return path


# --- A identidade da linha do tempo ---------------------------------------------------

def new_timeline_id():
    return "tl-" + uuid.uuid4().hex[:12]


def load_timeline(run_dir):
    """O conteúdo de timeline.json; uma execução sem ele é a linha principal, sem dry-run."""
    path = Path(run_dir) / TIMELINE_FILE
    try:
        data = read_state_object(path)
    except StateFileError as error:
        raise TimelineError(f"{TIMELINE_FILE} ilegível: {error}; nada foi alterado") from None
    if data is None:
        return {"timeline_id": MAIN_TIMELINE_ID, "parent": None, "dry_run": False}
    for field, kind, said in (("timeline_id", str, "texto"), ("dry_run", bool, "true ou false")):
        if not isinstance(data.get(field), kind):
            raise TimelineError(f"{path}: formato inesperado: campo '{field}' vale {data.get(field)!r}; "
                                f"esperava {said}")
    parent = data.get("parent")
    if parent is not None and not (isinstance(parent, dict) and isinstance(parent.get("timeline_id"), str)
                                   and type(parent.get("turn")) is int):
        raise TimelineError(f"{path}: formato inesperado: campo 'parent' precisa ser null ou um objeto "
                            f"com timeline_id e turn")
    return data


def start_timeline(run_dir, state):
    """Cria uma linha do tempo principal em ``run_dir`` com a cena inicial ``state``."""
    run_dir = Path(run_dir)
    if list_points(run_dir) or (run_dir / CHECKPOINT_FILE).exists():
        raise TimelineError(f"{run_dir.name} já tem uma execução gravada; escolha outra pasta")
    run_dir.mkdir(parents=True, exist_ok=True)
    info = {"timeline_id": new_timeline_id(), "parent": None, "dry_run": False, "created_at": utc_now()}
    write_compact_atomic(run_dir / TIMELINE_FILE, info)  # sem seguir links (harness.run_paths)
    save_checkpoint(state, run_dir / CHECKPOINT_FILE)
    return info


def utc_now():
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# --- Rebobinar ----------------------------------------------------------------------------

def set_aside_points_after(run_dir, turn, point="B"):
    """Tira da sequência ativa os pontos depois de ``turn`` (ou do ponto ``point`` dele),
    guardados em ``rewound-NNN/`` e nunca apagados."""
    later = [path for path in list_points(run_dir) if parse_point_name(path.name) > (turn, point)]
    if not later:
        return None
    folder = checkpoints_dir(run_dir)
    number = 1
    while (folder / f"rewound-{number:03d}").exists():
        number += 1
    target = folder / f"rewound-{number:03d}"
    target.mkdir()
    for path in later:
        shutil.move(path, target / path.name)
    return target


def current_run(run_dir):
    """O checkpoint.json da execução quando ele é da versão 2 (lição 6); None nos demais casos.

    Na versão 2, o checkpoint.json guarda também o que é da execução e não de um turno
    (run_id, status, se exige aprovação...); os pontos da sequência guardam só a cena.
    Um checkpoint.json que existe mas não se deixa ler é um erro, não "nenhum": trocá-lo
    por uma cena da lição 5 apagaria a identidade e as regras de uma execução da lição 6.
    """
    path = Path(run_dir) / CHECKPOINT_FILE
    if not path.exists():
        return None
    try:
        if declared_version(path) == 2:
            return read_point(path)
        load_checkpoint(path)  # uma cena da lição 5 também precisa ser legível
        return None
    except CheckpointError as error:
        raise TimelineError(f"{error}; nada foi alterado. Restaure o {CHECKPOINT_FILE} (ou apague-o, "
                            f"se a pasta é de uma linha do tempo da lição 5) e rebobine de novo") from None


def scene_into_run(run_dir, scene, reason):
    """O que a rebobinagem grava no checkpoint.json: a cena escolhida.

    Numa execução da lição 6 (checkpoint v2), a cena entra no checkpoint.json atual, que
    mantém a identidade e as regras da execução (run_id, exigência de aprovação...), e a
    execução fica pausada, pronta para --resume. Nas demais, é a própria cena.
    """
    run = current_run(run_dir)
    if run is None:
        return scene
    run.update({field: scene[field] for field in SCENE_FIELDS})
    run.update(status="paused", status_reason=reason, recovery_attempts=0, pending_approval=None)
    return run


def scene_only(state):
    """Só a cena da decisão, no formato v1: o que uma bifurcação copia de um ponto."""
    return {"version": CHECKPOINT_VERSION, **{field: state[field] for field in SCENE_FIELDS}}


def rewind_scene(run_dir, turn, point=None):
    """O ponto escolhido e a cena que a rebobinagem vai gravar, lidos e validados sem gravar nada."""
    path = latest_point_or_error(run_dir, turn, point)
    return path, scene_into_run(run_dir, read_point(path), f"rebobinada para {path.name}")


def rewind_to(run_dir, turn, point=None):
    """Volta a linha do tempo à cena da decisão do turno ``turn`` e devolve essa cena.

    Usa o último ponto gravado do turno (ou o ponto ``point``, "A" ou "B"). Só move estado:
    nenhuma ferramenta roda. Se a cena tem chamadas sem resultado (o ponto A), elas
    continuam pendentes, e a próxima retomada as fecha pelo livro-razão e pela válvula,
    como depois de uma queda. Tudo é lido e validado antes da primeira gravação, então
    uma rebobinagem que não pode terminar não muda nada. Os pontos posteriores saem da
    sequência ativa e a cena vira o checkpoint.json. O mundo externo não volta.
    """
    run_dir = Path(run_dir)
    path, state = rewind_scene(run_dir, turn, point)
    set_aside_points_after(run_dir, *parse_point_name(path.name))
    save_checkpoint(state, run_dir / CHECKPOINT_FILE)
    return state


# --- Bifurcar -----------------------------------------------------------------------------

def fork_source(run_dir, turn, new_run_dir, point=None):
    """O ponto que a bifurcação vai copiar e a linha de origem, conferidos antes de criar qualquer
    coisa: a pasta nova precisa ser outra e estar vazia, e o ponto precisa existir."""
    if Path(new_run_dir).resolve() == Path(run_dir).resolve():
        raise TimelineError("a bifurcação precisa de uma pasta nova, diferente da original")
    if Path(new_run_dir).exists() and any(Path(new_run_dir).iterdir()):
        raise TimelineError(f"{Path(new_run_dir).name} já existe e não está vazia; escolha uma pasta nova")
    return latest_point_or_error(run_dir, turn, point), load_timeline(run_dir)


def check_fork_target(run_dir, new_run_dir):
    """O que a linha de comando confere antes de qualquer bifurcação, em qualquer armazenamento: a
    pasta da nova linha precisa ser nova (ou vazia), e não a original nem uma pasta dentro dela
    (a da lição, fork_source, confere só os dois primeiros casos)."""
    target = Path(new_run_dir).resolve()
    source = Path(run_dir).resolve() if run_dir is not None else None  # None: uma execução só no banco
    if target == source:
        raise TimelineError("a bifurcação precisa de uma pasta nova, diferente da original")
    if source is not None and source in target.parents:
        raise TimelineError(f"{new_run_dir} fica dentro da pasta original; escolha uma pasta fora dela")
    if target.exists() and not target.is_dir():
        raise TimelineError(f"{new_run_dir} já existe e não é uma pasta; escolha uma pasta nova")
    if target.exists() and any(target.iterdir()):
        raise TimelineError(f"{new_run_dir} já existe e não está vazia; escolha uma pasta nova")


def inherited_receipts(effects, scene):
    """Os registros do livro-razão da original para as chamadas pendentes na cena copiada.

    São fatos do mundo compartilhado que a cena ainda não conta: a original pode ter mandado
    o e-mail depois deste ponto A. Os recibos de outras chamadas ficam na original.
    """
    pending = {call["id"] for call in scene["pending_tool_use"] or []}
    return {tool_use_id: record for tool_use_id, record in effects.items() if tool_use_id in pending}


def fork_from(run_dir, turn, new_run_dir, point=None):
    """Abre uma nova linha do tempo em ``new_run_dir`` a partir da cena do turno ``turn``.

    A nova linha tem identidade própria, registra a origem (parent), começa a própria
    sequência pelo ponto copiado (o último do turno, ou ``point``) e nasce em modo de
    dry-run, para que as duas linhas nunca dobrem um efeito no mundo. Nada é executado:
    chamadas pendentes do ponto copiado continuam pendentes e a nova linha as resolve
    quando continuar. O livro-razão dela começa só com os registros que a original tem
    dessas chamadas (``inherited_receipts``): um e-mail que a original já mandou é
    respondido com o recibo de verdade, não com "não foi executada". A pasta original
    só é lida: continua idêntica, byte a byte.
    """
    run_dir, new_run_dir = Path(run_dir), Path(new_run_dir)
    path, parent = fork_source(run_dir, turn, new_run_dir, point)
    source_point = parse_point_name(path.name)[1]
    state = scene_only(read_point(path))
    inherited = inherited_receipts(load_effects(run_dir / EFFECTS_FILE), state)

    new_run_dir.mkdir(parents=True, exist_ok=True)
    write_json_atomic(new_run_dir / EFFECTS_FILE, inherited)  # nada mais aconteceu nesta linha ainda
    info = {
        "timeline_id": new_timeline_id(),
        "parent": {"timeline_id": parent["timeline_id"], "turn": turn, "point": source_point},
        "dry_run": True,
        "created_at": utc_now(),
    }
    write_json_atomic(new_run_dir / TIMELINE_FILE, info)
    save_point(new_run_dir, state, source_point)
    save_checkpoint(state, new_run_dir / CHECKPOINT_FILE)
    return info


def forked_run(source, scene, point_id, timeline):
    """A cena v2 de uma bifurcação (lição 6): outra execução, com run_id próprio e a origem registrada.

    Leva da original o cenário e a exigência de aprovação, e a cena do ponto copiado. O status
    é o que a execução tinha naquele ponto: se ele é o último da original e o modelo já tinha
    encerrado ali (completed, refused), a nova linha também terminou; em qualquer outro caso
    a execução seguiu depois do ponto (um pause_turn, uma queda, uma aprovação à espera...),
    e a nova linha fica pausada, pronta para --resume. Todo armazenamento bifurca com ela.
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


# --- Continuar uma linha do tempo ---------------------------------------------------------

def run_timeline(client, run_dir, max_turns=MAX_TURNS, approver=None):
    """Continua a linha do tempo de ``run_dir`` gravando os pontos A e B de cada turno.

    As ferramentas passam por run_tool_uses (livro-razão, aprovação, execução,
    registro); numa linha em modo de dry-run as de alto impacto não tocam o mundo.
    Uma cena parada no ponto A (depois de uma queda ou de uma rebobinagem) começa pelas
    chamadas pendentes, pelo mesmo caminho. Com ``approver``, uma chamada que espera
    decisão deixa a linha em "waiting_for_approval", gravada, até a próxima execução.
    """
    run_dir = Path(run_dir)
    if not (run_dir / CHECKPOINT_FILE).exists():
        raise TimelineError(f"{run_dir.name} não tem {CHECKPOINT_FILE}: comece com start_timeline ou fork_from")
    state = read_point(run_dir / CHECKPOINT_FILE)
    if has_ended(state):
        return state
    context = ToolContext(effects_path=run_dir / EFFECTS_FILE, approver=approver,
                          dry_run=load_timeline(run_dir)["dry_run"])
    try:
        if state["pending_tool_use"]:
            close_pending(state, context)  # livro-razão e válvula, como numa retomada
            save_point(run_dir, state, "B")
            save_checkpoint(state, run_dir / CHECKPOINT_FILE)
        state["status"], state["pending_approval"] = "running", None
        while state["turns"] < max_turns:
            state["turns"] += 1
            response = call_model(client, state["messages"])
            tool_uses = take_response(state, response)
            state["pending_tool_use"] = tool_uses or None
            save_point(run_dir, state, "A")
            save_checkpoint(state, run_dir / CHECKPOINT_FILE)
            if tool_uses is None:
                break
            if tool_uses:
                results = run_tool_uses(tool_uses, context)
                state["messages"].append({"role": "user", "content": results})
                state["pending_tool_use"] = None
                save_point(run_dir, state, "B")
                save_checkpoint(state, run_dir / CHECKPOINT_FILE)
    except WaitingForApproval as waiting:
        state["status"], state["pending_approval"] = "waiting_for_approval", waiting.pending_approval
        save_checkpoint(state, run_dir / CHECKPOINT_FILE)
    return state


def timeline_frames(run_dir):
    """Um quadro por ponto gravado, na ordem da sequência: o que a linha do tempo mostra.

    Um ponto ilegível vira um quadro com ``error`` em vez de derrubar o visualizador.
    """
    frames = []
    for path in list_points(run_dir):
        turn, point = parse_point_name(path.name)
        frame = {"name": path.name, "turn": turn, "point": point, "error": None,
                 "tokens_used": None, "message_count": 0, "pending": [], "orphans": [], "messages": []}
        try:
            state = read_point(path)
        except CheckpointError as error:
            frame["error"] = str(error)
        else:
            messages = state["messages"]
            frame.update(
                tokens_used=state["tokens_used"],
                message_count=len(messages),
                pending=[f"{call['name']} ({call['id']})" for call in state["pending_tool_use"] or []],
                orphans=sorted(orphan_ids(messages)),
                messages=messages,
            )
        frames.append(frame)
    return frames
