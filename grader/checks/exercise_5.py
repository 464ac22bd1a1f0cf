"""Checks for exercise-5: rewind and fork over a per-turn checkpoint sequence.

Level 1 grades ``pick_latest_point(run_dir, turn=None)``, level 2 ``rewind_to(run_dir,
turn)``, level 3 ``fork_from(run_dir, turn, new_run_dir)``. Each fixture is a run folder
written out file by file (``grader/fixtures/exercise-5/*.json``):

    {
      "description": "...",
      "run_dir": {"checkpoints/turn-001-A.json": {...checkpoint...},   # JSON values are
                  "checkpoints/turn-002-B.json.tmp": "{\\"vers",        # dumped, strings are
                  "effects.json": {...}, "timeline.json": {...}},       # written as they are
      "mtimes": {"checkpoints/turn-001-A.json": 1900000500},            # optional
      "workspace": {"files": {...}, "outbox": [...], "tickets": [...]}, # the shared world
      "expect": {
        "latest": "turn-003-A.json" | null,
        "latest_by_turn": {"1": "turn-001-B.json", "4": null},
        "rewind": {"turn": 2, "point": "A"},                 # optional: level 2
        "rewind_missing_turn": 9,                            # optional: level 2
        "fork": {"turn": 1, "point": "B", "parent_timeline_id": "tl-..."}   # optional: level 3
      }
    }

What a rewind or a fork must produce is derived from the files (the chosen point, the
ledger's receipts), so an instructor adds a case by dropping a recorded run folder in.
"""
from __future__ import annotations

import copy
import json
import os
import re
import time
from datetime import datetime
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.checks.fixture_shape import checkpoint_problems, problem, required_text, unknown_keys, workspace_problems
from grader.checks.framework import (
    CheckFailed,
    Context,
    Exercise,
    Fixture,
    content_blocks,
    describe_error,
    nothing_observed,
    show,
)
from grader.core.plural import quantity

EXERCISE = Exercise("exercise-5")

POINT_NAME = re.compile(r"turn-(\d{3,})-([AB])\.json")
CHECKPOINTS = "checkpoints"
RUN_FOLDER = "run"
FORK_FOLDER = "bifurcacao"


# ----------------------------------------------------------------- fixture shape


def _point(name: Any) -> tuple[int, str] | None:
    match = POINT_NAME.fullmatch(name) if isinstance(name, str) else None
    return (int(match.group(1)), match.group(2)) if match else None


def active_point_name(relative: str) -> str | None:
    """``turn-NNN-P.json`` when ``relative`` (a path inside the run folder) is a point of the
    active sequence, that is, directly in checkpoints/; None otherwise."""
    folder, _, name = relative.partition("/")
    return name if folder == CHECKPOINTS and "/" not in name and _point(name) else None


def _safe_relative(path: str) -> bool:
    parts = path.split("/")
    return bool(path) and not path.startswith("/") and ".." not in parts and "" not in parts


@EXERCISE.fixture_validator
def validate_fixture(data: dict) -> list[str]:
    problems = unknown_keys(data, {"description", "run_dir", "mtimes", "workspace", "expect"})
    problems += required_text(data, "description", "description")
    problems += workspace_problems(data.get("workspace"))
    run_dir = data.get("run_dir")
    if not isinstance(run_dir, dict):
        return problems + [problem("run_dir", "obrigatório, deveria mapear caminho relativo -> conteúdo")]
    for path, value in run_dir.items():
        where = f"run_dir.{path}"
        if not _safe_relative(path):
            problems.append(problem(where, "o caminho precisa ser relativo e ficar dentro da pasta da execução"))
        if not isinstance(value, (dict, str)):
            problems.append(problem(where, "deveria ser um objeto JSON ou um texto (gravado como está)"))
        elif isinstance(value, dict) and (path == "checkpoint.json" or _point(path.rsplit("/", 1)[-1])):
            problems += checkpoint_problems(value, where)
    mtimes = data.get("mtimes", {})
    if not isinstance(mtimes, dict):
        problems.append(problem("mtimes", "deveria mapear caminho -> instante (segundos)"))
    else:
        for path, moment in mtimes.items():
            if path not in run_dir:
                problems.append(problem(f"mtimes.{path}", "não é um arquivo de run_dir"))
            if not isinstance(moment, (int, float)) or isinstance(moment, bool) or moment <= 0:
                problems.append(problem(f"mtimes.{path}", f"deveria ser um número positivo (é {moment!r})"))
    expect = data.get("expect")
    if not isinstance(expect, dict):
        return problems + [problem("expect", "obrigatório, deveria ser um objeto com latest e latest_by_turn")]
    problems += unknown_keys(expect, {"latest", "latest_by_turn", "rewind", "rewind_missing_turn", "fork"}, "expect")
    active = {name for name in map(active_point_name, run_dir) if name}

    def names_a_point(value: Any, where: str) -> None:
        if value is not None and value not in active:
            problems.append(problem(where, f"deveria ser null ou o nome de um ponto em {CHECKPOINTS}/ (é {value!r})"))

    if "latest" not in expect:
        problems.append(problem("expect.latest", "obrigatório (null quando não há ponto)"))
    names_a_point(expect.get("latest"), "expect.latest")
    by_turn = expect.get("latest_by_turn")
    if not isinstance(by_turn, dict) or not by_turn:
        problems.append(problem("expect.latest_by_turn", "obrigatório, deveria mapear turno (texto) -> nome do ponto ou null"))
    else:
        for turn, name in by_turn.items():
            if not turn.isdigit():
                problems.append(problem(f"expect.latest_by_turn.{turn}", "a chave deveria ser um número de turno"))
            names_a_point(name, f"expect.latest_by_turn.{turn}")
    for key in ("rewind", "fork"):
        if key not in expect:
            continue
        spec = expect[key]
        allowed = {"turn", "point"} | ({"parent_timeline_id"} if key == "fork" else set())
        if not isinstance(spec, dict):
            problems.append(problem(f"expect.{key}", "deveria ser um objeto com turn e point"))
            continue
        problems += unknown_keys(spec, allowed, f"expect.{key}")
        turn, point = spec.get("turn"), spec.get("point")
        if not isinstance(turn, int) or isinstance(turn, bool) or point not in ("A", "B"):
            problems.append(problem(f"expect.{key}", "turn deveria ser um inteiro e point, 'A' ou 'B'"))
        elif f"turn-{turn:03d}-{point}.json" not in active:
            problems.append(problem(f"expect.{key}", f"não há turn-{turn:03d}-{point}.json em {CHECKPOINTS}/"))
        if key == "fork" and not isinstance(spec.get("parent_timeline_id"), str):
            problems.append(problem("expect.fork.parent_timeline_id", "obrigatório, o timeline_id da linha original"))
    missing = expect.get("rewind_missing_turn")
    if missing is not None and (not isinstance(missing, int) or any(_point(n)[0] == missing for n in active)):
        problems.append(problem("expect.rewind_missing_turn", "deveria ser um turno sem nenhum ponto ativo"))
    return problems


