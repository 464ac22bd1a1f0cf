"""Level 1: ``latest_step`` finds the latest save of another agent's sequence (``steps/step-2-post.json``),
where the order of the names is not the order of time."""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from grader.checks.exercise_5.fixtures import EXERCISE, RUN_FOLDER, STEPS, step_name, step_relative, write_steps_dir
from grader.checks.exercise_5.probes import differences, snapshot
from grader.checks.framework import CheckFailed, Context, Fixture, show

STEP = re.compile(r"step-(0|[1-9][0-9]*)-(pre|post)\.json")
PHASE_ORDER = {"pre": 0, "post": 1}


def _step(name: str | None) -> tuple[int, int] | None:
    match = STEP.fullmatch(name) if isinstance(name, str) else None
    return (int(match.group(1)), PHASE_ORDER[match.group(2)]) if match else None


def step_name_of(value: Any, run_dir: Path) -> str | None:
    """The step file a returned value names (``step-N-pre.json``); None for None."""
    if value is None:
        return None
    if isinstance(value, dict):
        raise CheckFailed(
            "latest_step devolveu o conteúdo de um arquivo (um dict); devolva o caminho (um Path), "
            "para quem chamou decidir se quer lê-lo.",
            expected="um Path dentro de steps/", observed=show(value, 120),
        )
    if not isinstance(value, (str, os.PathLike)):
        raise CheckFailed(
            f"latest_step devolveu {type(value).__name__}; devolva o caminho do arquivo (um Path) ou None.",
            expected="um Path ou None", observed=show(value, 120),
        )
    path = Path(value)
    if not path.is_absolute() and path.parent == Path("."):
        raise CheckFailed(
            f"latest_step devolveu só o nome {path.name!r}; devolva o caminho completo "
            "(run_dir / \"steps\" / nome), que dá para abrir de qualquer pasta.",
            expected="um caminho dentro de run_dir/steps", observed=str(value),
        )
    if not path.is_absolute():
        path = Path.cwd() / path
    folder = (run_dir / STEPS).resolve()
    if path.resolve().parent != folder:
        where = path.resolve().parent.name
        if where.startswith("rewound"):
            raise CheckFailed(
                f"latest_step devolveu {where}/{path.name}, guardado por uma rebobinagem anterior: a pasta "
                "rewound-NNN/ fica FORA da sequência ativa. Procure só os arquivos que estão diretamente "
                "em steps/ (sem descer em subpastas).",
                expected="um arquivo diretamente em steps/", observed=f"{where}/{path.name}",
            )
        raise CheckFailed(f"latest_step devolveu {str(value)!r}, que não está em run_dir/steps/.",
                          expected="um arquivo diretamente em steps/", observed=str(value))
    return path.name


def diagnose(fixture: Fixture | None, step: int | None, expected: str | None, got: str | None) -> str:
    asked = "da sequência" if step is None else f"do passo {step}"
    if got is None:
        return f"Devolveu None, mas o último arquivo {asked} existe: {expected}."
    if got.endswith(".tmp"):
        return (
            f"Escolheu {got}, um arquivo temporário que sobrou de uma gravação interrompida. Um .tmp "
            "nunca é um ponto gravado: aceite só nomes que são exatamente step-<n>-pre.json / step-<n>-post.json."
        )
    parsed = _step(got)
    if parsed is None:
        return f"Escolheu {got}, que não é um arquivo da sequência (nomes step-<n>-pre.json / step-<n>-post.json)."
    if expected is None:
        return f"Não há nenhum arquivo {asked}: a resposta certa é None, e veio {got}."
    want = _step(expected)
    if step is not None and parsed[0] != step:
        return f"Pedi o passo {step} e veio {got}, do passo {parsed[0]}: o argumento step restringe a busca àquele passo."
    if parsed[0] == want[0] and parsed[1] < want[1]:
        return (
            f"Escolheu {got}, mas o passo também tem {expected}: \"post\" é gravado depois de \"pre\", "
            "embora venha antes no alfabeto (\"po\" < \"pr\"). Ordene pela fase no tempo, não pelo texto."
        )
    if parsed[0] < want[0] and str(parsed[0]) > str(want[0]):
        return (
            f"Escolheu {got}, mas {expected} é de um passo maior: sem zeros à esquerda, \"step-9\" vem depois "
            "de \"step-10\" no alfabeto. Compare o número do passo como número (int)."
        )
    mtimes = (fixture.data.get("mtimes") or {}) if fixture is not None else {}
    if mtimes:
        newest = step_relative(max(mtimes, key=mtimes.get)).rsplit("/", 1)[-1]
        if got == newest:
            return (
                f"Escolheu {got}, o arquivo com a data de modificação mais nova. Datas de modificação mudam "
                "com um backup restaurado ou uma cópia; a ordem está no nome (passo, depois pre/post)."
            )
    return f"O último arquivo {asked} é {expected}, mas veio {got}."


