"""Level 4, the turn as one unit: every high-impact call of a turn passes the approval gate before
any of them runs, so a call left pending holds the whole turn with nothing done in the world."""
from __future__ import annotations

from grader.checks.exercise_4.fixtures import EXERCISE
from grader.checks.exercise_4.probes import Raised
from grader.checks.exercise_4.turn_probe import EMAIL, ENSURE, READ, approve_all, results_by_id, run_turn
from grader.checks.framework import CheckFailed, Context, show
from grader.core.plural import quantity


@EXERCISE.check(
    level=4,
    title="O turno inteiro passa pela válvula antes de qualquer efeito",
    criterion=(
        "Num turno com send_email, read_file e ensure_ticket, todas as consultas à válvula (uma por chamada "
        "de alto impacto sem recibo) acontecem antes da primeira ferramenta de alto impacto executar."
    ),
)
def whole_turn_approved_before_any_effect(ctx: Context) -> None:
    turn = [EMAIL, READ, ENSURE]
    observed = run_turn(ctx, "n4-turno-inteiro", turn, approver=approve_all)
    results_by_id(observed, turn)
    events = observed["events"]
    approvals = [i for i, e in enumerate(events) if e[0] == "approval"]
    effects = [i for i, e in enumerate(events) if e[0] == "execute" and e[1] != READ["name"]]
    if len(approvals) < 2 or not effects:
        raise CheckFailed(
            "Num turno com send_email e ensure_ticket aprovadas, a válvula deveria ser consultada para as duas, "
            "e as duas deveriam executar.",
            expected="2 consultas, 2 execuções", observed={"consultas": len(approvals), "execuções": len(effects)},
        )
    if approvals[-1] > effects[0]:
        first, late = events[effects[0]][1], events[approvals[-1]][1]
        raise CheckFailed(
            f"`{first}` executou antes de `{late}` passar pela válvula: a aprovação foi pedida chamada por "
            "chamada, como na lição. Aqui o turno é uma unidade: primeiro decida todas as chamadas (livro-razão, "
            "depois a válvula), e só então execute as aprovadas, na ordem.",
            expected="todas as consultas antes da primeira execução",
            observed=" -> ".join(f"{e[0]} {e[1]}" for e in events),
        )


@EXERCISE.check(
    level=4,
    title="Uma chamada pendente segura o turno inteiro",
    criterion=(
        "Com send_email aprovada e ensure_ticket pendente no mesmo turno, run_tool_uses levanta "
        "WaitingForApproval com o pedido de ensure_ticket e nada executa: nenhum e-mail, nenhum chamado."
    ),
)
def a_pending_call_holds_the_whole_turn(ctx: Context) -> None:
    from harness.approval import PENDING, approve, input_hash

    def decide(call):
        return PENDING if call["name"] == ENSURE["name"] else approve()

    observed = run_turn(ctx, "n4-turno-pendente", [EMAIL, ENSURE], approver=decide, waiting_ok=True)
    ran = [e[1] for e in observed["events"] if e[0] == "execute"]
    if observed["emails"] or ran:
        raise CheckFailed(
            f"ensure_ticket ficou pendente, mas {quantity(observed['emails'], 'e-mail saiu', 'e-mails saíram')} "
            f"antes (executou: {', '.join(ran) or 'nada'}): a pessoa que aprova ainda não viu o turno inteiro. "
            "Consulte a válvula para todas as chamadas primeiro; se alguma ficar pendente, levante "
            "WaitingForApproval antes de executar qualquer uma.",
            expected="0 e-mails, 0 execuções", observed={"e-mails": observed["emails"], "executou": ran},
        )
    returned = observed["returned"]
    if not isinstance(returned, Raised):
        raise CheckFailed(
            "Com ensure_ticket pendente, run_tool_uses deveria levantar WaitingForApproval, mas devolveu "
            f"{show(returned, 160)}.",
            expected="WaitingForApproval", observed=returned,
        )
    request = getattr(returned.error, "pending_approval", None)
    if not isinstance(request, dict) or request.get("id") != ENSURE["id"] \
            or request.get("input_hash") != input_hash(ENSURE["name"], ENSURE["input"]):
        raise CheckFailed("WaitingForApproval deveria carregar o pedido da chamada pendente, ensure_ticket.",
                          expected={"id": ENSURE["id"]}, observed=request)
