"""Level 1: ``resume_action`` decides, per pending call, between running it again and answering with an error."""
from __future__ import annotations

from grader.checks.exercise_3.fixtures import ACTIONS, EXERCISE, crash_scene, high_impact_tools, pending_calls
from grader.checks.exercise_3.messages import UNCLASSIFIED_RULE
from grader.checks.framework import CheckFailed, Context, Fixture


@EXERCISE.check(
    level=1,
    per_fixture=True,
    applies=crash_scene,
    title="resume_action decide a ação de retomada",
    criterion=(
        "Cada chamada pendente recebe \"rerun\" (ferramenta em READ_ONLY_TOOLS) ou \"is_error\" "
        "(qualquer outra: de alto impacto ou sem classificação); {} quando nada está pendente. A função só "
        "decide: não executa ferramentas nem altera o checkpoint."
    ),
)
def resume_action_decides(ctx: Context, fixture: Fixture) -> None:
    resume_action = ctx.student_function("resume_action")
    checkpoint = fixture.checkpoint()
    with ctx.tools(fixture, "resume_action") as spy:
        observed = ctx.call(resume_action, checkpoint)
    expected = fixture.expect["resume_action"]
    if spy.calls:
        names = ", ".join(sorted({call.name for call in spy.calls}))
        raise CheckFailed(
            f"resume_action executou {names}: ela só decide o que fazer; quem executa é o reconcile.",
            expected="nenhuma ferramenta executada", observed=f"executou {names}",
        )
    if observed is None:
        raise CheckFailed(
            "resume_action devolveu None: devolva um dict (vazio, {}, quando nada está pendente).",
            expected=expected, observed=observed,
        )
    if not isinstance(observed, dict):
        raise CheckFailed(
            f"resume_action deveria devolver um dict tool_use_id -> ação, mas devolveu {type(observed).__name__}.",
            expected=expected, observed=observed,
        )
    if observed != expected:
        raise CheckFailed(diagnose_actions(fixture, expected, observed), expected=expected, observed=observed)
    if checkpoint != fixture.data["checkpoint"]:
        raise CheckFailed(
            "resume_action alterou o checkpoint que recebeu: ela só deve ler.",
            expected="checkpoint intacto", observed="checkpoint modificado",
        )


def diagnose_actions(fixture: Fixture, expected: dict, observed: dict) -> str:
    if not expected:
        return "Nada está pendente (pending_tool_use é None): não há o que reconciliar, devolva {}."
    names = {call["id"]: call["name"] for call in pending_calls(fixture)}
    for key in observed:
        if key not in expected:
            return (
                f"A chave {key!r} não é o id de nenhuma chamada pendente: as chaves são os "
                f"tool_use_id de pending_tool_use ({', '.join(expected)})."
            )
    for key, action in expected.items():
        if key not in observed:
            return f"Faltou decidir a chamada {key} ({names[key]})."
        got = observed[key]
        if got == action:
            continue
        if got not in ACTIONS:
            return f"Ação desconhecida {got!r} para {key}: use \"rerun\" ou \"is_error\"."
        if action == "rerun":
            return (
                f"`{names[key]}` ({key}) é somente leitura: executar de novo não muda nada no mundo, "
                "então a ação é \"rerun\"."
            )
        if names[key] not in high_impact_tools():
            return f"`{names[key]}` ({key}) {UNCLASSIFIED_RULE}"
        return (
            f"`{names[key]}` ({key}) é de alto impacto e não há registro de que rodou: reexecutar "
            "pode repetir o efeito. A ação é \"is_error\"."
        )
    return "O resultado difere do esperado."