def check_steps(ctx: Context, fixture: Fixture | None, run_dir: Path, cases: list[tuple[int | None, str | None]],
                spy: Any) -> None:
    latest_step = ctx.student_function("latest_step")
    before = snapshot(run_dir)
    for step, expected in cases:
        value = ctx.call(latest_step, run_dir) if step is None else ctx.call(latest_step, run_dir, step)
        got = step_name_of(value, run_dir)
        if got != expected and got is not None and (run_dir / STEPS / got).is_dir():
            raise CheckFailed(
                f"Escolheu {got}, mas em steps/ isso é uma pasta, não um arquivo: um nome que parece o de um "
                "passo não basta, um ponto gravado é um arquivo (confira path.is_file()).",
                expected=expected, observed=f"{got}/ (uma pasta)",
            )
        if got != expected:
            raise CheckFailed(diagnose(fixture, step, expected, got), expected=expected, observed=got)
    changed = differences(before, snapshot(run_dir))
    if changed:
        raise CheckFailed(f"latest_step mexeu na pasta da execução ({changed}): ela só procura.",
                          expected="pasta intacta", observed=changed)
    if spy.calls:
        raise CheckFailed("latest_step executou ferramentas: ela só procura arquivos.",
                          expected="nenhuma ferramenta", observed=", ".join(c.name for c in spy.calls))


def _expected(name: str | None) -> str | None:
    return None if name is None else step_name(name)


@EXERCISE.check(
    level=1,
    per_fixture=True,
    title="O último arquivo da sequência do outro agente",
    criterion=(
        "latest_step(run_dir) devolve o caminho do último arquivo gravado diretamente em steps/ "
        "(ordem: passo como número, depois pre antes de post), ou None sem sequência; ignora .tmp, "
        "outros nomes, subpastas e pastas com nome de passo, e não depende da data de modificação."
    ),
)
def latest_of_the_run(ctx: Context, fixture: Fixture) -> None:
    with ctx.tools(fixture, "steps") as spy:
        run_dir = write_steps_dir(fixture.data, spy.workspace.root / RUN_FOLDER)
        check_steps(ctx, fixture, run_dir, [(None, _expected(fixture.expect["latest"]))], spy)


@EXERCISE.check(
    level=1,
    per_fixture=True,
    title="O último arquivo de cada passo",
    criterion="latest_step(run_dir, step) devolve o post do passo quando ele existe, senão o pre, e None para um passo sem arquivos.",
)
def latest_of_each_step(ctx: Context, fixture: Fixture) -> None:
    cases = [(int(step), _expected(name)) for step, name in fixture.expect["latest_by_turn"].items()]
    with ctx.tools(fixture, "steps-each") as spy:
        run_dir = write_steps_dir(fixture.data, spy.workspace.root / RUN_FOLDER)
        check_steps(ctx, fixture, run_dir, cases, spy)


LONG_RUN = ["step-8-post.json", "step-9-pre.json", "step-9-post.json", "step-10-pre.json", "step-10-post.json",
            "step-11-pre.json", "step-11-pre.json.tmp", "step-12-post.json.tmp"]


@EXERCISE.check(
    level=1,
    title="Passos de dois dígitos: o número compara como número",
    criterion=(
        "Numa sequência que passa do passo 9 ao 10 (sem zeros à esquerda), latest_step devolve o passo 11 "
        "como o último, e o post do passo 10 para step=10: o número do passo é comparado como número."
    ),
)
def steps_compare_as_numbers(ctx: Context) -> None:
    folder = ctx.fresh_dir("passos-longos") / RUN_FOLDER
    (folder / STEPS).mkdir(parents=True)
    for name in LONG_RUN:
        (folder / STEPS / name).write_text("{}" if not name.endswith(".tmp") else '{"mess', encoding="utf-8")

    class NoSpy:
        calls: list = []

    check_steps(ctx, None, folder,
                [(None, "step-11-pre.json"), (10, "step-10-post.json"), (9, "step-9-post.json"), (12, None)], NoSpy())
