"""Level 1, under the crash-state explorer: every disk state a power loss can leave while
``save_checkpoint`` saves, a swap that fails, two writers at once, and a state the JSON
encoder cannot write (grader/checks/crash_states.py; the model: docs/modelo-de-queda.md)."""
from __future__ import annotations

import json
from typing import Any, Callable

from grader.checks.crash_states import explorer_state as course_explorer_state
from grader.checks.crash_states import (
    crash_problem,
    explore,
    failed_swap,
    loads_as,
    short_write_problem,
    two_writers,
)
from grader.checks.exercise_2.fixtures import EXERCISE
from grader.checks.exercise_2.save_probe import (
    NotSerializable,
    found_described,
    last_good_checkpoint,
    read_checkpoint_file,
    returned_or_raised,
    summary,
)
from grader.checks.framework import CheckFailed, Context, StudentProblem, describe_error, nothing_observed, show
from grader.checks.write_spies import bound_everywhere, observed_writes

OLD, NEW = ("anterior", 3), ("nova", 4)


def explorer_state(label: str, turns: int) -> dict:
    """The explorer's state as this exercise's checkpoints are: saved at a point B, and saying so."""
    return dict(course_explorer_state(label, turns), save_point="B")
COURSE_LOADER_NOTE = (" (os estados foram lidos com o load_checkpoint do curso, porque o seu ainda não lê de volta "
                      "um checkpoint bom)")


def chosen_loader(ctx: Context) -> tuple[Callable, str]:
    """The student's load_checkpoint when it reads a good checkpoint back; the course's
    otherwise (level 1 does not depend on level 2), with a note saying so."""
    from harness.checkpoint import load_checkpoint as course_loader

    def choose() -> tuple[Callable, str]:
        try:
            theirs = ctx.student_function("load_checkpoint")
        except StudentProblem:
            return course_loader, COURSE_LOADER_NOTE
        good = explorer_state(*OLD)

        def attempt():
            return loads_as(theirs, json.dumps(good).encode("utf-8"), ctx.fresh_dir("crash-loader"))

        attempt.__name__ = "load_checkpoint"
        try:
            loaded, error = ctx.call(attempt)
        except StudentProblem:
            return course_loader, COURSE_LOADER_NOTE
        return (theirs, "") if error is None and loaded == good else (course_loader, COURSE_LOADER_NOTE)

    return ctx.memo("crash_loader", choose)


def binders(ctx: Context) -> dict:
    return {"bind": lambda spies, real: bound_everywhere(ctx, spies, real),
            "opens": lambda **kwargs: observed_writes(ctx, **kwargs)}


def exploration(ctx: Context, first_save: bool):
    """The student's save explored over a good checkpoint (or into an empty folder), memoized."""

    def compute():
        save = ctx.student_function("save_checkpoint")
        load, note = chosen_loader(ctx)
        folder = ctx.fresh_dir("crash-first" if first_save else "crash-over")
        old = None if first_save else explorer_state(*OLD)

        def run():
            return explore(save, load, old, explorer_state(*NEW), folder, **binders(ctx))

        run.__name__ = "save_checkpoint"
        return ctx.call(run), note

    return ctx.memo(f"crash_exploration:{first_save}", compute)


@EXERCISE.check(
    level=1,
    title="Uma queda de energia em qualquer ponto da gravação deixa o checkpoint anterior ou o novo",
    criterion=(
        "O corretor fotografa a pasta antes de cada chamada da gravação ao sistema de arquivos (open, "
        "fsync, os.replace, os.remove...) e monta todo estado que uma queda de energia pode deixar ali "
        "(docs/modelo-de-queda.md). Lido com load_checkpoint, cada estado é o checkpoint anterior ou o "
        "novo (nenhum, se a pasta começava vazia); depois que save_checkpoint volta, só o novo."
    ),
)
def every_crash_state_loads(ctx: Context) -> None:
    for first_save in (False, True):
        found, note = exploration(ctx, first_save)
        bad = found.bad()
        if bad:
            raise CheckFailed(
                (short_write_problem(found, "save_checkpoint") or crash_problem(bad[0], found.calls, first_save)) + note,
                expected="o checkpoint anterior ou o novo em todo estado (só o novo depois que a gravação volta)",
                observed=f"{len(bad)} de {len(found.verdicts)} estados possíveis não servem; chamadas: "
                         + " -> ".join(found.calls),
            )


