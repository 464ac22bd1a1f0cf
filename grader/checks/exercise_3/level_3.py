"""Level 3, the transfer case: the calendar agent's ``reconcile_mcp(cp, server)``. Its tools come
from a server that declares each tool's behaviour (MCP annotations) instead of the lesson's
READ_ONLY_TOOLS, so the lesson's question, "is repeating it harmless?", must be asked of the
declaration: read-only or idempotent runs again; anything else, or undeclared, gets is_error."""
from __future__ import annotations

import copy
from dataclasses import dataclass

from grader.checks.exercise_3.fixtures import EXERCISE, call_by_id, ids_expecting, is_mcp, pending_calls
from grader.checks.exercise_3.level_2 import judge_answer, judge_cleared, judge_counters, judge_history
from grader.checks.exercise_3.reconcile_probe import ReconcileRun, missing_result_message, result_for
from grader.checks.exercise_3.wording import unknown_outcome_message, wording_problem
from grader.checks.framework import CheckFailed, Context, Fixture, StudentProblem, block_text, show
from grader.core.plural import quantity


@dataclass
class McpRun(ReconcileRun):
    server: object = None  # the CalendarServer the student's code was given


def mcp_reconciled(ctx: Context, fixture: Fixture) -> McpRun:
    """The student's reconcile_mcp, run once per calendar scene on a fresh server and instrumented tools."""
    from grader.checks.exercise_3.calendar_server import server_of

    def run() -> McpRun:
        reconcile_mcp = ctx.student_function("reconcile_mcp")
        checkpoint = fixture.checkpoint()
        server = server_of(fixture.data)
        with ctx.tools(fixture, "reconcile_mcp") as spy:
            returned = ctx.call(reconcile_mcp, checkpoint, server)
        if returned is None:
            raise StudentProblem("reconcile_mcp devolveu None: ela deve devolver o checkpoint reconciliado (return cp).")
        if not isinstance(returned, dict) or not isinstance(returned.get("messages"), list):
            raise StudentProblem(
                f"reconcile_mcp deveria devolver o checkpoint (um dict com messages), mas devolveu {show(returned, 120)}."
            )
        return McpRun(
            before=copy.deepcopy(fixture.data["checkpoint"]), after=copy.deepcopy(returned), calls=list(spy.calls),
            emails_before=0, emails_after=0, tickets_before=0, tickets_after=0, server=server,
        )

    return ctx.memo(f"reconcile_mcp:{fixture.name}", run)


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=is_mcp,
    title="reconcile_mcp responde a cada chamada pendente do agente de agenda, como o reconcile",
    criterion=(
        "Uma única mensagem user com um tool_result por chamada pendente (ids casados, resultados primeiro), "
        "o histórico intacto, pending_tool_use em None, turns e tokens_used como estavam, e a conversa "
        "aceita pela API."
    ),
)
def mcp_answers_every_call(ctx: Context, fixture: Fixture) -> None:
    from grader.checks.conversation import require_api_accepts

    run = mcp_reconciled(ctx, fixture)
    pending = pending_calls(fixture)
    judge_history(run, pending, "reconcile_mcp")
    judge_answer(run, pending, "reconcile_mcp")
    judge_cleared(run)
    judge_counters(run, "reconcile_mcp")
    require_api_accepts("a conversa retomada", run.after["messages"])


