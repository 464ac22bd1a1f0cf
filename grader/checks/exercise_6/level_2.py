"""Level 2: ``verify_resume`` approves the reference harness and rejects each seeded defect."""
from __future__ import annotations

from typing import Any

from grader.checks.exercise_6.fixtures import EXERCISE, is_harness
from grader.checks.framework import CheckFailed, Context, Fixture, StudentProblem, show


def verdict_of(ctx: Context, name: str) -> list[str]:
    """The student's verify_resume on one harness (memoized): the list of problems it found."""

    def compute() -> list[str]:
        from grader.buggy_harnesses import make_harness

        verify = ctx.student_function("verify_resume")
        harness = make_harness(name, shown_as="harness sob teste")  # the real name stays hidden

        def attempt() -> Any:
            try:
                return verify(harness)
            except AssertionError as error:  # an assert that fails is a problem found
                return [f"AssertionError: {error}" if str(error) else "AssertionError"]

        attempt.__name__ = "verify_resume"
        try:
            found = ctx.call(attempt)
        finally:
            harness.cleanup()
        if found is None:
            raise StudentProblem(
                "verify_resume devolveu None: devolva a lista de problemas encontrados ([] quando o harness "
                "passou em tudo). Esqueceu o return?"
            )
        if not isinstance(found, (list, tuple)):
            raise StudentProblem(
                f"verify_resume deveria devolver uma lista de problemas (textos), mas devolveu "
                f"{type(found).__name__}: {show(found, 120)}."
            )
        return [str(item) for item in found]

    return ctx.memo(f"verify:{name}", compute)


def silent_defects() -> list[str]:
    from grader.buggy_harnesses import defects

    return [name for name, defect in defects().items() if defect.completes]


def catches_a_silent_defect(ctx: Context) -> bool:
    """Does the verification reject at least one defect under which every run ends completed?"""
    for name in silent_defects():
        try:
            if verdict_of(ctx, name):
                return True
        except StudentProblem:
            continue
    return False


CANNOT_FAIL = (
    "Sua verificação não reprovou nenhum dos harnesses defeituosos em que a execução termina "
    "`completed` (e-mail duplicado, recibo antes da execução, contadores zerados...). Uma verificação "
    "que não consegue falhar não ganha nada: o nível 2 fica em zero até ela pegar pelo menos um "
    "deles. Conferir só que a execução terminou não basta; olhe o mundo e os arquivos."
)


def require_reference_approved(ctx: Context) -> None:
    found = verdict_of(ctx, "reference")
    if found:
        shown = "; ".join(found[:3]) + (f" (e mais {len(found) - 3})" if len(found) > 3 else "")
        raise CheckFailed(
            "Sua verificação reprovou o harness de referência, que está certo. Antes de pegar defeitos, ela "
            f"precisa aprovar um harness sem defeito. Problemas que ela apontou: {shown}",
            expected="[] no harness de referência", observed=show(found, 400),
        )


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=lambda fixture: is_harness(fixture) and fixture.expect.get("verdict") == "aprovar",
    title="A verificação aprova o harness de referência (e consegue falhar)",
    criterion=(
        "verify_resume(harness) devolve [] para o harness de referência, e reprova pelo menos um harness "
        "defeituoso em que a execução termina completed: uma verificação que sempre aprova, ou que só "
        "confere que a execução terminou, fica com zero no nível."
    ),
)
def approves_the_reference(ctx: Context, fixture: Fixture) -> None:
    require_reference_approved(ctx)
    if not catches_a_silent_defect(ctx):
        raise CheckFailed(CANNOT_FAIL, expected="pelo menos um defeito silencioso reprovado",
                          observed="nenhum reprovado")


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=lambda fixture: is_harness(fixture) and fixture.expect.get("verdict") == "reprovar",
    title="A verificação reprova o harness defeituoso",
    criterion=(
        "verify_resume devolve pelo menos um problema para este harness defeituoso, aprova o de "
        "referência e reprova algum defeito em que a execução termina completed."
    ),
)
def rejects_the_defect(ctx: Context, fixture: Fixture) -> None:
    from grader.buggy_harnesses import defects

    defect = defects()[fixture.data["harness"]]
    found = verdict_of(ctx, defect.name)
    require_reference_approved(ctx)
    if not catches_a_silent_defect(ctx):
        raise CheckFailed(CANNOT_FAIL, expected="pelo menos um defeito silencioso reprovado",
                          observed="nenhum reprovado")
    if not found:
        raise CheckFailed(
            f"Sua verificação aprovou um harness com defeito. O defeito: {defect.description} "
            f"Como ele aparece: {defect.symptom}",
            expected="pelo menos um problema", observed="[] (aprovado)",
        )
