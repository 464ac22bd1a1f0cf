"""Level 1: ``pick_latest_point`` finds the latest readable save point, of the run or of a turn."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from grader.checks.exercise_5.fixtures import CHECKPOINTS, EXERCISE, RUN_FOLDER, _point, write_run_dir
from grader.checks.exercise_5.probes import differences, snapshot
from grader.checks.framework import CheckFailed, Context, Fixture, show


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