# ----------------------------------------------------------------- the run folder


def write_run_dir(fixture_data: dict, run_dir: Path) -> Path:
    """Write a fixture's run folder: JSON values dumped like write_json_atomic, texts as they are."""
    run_dir.mkdir(parents=True, exist_ok=True)
    for relative, value in fixture_data["run_dir"].items():
        target = run_dir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1)
        target.write_text(text, encoding="utf-8")
    for relative, moment in (fixture_data.get("mtimes") or {}).items():
        os.utime(run_dir / relative, (moment, moment))
    return run_dir


def fixture_run_dir(name: str, root: str | os.PathLike) -> Path:
    """The run folder of fixture ``name``, written into a NEW folder under ``root`` on every
    call (to try your functions in the notebook: running a cell twice starts from scratch)."""
    import tempfile

    from grader.core.fixture_loader import read_fixture_files

    for item in read_fixture_files(EXERCISE.name, validate=EXERCISE.validate_fixture):
        if item.name == name:
            if item.problems or item.data is None:
                raise ValueError("; ".join(item.problems))
            Path(root).mkdir(parents=True, exist_ok=True)
            return write_run_dir(item.data, Path(tempfile.mkdtemp(prefix=f"{name}-", dir=root)))
    raise KeyError(f"não existe a fixture {name!r} do {EXERCISE.name}")


