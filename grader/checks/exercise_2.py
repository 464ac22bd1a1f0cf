"""Checks for exercise-2: writing and reading checkpoint.json, and the save points A and B.

Level 1 grades ``save_checkpoint(state, path)`` by observation: the file it leaves, the
folder around it, spies on ``os.replace`` / ``os.rename`` / ``os.fsync``, and two crashes
in the middle of a write (every file opened for writing stops accepting bytes after a
few hundred characters; and a state that ``json`` cannot serialize past its middle).

Level 2 runs ``load_checkpoint(path)`` on every ``load`` fixture; level 3 runs the
student's ``run_agent(client, state, checkpoint_path, max_turns=...)`` on every ``run``
fixture with ``save_checkpoint`` swapped for a spy that records each saved state.

Fixture shapes (``grader/fixtures/exercise-2/*.json``)::

    {"description": "...", "kind": "load",
     "file": {"absent": true} | {"json": <any>} | {"text": "...", "drop_last_bytes": 1},
     "expect": {"load_checkpoint": "None" | "checkpoint" | "CheckpointError",
                "mentions": ["2", "1"]}}          # texts the error message must contain

    {"description": "...", "kind": "run", "task": "...", "workspace": {"files": {...}},
     "responses": [<compact scripted responses>], "max_turns": 5,   # optional
     "expect": {"saves": 5}}                        # 2 per tool turn, 1 for the final turn
"""
from __future__ import annotations

import copy
import json
import os
import stat
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from grader.checks.fixture_shape import is_count, problem, required_text, scripted_run_problems, unknown_keys
from grader.checks.write_spies import observed_writes, replaced_globals
from grader.checks.framework import (
    CheckFailed,
    Context,
    Exercise,
    Fixture,
    StudentProblem,
    describe_error,
    is_kind,
    nothing_observed,
    response_tokens,
    show,
)
from grader.core.plural import quantity

EXERCISE = Exercise("exercise-2")

CHECKPOINT_NAME = "checkpoint.json"
LOAD_OUTCOMES = ("None", "checkpoint", "CheckpointError")
CRASH_AFTER_CHARACTERS = 300


# ----------------------------------------------------------------- fixture shape


def scripted_turns(data: dict) -> list[dict]:
    """The responses a correct loop receives from this script: up to the first one that does
    not ask for tools, and never more than max_turns."""
    limit = data.get("max_turns", len(data["responses"]))
    turns = []
    for response in data["responses"][:limit]:
        turns.append(response)
        if response.get("stop_reason") != "tool_use":
            break
    return turns


def expected_saves(data: dict) -> int:
    """Points A and B in every turn with tools, only A in the final turn."""
    return sum(2 if response.get("stop_reason") == "tool_use" else 1 for response in scripted_turns(data))


def has_tool_turns(fixture: Fixture) -> bool:
    return is_kind("run")(fixture) and any(r.get("stop_reason") == "tool_use" for r in scripted_turns(fixture.data))


@EXERCISE.fixture_validator
def validate_fixture(data: dict) -> list[str]:
    kind = data.get("kind")
    if kind == "load":
        return validate_load_fixture(data)
    if kind == "run":
        return validate_run_fixture(data)
    return [problem("kind", f"deveria ser \"load\" ou \"run\" (é {kind!r})")]


def validate_load_fixture(data: dict) -> list[str]:
    problems = unknown_keys(data, {"description", "kind", "file", "expect"})
    problems += required_text(data, "description", "description")
    spec = data.get("file")
    if not isinstance(spec, dict) or not ({"absent", "json", "text"} & set(spec)):
        problems.append(problem("file", "obrigatório: {\"absent\": true}, {\"json\": ...} ou {\"text\": \"...\"}"))
    else:
        problems += unknown_keys(spec, {"absent", "json", "text", "drop_last_bytes"}, "file")
        if "text" in spec and not isinstance(spec["text"], str):
            problems.append(problem("file.text", "deveria ser um texto"))
        if "drop_last_bytes" in spec and not is_count(spec["drop_last_bytes"]):
            problems.append(problem("file.drop_last_bytes", "deveria ser um inteiro >= 0"))
    expect = data.get("expect")
    if not isinstance(expect, dict) or expect.get("load_checkpoint") not in LOAD_OUTCOMES:
        return problems + [problem("expect.load_checkpoint", f"obrigatório, um de {', '.join(LOAD_OUTCOMES)}")]
    problems += unknown_keys(expect, {"load_checkpoint", "mentions"}, "expect")
    mentions = expect.get("mentions", [])
    if not isinstance(mentions, list) or not all(isinstance(m, str) and m for m in mentions):
        problems.append(problem("expect.mentions", "deveria ser uma lista de textos"))
    if expect["load_checkpoint"] == "checkpoint" and not (isinstance(spec, dict) and isinstance(spec.get("json"), dict)):
        problems.append(problem("file", "um checkpoint válido se descreve com {\"json\": {...}}"))
    if expect["load_checkpoint"] == "None" and not (isinstance(spec, dict) and spec.get("absent") is True):
        problems.append(problem("expect.load_checkpoint", "None só quando o arquivo não existe (file.absent)"))
    return problems


