"""Level 2: ``load_checkpoint`` tells an absent, a valid and a damaged checkpoint apart."""
from __future__ import annotations

import json
from pathlib import Path

from grader.checks.exercise_2.fixtures import EXERCISE
from grader.checks.exercise_2.save_probe import CHECKPOINT_NAME
from grader.checks.framework import (
    CheckFailed,
    Context,
    Fixture,
    StudentProblem,
    describe_error,
    is_kind,
    show,
)


def write_fixture_file(path: Path, spec: dict) -> None:
    if spec.get("absent"):
        return
    if spec.get("folder"):
        path.mkdir()
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
    if isinstance(value, str):  # the grading folder's long path hides the learner's own words: show the name
        value = value.replace(str(path), CHECKPOINT_NAME).replace(str(folder), "checkpoints")
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
    message = value.replace(CHECKPOINT_NAME, "")
    missing = [text for text in fixture.expect.get("mentions", []) if text not in message]
    if not message.strip(" :") or missing:
        wanted = " e ".join(repr(t) for t in fixture.expect.get("mentions", [])) or "o problema"
        field_names = [text for text in missing if text.isidentifier()]
        as_written = (f" Cite {' e '.join(repr(t) for t in field_names)} como o campo se chama no JSON, sem "
                      "traduzir: é o nome que quem abrir o arquivo vai procurar.") if field_names else ""
        raise CheckFailed(
            f"O CheckpointError para {what} precisa dizer qual é o problema; a mensagem deveria citar {wanted}."
            f"{as_written}",
            expected=f"uma mensagem que cite {wanted}", observed=value or "<mensagem vazia>",
        )