FOLDER = b"<pasta>"  # what a folder looks like in a snapshot


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file and folder under ``folder``: relative path -> bytes (folders end in "/"), so
    a folder created, or a file moved into one, shows up as a difference."""
    if not folder.is_dir():
        return {}
    found = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        if path.is_dir():
            found[relative + "/"] = FOLDER
        elif path.is_file():
            found[relative] = path.read_bytes()
    return found


def files_of(found: dict[str, bytes]) -> dict[str, bytes]:
    return {path: data for path, data in found.items() if not path.endswith("/")}


def differences(before: dict[str, bytes], after: dict[str, bytes]) -> str:
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
    parts = []
    new_files = [a for a in added if not a.endswith("/")]
    new_folders = [a for a in added if a.endswith("/")]
    if new_files:
        parts.append("criou " + ", ".join(new_files))
    if new_folders:
        parts.append(("criou a pasta " if len(new_folders) == 1 else "criou as pastas ") + ", ".join(new_folders))
    if removed:
        parts.append("apagou ou moveu " + ", ".join(removed))
    if changed:
        parts.append("alterou " + ", ".join(changed))
    return "; ".join(parts)


def world_snapshot(workspace: Any) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (workspace.outbox_path, workspace.tickets_path) if p.exists()}


def active_points(run_dir: Path) -> list[str]:
    folder = run_dir / CHECKPOINTS
    if not folder.is_dir():
        return []
    names = [p.name for p in folder.iterdir() if p.is_file() and _point(p.name)]
    return sorted(names, key=_point)


def point_file(fixture: Fixture, turn: int, point: str) -> dict:
    return copy.deepcopy(fixture.data["run_dir"][f"{CHECKPOINTS}/turn-{turn:03d}-{point}.json"])


# ----------------------------------------------------------------- level 1


def point_name_of(value: Any, run_dir: Path, label: str) -> str | None:
    """The point a returned value names, as ``turn-NNN-P.json``; None for None."""
    if value is None:
        return None
    if isinstance(value, dict):
        raise CheckFailed(
            f"{label} devolveu o conteúdo de um checkpoint (um dict); devolva o caminho do arquivo "
            "(um Path), para quem chamou decidir se quer lê-lo.",
            expected="um Path dentro de checkpoints/", observed=show(value, 120),
        )
    if not isinstance(value, (str, os.PathLike)):
        raise CheckFailed(
            f"{label} devolveu {type(value).__name__}; devolva o caminho do ponto (um Path) ou None.",
            expected="um Path ou None", observed=show(value, 120),
        )
    path = Path(value)
    if not path.is_absolute() and path.parent == Path("."):
        raise CheckFailed(
            f"{label} devolveu só o nome {path.name!r}; devolva o caminho completo "
            "(run_dir / \"checkpoints\" / nome), que dá para abrir de qualquer pasta.",
            expected="um caminho dentro de run_dir/checkpoints", observed=str(value),
        )
    if not path.is_absolute():
        path = Path.cwd() / path
    folder = (run_dir / CHECKPOINTS).resolve()
    if path.resolve().parent != folder:
        where = path.resolve().parent.name
        if where.startswith("rewound"):
            raise CheckFailed(
                f"{label} devolveu {where}/{path.name}, um ponto guardado por uma rebobinagem anterior: "
                "a pasta rewound-NNN/ fica FORA da sequência ativa. Procure só os arquivos que estão "
                "diretamente em checkpoints/ (sem descer em subpastas).",
                expected="um ponto diretamente em checkpoints/", observed=f"{where}/{path.name}",
            )
        raise CheckFailed(
            f"{label} devolveu {str(value)!r}, que não está em run_dir/checkpoints/.",
            expected="um ponto diretamente em checkpoints/", observed=str(value),
        )
    return path.name


def diagnose_latest(fixture: Fixture, turn: int | None, expected: str | None, got: str | None) -> str:
    asked = "da execução" if turn is None else f"do turno {turn}"
    if got is None:
        return f"Devolveu None, mas o último ponto {asked} existe: {expected}."
    if got.endswith(".tmp"):
        return (
            f"Escolheu {got}, um arquivo temporário que sobrou de uma gravação interrompida. Um .tmp "
            "nunca é um ponto: a gravação ou terminou (e ele virou o .json) ou foi cortada no meio. "
            "Aceite só nomes que casam exatamente com turn-NNN-A.json / turn-NNN-B.json."
        )
    parsed = _point(got)
    if parsed is None:
        return f"Escolheu {got}, que não é um ponto da sequência (nomes turn-NNN-A.json / turn-NNN-B.json)."
    if expected is None:
        return f"Não há nenhum ponto {asked}: a resposta certa é None, e veio {got}."
    want = _point(expected)
    if turn is not None and parsed[0] != turn:
        return (
            f"Pedi o turno {turn} e veio {got}, do turno {parsed[0]}: o argumento turn restringe a "
            "busca aos pontos daquele turno."
        )
    if parsed[0] == want[0] and parsed[1] == "A" and want[1] == "B":
        return (
            f"Escolheu {got}, mas o turno também tem {expected}: o ponto B é gravado depois do A "
            "(a decisão vem antes do resultado), então B é o mais recente."
        )
    mtimes = fixture.data.get("mtimes") or {}
    if mtimes:
        newest = max(mtimes, key=mtimes.get).rsplit("/", 1)[-1]
        if got == newest:
            return (
                f"Escolheu {got}, o arquivo com a data de modificação mais nova. Datas de modificação "
                "mudam com um backup restaurado ou uma cópia; a ordem está no nome (turno, depois A/B)."
            )
    return f"O último ponto {asked} é {expected}, mas veio {got}."


def check_latest(ctx: Context, fixture: Fixture, turns: list[int | None]) -> None:
    pick_latest_point = ctx.student_function("pick_latest_point")
    expect = fixture.expect
    with ctx.tools(fixture, "pick") as spy:
        run_dir = write_run_dir(fixture.data, spy.workspace.root / RUN_FOLDER)
        before = snapshot(run_dir)
        for turn in turns:
            expected = expect["latest"] if turn is None else expect["latest_by_turn"][str(turn)]
            value = ctx.call(pick_latest_point, run_dir) if turn is None else ctx.call(pick_latest_point, run_dir, turn)
            got = point_name_of(value, run_dir, "pick_latest_point")
            if got != expected and got is not None and (run_dir / CHECKPOINTS / got).is_dir():
                raise CheckFailed(
                    f"Escolheu {got}, mas em checkpoints/ isso é uma pasta, não um arquivo: um nome que casa "
                    "com turn-NNN-A.json não basta, um ponto é um arquivo gravado (confira path.is_file()).",
                    expected=expected, observed=f"{got}/ (uma pasta)",
                )
            if got != expected:
                raise CheckFailed(diagnose_latest(fixture, turn, expected, got), expected=expected, observed=got)
        changed = differences(before, snapshot(run_dir))
        if changed:
            raise CheckFailed(
                f"pick_latest_point mexeu na pasta da execução ({changed}): ela só procura.",
                expected="pasta intacta", observed=changed,
            )
        if spy.calls:
            raise CheckFailed("pick_latest_point executou ferramentas: ela só procura arquivos.",
                              expected="nenhuma ferramenta", observed=", ".join(c.name for c in spy.calls))


@EXERCISE.check(
    level=1,
    per_fixture=True,
    title="O último ponto da execução",
    criterion=(
        "pick_latest_point(run_dir) devolve o caminho do último ponto gravado da sequência ativa "
        "(ordem: turno, depois A antes de B), ou None sem sequência; ignora .tmp, outros nomes, "
        "subpastas e pastas com nome de ponto, e não depende da data de modificação dos arquivos."
    ),
)
def latest_of_the_run(ctx: Context, fixture: Fixture) -> None:
    check_latest(ctx, fixture, [None])


@EXERCISE.check(
    level=1,
    per_fixture=True,
    title="O último ponto de cada turno",
    criterion=(
        "pick_latest_point(run_dir, turn) devolve o ponto B do turno quando ele existe, senão o A, "
        "e None para um turno sem pontos."
    ),
)
def latest_of_each_turn(ctx: Context, fixture: Fixture) -> None:
    check_latest(ctx, fixture, [int(turn) for turn in fixture.expect["latest_by_turn"]])


# ----------------------------------------------------------------- level 2


@dataclass
class Rewound:
    turn: int
    point: str
    source: dict          # the chosen point as the fixture recorded it
    returned: Any
    before: dict[str, bytes]
    after: dict[str, bytes]
    checkpoint_json: Any
    active_after: list[str]
    calls: list = field(default_factory=list)
    world_changed: str = ""


def rewound(ctx: Context, fixture: Fixture) -> Rewound:
    def run() -> Rewound:
        rewind_to = ctx.student_function("rewind_to")
        spec = fixture.expect["rewind"]
        with ctx.tools(fixture, "rewind") as spy:
            run_dir = write_run_dir(fixture.data, spy.workspace.root / RUN_FOLDER)
            before, world_before = snapshot(run_dir), world_snapshot(spy.workspace)
            returned = ctx.call(rewind_to, run_dir, spec["turn"])
            after = snapshot(run_dir)
            world_changed = differences(world_before, world_snapshot(spy.workspace))
            calls = list(spy.calls)
        try:
            checkpoint_json = json.loads(after.get("checkpoint.json", b"null"))
        except ValueError:
            checkpoint_json = "<ilegível>"
        source = point_file(fixture, spec["turn"], spec["point"])
        return Rewound(spec["turn"], spec["point"], source, copy.deepcopy(returned), before, after,
                       checkpoint_json, active_points(run_dir), calls, world_changed)

    return ctx.memo(f"rewind:{fixture.name}", run)


def returned_scene(run: Rewound) -> dict:
    value = run.returned
    if value is None:
        raise CheckFailed("rewind_to devolveu None: devolva a cena (o dict do estado) a que a linha voltou.",
                          expected="a cena do turno", observed=None)
    if not isinstance(value, dict) or not isinstance(value.get("messages"), list):
        raise CheckFailed("rewind_to deveria devolver a cena (um dict com messages, turns...).",
                          expected="a cena do turno", observed=show(value, 160))
    return value


def has_rewind(fixture: Fixture) -> bool:
    return "rewind" in fixture.expect


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=has_rewind,
    title="Volta à cena do último ponto do turno",
    criterion=(
        "rewind_to(run_dir, turn) devolve a cena gravada no último ponto do turno (B quando existe), "
        "com turns e tokens_used daquele ponto e todo o histórico até ali, sem nada a mais."
    ),
)
def scene_of_the_turn(ctx: Context, fixture: Fixture) -> None:
    run = rewound(ctx, fixture)
    scene = returned_scene(run)
    source = run.source
    for key in ("turns", "tokens_used", "task"):
        if scene.get(key) != source[key]:
            hint = ""
            if key == "turns" and isinstance(scene.get(key), int) and scene[key] != run.turn:
                hint = f" A cena devolvida é de outro turno (turns={scene[key]}): procure os pontos do turno {run.turn}."
            raise CheckFailed(
                f"{key} da cena devolvida é {show(scene.get(key), 60)}, mas no último ponto do turno "
                f"{run.turn} (turn-{run.turn:03d}-{run.point}.json) é {show(source[key], 60)}.{hint}",
                expected=source[key], observed=scene.get(key),
            )
    messages, recorded = scene["messages"], source["messages"]
    if messages[: len(recorded)] != recorded:
        shorter = len(messages) < len(recorded)
        raise CheckFailed(
            f"As mensagens não são as de turn-{run.turn:03d}-{run.point}.json"
            + (": faltam mensagens. Voltou ao ponto A, que é anterior ao B do mesmo turno?" if shorter else "."),
            expected=f"{len(recorded)} mensagens gravadas no ponto", observed=f"{len(messages)} mensagens",
        )
    extra = len(messages) - len(recorded)
    if extra > 0:
        raise CheckFailed(
            f"A cena devolvida tem {quantity(extra, 'mensagem', 'mensagens')} a mais do que o ponto gravado: rebobinar não "
            "acrescenta nada, nem os tool_result das chamadas que ficaram abertas (quem os produz é a "
            "próxima execução, pelo livro-razão e pela válvula).",
            expected=f"{len(recorded)} mensagens", observed=f"{len(messages)} mensagens",
        )


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=has_rewind,
    title="Rebobinar não executa nada; chamadas abertas continuam pendentes",
    criterion=(
        "rewind_to não executa nenhuma ferramenta e não mexe no livro-razão nem no mundo. Num turno que "
        "só tem o ponto A, as chamadas abertas continuam em pending_tool_use, exatamente como foram "
        "gravadas, e nenhum ponto novo é gravado: quem as resolve é a próxima execução, pelo livro-razão "
        "e pela válvula de aprovação, como depois de uma queda."
    ),
)
def rewind_runs_nothing(ctx: Context, fixture: Fixture) -> None:
    run = rewound(ctx, fixture)
    scene = returned_scene(run)
    if run.calls or run.world_changed:
        names = ", ".join(sorted({c.name for c in run.calls})) or "uma ferramenta"
        world = f" e mudou o mundo ({run.world_changed})" if run.world_changed else ""
        raise CheckFailed(
            f"A rebobinagem executou {names}{world}. Rebobinar só move estado: uma chamada aberta fica "
            "pendente, e a próxima execução a resolve pelo livro-razão e pela válvula de aprovação (que "
            "pode perguntar a uma pessoa antes de um e-mail sair).",
            expected="nenhuma ferramenta executada", observed=run.world_changed or names,
        )
    for name in ("effects.json", "approvals.json"):
        if run.before.get(name) != run.after.get(name):
            raise CheckFailed(
                f"A rebobinagem alterou {name}. Ela não grava intenções, recibos nem decisões: o livro-razão "
                "e as aprovações só mudam quando uma ferramenta passa de fato por eles.",
                expected=f"{name} intacto", observed="alterado" if name in run.after else "apagado ou criado",
            )
    pending = run.source["pending_tool_use"]
    if scene.get("pending_tool_use") != pending:
        closed = pending and not scene.get("pending_tool_use")
        raise CheckFailed(
            ("As chamadas abertas do ponto A foram fechadas na rebobinagem. Deixe-as pendentes: fechar "
             "é decidir o que fazer com cada uma (reaproveitar um recibo, rodar de novo, pedir aprovação), "
             "e isso é trabalho da próxima execução." if closed else
             f"pending_tool_use da cena devolvida não é o do ponto turn-{run.turn:03d}-{run.point}.json."),
            expected=pending, observed=scene.get("pending_tool_use"),
        )
    created = sorted(set(filter(None, map(active_point_name, run.after))) - set(filter(None, map(active_point_name, run.before))))
    if created:
        raise CheckFailed(
            f"A rebobinagem gravou {', '.join(created)} na sequência: um ponto que nenhuma execução "
            "gravou. Rebobinar só escolhe um ponto que já existe.",
            expected="nenhum ponto novo", observed=created,
        )


def has_later_points(fixture: Fixture) -> bool:
    """A rewind fixture whose active sequence has points after the turn it rewinds to."""
    if not has_rewind(fixture):
        return False
    turn = fixture.expect["rewind"]["turn"]
    return any(_point(name)[0] > turn for name in map(active_point_name, fixture.data["run_dir"]) if name)


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=has_later_points,
    title="Os pontos posteriores saem da sequência ativa, sem serem apagados",
    criterion=(
        "Depois de rebobinar para o turno T, nenhum ponto de turno maior que T fica diretamente em "
        "checkpoints/ (eles vão para uma subpasta, como rewound-001/, com os mesmos bytes), e os "
        "pontos até T continuam lá, intactos."
    ),
)
def later_points_set_aside(ctx: Context, fixture: Fixture) -> None:
    run = rewound(ctx, fixture)
    returned_scene(run)
    later = [n for n in run.active_after if _point(n)[0] > run.turn]
    if later:
        raise CheckFailed(
            f"Depois de rebobinar para o turno {run.turn}, a sequência ativa ainda tem {', '.join(later)}. "
            "Se eles ficarem, pick_latest_point vai devolver um ponto de uma história abandonada. "
            "Mova-os para uma subpasta (set_aside_points_after faz isso).",
            expected=f"nenhum ponto depois do turno {run.turn}", observed=later,
        )
    before_points = {k: v for k, v in run.before.items() if active_point_name(k)}
    kept_bytes = list(run.after.values())
    for relative, data in before_points.items():
        turn, point = _point(active_point_name(relative))
        if turn > run.turn:
            if data not in kept_bytes:
                raise CheckFailed(
                    f"{relative} sumiu: a rebobinagem tira os pontos posteriores da sequência ativa, mas "
                    "não apaga a história (guarde-os numa subpasta, como rewound-001/).",
                    expected=f"{relative} guardado numa subpasta", observed="apagado",
                )
        elif run.after.get(relative) != data:
            raise CheckFailed(
                f"{relative} (até o turno {run.turn}) foi apagado ou alterado: os pontos anteriores ficam como estão.",
                expected="intacto", observed="alterado" if relative in run.after else "apagado",
            )


TORN_AFTER_CHARACTERS = 200


def readable_json(data: bytes) -> bool:
    try:
        json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return False
    return True


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=has_rewind,
    title="Uma queda no meio da rebobinagem não deixa arquivo pela metade",
    criterion=(
        "Se o processo morre no meio de uma escrita da rebobinagem (o corretor faz a escrita parar depois "
        "de alguns bytes), todo arquivo .json da pasta da execução continua inteiro e legível: o "
        "checkpoint.json e os pontos são gravados com troca atômica."
    ),
)
def rewind_survives_a_torn_write(ctx: Context, fixture: Fixture) -> None:
    from grader.checks.write_spies import observed_writes

    rewind_to = ctx.student_function("rewind_to")
    with ctx.tools(fixture, "rewind-torn") as spy:
        run_dir = write_run_dir(fixture.data, spy.workspace.root / RUN_FOLDER)
        before = files_of(snapshot(run_dir))
        with observed_writes(ctx, crash_after=TORN_AFTER_CHARACTERS) as budget:
            ctx.call_or_problem(rewind_to, run_dir, fixture.expect["rewind"]["turn"])
        after = files_of(snapshot(run_dir))
    if not budget["crashed"]:
        raise nothing_observed(
            "rewind_to não escreveu nenhum arquivo por open() (nem pelas funções do harness), então a queda no "
            "meio da escrita não pôde ser simulada", expected="a cena gravada em checkpoint.json")
    torn = sorted(path for path, data in after.items() if path.endswith(".json") and not readable_json(data)
                  and (path not in before or readable_json(before[path])))
    if torn:
        raise CheckFailed(
            f"O processo morreu no meio de uma escrita da rebobinagem e {', '.join(torn)} ficou pela metade: "
            "a próxima retomada não consegue ler a execução. Grave com as funções do harness (save_checkpoint, "
            "save_point), que escrevem num temporário e só então trocam pelo arquivo verdadeiro.",
            expected="todo .json inteiro e legível", observed=f"{', '.join(torn)} pela metade",
        )


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=has_rewind,
    title="A cena vira o checkpoint.json",
    criterion="Depois de rebobinar, checkpoint.json guarda exatamente a cena devolvida: é dali que o loop continua.",
)
def checkpoint_json_is_the_scene(ctx: Context, fixture: Fixture) -> None:
    run = rewound(ctx, fixture)
    scene = returned_scene(run)
    if run.checkpoint_json != scene:
        turns = run.checkpoint_json.get("turns") if isinstance(run.checkpoint_json, dict) else run.checkpoint_json
        raise CheckFailed(
            f"checkpoint.json não é a cena devolvida (lá, turns={show(turns, 40)}): grave a cena com "
            "save_checkpoint(cena, run_dir / CHECKPOINT_FILE), senão a próxima retomada continua da "
            "história abandonada.",
            expected=f"a cena do turno {run.turn}", observed=f"turns={show(turns, 40)}",
        )


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=lambda fixture: "rewind_missing_turn" in fixture.expect,
    title="Um turno sem pontos é um erro claro, e nada muda",
    criterion="rewind_to para um turno sem nenhum ponto levanta TimelineError e não mexe em nenhum arquivo.",
)
def unknown_turn_is_refused(ctx: Context, fixture: Fixture) -> None:
    from harness.timeline import TimelineError

    rewind_to = ctx.student_function("rewind_to")
    turn = fixture.expect["rewind_missing_turn"]
    with ctx.tools(fixture, "rewind-missing") as spy:
        run_dir = write_run_dir(fixture.data, spy.workspace.root / RUN_FOLDER)
        before = snapshot(run_dir)
        returned, error = ctx.call_catching(rewind_to, run_dir, turn)
        changed = differences(before, snapshot(run_dir))
    if error is None:
        raise CheckFailed(
            f"rewind_to(run_dir, {turn}) devolveu {show(returned, 80)}, mas o turno {turn} não tem nenhum "
            "ponto: levante TimelineError dizendo qual turno falta.",
            expected="TimelineError", observed=show(returned, 80),
        )
    if not isinstance(error, TimelineError):
        raise CheckFailed(
            f"rewind_to(run_dir, {turn}) levantou {describe_error(error)}. Um turno sem pontos "
            "merece um erro que explique isso (TimelineError), não um erro qualquer de Python.",
            expected="TimelineError", observed=type(error).__name__,
        )
    if changed:
        raise CheckFailed(f"O pedido impossível mexeu na pasta ({changed}): recuse antes de mudar qualquer coisa.",
                          expected="pasta intacta", observed=changed)


# ----------------------------------------------------------------- level 3


@dataclass
class Forked:
    turn: int
    point: str
    source: dict
    returned: Any
    original_before: dict[str, bytes]
    original_after_fork: dict[str, bytes]
    original_after_run: dict[str, bytes]
    world_changed_by_fork: str
    world_changed_by_run: str
    fork_files: dict[str, bytes]
    fork_points: list[str]
    fork_calls: list
    continuation_problem: str = ""
    continuation_sent: bool = False  # the new line reached its send_email decision and answered it
    called_between: tuple[float, float] = (0.0, 0.0)  # when fork_from was called and when it returned (UTC seconds)


CONTINUATION_SEND = "toolu_05FORK"


def continuation_script(state: dict) -> list[dict]:
    """The new line's next decision: a send_email with a fresh id, then the end."""
    usage = {"input_tokens": 10, "output_tokens": 5}
    filler = {"content": [{"type": "text", "text": "."}], "stop_reason": "end_turn", "usage": usage}
    assistants = sum(1 for m in state["messages"] if m.get("role") == "assistant")
    send = {
        "content": [{"type": "tool_use", "id": CONTINUATION_SEND, "name": "send_email",
                     "input": {"to": "team@example.com", "subject": "Conclusões (linha bifurcada)"}}],
        "stop_reason": "tool_use", "usage": usage,
    }
    done = {"content": [{"type": "text", "text": "Pronto."}], "stop_reason": "end_turn", "usage": usage}
    return [filler] * assistants + [send, done]