def validate_run_fixture(data: dict) -> list[str]:
    problems = scripted_run_problems(data)
    if problems:
        return problems
    expect = data.get("expect")
    saves = expected_saves(data)
    if not isinstance(expect, dict) or expect.get("saves") != saves:
        got = expect.get("saves") if isinstance(expect, dict) else expect
        problems.append(problem("expect.saves", f"pelo roteiro, um loop correto grava {quantity(saves, 'vez', 'vezes')} (está {got!r})"))
    return problems


# ----------------------------------------------------------------- level 1: the state and the spies


def state_to_save(label: str, turns: int) -> dict:
    """A run state big enough (~100 KB) that writing it takes many write() calls."""
    messages: list[dict] = [{"role": "user", "content": f"Tarefa {label}: resumir as atas do trimestre."}]
    for number in range(1, 61):
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Turno {number}: decisões e pendências da reunião, com ação e prazo. " * 12},
        ]})
        messages.append({"role": "user", "content": f"Continue a partir da ata {number}. " * 20})
    return {"version": 1, "task": f"Tarefa {label}", "turns": turns, "tokens_used": 950 * turns,
            "messages": messages, "pending_tool_use": None}


@dataclass
class SaveRun:
    folder: Path
    path: Path
    state: dict
    events: list[tuple] = field(default_factory=list)
    files_after: list[str] = field(default_factory=list)
    written: Any = None  # the parsed checkpoint, or the reason it could not be parsed
    opened: list[Path] = field(default_factory=list)  # files the second save opened for writing

    def temporaries(self) -> list[str]:
        """Names of the files, other than the checkpoint, that the second save wrote or moved."""
        moved = [Path(event[1]).resolve() for event in self.events if event[0] in ("replace", "rename")]
        target = self.path.resolve()
        return sorted({path.name for path in self.opened + moved if path != target})


@contextmanager
def os_spies(ctx: Context, events: list) -> Iterator[None]:
    """Record os.replace / os.rename / os.fsync calls (then do them for real), wherever the
    student's code reaches them: the ``os`` module and any global bound to the real function."""
    real = {"replace": os.replace, "rename": os.rename, "fsync": os.fsync}

    def replace(src, dst, *args, **kwargs):
        events.append(("replace", os.fspath(src), os.fspath(dst)))
        return real["replace"](src, dst, *args, **kwargs)

    def rename(src, dst, *args, **kwargs):
        events.append(("rename", os.fspath(src), os.fspath(dst)))
        return real["rename"](src, dst, *args, **kwargs)

    def fsync(descriptor):
        number = descriptor if isinstance(descriptor, int) else descriptor.fileno()
        info = os.fstat(number)
        kind = "folder" if stat.S_ISDIR(info.st_mode) else "file"
        events.append(("fsync", kind, info.st_ino, info.st_size))
        return real["fsync"](descriptor)

    spies = {"replace": replace, "rename": rename, "fsync": fsync}
    bound = [(key, spies[name]) for name, function in real.items() for key in ctx.names_bound_to(function)]
    for name, spy in spies.items():
        setattr(os, name, spy)
    try:
        with replaced_globals(ctx, bound):
            yield
    finally:
        for name, function in real.items():
            setattr(os, name, function)


def read_checkpoint_file(path: Path) -> Any:
    """The parsed file, or a string saying why it is not a readable JSON object."""
    if not path.exists():
        return "o arquivo não existe"
    data = path.read_bytes()
    if not data.strip():
        return f"o arquivo está vazio ({len(data)} bytes)"
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        return f"o arquivo tem {len(data)} bytes e não é JSON completo ({error})"