@EXERCISE.check(
    level=1,
    title="Se a troca falha, o checkpoint anterior fica e o erro chega a quem chamou",
    criterion=(
        "Com os.replace (e os.rename) levantando OSError, como num disco cheio, save_checkpoint deixa o "
        "checkpoint anterior exatamente como estava e não engole o erro: ele chega a quem chamou."
    ),
)
def a_failed_swap_is_reported(ctx: Context) -> None:
    save = ctx.student_function("save_checkpoint")
    path, good = last_good_checkpoint(ctx, "failed-swap")
    before = path.read_bytes()

    def run():
        return failed_swap(save, None, explorer_state(*NEW), path.parent, bind=binders(ctx)["bind"])

    run.__name__ = "save_checkpoint"
    outcome = ctx.call(run)
    if not outcome.tried:
        raise nothing_observed(
            "save_checkpoint não chamou os.replace, os.rename, os.link nem shutil.move, então não houve troca "
            "para fazer falhar",
            expected="os.replace(temporário, path)",
        )
    swap = outcome.swaps[0]
    if outcome.left != before:
        found = read_checkpoint_file(path)
        copied = (" Quando a troca de nome falha, shutil.move copia o temporário por cima do destino: é uma escrita "
                  "no próprio checkpoint, e uma queda no meio dela o deixa pela metade. Use os.replace."
                  if swap.startswith("`shutil.move(") else "")
        raise CheckFailed(
            f"A troca ({swap}) falhou, e o checkpoint anterior não ficou como estava: "
            f"{found_described(found)}. Até a troca dar certo, o checkpoint verdadeiro não pode ser tocado.{copied}",
            expected="o checkpoint anterior, byte a byte", observed=summary(found),
        )
    if outcome.raised is None:
        raise CheckFailed(
            f"A troca ({swap}) levantou OSError e save_checkpoint voltou normalmente, como se tivesse gravado: quem "
            "chama segue em frente (executa a ferramenta, manda o e-mail) achando que o estado está em disco. "
            "Não engula o erro: deixe-o subir (um except só para limpar o temporário termina com raise).",
            expected="o OSError chegando a quem chamou", observed="nenhuma exceção",
        )


@EXERCISE.check(
    level=1,
    title="Dois gravadores na mesma pasta ao mesmo tempo não dividem o temporário",
    criterion=(
        "Duas chamadas a save_checkpoint na mesma pasta ao mesmo tempo (duas threads, seguradas logo "
        "antes da troca até as duas chegarem lá): cada uma escreve o seu próprio temporário, as duas "
        "terminam sem erro e o checkpoint que fica é uma das duas versões, inteira."
    ),
)
def two_writers_at_once(ctx: Context) -> None:
    save = ctx.student_function("save_checkpoint")
    load, note = chosen_loader(ctx)
    first, second = explorer_state("do primeiro gravador", 5), explorer_state("do segundo gravador", 6)
    folder = ctx.fresh_dir("two-writers")

    def run():
        return two_writers(save, first, second, folder, **binders(ctx))

    run.__name__ = "save_checkpoint"
    outcome = ctx.call(run)
    if not outcome.swapped:  # writing in place: what two writers do to one file is timing, not a rule
        raise nothing_observed(
            "save_checkpoint não chamou os.replace, os.rename nem os.link, então não há temporários dos dois "
            "gravadores a comparar",
            expected="cada gravação escrevendo o seu temporário e trocando-o pelo checkpoint",
        )
    if outcome.unfinished:
        raise CheckFailed(
            "Com dois gravadores ao mesmo tempo, um deles não terminou: save_checkpoint espera por algo que "
            "a outra gravação segura?", expected="as duas gravações terminando", observed="uma ficou parada",
        )
    if outcome.shared:
        raise CheckFailed(
            f"Os dois gravadores escreveram no mesmo temporário ({', '.join(outcome.shared)}): com dois "
            "processos gravando na mesma pasta (um worker que voltou de uma pausa e o que o substituiu, por "
            "exemplo), um esvazia o temporário do outro no meio da escrita, ou o troca antes da hora. Dê a "
            "cada gravação um nome só dela (tempfile.mkstemp(dir=pasta_do_checkpoint)).",
            expected="um temporário por gravação", observed=outcome.shared,
        )
    raised = [error for error in outcome.errors if error is not None]
    if raised:
        raise CheckFailed(
            f"Com dois gravadores ao mesmo tempo, save_checkpoint levantou {describe_error(raised[0])}.",
            expected="as duas gravações terminando sem erro", observed=describe_error(raised[0]),
        )

    def read_back():
        return loads_as(load, outcome.left, ctx.fresh_dir("two-writers-read"))

    read_back.__name__ = "load_checkpoint"
    loaded, error = ctx.call(read_back)
    if error is not None or loaded not in (first, second):
        seen = f"levantou {describe_error(error)}" if error is not None else f"devolveu {show(loaded, 120)}"
        raise CheckFailed(
            f"Depois dos dois gravadores, o checkpoint não é nenhuma das duas versões: load_checkpoint {seen}{note}.",
            expected="a versão de um dos dois gravadores", observed=seen,
        )