def forked(ctx: Context, fixture: Fixture) -> Forked:
    def run() -> Forked:
        from harness.fake_endpoint import make_stub_client
        from harness.timeline import read_point, run_timeline

        fork_from = ctx.student_function("fork_from")
        spec = fixture.expect["fork"]
        with ctx.tools(fixture, "fork") as spy:
            run_dir = write_run_dir(fixture.data, spy.workspace.root / RUN_FOLDER)
            new_dir = spy.workspace.root / FORK_FOLDER
            original_before, world_before = snapshot(run_dir), world_snapshot(spy.workspace)
            called_at = time.time()
            returned = ctx.call(fork_from, run_dir, spec["turn"], new_dir)
            returned_at = time.time()
            original_after_fork = snapshot(run_dir)
            world_after_fork = world_snapshot(spy.workspace)
            fork_files, fork_points, fork_calls = snapshot(new_dir), active_points(new_dir), list(spy.calls)
            problem_text, sent = "", False
            try:
                state = read_point(new_dir / "checkpoint.json")
                final = run_timeline(make_stub_client(continuation_script(state)), new_dir)
                sent = any(b.get("tool_use_id") == CONTINUATION_SEND for m in final["messages"]
                           for b in content_blocks(m, "tool_result"))
            except Exception as error:  # noqa: BLE001 - reported by the check that needs it
                problem_text = f"{describe_error(error)}"
            original_after_run = snapshot(run_dir)
            world_after_run = world_snapshot(spy.workspace)
        return Forked(
            spec["turn"], spec["point"], point_file(fixture, spec["turn"], spec["point"]), copy.deepcopy(returned),
            original_before, original_after_fork, original_after_run,
            differences(world_before, world_after_fork), differences(world_after_fork, world_after_run),
            fork_files, fork_points, fork_calls, problem_text, sent, (called_at, returned_at),
        )

    return ctx.memo(f"fork:{fixture.name}", run)