def save_run(ctx: Context) -> SaveRun:
    """The student's save_checkpoint, called twice on a fresh folder with os spies (memoized)."""

    def compute() -> SaveRun:
        save = ctx.student_function("save_checkpoint")
        folder = ctx.fresh_dir("save")
        path = folder / CHECKPOINT_NAME
        first, second = state_to_save("primeira", 3), state_to_save("segunda", 4)
        run = SaveRun(folder, path, second)
        ctx.call(save, copy.deepcopy(first), path)
        with os_spies(ctx, run.events), observed_writes(ctx) as writes:
            ctx.call(save, copy.deepcopy(second), path)
        run.opened = list(writes["opened"])
        run.files_after = sorted(p.name for p in folder.iterdir())
        run.written = read_checkpoint_file(path)
        return run

    return ctx.memo("save_run", compute)


@EXERCISE.check(
    level=1,
    title="save_checkpoint grava o estado inteiro em JSON",
    criterion="Depois de save_checkpoint(state, path), o arquivo em path é JSON e, lido de volta, é igual ao estado.",
)
def writes_the_state(ctx: Context) -> None:
    run = save_run(ctx)
    if isinstance(run.written, str):
        raise CheckFailed(
            f"Depois de uma gravação bem-sucedida, {run.written}.",
            expected="o estado gravado em JSON", observed=run.written,
        )
    if run.written != run.state:
        raise CheckFailed(
            "O arquivo gravado, lido com json.loads, não é igual ao estado passado a save_checkpoint.",
            expected=f"turns={run.state['turns']}, {len(run.state['messages'])} mensagens",
            observed=show(run.written, 200),
        )


@EXERCISE.check(
    level=1,
    title="Nenhum arquivo temporário sobra",
    criterion=(
        "A gravação passa por um arquivo temporário e, depois de uma gravação bem-sucedida, a pasta do "
        "checkpoint contém só o checkpoint.json."
    ),
)
def no_temporary_left(ctx: Context) -> None:
    run = save_run(ctx)
    if not run.temporaries():
        raise nothing_observed(
            "save_checkpoint não escreveu nenhum arquivo temporário (só o próprio checkpoint.json), "
            "então não há temporário cujo destino conferir. Escreva primeiro num temporário na mesma "
            "pasta (path + \".tmp\") e troque-o pelo checkpoint com os.replace",
            expected="um temporário escrito e trocado pelo checkpoint",
        )
    extra = [name for name in run.files_after if name != CHECKPOINT_NAME]
    if extra:
        raise CheckFailed(
            f"Sobrou {', '.join(extra)} na pasta depois da gravação: o temporário precisa virar o "
            "checkpoint (os.replace), não ser copiado para ele.",
            expected=[CHECKPOINT_NAME], observed=run.files_after,
        )


@EXERCISE.check(
    level=1,
    title="Arquivo temporário na mesma pasta, trocado com os.replace",
    criterion=(
        "A versão nova é escrita num arquivo temporário na mesma pasta do checkpoint e trocada pelo "
        "verdadeiro com os.replace (atômico no mesmo sistema de arquivos)."
    ),
)
def replaced_in_the_same_folder(ctx: Context) -> None:
    run = save_run(ctx)
    replaces = [event for event in run.events if event[0] == "replace"]
    renames = [event for event in run.events if event[0] == "rename"]
    if not replaces:
        if renames:
            raise CheckFailed(
                "A troca foi feita com os.rename: no Windows ele falha quando o destino já existe. Use "
                "os.replace, que substitui o destino de forma atômica em qualquer sistema.",
                expected="os.replace(temporário, path)", observed=f"os.rename{renames[0][1:]}",
            )
        raise CheckFailed(
            "save_checkpoint não chamou os.replace: sem a troca atômica, alguma hora quem lê o "
            "checkpoint o encontra pela metade (a gravação é feita no próprio arquivo?).",
            expected="os.replace(temporário, path)", observed="nenhuma chamada a os.replace",
        )
    target = [event for event in replaces if Path(event[2]).resolve() == run.path.resolve()]
    if not target:
        raise CheckFailed(
            f"os.replace foi chamado, mas nunca com o checkpoint como destino ({run.path.name}).",
            expected=f"os.replace(temporário, .../{run.path.name})", observed=[e[1:] for e in replaces],
        )
    source = Path(target[-1][1]).resolve()
    if source.parent != run.path.parent.resolve():
        raise CheckFailed(
            f"O arquivo temporário ficou em outra pasta ({source.parent}): os.replace só é atômico "
            "dentro de um mesmo sistema de arquivos, então o temporário fica ao lado do checkpoint.",
            expected=str(run.path.parent.resolve()), observed=str(source.parent),
        )


