"""Exercise 5 and its fixtures: a recorded run folder written out file by file, its shape as ``grade fixtures`` checks it, and ``fixture_run_dir`` for the notebook."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from grader.checks.fixture_shape import (
    CHECKPOINT_SCHEMA,
    COUNT,
    TEXT,
    WORKSPACE_SCHEMA,
    checkpoint_problems,
    closed,
    holds,
    intact,
    path_problems,
    problem,
    refused,
    workspace_problems,
    worded,
)
from grader.core.schema_errors import all_failures, shown
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


# A file holding a checkpoint: checkpoint.json, or a point turn-NNN-A.json / -B.json anywhere.
CHECKPOINT_FILE = r"^checkpoint\.json$|(^|/)turn-[0-9]{3,}-[AB]\.json$"
NAME_OR_NULL = {"type": ["string", "null"]}
LATEST_MTIME = 4102444800  # 2100-01-01 UTC: later instants overflow the checks' datetime arithmetic
FILE = {"type": ["object", "string"], "x-mensagens": {"*": "deveria ser um objeto JSON ou um texto (gravado como está)"}}


def point_schema(*extra: str) -> dict:
    """``{tool, turn, point}``: the tool whose first decision is undone or forked at, and the point
    that undoing (the point before the decision) or forking (the decision's point A) lands on,
    with ``extra`` texts required."""
    return closed(["tool", "turn", "point", *extra], {
        "tool": TEXT,
        "turn": COUNT,
        "point": {"enum": ["A", "B"]},
        **{key: {**TEXT, "x-mensagens": {"required": "obrigatório, o timeline_id da linha original"}} for key in extra},
    }, messages={"type": "deveria ser um objeto com " + ", ".join(("tool", "turn", "point", *extra))})


# Level 4: what finish_rewind must leave: the point and the folder of rewind.json, a refusal, or null.
FINISH_SCHEMA = {
    "oneOf": [
        {"type": "null"},
        closed(["to", "folder"], {"to": TEXT, "folder": TEXT}),
        closed(["refused"], {"refused": {"const": True}}),
    ],
    "x-mensagens": {"oneOf": "deveria ser null, {to, folder} ou {refused: true}"},
}


# A recorded run folder, file by file, and what each level's functions find in it.
FIXTURE_SCHEMA = closed(["description", "run_dir", "expect"], {
    "description": TEXT,
    "run_dir": {
        "type": "object",
        "patternProperties": {
            CHECKPOINT_FILE: {**FILE, "if": {"type": "object"}, "then": CHECKPOINT_SCHEMA},
        },
        "additionalProperties": FILE,
        "x-mensagens": {"type": "obrigatório, deveria mapear caminho relativo -> conteúdo"},
    },
    "mtimes": {"type": "object", "additionalProperties": {
        "type": "number", "exclusiveMinimum": 0, "maximum": LATEST_MTIME,
        "x-mensagens": {"maximum": f"deveria ser um instante em segundos até {LATEST_MTIME} (o ano 2100) (é {{value!r}})"}},
               "x-mensagens": {"type": "deveria mapear caminho -> instante (segundos)"}},
    "workspace": WORKSPACE_SCHEMA,
    "expect": closed(["latest", "latest_by_turn"], {
        "latest": {**NAME_OR_NULL, "x-mensagens": {"required": "obrigatório (null quando não há ponto)"}},
        "latest_by_turn": {
            "type": "object",
            "minProperties": 1,
            "patternProperties": {r"[^0-9]|^$|^0.": refused(
                "a chave deveria ser um número de turno (0, 1, 2, ..., sem zeros à esquerda)")},
            "additionalProperties": NAME_OR_NULL,
            "x-mensagens": {k: "obrigatório, deveria mapear turno (texto) -> nome do ponto ou null"
                            for k in ("type", "required", "minProperties")},
        },
        "undo": point_schema(),
        "undo_missing_tool": TEXT,
        "fork": point_schema("parent_timeline_id"),
        "finish": FINISH_SCHEMA,
    }, messages={"type": "obrigatório, deveria ser um objeto com latest e latest_by_turn"}),
})
FIXTURE_SCHEMAS = (FIXTURE_SCHEMA,)


@EXERCISE.fixture_validator
def validate_fixture(data: dict) -> list[str]:
    """The shape (FIXTURE_SCHEMA), then what a schema cannot say, on every part the shape
    left readable (all problems at once): each checkpoint's pending calls, mtimes naming
    files of run_dir, and the points expect names existing in checkpoints/."""
    failures = all_failures(FIXTURE_SCHEMA, data)
    problems = worded(failures) + workspace_problems(data)
    if not holds(failures, "run_dir"):
        return problems
    run_dir, expect = data["run_dir"], data.get("expect")
    problems += path_problems(list(run_dir), _run_dir_field, INSIDE_RUN_DIR)
    for path, value in run_dir.items():
        if isinstance(value, dict) and _is_checkpoint_file(path) and intact(failures, "run_dir", path):
            problems += checkpoint_problems(value, f"run_dir.{path}")
    if holds(failures, "mtimes"):
        problems += [problem(f"mtimes.{path}", "não é um arquivo de run_dir") for path in data.get("mtimes") or {}
                     if path not in run_dir]
    if not holds(failures, "expect"):
        return problems
    active = {name for name in map(active_point_name, run_dir) if name}
    named = [("latest", expect.get("latest"))] if intact(failures, "expect", "latest") else []
    if holds(failures, "expect", "latest_by_turn"):
        named += [(f"latest_by_turn.{turn}", name) for turn, name in expect["latest_by_turn"].items()
                  if intact(failures, "expect", "latest_by_turn", turn)]
    problems += [problem(f"expect.{where}", f"deveria ser null ou o nome de um ponto em {CHECKPOINTS}/ (é {name!r})")
                 for where, name in named if name is not None and name not in active]
    for key in ("undo", "fork"):
        spec = expect.get(key) if intact(failures, "expect", key) else None
        if spec is not None and f"turn-{spec['turn']:03d}-{spec['point']}.json" not in active:
            problems.append(problem(f"expect.{key}", f"não há turn-{spec['turn']:03d}-{spec['point']}.json em {CHECKPOINTS}/"))
    finish = expect.get("finish") if intact(failures, "expect", "finish") else None
    if isinstance(finish, dict) and "to" in finish and finish["to"] not in active:
        problems.append(problem("expect.finish.to", f"deveria ser um ponto em {CHECKPOINTS}/ (é {finish['to']!r})"))
    return problems


INSIDE_RUN_DIR = "o caminho precisa ser relativo e ficar dentro da pasta da execução"


def _run_dir_field(path: str) -> str:
    """``run_dir.<path>``, the path quoted short when it would not print as it is."""
    return f"run_dir.{path if path.isprintable() and path == shown(path)[1:-1] else shown(path)}"


def _is_checkpoint_file(path: str) -> bool:
    return path == "checkpoint.json" or _point(path.rsplit("/", 1)[-1]) is not None


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


STEPS = "steps"
STEP_PHASES = {"A": "pre", "B": "post"}


def step_name(name: str) -> str:
    """The support agent's name for a point: ``turn-002-B.json`` -> ``step-2-post.json`` (and the
    same with a ``.tmp`` or any other suffix kept); other names stay as they are."""
    match = re.match(r"turn-(\d{3,})-([AB])\.json", name)
    if match is None:
        return name
    return f"step-{int(match.group(1))}-{STEP_PHASES[match.group(2)]}.json" + name[match.end():]


def step_relative(relative: str) -> str:
    """A path of a run folder as the support agent keeps it: checkpoints/ becomes steps/, and each
    name that is a point's becomes a step's (a folder named like a point too)."""
    parts = relative.split("/")
    if parts[0] != CHECKPOINTS:
        return relative
    return "/".join([STEPS, *map(step_name, parts[1:])])


def write_steps_dir(fixture_data: dict, run_dir: Path) -> Path:
    """A fixture's run folder written with the support agent's names (level 1)."""
    data = {
        **fixture_data,
        "run_dir": {step_relative(path): value for path, value in fixture_data["run_dir"].items()},
        "mtimes": {step_relative(path): moment for path, moment in (fixture_data.get("mtimes") or {}).items()},
    }
    return write_run_dir(data, run_dir)


def _fixture_data(name: str) -> dict:
    from grader.core.fixture_loader import read_fixture_files

    for item in read_fixture_files(EXERCISE.name, validate=EXERCISE.validate_fixture):
        if item.name == name:
            if item.problems or item.data is None:
                raise ValueError("; ".join(item.problems))
            return item.data
    raise KeyError(f"não existe a fixture {name!r} do {EXERCISE.name}")


def fixture_steps_dir(name: str, root: str | os.PathLike) -> Path:
    """The run folder of fixture ``name`` as the support agent records it (``steps/step-2-post.json``),
    written into a NEW folder under ``root`` on every call."""
    import tempfile

    data = _fixture_data(name)
    Path(root).mkdir(parents=True, exist_ok=True)
    return write_steps_dir(data, Path(tempfile.mkdtemp(prefix=f"{name}-passos-", dir=root)))


def fixture_run_dir(name: str, root: str | os.PathLike) -> Path:
    """The run folder of fixture ``name``, written into a NEW folder under ``root`` on every
    call (to try your functions in the notebook: running a cell twice starts from scratch)."""
    import tempfile

    data = _fixture_data(name)
    Path(root).mkdir(parents=True, exist_ok=True)
    return write_run_dir(data, Path(tempfile.mkdtemp(prefix=f"{name}-", dir=root)))
