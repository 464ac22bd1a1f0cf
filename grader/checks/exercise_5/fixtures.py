"""Exercise 5 and its fixtures: a recorded run folder written out file by file, its shape as ``grade fixtures`` checks it, and ``fixture_run_dir`` for the notebook."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from grader.checks.fixture_shape import (
    checkpoint_problems,
    problem,
    required_text,
    unknown_keys,
    workspace_problems,
)
from grader.checks.framework import Exercise


EXERCISE = Exercise("exercise-5")


POINT_NAME = re.compile(r"turn-(\d{3,})-([AB])\.json")


CHECKPOINTS = "checkpoints"


RUN_FOLDER = "run"


FORK_FOLDER = "bifurcacao"


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


FIXTURE_SCHEMAS: tuple[dict, ...] = ()  # its own fields are checked by hand below; the shared ones by schema


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