@EXERCISE.check(
    level=1,
    title="fsync do arquivo antes da troca e da pasta depois",
    criterion=(
        "os.fsync é chamado no arquivo temporário já completo (depois do flush) antes do os.replace, "
        "e num descritor da pasta depois dele: assim a gravação sobrevive também a uma queda de energia."
    ),
)
def fsyncs_file_and_folder(ctx: Context) -> None:
    run = save_run(ctx)
    if not run.path.exists():
        raise CheckFailed("Não há checkpoint depois da gravação.", expected=CHECKPOINT_NAME, observed="nada")
    final = os.stat(run.path)
    folder = os.stat(run.folder)
    replace_at = next((i for i, e in enumerate(run.events) if e[0] in ("replace", "rename")), None)
    file_syncs = [(i, e) for i, e in enumerate(run.events) if e[0] == "fsync" and e[1] == "file" and e[2] == final.st_ino]
    folder_syncs = [(i, e) for i, e in enumerate(run.events) if e[0] == "fsync" and e[1] == "folder" and e[2] == folder.st_ino]
    if not file_syncs:
        raise CheckFailed(
            "Nenhum os.fsync no arquivo que virou o checkpoint: sem ele, os bytes podem estar só no cache "
            "do sistema quando a energia cai, e o checkpoint volta vazio. Chame f.flush() e "
            "os.fsync(f.fileno()) antes de fechar o temporário.",
            expected="os.fsync(<temporário>)", observed=[e for e in run.events if e[0] == "fsync"] or "nenhum fsync",
        )
    index, (_, _, _, size) = file_syncs[-1]
    if size < final.st_size:
        raise CheckFailed(
            f"O fsync aconteceu quando o arquivo tinha {size} de {final.st_size} bytes: faltou f.flush() "
            "antes do os.fsync, e o resto ainda estava no buffer do Python.",
            expected=f"{final.st_size} bytes no fsync", observed=f"{size} bytes",
        )
    if replace_at is not None and index > replace_at:
        raise CheckFailed(
            "O fsync do arquivo veio depois da troca: a ordem é escrever, flush, fsync e só então os.replace.",
            expected="fsync antes de os.replace", observed="fsync depois de os.replace",
        )
    if not folder_syncs:
        raise CheckFailed(
            "Faltou o fsync da pasta: a troca de nome é uma mudança na pasta, e só um fsync num "
            "descritor dela (os.open(pasta, os.O_RDONLY)) garante que a troca chegou ao disco.",
            expected="os.fsync(<pasta>) depois do os.replace", observed="nenhum fsync da pasta",
        )
    if replace_at is not None and folder_syncs[-1][0] < replace_at:
        raise CheckFailed(
            "O fsync da pasta veio antes do os.replace: nesse momento a troca ainda não tinha acontecido.",
            expected="fsync da pasta depois de os.replace", observed="fsync da pasta antes",
        )


def last_good_checkpoint(ctx: Context, label: str) -> tuple[Path, dict]:
    """A folder holding a good checkpoint written by the reference harness (not by the student)."""
    from grader.checks.reference import write_json_atomic

    folder = ctx.fresh_dir(label)
    path = folder / CHECKPOINT_NAME
    good = state_to_save("anterior", 5)
    write_json_atomic(path, good)
    return path, good


def torn_checkpoint(found: Any) -> CheckFailed:
    """The failure for a save that, dying midway, did not leave the last good checkpoint whole
    (``found`` is what is there now: the parsed file, or why it could not be read)."""
    return CheckFailed(
        f"Depois da falha, {found}: o último checkpoint bom foi destruído. É o que acontece ao "
        "sobrescrever no lugar (open(path, \"w\") esvazia o arquivo antes de escrever). Escreva num "
        "temporário e só troque pelo verdadeiro quando ele estiver completo.",
        expected="o checkpoint anterior, inteiro",
        observed=found if isinstance(found, str) else show(found, 160),
    )


@EXERCISE.check(
    level=1,
    title="Uma queda no meio da escrita deixa o último checkpoint bom",
    criterion=(
        "Se a gravação morre no meio (o corretor faz a escrita parar depois de alguns bytes), o "
        "arquivo em path continua sendo o último checkpoint bom, inteiro e legível."
    ),
)
def survives_a_crash_mid_write(ctx: Context) -> None:
    save = ctx.student_function("save_checkpoint")
    path, good = last_good_checkpoint(ctx, "crash")
    with observed_writes(ctx, crash_after=CRASH_AFTER_CHARACTERS) as budget:
        try:
            ctx.call(save, state_to_save("nova", 6), path)
        except StudentProblem as raised:
            if not budget["crashed"]:
                raise
    if not budget["crashed"]:
        raise CheckFailed(
            "A gravação terminou sem escrever nada por open() (ou Path.write_text), então o corretor não "
            "conseguiu simular a queda. Escreva o JSON com open(temporário, \"w\").",
            expected="uma escrita com open()", observed="nenhuma",
        )
    found = read_checkpoint_file(path)
    if found != good:
        raise torn_checkpoint(found)