def has_fork(fixture: Fixture) -> bool:
    return "fork" in fixture.expect


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=has_fork,
    title="A linha original fica idêntica, byte a byte",
    criterion=(
        "fork_from só lê a pasta original: depois da bifurcação, e depois de a nova linha continuar, "
        "nenhum arquivo da original foi criado, alterado, movido ou apagado."
    ),
)
def original_untouched(ctx: Context, fixture: Fixture) -> None:
    run = forked(ctx, fixture)
    if not files_of(run.fork_files):
        raise nothing_observed(
            "fork_from não gravou nenhum arquivo em new_run_dir, então não houve bifurcação cujo efeito na "
            "pasta original conferir", expected="a nova linha gravada em new_run_dir")
    for moment, after in (("a bifurcação", run.original_after_fork), ("a nova linha continuar", run.original_after_run)):
        changed = differences(run.original_before, after)
        if changed:
            raise CheckFailed(
                f"Depois de {moment}, a pasta original mudou: {changed}. Tudo o que é da nova linha "
                "(timeline.json, pontos, livro-razão, checkpoint.json) vai para new_run_dir.",
                expected="pasta original intacta", observed=changed,
            )


def fork_timeline(run: Forked) -> dict:
    raw = run.fork_files.get("timeline.json")
    if raw is None:
        raise CheckFailed("new_run_dir não tem timeline.json: é ele que dá identidade à nova linha.",
                          expected="timeline.json em new_run_dir", observed=sorted(run.fork_files))
    try:
        info = json.loads(raw)
    except ValueError:
        raise CheckFailed("timeline.json da nova linha não é JSON válido.", expected="JSON", observed=raw[:80]) from None
    if not isinstance(info, dict):
        raise CheckFailed("timeline.json deveria ser um objeto.", expected="objeto", observed=show(info, 80))
    return info


