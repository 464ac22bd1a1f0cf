"""Level 1: each item classified as memory or run state."""
from __future__ import annotations

from grader.checks.exercise_1.fixtures import EXERCISE, LABELS, normalized_label
from grader.checks.framework import CheckFailed, Context, Fixture, is_kind
from grader.core.plural import quantity


def student_classification(ctx: Context) -> dict:
    answer = ctx.student_answer("CLASSIFICATION")
    if not isinstance(answer, dict):
        raise CheckFailed(
            f"CLASSIFICATION deveria ser um dicionário item -> \"memória\" ou \"estado de execução\", "
            f"mas é {type(answer).__name__}.",
            expected="um dict", observed=answer,
        )
    return answer


@EXERCISE.check(
    level=1,
    per_fixture=True,
    applies=is_kind("classification"),
    title="Todos os itens classificados",
    criterion=(
        "CLASSIFICATION tem uma entrada para cada item da lista, e cada valor é exatamente "
        "\"memória\" ou \"estado de execução\"."
    ),
)
def every_item_classified(ctx: Context, fixture: Fixture) -> None:
    answer = student_classification(ctx)
    items = fixture.data["items"]
    missing = [key for key in items if key not in answer]
    if missing:
        raise CheckFailed(
            f"Faltou classificar {quantity(len(missing), 'item', 'itens')}: {', '.join(missing)}. Copie as chaves da "
            "lista ITEMS, sem mudar a grafia.",
            expected=sorted(items), observed=sorted(answer),
        )
    invalid = {key: answer[key] for key in items if normalized_label(answer[key]) is None}
    if invalid:
        raise CheckFailed(
            "Cada valor precisa ser \"memória\" ou \"estado de execução\"; estes não são: "
            + ", ".join(f"{key}={value!r}" for key, value in invalid.items()) + ".",
            expected=list(LABELS), observed=invalid,
        )


@EXERCISE.check(
    level=1,
    per_fixture=True,
    applies=is_kind("classification"),
    title="Cada item no grupo certo",
    criterion=(
        "Memória é o que o modelo já viu (inclusive notas em arquivo, como um NOTES.md); "
        "estado de execução é o que o processo segura para continuar (messages, turns, "
        "tokens_used, chamadas sem resultado). Cada item coincide com o gabarito."
    ),
)
def classification_matches(ctx: Context, fixture: Fixture) -> None:
    answer = student_classification(ctx)
    items = fixture.data["items"]
    wrong = [key for key in items if key in answer and normalized_label(answer[key]) not in (None, items[key]["answer"])]
    unusable = [key for key in items if key not in answer or normalized_label(answer[key]) is None]
    if unusable:
        raise CheckFailed(
            f"Há itens sem classificação válida ({', '.join(unusable)}); resolva primeiro a verificação "
            "\"Todos os itens classificados\".",
            expected=f"{len(items)} itens classificados", observed=f"{len(items) - len(unusable)} válidos",
        )
    if wrong:
        reasons = " ".join(f"[{key}] {items[key]['why']}" for key in wrong)
        raise CheckFailed(
            f"{len(wrong)} de {quantity(len(items), 'item', 'itens')} no grupo trocado: {', '.join(wrong)}. {reasons}",
            expected=f"{len(items)} de {len(items)} certos", observed=f"{len(items) - len(wrong)} certos",
        )