class NotSerializable:
    def __repr__(self) -> str:
        return "<objeto que o json não sabe gravar>"


@EXERCISE.check(
    level=1,
    title="Um erro no meio do json.dump também não estraga o checkpoint",
    criterion=(
        "Se a serialização falha no meio (um valor que o json não sabe gravar no fim da conversa), "
        "o checkpoint anterior continua inteiro e legível."
    ),
)
def survives_a_serialization_error(ctx: Context) -> None:
    save = ctx.student_function("save_checkpoint")
    path, good = last_good_checkpoint(ctx, "serialization")
    broken = state_to_save("nova", 6)
    broken["messages"].append({"role": "user", "content": NotSerializable()})
    with observed_writes(ctx) as writes:
        _, raised = ctx.call_or_problem(save, broken, path)  # raising is fine: what counts is the file left behind
    if raised is None and not writes["opened"]:
        raise nothing_observed(
            "save_checkpoint recebeu um estado que o json não sabe gravar, não levantou erro e não abriu "
            "nenhum arquivo para escrever: ela nem tentou gravar",
            expected="uma tentativa de gravação (que falha no json.dump)",
        )
    found = read_checkpoint_file(path)
    if isinstance(found, str) or not isinstance(found, dict) or found.get("version") != 1:
        raise torn_checkpoint(found)


# ----------------------------------------------------------------- level 2: load_checkpoint


def write_fixture_file(path: Path, spec: dict) -> None:
    if spec.get("absent"):
        return
    if "json" in spec:
        data = json.dumps(spec["json"], ensure_ascii=False, indent=1).encode("utf-8")
    else:
        data = spec["text"].encode("utf-8")
    cut = spec.get("drop_last_bytes", 0)
    path.write_bytes(data[: len(data) - cut] if cut else data)


def student_checkpoint_errors(ctx: Context) -> tuple[type, ...]:
    from harness.checkpoint import CheckpointError as HarnessError

    try:
        theirs = ctx.student_function("CheckpointError")
    except StudentProblem:
        theirs = None
    if isinstance(theirs, type) and issubclass(theirs, BaseException):
        return (theirs, HarnessError)
    return (HarnessError,)


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=is_kind("load"),
    title="load_checkpoint: None só quando não há arquivo; fora isso, checkpoint ou erro claro",
    criterion=(
        "Devolve None somente quando o arquivo não existe; devolve o checkpoint quando ele é válido; "
        "levanta CheckpointError com uma mensagem que nomeia o problema para arquivo vazio, JSON "
        "truncado, bytes cortados, valor que não é objeto, outra version (citando as duas), campo "
        "obrigatório ausente e campo com tipo errado."
    ),
)
def loads_as_expected(ctx: Context, fixture: Fixture) -> None:
    load = ctx.student_function("load_checkpoint")
    errors = student_checkpoint_errors(ctx)
    folder = ctx.fresh_dir(f"load-{fixture.name}") / "checkpoints"
    folder.mkdir()
    path = folder / CHECKPOINT_NAME
    write_fixture_file(path, fixture.data["file"])

    def attempt():
        try:
            return ("value", load(path))
        except NotImplementedError:
            raise
        except errors as error:
            return ("CheckpointError", str(error))
        except Exception as error:  # noqa: BLE001 - the type is the finding
            return ("other", f"{describe_error(error)}")

    attempt.__name__ = "load_checkpoint"
    kind, value = ctx.call(attempt)
    expected = fixture.expect["load_checkpoint"]
    what = fixture.description
    if expected == "None":
        if kind != "value" or value is not None:
            raise CheckFailed(
                f"Sem arquivo nenhum ({what}), load_checkpoint deveria devolver None (é o começo normal "
                f"de uma tarefa), mas {'levantou ' + value if kind != 'value' else 'devolveu ' + show(value, 120)}.",
                expected="None", observed=value,
            )
        return
    if expected == "checkpoint":
        wanted = fixture.data["file"]["json"]
        if kind != "value" or value != wanted:
            detail = "levantou " + value if kind != "value" else "devolveu " + show(value, 120)
            raise CheckFailed(
                f"O checkpoint é válido ({what}), e load_checkpoint {detail}.",
                expected="o checkpoint lido", observed=value,
            )
        return
    if kind == "value":
        if value is None:
            raise CheckFailed(
                f"load_checkpoint devolveu None para um arquivo que existe ({what}). None quer dizer "
                "\"não há checkpoint\", e o harness recomeçaria do zero, repetindo tudo o que já foi feito. "
                "Levante CheckpointError dizendo o problema.",
                expected="CheckpointError", observed="None",
            )
        raise CheckFailed(
            f"load_checkpoint aceitou um checkpoint que não presta ({what}) e devolveu {show(value, 120)}.",
            expected="CheckpointError", observed=value,
        )
    if kind == "other":
        raise CheckFailed(
            f"Para {what}, load_checkpoint levantou {value}. Quem chama só deveria precisar tratar "
            "CheckpointError: converta esse erro num CheckpointError com uma mensagem clara.",
            expected="CheckpointError", observed=value,
        )
    message = value.replace(str(path), "").replace(CHECKPOINT_NAME, "")
    missing = [text for text in fixture.expect.get("mentions", []) if text not in message]
    if not message.strip(" :") or missing:
        wanted = " e ".join(repr(t) for t in fixture.expect.get("mentions", [])) or "o problema"
        raise CheckFailed(
            f"O CheckpointError para {what} precisa dizer qual é o problema; a mensagem deveria citar {wanted}.",
            expected=f"uma mensagem que cite {wanted}", observed=value or "<mensagem vazia>",
        )