CLOCK_SLACK = 2.0  # seconds: utc_now() drops the fraction, and the grading machine is busy


def creation_time_problem(created_at: Any, called_between: tuple[float, float]) -> str:
    """What is wrong with a fork's created_at ("" when it is utc_now() taken during the call)."""
    if created_at is None:
        return ("timeline.json da nova linha não tem created_at: grave \"created_at\": utc_now(), o instante "
                "da bifurcação em UTC. É por ele que se sabe quando cada linha nasceu, e em que ordem.")
    moment = None
    if isinstance(created_at, str):
        try:
            moment = datetime.fromisoformat(created_at)
        except ValueError:
            moment = None
    if moment is None or moment.tzinfo is None:
        return (f"created_at deveria ser um instante ISO 8601 com fuso (utc_now() dá "
                f"\"2026-11-20T14:03:11+00:00\"), mas é {created_at!r}.")
    start, end = called_between
    if not start - CLOCK_SLACK <= moment.timestamp() <= end + CLOCK_SLACK:
        return (f"created_at vale {created_at}, que não é o instante da bifurcação: a nova linha nasce quando "
                "fork_from roda (utc_now()), não quando a linha original nasceu.")
    return ""


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=has_fork,
    title="Identidade própria, origem registrada, dry-run ligado",
    criterion=(
        "timeline.json da nova linha tem um timeline_id novo, parent = {timeline_id da original, turn, "
        "point do ponto copiado}, dry_run true e created_at (utc_now(), o instante da bifurcação); "
        "fork_from devolve esse mesmo conteúdo."
    ),
)
def identity_and_parent(ctx: Context, fixture: Fixture) -> None:
    run = forked(ctx, fixture)
    info = fork_timeline(run)
    spec = fixture.expect["fork"]
    parent_id = spec["parent_timeline_id"]
    timeline_id = info.get("timeline_id")
    if not isinstance(timeline_id, str) or not timeline_id.strip():
        raise CheckFailed("timeline.json precisa de um timeline_id (texto) novo: use new_timeline_id().",
                          expected="um id novo", observed=timeline_id)
    if timeline_id == parent_id:
        raise CheckFailed(
            f"A nova linha tem o mesmo timeline_id da original ({parent_id}): copiar a pasta copia a "
            "identidade junto, e aí nada distingue uma linha da outra. Gere um id novo.",
            expected=f"um id diferente de {parent_id}", observed=timeline_id,
        )
    expected_parent = {"timeline_id": parent_id, "turn": spec["turn"], "point": spec["point"]}
    if info.get("parent") != expected_parent:
        raise CheckFailed(
            "parent deveria registrar de onde a linha veio: o timeline_id da original (de "
            "load_timeline(run_dir); \"principal\" quando a original não tem timeline.json), o turno e "
            "o ponto copiado.",
            expected=expected_parent, observed=info.get("parent"),
        )
    if info.get("dry_run") is not True:
        raise CheckFailed(
            "dry_run deveria ser true: duas linhas compartilham o mesmo mundo, e sem dry-run a nova "
            "linha repete os efeitos de alto impacto da original.",
            expected=True, observed=info.get("dry_run"),
        )
    created_at_problem = creation_time_problem(info.get("created_at"), run.called_between)
    if created_at_problem:
        raise CheckFailed(created_at_problem, expected="utc_now() no instante da bifurcação",
                          observed=info.get("created_at", "<ausente>"))
    if run.returned != info:
        raise CheckFailed("fork_from deveria devolver o conteúdo de timeline.json da nova linha.",
                          expected=info, observed=show(run.returned, 200))


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=has_fork,
    title="Sequência própria e livro-razão em branco",
    criterion=(
        "A sequência da nova linha começa com um único ponto, a cópia do ponto escolhido, com as "
        "chamadas abertas dele ainda pendentes; checkpoint.json é essa cena; o livro-razão da nova "
        "linha (effects.json) é gravado, em branco; e a bifurcação não executa nenhuma ferramenta."
    ),
)
def own_sequence_and_blank_ledger(ctx: Context, fixture: Fixture) -> None:
    run = forked(ctx, fixture)
    if run.fork_calls:
        names = ", ".join(sorted({c.name for c in run.fork_calls}))
        raise CheckFailed(
            f"A bifurcação executou {names}. Ela só copia estado: as chamadas abertas do ponto copiado "
            "seguem pendentes, e a nova linha as resolve, em dry-run, quando continuar.",
            expected="nenhuma ferramenta executada", observed=names,
        )
    expected_name = f"turn-{run.turn:03d}-{run.point}.json"
    if run.fork_points != [expected_name]:
        copied_all = len(run.fork_points) > 1
        raise CheckFailed(
            f"A sequência da nova linha deveria começar só com {expected_name}"
            + (": parece que a sequência inteira da original foi copiada. A nova linha tem a própria "
               "história, que começa no ponto da bifurcação." if copied_all else "."),
            expected=[expected_name], observed=run.fork_points,
        )
    scene = json.loads(run.fork_files[f"{CHECKPOINTS}/{expected_name}"])
    recorded = run.source["messages"]
    if not isinstance(scene, dict) or scene.get("messages", [])[: len(recorded)] != recorded \
            or scene.get("turns") != run.source["turns"]:
        raise CheckFailed(f"{expected_name} da nova linha não é a cena de turn-{run.turn:03d}-{run.point}.json da original.",
                          expected=f"turns={run.source['turns']}, {len(recorded)} mensagens",
                          observed=f"turns={scene.get('turns')}, {len(scene.get('messages', []))} mensagens")
    if scene.get("pending_tool_use") != run.source["pending_tool_use"] or len(scene["messages"]) != len(recorded):
        raise CheckFailed(
            "As chamadas abertas do ponto copiado deveriam seguir pendentes na nova linha: fechá-las na "
            "bifurcação é decidir por ela. A nova linha as resolve, em dry-run, quando continuar.",
            expected=run.source["pending_tool_use"], observed=scene.get("pending_tool_use"),
        )
    raw = run.fork_files.get("checkpoint.json")
    if raw is None or json.loads(raw) != scene:
        raise CheckFailed("checkpoint.json da nova linha deveria ser a cena do ponto copiado: é dali que ela continua.",
                          expected=expected_name, observed="ausente" if raw is None else "outra cena")
    ledger_raw = run.fork_files.get("effects.json")
    if ledger_raw is None:
        raise CheckFailed(
            "new_run_dir não tem effects.json: o livro-razão em branco também é gravado "
            "(write_json_atomic(new_run_dir / EFFECTS_FILE, {})). Uma pasta com checkpoint e sem livro-razão "
            "parece, para a retomada do harness, uma execução de antes do livro-razão (lições 2 e 3), e as "
            "chamadas abertas seriam fechadas sem ele.",
            expected="effects.json com {}", observed=sorted(files_of(run.fork_files)),
        )
    try:
        ledger = json.loads(ledger_raw)
    except ValueError:
        raise CheckFailed("effects.json da nova linha não é JSON válido.", expected={},
                          observed=ledger_raw[:80]) from None
    if ledger_raw is not None and ledger_raw == run.original_before.get("effects.json") and ledger:
        raise CheckFailed(
            "O livro-razão da original foi copiado para a nova linha. Os recibos de lá são fatos da "
            "outra linha; a nova começa com o livro-razão em branco.",
            expected={}, observed=sorted(ledger),
        )
    if ledger != {}:
        raise CheckFailed("O livro-razão da nova linha deveria começar em branco ({}).",
                          expected={}, observed=sorted(ledger) if isinstance(ledger, dict) else ledger)


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=has_fork,
    title="Em dry-run, a nova linha não toca o mundo",
    criterion=(
        "Quando a nova linha continua e decide mandar um e-mail, a caixa de saída e os chamados "
        "ficam idênticos, byte a byte: o dry-run simula as ferramentas de alto impacto."
    ),
)
def dry_run_keeps_the_world(ctx: Context, fixture: Fixture) -> None:
    run = forked(ctx, fixture)
    if run.world_changed_by_fork:
        raise CheckFailed(f"A própria bifurcação mudou o mundo ({run.world_changed_by_fork}).",
                          expected="mundo intacto", observed=run.world_changed_by_fork)
    if run.continuation_problem:
        raise CheckFailed(
            "Não deu para continuar a nova linha com o loop da lição (run_timeline): "
            f"{run.continuation_problem}. Ela precisa de checkpoint.json e timeline.json em new_run_dir.",
            expected="a nova linha continua", observed=run.continuation_problem,
        )
    if not run.continuation_sent and not run.world_changed_by_run:
        raise nothing_observed(
            "a nova linha continuou, mas não chegou a responder à decisão de mandar o e-mail, então não deu "
            "para ver o dry-run em ação (o checkpoint.json da nova linha é a cena do ponto copiado?)",
            expected="o send_email da nova linha respondido em dry-run")
    if run.world_changed_by_run:
        raise CheckFailed(
            f"A nova linha continuou, decidiu mandar um e-mail, e o mundo mudou ({run.world_changed_by_run}). "
            "Sem dry-run, as duas linhas dobram o efeito: grave dry_run true em timeline.json.",
            expected="caixa de saída intacta", observed=run.world_changed_by_run,
        )


__all__ = ["EXERCISE", "fixture_run_dir", "write_run_dir"]