@EXERCISE.check(
    level=1,
    title="Um estado que o json não sabe gravar é recusado, sem trocar o checkpoint bom",
    criterion=(
        "Se o estado tem um valor que o json não sabe gravar, save_checkpoint levanta o erro e o "
        "checkpoint anterior fica byte a byte como estava: o valor não vira texto (default=str) e a "
        "falha não é engolida."
    ),
)
def an_unwritable_state_is_refused(ctx: Context) -> None:
    save = ctx.student_function("save_checkpoint")
    path, _ = last_good_checkpoint(ctx, "unwritable")
    before = path.read_bytes()
    broken = explorer_state(*NEW)
    broken["messages"].append({"role": "user", "content": NotSerializable()})
    _, raised = ctx.call_or_problem(save, broken, path)
    returned_or_raised(raised)
    after = path.read_bytes() if path.exists() else None
    if after != before:
        found: Any = read_checkpoint_file(path)
        lossy = isinstance(found, dict) and found.get("task") == broken["task"]
        raise CheckFailed(
            ("save_checkpoint gravou um estado que o json não sabe representar: o valor virou "
             f"{show(found['messages'][-1].get('content') if isinstance(found['messages'][-1], dict) else found['messages'][-1], 80)} "
             "e o checkpoint bom foi trocado por um com perdas, que a retomada leria como se fosse o estado "
             "de verdade (um default=str no json.dump?). Deixe o TypeError do json subir.")
            if lossy and found.get("messages") else
            f"Depois de uma gravação que falhou no json, o checkpoint anterior mudou ({found_described(found)}).",
            expected="o checkpoint anterior, byte a byte, e o TypeError do json", observed=summary(found),
        )
    if raised is None:
        raise CheckFailed(
            "O json não conseguiu gravar o estado, e save_checkpoint voltou normalmente, como se tivesse "
            "gravado: quem chama segue em frente com um estado que não está em disco. Não engula o erro "
            "(nada de except que só imprime ou passa): deixe-o chegar a quem chamou.",
            expected="o TypeError do json chegando a quem chamou", observed="nenhuma exceção",
        )


UNLABELLED_STATES = (
    ("sem o campo save_point", None),
    ("com save_point \"C\", um ponto que o turno não tem", "C"),
)


@EXERCISE.check(
    level=1,
    title="Um estado que não diz o seu ponto de gravação é recusado, sem trocar o checkpoint bom",
    criterion=(
        "Se o estado não traz save_point \"A\" ou \"B\" (o checkpoint que o load_checkpoint deste exercício "
        "recusaria), save_checkpoint levanta um erro antes de tocar no disco, e o checkpoint anterior "
        "fica byte a byte como estava."
    ),
)
def an_unlabelled_state_is_refused(ctx: Context) -> None:
    save = ctx.student_function("save_checkpoint")
    for label, value in UNLABELLED_STATES:
        path, _ = last_good_checkpoint(ctx, f"unlabelled-{value}")
        before = path.read_bytes()
        state = explorer_state(*NEW)
        if value is None:
            state.pop("save_point")
        else:
            state["save_point"] = value
        _, raised = ctx.call_or_problem(save, state, path)
        returned_or_raised(raised)
        after = path.read_bytes() if path.exists() else None
        if after != before:
            raise CheckFailed(
                f"save_checkpoint gravou um estado {label}, por cima do checkpoint bom: o load_checkpoint deste "
                "exercício vai recusá-lo, e uma retomada depois de uma queda fica sem checkpoint nenhum em que "
                "confiar. Um checkpoint que não se deixa ler é tão ruim quanto um arquivo pela metade. Confira "
                "state.get(\"save_point\") em (\"A\", \"B\") antes de abrir qualquer arquivo e levante um erro.",
                expected="o checkpoint anterior, byte a byte, e um erro", observed=summary(read_checkpoint_file(path)),
            )
        if raised is None:
            raise CheckFailed(
                f"save_checkpoint recebeu um estado {label}, não gravou nada e voltou normalmente: quem chama "
                "segue em frente achando que o ponto está em disco. Levante um erro (um CheckpointError, por "
                "exemplo) dizendo o problema.",
                expected="um erro chegando a quem chamou", observed="nenhuma exceção",
            )