# ----------------------------------------------------------------- level 3: save points A and B


@dataclass
class SavePoint:
    state: dict
    tools_run: int  # tool executions that had happened when this save was made


@dataclass
class CheckpointedRun:
    saves: list[SavePoint]
    state: Any
    path: Path
    problem: StudentProblem | None = None


def checkpointed_run(ctx: Context, fixture: Fixture) -> CheckpointedRun:
    """The student's run_agent on this fixture with save_checkpoint spied on (memoized)."""

    def compute() -> CheckpointedRun:
        from grader.checks.reference import make_stub_client, new_run_state, write_json_atomic

        run_agent = ctx.student_function("run_agent")
        folder = ctx.fresh_dir(f"run-{fixture.name}")
        path = folder / CHECKPOINT_NAME
        client = make_stub_client(fixture.data["responses"])
        options = {"max_turns": fixture.data["max_turns"]} if "max_turns" in fixture.data else {}
        saves: list[SavePoint] = []
        with ctx.tools(fixture, "run_agent") as tools:

            def save_checkpoint(state, checkpoint_path):
                """The grader's spy: records a copy of each saved state, then saves for real."""
                saves.append(SavePoint(copy.deepcopy(state), len(tools.calls)))
                write_json_atomic(checkpoint_path, state)

            with ctx.replaced_global("save_checkpoint", save_checkpoint):
                state, problem_found = ctx.call_or_problem(
                    run_agent, client, new_run_state(fixture.data["task"]), path, **options
                )
        return CheckpointedRun(saves, state, path, problem_found)

    return ctx.memo(f"checkpointed:{fixture.name}", compute)


def point_of(save: SavePoint) -> str:
    messages = save.state.get("messages") or [{}]
    return "A" if isinstance(messages[-1], dict) and messages[-1].get("role") == "assistant" else "B"


def expected_points(fixture: Fixture) -> list[tuple[str, int]]:
    points = []
    for turn, response in enumerate(scripted_turns(fixture.data), start=1):
        points.append(("A", turn))
        if response.get("stop_reason") == "tool_use":
            points.append(("B", turn))
    return points


def tool_uses_of(response: dict) -> list[dict]:
    return [{"id": b["id"], "name": b["name"], "input": b["input"]}
            for b in response["content"] if b.get("type") == "tool_use"]


def find_save(run: CheckpointedRun, point: str, turn: int) -> SavePoint | None:
    for save in run.saves:
        if point_of(save) == point and save.state.get("turns") == turn:
            return save
    return None


