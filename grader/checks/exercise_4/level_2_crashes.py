"""Level 2, under the crash-state explorer: every disk state a power loss can leave while
``save_effect`` writes the ledger, read back with the student's ``load_effects``, and a swap
that fails (grader/checks/crash_states.py; the model: docs/modelo-de-queda.md)."""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Callable

from grader.checks.crash_states import Durable, crash_problem, explore, failed_swap, loads_as, short_write_problem
from grader.checks.exercise_4.fixtures import EXERCISE
from grader.checks.exercise_4.probes import intent, read_ledger, receipt
from grader.checks.framework import CheckFailed, Context, StudentProblem, nothing_observed, show
from grader.checks.write_spies import bound_everywhere, observed_writes

LEDGER = Durable(name="effects.json", thing="o livro-razão", loader="load_effects", nothing="devolve {}")
SAVED_CALL = "toolu_b2"
COURSE_LOADER_NOTE = (" (os estados foram lidos com o load_effects do curso, porque o seu ainda não lê de volta "
                      "um livro-razão bom)")


def old_ledger() -> dict:
    """Five receipts and an intent: a few kilobytes, enough to tear. The call saved is a new
    one, so a save that keeps an earlier record (another check's rule) is not judged here."""
    ledger = {f"toolu_a{n}": receipt(f"toolu_a{n}", f"recibo {n}: ata da reunião enviada à equipe") for n in range(1, 6)}
    ledger["toolu_c3"] = intent("toolu_c3", "terceiro")
    return ledger


def new_record() -> dict:
    """The intent of the call saved: a new call enters the ledger with its intent."""
    return intent(SAVED_CALL, "segundo")


def as_explored(load: Callable) -> Callable:
    """The explorer reads a missing file as None; a ledger reads it as {} (nothing done yet)."""

    def read(path: Path) -> Any:
        ledger = load(path)
        return None if ledger == {} else ledger

    read.__name__ = "load_effects"
    return read


def chosen_loader(ctx: Context) -> tuple[Callable, str]:
    """The student's load_effects when it reads a good ledger back; the course's otherwise
    (the other level-2 checks grade the loader itself), with a note saying so."""
    from harness.effects import load_effects as course_loader

    def choose() -> tuple[Callable, str]:
        try:
            theirs = ctx.student_function("load_effects")
        except StudentProblem:
            return course_loader, COURSE_LOADER_NOTE
        good = old_ledger()

        def attempt():
            return loads_as(theirs, json.dumps(good).encode("utf-8"), ctx.fresh_dir("crash-ledger-loader"),
                            LEDGER.name)

        attempt.__name__ = "load_effects"
        try:
            loaded, error = ctx.call(attempt)
        except StudentProblem:
            return course_loader, COURSE_LOADER_NOTE
        return (theirs, "") if error is None and loaded == good else (course_loader, COURSE_LOADER_NOTE)

    return ctx.memo("crash_ledger_loader", choose)


def binders(ctx: Context) -> dict:
    return {"bind": lambda spies, real: bound_everywhere(ctx, spies, real),
            "opens": lambda **kwargs: observed_writes(ctx, **kwargs)}


def saving(save_effect: Callable) -> Callable:
    """save_effect in the explorer's shape, save(new, path): the intent of SAVED_CALL."""

    def save(_new: Any, path: Path) -> None:
        save_effect(path, SAVED_CALL, new_record())

    return save


@EXERCISE.check(
    level=2,
    title="Uma queda de energia em qualquer ponto de save_effect deixa o livro-razão anterior ou o novo",
    criterion=(
        "O corretor fotografa a pasta antes de cada chamada de save_effect ao sistema de arquivos (open, "
        "fsync, os.replace, os.remove...) e monta todo estado que uma queda de energia pode deixar ali "
        "(docs/modelo-de-queda.md). Lido com load_effects, cada estado é o livro-razão anterior ou o novo "
        "({}, se a pasta começava vazia); depois que save_effect volta, só o novo. Um livro rasgado que "
        "load_effects recusa também não serve: é um livro perdido, e a retomada não pode seguir."
    ),
)
def every_ledger_crash_state_loads(ctx: Context) -> None:
    save_effect = ctx.student_function("save_effect")
    load, note = chosen_loader(ctx)
    for first_save in (False, True):
        old = None if first_save else old_ledger()
        new = {**(old or {}), SAVED_CALL: new_record()}
        folder = ctx.fresh_dir("crash-ledger-first" if first_save else "crash-ledger-over")

        def run(old=old, new=new, folder=folder):
            return explore(saving(save_effect), as_explored(load), old, new, folder, name=LEDGER.name,
                           **binders(ctx))

        run.__name__ = "save_effect"
        found = ctx.call(run)
        bad = found.bad()
        if bad:
            raise CheckFailed(
                (short_write_problem(found, "save_effect", LEDGER) or crash_problem(bad[0], found.calls, first_save, LEDGER))
                + note,
                expected="o livro-razão anterior ou o novo em todo estado (só o novo depois que save_effect volta)",
                observed=f"{len(bad)} de {len(found.verdicts)} estados possíveis não servem; chamadas: "
                         + " -> ".join(found.calls),
            )


@EXERCISE.check(
    level=2,
    title="Se a troca do livro-razão falha, o livro anterior fica e o erro chega a quem chamou",
    criterion=(
        "Com os.replace (e os.rename) levantando OSError, como num disco cheio, save_effect deixa o "
        "livro-razão anterior exatamente como estava e não engole o erro: ele chega a quem chamou, que "
        "não pode executar o efeito achando que a intenção está gravada."
    ),
)
def a_failed_ledger_swap_is_reported(ctx: Context) -> None:
    save_effect = ctx.student_function("save_effect")
    folder = ctx.fresh_dir("failed-ledger-swap")
    old = old_ledger()

    def run():
        return failed_swap(saving(save_effect), old, None, folder, bind=binders(ctx)["bind"], name=LEDGER.name)

    run.__name__ = "save_effect"
    outcome = ctx.call(run)
    if not outcome.tried:
        raise nothing_observed(
            "save_effect não chamou os.replace nem os.rename, então não houve troca para fazer falhar",
            expected="os.replace(temporário, effects.json)",
        )
    before = json.dumps(copy.deepcopy(old), ensure_ascii=False).encode("utf-8")
    if outcome.left != before:
        path = folder / LEDGER.name
        found = read_ledger(path) if path.exists() else "o arquivo sumiu"
        raise CheckFailed(
            "os.replace falhou, e o livro-razão anterior não ficou como estava: até a troca dar certo, "
            "effects.json não pode ser tocado (os recibos dele dizem o que já foi feito).",
            expected="o livro-razão anterior, byte a byte", observed=show(found, 160),
        )
    if outcome.raised is None:
        raise CheckFailed(
            "os.replace levantou OSError e save_effect voltou normalmente, como se tivesse gravado: quem chama "
            "segue em frente e manda o e-mail sem a intenção no livro-razão, ou perde o recibo de um que já "
            "saiu. Não engula o erro: deixe-o subir (um except só para limpar o temporário termina com raise).",
            expected="o OSError chegando a quem chamou", observed="nenhuma exceção",
        )
