"""Level 1: ``ANSWERS`` classifies each operation by its effect on the world."""
from __future__ import annotations

from grader.checks.exercise_4.fixtures import EXERCISE
from grader.checks.exercise_4.messages import LABELS, OPERATIONS
from grader.checks.framework import CheckFailed, Context, StudentProblem
from grader.core.plural import quantity


@EXERCISE.check(
    level=1,
    title="ANSWERS classifica todas as operações, com os rótulos do exercício",
    criterion=(
        "ANSWERS é um dict com exatamente as operações do caderno, cada uma valendo "
        "IDEMPOTENTE (\"idempotente\") ou NAO_IDEMPOTENTE (\"não idempotente\")."
    ),
)
def answers_are_complete(ctx: Context) -> None:
    answers = ctx.student_answer("ANSWERS")
    if not isinstance(answers, dict):
        raise CheckFailed(
            f"ANSWERS deveria ser um dict operação -> rótulo, mas é {type(answers).__name__}.",
            expected="dict", observed=answers,
        )
    missing = [key for key in OPERATIONS if key not in answers]
    extra = [key for key in answers if key not in OPERATIONS]
    if missing:
        raise CheckFailed(
            f"Faltam operações em ANSWERS: {', '.join(missing)}.",
            expected=sorted(OPERATIONS), observed=sorted(answers),
        )
    if extra:
        raise CheckFailed(
            f"ANSWERS tem chaves que não são operações do exercício: {', '.join(map(str, extra))}.",
            expected=sorted(OPERATIONS), observed=sorted(map(str, answers)),
        )
    for key, label in answers.items():
        if label is None:
            raise StudentProblem(f"Ainda não implementado: a operação {key} ainda vale None.", unwritten="ANSWERS")
        if label not in LABELS:
            raise CheckFailed(
                f"{key}: o rótulo {label!r} não é um dos dois do exercício; use IDEMPOTENTE ou NAO_IDEMPOTENTE.",
                expected=list(LABELS), observed=label,
            )


@EXERCISE.check(
    level=1,
    title="Cada operação classificada pelo efeito no mundo",
    criterion=(
        "Idempotente é a operação que, rodada duas vezes, deixa o mundo como rodada uma vez: "
        "acréscimos (linha nova, e-mail sem chave, chamado novo, contador somado) não são; "
        "leituras, sobrescritas com valor fixo, repetições com a mesma chave e \"garantir que existe\" são."
    ),
)
def answers_judge_by_effect(ctx: Context) -> None:
    answers = ctx.student_answer("ANSWERS")
    if not isinstance(answers, dict):
        raise CheckFailed("ANSWERS deveria ser um dict (veja a verificação anterior).", expected="dict", observed=answers)
    wrong = [key for key, (label, _) in OPERATIONS.items() if answers.get(key) != label]
    if wrong:
        key = wrong[0]
        label, why = OPERATIONS[key]
        others = f" (e mais {quantity(len(wrong) - 1, 'operação', 'operações')} com o rótulo trocado)" if len(wrong) > 1 else ""
        raise CheckFailed(
            f"{key}: {why}{others}",
            expected=label, observed=answers.get(key),
        )