def require_run(run: CheckpointedRun) -> None:
    if run.problem is not None:
        raise run.problem


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=is_kind("run"),
    title="Duas gravações por turno com ferramentas, uma no turno final",
    criterion="save_checkpoint é chamado duas vezes em cada turno com ferramentas (A e B) e uma vez no turno final (A).",
)
def saves_twice_per_tool_turn(ctx: Context, fixture: Fixture) -> None:
    run = checkpointed_run(ctx, fixture)
    require_run(run)
    wanted = expected_points(fixture)
    observed = [(point_of(save), save.state.get("turns")) for save in run.saves]
    if observed == wanted:
        return
    if not run.saves:
        message = "save_checkpoint nunca foi chamado: o loop precisa gravar o checkpoint nos pontos A e B."
    elif run.saves[0].state.get("turns") == 0:
        message = "A primeira gravação aconteceu antes do primeiro turno: os pontos são A (depois da resposta) e B (depois dos resultados)."
    elif len(observed) < len(wanted):
        message = (f"Houve {quantity(len(observed), 'gravação', 'gravações')}; um loop com os pontos A e B faz {len(wanted)} nesta "
                   "tarefa (A e B em cada turno com ferramentas, só A no final).")
    else:
        message = f"As gravações não seguem a sequência A, B, A, B, ..., A: houve {len(observed)}, esperava {len(wanted)}."
    raise CheckFailed(message, expected=[f"{p}{t}" for p, t in wanted], observed=[f"{p}{t}" for p, t in observed])


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=is_kind("run"),
    title="Ponto A: a decisão do modelo, com pending_tool_use preenchido",
    criterion=(
        "Em cada ponto A, a última mensagem gravada é a do assistente com seus tool_use, e "
        "pending_tool_use lista exatamente esses pedidos como {id, name, input} (None no turno final)."
    ),
)
def point_a_records_the_decision(ctx: Context, fixture: Fixture) -> None:
    run = checkpointed_run(ctx, fixture)
    require_run(run)
    for turn, response in enumerate(scripted_turns(fixture.data), start=1):
        save = find_save(run, "A", turn)
        if save is None:
            raise CheckFailed(
                f"Não há ponto A no turno {turn}: logo depois de acrescentar a resposta do modelo a messages "
                "(antes de executar qualquer ferramenta), grave o checkpoint.",
                expected=f"uma gravação com turns={turn} terminando na mensagem do assistente", observed="nenhuma",
            )
        last = save.state["messages"][-1]
        used = [b.get("id") for b in last.get("content", []) if isinstance(b, dict) and b.get("type") == "tool_use"]
        wanted_calls = tool_uses_of(response)
        if used != [c["id"] for c in wanted_calls]:
            raise CheckFailed(
                f"No ponto A do turno {turn}, a última mensagem não traz os tool_use da resposta do modelo.",
                expected=[c["id"] for c in wanted_calls], observed=used,
            )
        pending = save.state.get("pending_tool_use")
        wanted = wanted_calls or None
        if pending != wanted:
            if wanted and isinstance(pending, list) and len(pending) == len(wanted) and all(
                    isinstance(p, dict) and "type" in p for p in pending):
                detail = "guarde só {id, name, input} de cada pedido (tool_uses_in faz isso), não o bloco inteiro."
            elif wanted and isinstance(pending, list) and len(pending) < len(wanted):
                detail = f"o modelo pediu {len(wanted)} ferramentas neste turno; todas ficam pendentes."
            elif wanted is None:
                detail = "no turno final não há pedido nenhum: pending_tool_use é None."
            else:
                detail = "ele lista os tool_use da resposta que ainda não têm resultado."
            raise CheckFailed(
                f"No ponto A do turno {turn}, pending_tool_use está errado: {detail}",
                expected=wanted, observed=pending,
            )


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=is_kind("run"),
    title="Ponto A é gravado antes de qualquer ferramenta rodar",
    criterion="Quando o ponto A de um turno é gravado, nenhuma ferramenta desse turno foi executada ainda.",
)
def point_a_comes_before_the_tools(ctx: Context, fixture: Fixture) -> None:
    run = checkpointed_run(ctx, fixture)
    require_run(run)
    executed_before = 0
    for turn, response in enumerate(scripted_turns(fixture.data), start=1):
        save = find_save(run, "A", turn)
        if save is None:
            raise nothing_observed(
                f"não há ponto A gravado no turno {turn}, então não dá para saber se ele veio antes das "
                "ferramentas (grave o checkpoint logo depois de acrescentar a resposta do modelo)",
                expected=f"o ponto A do turno {turn}",
            )
        if save.tools_run != executed_before:
            raise CheckFailed(
                f"O ponto A do turno {turn} foi gravado quando "
                f"{quantity(save.tools_run - executed_before, 'ferramenta do turno já tinha rodado', 'ferramentas do turno já tinham rodado')}: "
                "se o processo morresse enquanto elas rodavam, o disco não saberia que o modelo as pediu. "
                "Grave A antes de executar.",
                expected=f"{executed_before} ferramentas executadas até o ponto A", observed=save.tools_run,
            )
        executed_before += len(tool_uses_of(response))


