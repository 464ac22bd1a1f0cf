"""Level 4 (a new case): ``finish_rewind`` finishes a rewind a crash cut short, from the
``rewind.json`` intent the operations tool writes before it moves anything."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.checks.exercise_5.fixtures import CHECKPOINTS, EXERCISE, RUN_FOLDER, _point, write_run_dir
from grader.checks.exercise_5.probes import (
    active_points,
    differences,
    require_folder_untouched,
    require_timeline_error,
    snapshot,
    world_snapshot,
)
from grader.checks.framework import CheckFailed, Context, Fixture, describe_error, nothing_observed, show

MARKER = "rewind.json"


@dataclass
class Finished:
    returned: Any
    problem: Any
    before: dict[str, bytes]
    after: dict[str, bytes]
    active_after: list[str]
    calls: list = field(default_factory=list)
    world_changed: str = ""


def finished(ctx: Context, fixture: Fixture) -> Finished:
    def run() -> Finished:
        finish_rewind = ctx.student_function("finish_rewind")
        with ctx.tools(fixture, "finish") as spy:
            run_dir = write_run_dir(fixture.data, spy.workspace.root / RUN_FOLDER)
            before, world_before = snapshot(run_dir), world_snapshot(spy.workspace)
            returned, problem = ctx.call_catching(finish_rewind, run_dir)
            after = snapshot(run_dir)
            return Finished(returned, problem, before, after, active_points(run_dir), list(spy.calls),
                            differences(world_before, world_snapshot(spy.workspace)))

    return ctx.memo(f"finish:{fixture.name}", run)


def interrupted(fixture: Fixture) -> bool:
    return isinstance(fixture.expect.get("finish"), dict) and "to" in fixture.expect["finish"]


def healthy(fixture: Fixture) -> bool:
    return "finish" in fixture.expect and fixture.expect["finish"] is None


def refused(fixture: Fixture) -> bool:
    return isinstance(fixture.expect.get("finish"), dict) and fixture.expect["finish"].get("refused") is True


def target_scene(fixture: Fixture) -> dict:
    return fixture.data["run_dir"][f"{CHECKPOINTS}/{fixture.expect['finish']['to']}"]


def abandoned_points(fixture: Fixture) -> dict[str, Any]:
    """Every point after ``to``, wherever the crash left it (still active or already set aside): name -> content."""
    to = _point(fixture.expect["finish"]["to"])
    found = {}
    for relative, value in fixture.data["run_dir"].items():
        name = relative.rsplit("/", 1)[-1]
        parsed = _point(name)
        if relative.startswith(f"{CHECKPOINTS}/") and parsed and parsed > to:
            found[name] = value
    return found


def completion_problem(fixture: Fixture, returned: Any, after: dict[str, bytes], active_after: list[str]) -> str:
    """What is missing for the rewind to be finished ("" when it is)."""
    spec = fixture.expect["finish"]
    to, folder = spec["to"], spec["folder"]
    later = [name for name in active_after if _point(name) > _point(to)]
    if later:
        return (f"A sequência ativa ainda tem {', '.join(later)}, posteriores a {to}: a rebobinagem pedida em "
                f"{MARKER} não terminou de mover os pontos para {CHECKPOINTS}/{folder}/.")
    if to not in active_after:
        return f"{to}, o destino da rebobinagem, sumiu da sequência ativa: ele fica onde está."
    for name in abandoned_points(fixture):
        if f"{CHECKPOINTS}/{folder}/{name}" not in after:
            return (f"{name} não está em {CHECKPOINTS}/{folder}/: a história abandonada vai para a subpasta que "
                    f"{MARKER} indica, e nunca é apagada.")
    try:
        checkpoint = json.loads(after.get("checkpoint.json", b"null"))
    except ValueError:
        checkpoint = "<ilegível>"
    if checkpoint != target_scene(fixture):
        turns = checkpoint.get("turns") if isinstance(checkpoint, dict) else checkpoint
        return (f"checkpoint.json não é a cena de {to} (lá, turns={show(turns, 40)}): a próxima execução continuaria "
                "a história abandonada. Grave a cena do destino com save_checkpoint.")
    if MARKER in after:
        return (f"{MARKER} continua na pasta depois de a rebobinagem terminar: apague-o por último, quando tudo "
                "estiver feito, senão a próxima execução acha que ainda há trabalho a fazer.")
    if returned != target_scene(fixture):
        return f"finish_rewind deveria devolver a cena de {to} (o dict gravado em checkpoint.json), e devolveu {show(returned, 80)}."
    return ""


@EXERCISE.check(
    level=4,
    per_fixture=True,
    applies=interrupted,
    title="Termina a rebobinagem, em qualquer passo em que ela caiu",
    criterion=(
        "Com rewind.json na pasta, finish_rewind deixa a sequência ativa terminando em to, todos os pontos "
        "posteriores na subpasta indicada (nenhum apagado), checkpoint.json igual à cena de to, rewind.json "
        "apagado, e devolve essa cena."
    ),
)
def rewind_is_finished(ctx: Context, fixture: Fixture) -> None:
    run = finished(ctx, fixture)
    if run.problem is not None:
        raise CheckFailed(f"finish_rewind levantou {describe_error(run.problem)} numa rebobinagem que dá para terminar.",
                          expected="a rebobinagem terminada", observed=type(run.problem).__name__)
    if run.returned is None and run.before == run.after:
        raise nothing_observed(f"finish_rewind devolveu None e não mudou nada, mas a pasta tem {MARKER}: uma "
                               "rebobinagem ficou pela metade", expected="a rebobinagem terminada")
    problem = completion_problem(fixture, run.returned, run.after, run.active_after)
    if problem:
        raise CheckFailed(problem, expected="a rebobinagem terminada", observed="incompleta")


@EXERCISE.check(
    level=4,
    per_fixture=True,
    applies=healthy,
    title="Sem rewind.json, nada a terminar e nada muda",
    criterion=(
        "Numa pasta sem rewind.json (uma execução comum, uma já rebobinada até o fim, ou uma em que só sobrou "
        "um rewind.json.tmp pela metade), finish_rewind devolve None e a pasta fica igual, byte a byte."
    ),
)
def nothing_to_finish(ctx: Context, fixture: Fixture) -> None:
    run = finished(ctx, fixture)
    if run.problem is not None:
        raise CheckFailed(f"finish_rewind levantou {describe_error(run.problem)} numa pasta sem rebobinagem pela metade.",
                          expected="None", observed=type(run.problem).__name__)
    changed = differences(run.before, run.after)
    if changed:
        torn = f"{MARKER}.tmp" in run.before
        raise CheckFailed(
            f"finish_rewind mexeu numa pasta sem {MARKER} ({changed})."
            + (f" Um {MARKER}.tmp é uma intenção que nunca chegou a ser gravada (o processo morreu antes do "
               "os.replace): a rebobinagem não começou, e não há nada a terminar." if torn else
               " Sem a intenção gravada, não há rebobinagem pela metade: rewound-NNN/ antigas são história, não trabalho."),
            expected="pasta intacta", observed=changed)
    if run.returned is not None:
        raise CheckFailed(f"Sem {MARKER}, finish_rewind deveria devolver None, e devolveu {show(run.returned, 80)}.",
                          expected=None, observed=show(run.returned, 80))


@EXERCISE.check(
    level=4,
    per_fixture=True,
    applies=lambda fixture: interrupted(fixture) or healthy(fixture),
    title="Terminar a rebobinagem não executa nada",
    criterion="finish_rewind não executa nenhuma ferramenta e não mexe no livro-razão, nas aprovações nem no mundo.",
)
def finish_runs_nothing(ctx: Context, fixture: Fixture) -> None:
    run = finished(ctx, fixture)
    if run.calls or run.world_changed:
        names = ", ".join(sorted({c.name for c in run.calls})) or "uma ferramenta"
        raise CheckFailed(f"finish_rewind executou {names}: terminar uma rebobinagem só move estado.",
                          expected="nenhuma ferramenta", observed=run.world_changed or names)
    for name in ("effects.json", "approvals.json"):
        if run.before.get(name) != run.after.get(name):
            raise CheckFailed(f"finish_rewind alterou {name}: o livro-razão e as aprovações não fazem parte da rebobinagem.",
                              expected=f"{name} intacto", observed="alterado")


class CrashHere(BaseException):
    """The process dies when the checkpoint is about to be written (a BaseException: no `except Exception` stops it)."""


@EXERCISE.check(
    level=4,
    per_fixture=True,
    applies=interrupted,
    title="Uma queda dentro de finish_rewind: a próxima chamada termina o trabalho",
    criterion=(
        "Se o processo morre dentro de finish_rewind no instante de gravar checkpoint.json, uma nova chamada "
        "termina a rebobinagem: a intenção (rewind.json) só some depois de tudo feito."
    ),
)
def finish_survives_its_own_crash(ctx: Context, fixture: Fixture) -> None:
    from grader.checks.write_spies import dying_os_open, observed_writes, opened_path

    finish_rewind = ctx.student_function("finish_rewind")
    crash = {"armed": True, "happened": False}

    with ctx.tools(fixture, "finish-crash") as spy:
        run_dir = write_run_dir(fixture.data, spy.workspace.root / RUN_FOLDER)
        top = Path(os.path.realpath(run_dir))

        def die_at_a_save_in_the_run(where: Path) -> None:
            # The first file finish_rewind creates or rewrites in the run folder, outside checkpoints/
            # (moving a point is a rename, not a write): checkpoint.json, or the temporary it is
            # written through under any name (mkstemp's, NamedTemporaryFile's, the harness's).
            if crash["armed"] and where.parent == top and not where.name.startswith(MARKER):
                crash["armed"], crash["happened"] = False, True
                raise CrashHere("queda simulada ao gravar checkpoint.json")

        def die_on_open(file: Any, mode: str) -> None:
            where = opened_path(file)
            if where is not None:
                die_at_a_save_in_the_run(where)

        with observed_writes(ctx, before_open=die_on_open), dying_os_open(ctx, die_at_a_save_in_the_run):
            ctx.call_or_problem(finish_rewind, run_dir)
        marker_left = (run_dir / MARKER).exists()
        if not crash["happened"]:
            raise nothing_observed("finish_rewind não gravou nenhum arquivo na pasta da execução (nem "
                                   "checkpoint.json, nem um temporário para ele), então a queda na hora de "
                                   "gravá-lo não pôde ser simulada",
                                   expected="a cena de to gravada em checkpoint.json")
        returned, problem = ctx.call_catching(finish_rewind, run_dir)
        after = snapshot(run_dir)
        active_after = active_points(run_dir)
    if not marker_left:
        raise CheckFailed(
            f"O processo morreu antes de checkpoint.json ser gravado, e {MARKER} já tinha sido apagado: a próxima "
            "execução não sabe que havia uma rebobinagem pela metade e continua a história abandonada. Apague a "
            "intenção por último, como o recibo que fecha um registro do livro-razão.",
            expected=f"{MARKER} ainda na pasta depois da queda", observed=f"{MARKER} apagado antes do checkpoint")
    if problem is not None:
        raise CheckFailed(f"Depois da queda, a nova chamada a finish_rewind levantou {describe_error(problem)}: ela precisa "
                          "aceitar uma pasta em que parte do trabalho já foi feita (a subpasta já existe, pontos já "
                          "movidos).", expected="a rebobinagem terminada", observed=type(problem).__name__)
    issue = completion_problem(fixture, returned, after, active_after)
    if issue:
        raise CheckFailed("Depois da queda e de uma nova chamada: " + issue, expected="a rebobinagem terminada",
                          observed="incompleta")


@EXERCISE.check(
    level=4,
    per_fixture=True,
    applies=refused,
    title="Um destino que não existe é recusado, e nada muda",
    criterion="Se rewind.json aponta para um ponto que não está na sequência ativa, finish_rewind levanta TimelineError e não mexe em nada.",
)
def impossible_target_is_refused(ctx: Context, fixture: Fixture) -> None:
    run = finished(ctx, fixture)
    to = fixture.data["run_dir"][MARKER]["to"]
    require_timeline_error(
        run.returned, run.problem, 60,
        lambda shown: f"{MARKER} aponta para {to}, que não existe, e finish_rewind devolveu {shown}: "
                      "levante TimelineError dizendo que o destino não está na sequência.",
        lambda described: f"finish_rewind levantou {described}; um destino que não existe merece um "
                          "TimelineError que diga isso.",
    )
    require_folder_untouched(differences(run.before, run.after), "confira o destino antes de mover qualquer ponto.")
