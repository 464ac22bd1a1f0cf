"""Level 4 (a new case): ``renew_lease``, the heartbeat lesson 6 describes and does not show. A
renewal is one more write behind the fence: a late owner's renewal must never put its old token
back, and a lease past its deadline is taken again, not renewed."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from grader.checks.exercise_6.fixtures import EXERCISE
from grader.checks.exercise_6.lease_probe import LEASE_FILE, acquire, lease_file_error, lease_lost_error
from grader.checks.framework import CheckFailed, Context, describe_error, nothing_observed, show

A, B, SECONDS = "worker-a", "worker-b", 30.0


def _bytes(run_dir: Path) -> bytes | None:
    path = run_dir / LEASE_FILE
    return path.read_bytes() if path.exists() else None


def renew(ctx: Context, run_dir: Path, owner: str, token: Any, now: float, seconds: float = SECONDS) -> tuple[Any, Any]:
    renew_lease = ctx.student_function("renew_lease")
    return ctx.call_catching(renew_lease, run_dir, owner, token, now, seconds, label="renew_lease")


def renewal_refused_without_writing(ctx: Context, run_dir: Path, token: Any, now: float, wanted: type,
                                    situation: str, why: str) -> None:
    """renew_lease(run_dir, A, token, now) raises ``wanted`` and leaves lease.json as it was, byte for byte."""
    before = _bytes(run_dir)
    value, error = renew(ctx, run_dir, A, token, now)
    after = _bytes(run_dir)
    if error is None:
        back = ""
        if after != before and isinstance(value, dict):
            back = f" O lease.json agora diz {show(json.loads(after) if after else None, 100)}."
        raise CheckFailed(f"{situation}, e renew_lease gravou em vez de recusar.{back} {why}",
                          expected=wanted.__name__, observed=show(value, 100))
    if not isinstance(error, wanted):
        raise CheckFailed(f"{situation}: renew_lease levantou {describe_error(error)}; o esperado é {wanted.__name__}.",
                          expected=wanted.__name__, observed=type(error).__name__)
    if after != before:
        raise CheckFailed(f"{situation}: renew_lease levantou {type(error).__name__}, mas mudou o lease.json antes. "
                          "Confira primeiro, grave depois.", expected="lease.json igual, byte a byte", observed="alterado")


@EXERCISE.check(
    level=4,
    title="No prazo, a renovação estende a posse do dono atual, com o mesmo token",
    criterion=(
        "renew_lease(run_dir, owner, token, now, seconds) do dono atual, antes de a posse vencer, grava e devolve "
        "{owner, token, expires_at: now + seconds}, com o mesmo token; a check_fence continua aceitando o token."
    ),
)
def renewal_extends_the_current_lease(ctx: Context) -> None:
    run_dir = ctx.fresh_dir("renova-no-prazo") / "run"
    lease = acquire(ctx, run_dir, A, 1000.0, SECONDS)
    value, error = renew(ctx, run_dir, A, lease["token"], 1020.0, 45.0)
    if error is not None:
        raise CheckFailed(f"O dono atual renovou no prazo (instante 1020, a posse vale até 1030) e renew_lease levantou "
                          f"{describe_error(error)}.", expected="a posse renovada", observed=type(error).__name__)
    wanted = {"owner": A, "token": lease["token"], "expires_at": 1065.0}
    recorded = json.loads((run_dir / LEASE_FILE).read_text(encoding="utf-8"))
    if recorded != wanted:
        hint = ""
        if isinstance(recorded, dict) and recorded.get("token") != lease["token"]:
            hint = " A renovação não muda o token: ele identifica a posse, e o token novo é só de quem toma a posse de novo."
        elif isinstance(recorded, dict) and recorded.get("expires_at") != 1065.0:
            hint = " O prazo novo é now + seconds (1020 + 45), contado do instante da renovação."
        raise CheckFailed(f"Depois da renovação, lease.json diz {show(recorded, 120)}.{hint}", expected=wanted, observed=recorded)
    if value != wanted:
        raise CheckFailed("renew_lease deveria devolver a posse renovada (o que gravou em lease.json).",
                          expected=wanted, observed=show(value, 120))
    check_fence = ctx.student_function("check_fence")
    _, fence_error = ctx.call_catching(check_fence, run_dir, lease["token"], label="check_fence")
    if fence_error is not None:
        raise CheckFailed(f"Depois de renovar, a check_fence recusou o token da posse ({describe_error(fence_error)}).",
                          expected="o token aceito", observed=type(fence_error).__name__)


@EXERCISE.check(
    level=4,
    title="Depois de outro worker assumir, a renovação do antigo é recusada e o token nunca volta",
    criterion=(
        "Se outro worker tomou a posse (token maior), renew_lease do dono antigo levanta LeaseLost e o lease.json "
        "fica igual, byte a byte; o fenced_save do antigo continua recusado."
    ),
)
def late_owner_cannot_renew(ctx: Context) -> None:
    run_dir = ctx.fresh_dir("renova-atrasado") / "run"
    old = acquire(ctx, run_dir, A, 1000.0, SECONDS)
    current = acquire(ctx, run_dir, B, 1035.0, SECONDS)
    renewal_refused_without_writing(
        ctx, run_dir, old["token"], 1040.0, lease_lost_error(),
        f"{A} (token {old['token']}) acordou atrasado e pediu para renovar, mas {B} já tem a posse com o token "
        f"{current['token']}",
        "Gravar o token antigo de volta faria a cerca aceitar o dono antigo outra vez: os dois gravariam o mesmo "
        "checkpoint. Confira no lease.json que a posse ainda é deste owner com este token.")
    fenced_save = ctx.student_function("fenced_save")
    ctx.call_catching(fenced_save, run_dir, old["token"], {"turns": 99}, label="fenced_save")
    if (run_dir / "checkpoint.json").exists():
        raise CheckFailed("Depois da tentativa de renovação, o fenced_save do dono antigo gravou o checkpoint.json.",
                          expected="nada gravado", observed="checkpoint.json do dono antigo")


@EXERCISE.check(
    level=4,
    title="Uma posse vencida não se renova: toma-se de novo",
    criterion=(
        "Se a posse já venceu (now >= expires_at), renew_lease levanta LeaseLost sem gravar, mesmo que ninguém "
        "a tenha tomado e mesmo para o próprio dono."
    ),
)
def expired_lease_is_not_renewed(ctx: Context) -> None:
    run_dir = ctx.fresh_dir("renova-vencida") / "run"
    lease = acquire(ctx, run_dir, A, 1000.0, SECONDS)
    for now in (1030.0, 1045.0):
        renewal_refused_without_writing(
            ctx, run_dir, lease["token"], now, lease_lost_error(),
            f"A posse de {A} venceu em 1030 e ele pediu para renovar no instante {now:g}",
            "Depois do prazo, outro worker pode estar tomando a posse neste instante, com o token seguinte; uma "
            "renovação atrasada daria dois donos. Quem quer continuar toma de novo (acquire_lease), com um token novo.")


@EXERCISE.check(
    level=4,
    title="Sem posse para renovar, nada é gravado",
    criterion=(
        "Sem lease.json, renew_lease levanta LeaseLost; com um lease.json que não é uma posse (vazio, quebrado, "
        "null, []), LeaseFileError; nos dois casos, nada é gravado."
    ),
)
def nothing_to_renew_writes_nothing(ctx: Context) -> None:
    run_dir = ctx.fresh_dir("renova-sem-posse")
    renewal_refused_without_writing(ctx, run_dir, 1, 1000.0, lease_lost_error(),
                                    "Não há lease.json nenhum (ninguém tem a posse)",
                                    "Uma renovação que cria a posse pula o acquire_lease e o token novo.")
    for content in ("", "{\"own", "null", "[]"):
        (run_dir / LEASE_FILE).write_text(content, encoding="utf-8")
        renewal_refused_without_writing(
            ctx, run_dir, 1, 1000.0, lease_file_error(), f"O lease.json é {content!r}, que não é uma posse",
            "Lido como uma posse qualquer, ele seria substituído por uma com o token pedido.")


@EXERCISE.check(
    level=4,
    title="Uma queda no meio da renovação deixa o lease.json anterior inteiro",
    criterion=(
        "Se o processo morre no meio da escrita da renovação (o corretor corta a escrita depois de alguns bytes), "
        "o lease.json continua legível e a check_fence aceita o token: a renovação grava com troca atômica."
    ),
)
def renewal_survives_a_torn_write(ctx: Context) -> None:
    from grader.checks.write_spies import observed_writes

    run_dir = ctx.fresh_dir("renova-rasgada") / "run"
    lease = acquire(ctx, run_dir, A, 1000.0, SECONDS)
    renew_lease = ctx.student_function("renew_lease")
    with observed_writes(ctx, crash_after=10) as budget:
        ctx.call_or_problem(renew_lease, run_dir, A, lease["token"], 1020.0, SECONDS)
    if not budget["crashed"]:
        raise nothing_observed("renew_lease não escreveu o lease.json por open() (nem pelas funções do harness), então a "
                               "queda no meio da escrita não pôde ser simulada", expected="a posse renovada gravada")
    try:
        recorded = json.loads((run_dir / LEASE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        recorded = None
    if recorded != {"owner": A, "token": lease["token"], "expires_at": 1030.0}:
        raise CheckFailed(
            "O processo morreu no meio da renovação e o lease.json ficou "
            + ("pela metade" if recorded is None else f"assim: {show(recorded, 100)}")
            + ": a próxima check_fence não consegue ler a posse e a execução para. Grave com write_json_atomic, que "
            "escreve num temporário e só então troca pelo arquivo verdadeiro.",
            expected="o lease.json anterior, inteiro", observed="pela metade" if recorded is None else show(recorded, 100))