def tokens_after_each_turn(fixture: Fixture) -> list[int]:
    """tokens_used a correct loop holds at each point A: the usage of every response so far."""
    total, sums = 0, []
    for response in scripted_turns(fixture.data):
        total += response_tokens(response)
        sums.append(total)
    return sums


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=is_kind("run"),
    title="tokens_used soma o usage de cada resposta",
    criterion=(
        "Em cada ponto A, tokens_used já soma input_tokens + output_tokens de todas as respostas do "
        "modelo até a desse turno, inclusive (como no loop da lição 1)."
    ),
)
def tokens_used_adds_every_response(ctx: Context, fixture: Fixture) -> None:
    run = checkpointed_run(ctx, fixture)
    require_run(run)
    before = 0
    for turn, wanted in enumerate(tokens_after_each_turn(fixture), start=1):
        save = find_save(run, "A", turn)
        if save is None:
            raise nothing_observed(
                f"não há ponto A gravado no turno {turn}, então não dá para ver o tokens_used desse turno",
                expected=f"o ponto A do turno {turn} com tokens_used={wanted}",
            )
        used = save.state.get("tokens_used")
        if used != wanted:
            detail = ("a resposta deste turno não foi somada" if used == before else
                      "some input_tokens + output_tokens de cada resposta ao que já havia")
            raise CheckFailed(
                f"No ponto A do turno {turn}, tokens_used vale {show(used, 40)}, mas deveria ser {wanted}: {detail} "
                "(take_response faz essa soma). Um checkpoint com tokens_used errado esconde o custo real da "
                "tarefa de quem a retoma.",
                expected=wanted, observed=used,
            )
        before = wanted


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=has_tool_turns,
    title="Ponto B: os resultados registrados, pending_tool_use de volta a None",
    criterion=(
        "Em cada ponto B, a última mensagem gravada é a do usuário com um tool_result por pedido do "
        "turno, e pending_tool_use é None."
    ),
)
def point_b_records_the_results(ctx: Context, fixture: Fixture) -> None:
    run = checkpointed_run(ctx, fixture)
    require_run(run)
    turns = scripted_turns(fixture.data)
    for turn, response in enumerate(turns, start=1):
        calls = tool_uses_of(response) if response.get("stop_reason") == "tool_use" else []
        if not calls:
            continue
        save = find_save(run, "B", turn)
        if save is None:
            raise CheckFailed(
                f"Não há ponto B no turno {turn}: depois de acrescentar os tool_result a messages, grave o checkpoint de novo.",
                expected=f"uma gravação com turns={turn} terminando nos tool_result", observed="nenhuma",
            )
        last = save.state["messages"][-1]
        answered = [b.get("tool_use_id") for b in last.get("content", []) if isinstance(b, dict) and b.get("type") == "tool_result"]
        if answered != [c["id"] for c in calls]:
            raise CheckFailed(
                f"No ponto B do turno {turn}, a última mensagem deveria trazer os tool_result de todos os pedidos.",
                expected=[c["id"] for c in calls], observed=answered,
            )
        if save.state.get("pending_tool_use") is not None:
            raise CheckFailed(
                f"No ponto B do turno {turn}, pending_tool_use continua {show(save.state.get('pending_tool_use'), 120)}: "
                "com os resultados registrados nada está pendente; volte-o a None antes de gravar. Senão, "
                "uma retomada reconciliaria de novo chamadas que já têm resultado.",
                expected="None", observed=save.state.get("pending_tool_use"),
            )
        if save.tools_run < sum(len(tool_uses_of(r)) for r in turns[:turn]):
            raise CheckFailed(
                f"O ponto B do turno {turn} foi gravado antes de as ferramentas do turno terminarem.",
                expected="B depois das ferramentas", observed=f"{save.tools_run} execuções até B",
            )


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=is_kind("run"),
    title="O checkpoint final em disco é o estado devolvido",
    criterion="Ao terminar, checkpoint.json (a última gravação) é igual ao estado que run_agent devolve.",
)
def final_checkpoint_is_the_returned_state(ctx: Context, fixture: Fixture) -> None:
    run = checkpointed_run(ctx, fixture)
    require_run(run)
    if not isinstance(run.state, dict):
        raise CheckFailed(
            f"run_agent deveria devolver o estado, mas devolveu {show(run.state, 120)}.",
            expected="o estado de execução", observed=run.state,
        )
    on_disk = read_checkpoint_file(run.path)
    if on_disk != run.state:
        raise CheckFailed(
            "O último checkpoint gravado não é igual ao estado devolvido: alguma mudança no estado "
            "aconteceu depois da última gravação (ou a última gravação não aconteceu).",
            expected=f"turns={run.state.get('turns')}, {len(run.state.get('messages', []))} mensagens",
            observed=on_disk if isinstance(on_disk, str) else
            f"turns={on_disk.get('turns')}, {len(on_disk.get('messages', []))} mensagens",
        )