def _declared(name: str) -> str:
    from grader.checks.exercise_3.calendar_server import hints_of

    hints = hints_of(name)
    if hints is None:
        return f"`{name}` não está em server.tools(): o servidor não declara nada sobre ela"
    return f"`{name}` declara readOnlyHint={hints['readOnlyHint']}, idempotentHint={hints['idempotentHint']}, " \
           f"destructiveHint={hints['destructiveHint']}"


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=is_mcp,
    title="Roda de novo só o que o servidor declara inofensivo de repetir",
    criterion=(
        "Uma chamada pendente cuja ferramenta o servidor declara readOnlyHint true ou idempotentHint true roda "
        "de novo uma vez, por server.call_tool, e o tool_result leva o resultado real; qualquer outra (que "
        "não é idempotente, que não declara annotations e fica com os padrões do MCP, ou que o servidor nem "
        "lista) não roda e recebe is_error com desfecho desconhecido e pedido de conferir."
    ),
)
def mcp_repeats_only_what_is_declared_safe(ctx: Context, fixture: Fixture) -> None:
    from grader.checks.exercise_3.calendar_server import DEFAULTS, TOOLS, hints_of, server_of

    run = mcp_reconciled(ctx, fixture)
    server = run.server
    for tool_use_id in ids_expecting(fixture, "is_error"):
        call = call_by_id(fixture, tool_use_id)
        repeated = [c for c in server.calls if c[0] == call["name"]]
        executed = [c for c in run.calls if c.name == call["name"]]
        hints = hints_of(call["name"])
        if repeated or executed:
            if hints is None:
                why = ("o servidor nem lista essa ferramenta em tools(): sem declaração, não há como saber se "
                       "repetir é seguro")
            elif "annotations" not in next(tool for tool in TOOLS if tool["name"] == call["name"]):
                why = (f"o servidor não declara annotations para ela, e aí valem os padrões do MCP ({DEFAULTS}): "
                       "nem somente leitura, nem idempotente. Uma dica que falta não é um sim")
            elif hints["destructiveHint"] is False:
                why = ("destructiveHint false só diz que ela acrescenta em vez de apagar; acrescentar de novo é "
                       "um evento a mais. Quem diz que repetir é inofensivo é readOnlyHint ou idempotentHint")
            else:
                why = "ela não é somente leitura nem idempotente: repetir repete o efeito"
            raise CheckFailed(
                f"reconcile_mcp rodou de novo `{call['name']}` ({tool_use_id}), mas {why}. Sem registro de que "
                "ela rodou, a resposta é is_error.",
                expected=f"{call['name']} executada 0 vezes",
                observed=quantity(len(repeated) + len(executed), "vez", "vezes"),
            )
        block = result_for(run, tool_use_id)
        if block is None:
            raise CheckFailed(missing_result_message(run, tool_use_id), expected="tool_result", observed="nenhum")
        if block.get("is_error") is not True:
            raise CheckFailed(
                f"O tool_result de {tool_use_id} ({call['name']}) precisa de \"is_error\": True: {_declared(call['name'])}, "
                "então não se sabe se ela agiu.",
                expected=True, observed=block.get("is_error", "<ausente>"),
            )
        text = block_text(block.get("content")) or ""
        problem_ = wording_problem(text)
        if problem_ is not None:
            raise CheckFailed(
                unknown_outcome_message(problem_, f"{tool_use_id} ({call['name']})", text),
                expected="um texto que diga que o desfecho é desconhecido e peça para conferir antes de repetir",
                observed=text,
            )
    for tool_use_id in ids_expecting(fixture, "rerun"):
        call = call_by_id(fixture, tool_use_id)
        runs = [c for c in server.calls if c[0] == call["name"] and c[1] == call["input"]]
        block = result_for(run, tool_use_id)
        if not runs:
            via_harness = [c for c in run.calls if c.name == call["name"]]
            if via_harness:
                raise CheckFailed(
                    f"reconcile_mcp mandou `{call['name']}` ({tool_use_id}) para o execute_tool do harness, que não "
                    "conhece as ferramentas da agenda: quem executa é o servidor, server.call_tool(nome, entrada).",
                    expected="server.call_tool chamado 1 vez", observed="execute_tool",
                )
            flagged = " Ela recebeu is_error, como se fosse perigosa." if block and block.get("is_error") else ""
            raise CheckFailed(
                f"`{call['name']}` ({tool_use_id}) não rodou de novo, mas {_declared(call['name'])}: repetir não "
                "muda nada (é a pergunta da lição, \"repetir é inofensivo?\", feita à declaração do servidor, e não a "
                "READ_ONLY_TOOLS). Rode de novo com server.call_tool e entregue o resultado real." + flagged,
                expected=f"{call['name']} executada 1 vez", observed="0 vezes",
            )
        if len(runs) > 1:
            raise CheckFailed(
                f"`{call['name']}` ({tool_use_id}) rodou {len(runs)} vezes; uma basta.",
                expected="1 vez", observed=f"{len(runs)} vezes",
            )
        reference = server_of(fixture.data).call_tool(call["name"], call["input"])
        if block is None:
            raise CheckFailed(missing_result_message(run, tool_use_id), expected=reference["content"], observed="nenhum")
        if block_text(block.get("content")) != reference["content"] or bool(block.get("is_error")) != reference["is_error"]:
            raise CheckFailed(
                f"O tool_result de {tool_use_id} não traz o resultado real de `{call['name']}`: o content e o is_error "
                "que server.call_tool devolveu.",
                expected=reference["content"], observed=show(block.get("content"), 120),
            )
    unsafe = [c for c in server.calls if c[0] not in {call_by_id(fixture, i)["name"] for i in ids_expecting(fixture, "rerun")}
              and not (hints_of(c[0]) or {}).get("readOnlyHint")]
    if unsafe:
        raise CheckFailed(
            f"reconcile_mcp chamou {', '.join(sorted({c[0] for c in unsafe}))} no servidor sem que nenhuma chamada "
            "pendente pedisse: a reconciliação só repete o que estava pendente e é inofensivo de repetir.",
            expected="nenhuma chamada a mais", observed=quantity(len(unsafe), "chamada a mais", "chamadas a mais"),
        )
