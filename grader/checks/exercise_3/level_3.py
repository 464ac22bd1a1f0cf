"""Level 3, the transfer case: the SMS agent's ``reconcile_sms(cp, gateway)``. Its gateway has no
idempotency key but answers a lookup by the sender's own reference (the tool_use_id), so a
pending send_sms is neither repeated blind nor answered with a doubt the gateway can resolve."""
from __future__ import annotations

import copy
from dataclasses import dataclass

from grader.checks.exercise_3.fixtures import EXERCISE, call_by_id, ids_expecting, is_sms, pending_calls
from grader.checks.exercise_3.level_2 import judge_answer, judge_cleared, judge_counters, judge_history
from grader.checks.exercise_3.reconcile_probe import ReconcileRun, missing_result_message, result_for
from grader.checks.exercise_3.wording import unknown_outcome_message, wording_problem
from grader.checks.framework import CheckFailed, Context, Fixture, StudentProblem, block_text, show
from grader.core.plural import quantity


@dataclass
class SmsRun(ReconcileRun):
    gateway: object = None        # the SmsGateway the student's code was given
    escaped: str = ""             # the exception that left reconcile_sms, if one did


def sms_reconciled(ctx: Context, fixture: Fixture) -> SmsRun:
    """The student's reconcile_sms, run once per SMS scene on a fresh gateway and instrumented tools."""
    from grader.checks.exercise_3.sms import gateway_of

    def run() -> SmsRun:
        reconcile_sms = ctx.student_function("reconcile_sms")
        checkpoint = fixture.checkpoint()
        gateway = gateway_of(fixture.data)
        with ctx.tools(fixture, "reconcile_sms") as spy:
            emails_before, tickets_before = len(spy.emails()), len(spy.tickets())
            returned, problem = ctx.call_or_problem(reconcile_sms, checkpoint, gateway)
            emails_after, tickets_after = len(spy.emails()), len(spy.tickets())
        if problem is not None:
            if "SmsLookupError" in problem.message:
                raise StudentProblem(
                    "A consulta ao gateway falhou (SmsLookupError) e reconcile_sms deixou a exceção escapar: "
                    "a retomada inteira pararia ali, com a chamada ainda órfã. Capture o erro da consulta e "
                    "responda a essa chamada com is_error: sem resposta do gateway, o desfecho é desconhecido.",
                    observed=problem.message,
                )
            raise problem
        if returned is None:
            raise StudentProblem(
                "reconcile_sms devolveu None: ela deve devolver o checkpoint reconciliado (return cp)."
            )
        if not isinstance(returned, dict) or not isinstance(returned.get("messages"), list):
            raise StudentProblem(
                f"reconcile_sms deveria devolver o checkpoint (um dict com messages), mas devolveu {show(returned, 120)}."
            )
        return SmsRun(
            before=copy.deepcopy(fixture.data["checkpoint"]), after=copy.deepcopy(returned), calls=list(spy.calls),
            emails_before=emails_before, emails_after=emails_after,
            tickets_before=tickets_before, tickets_after=tickets_after, gateway=gateway,
        )

    return ctx.memo(f"reconcile_sms:{fixture.name}", run)


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=is_sms,
    title="reconcile_sms responde a cada chamada pendente do agente de SMS, como o reconcile",
    criterion=(
        "Uma única mensagem user com um tool_result por chamada pendente (ids casados, resultados primeiro), "
        "o histórico intacto, pending_tool_use em None, turns e tokens_used como estavam, e a conversa "
        "aceita pela API."
    ),
)
def sms_answers_every_call(ctx: Context, fixture: Fixture) -> None:
    from grader.checks.conversation import require_api_accepts

    run = sms_reconciled(ctx, fixture)
    pending = pending_calls(fixture)
    judge_history(run, pending, "reconcile_sms")
    judge_answer(run, pending, "reconcile_sms")
    judge_cleared(run)
    judge_counters(run, "reconcile_sms")
    require_api_accepts("a conversa retomada", run.after["messages"])


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=is_sms,
    title="Um send_sms pendente é confirmado pela referência, nunca adivinhado",
    criterion=(
        "Para cada send_sms pendente, reconcile_sms consulta o gateway pela referência (o tool_use_id): "
        "achou → tool_result sem is_error com o sid da mensagem, sem reenviar; não achou → envia uma vez, com "
        "reference igual ao tool_use_id, e entrega o sid novo; a consulta falhou → não envia e responde is_error "
        "com desfecho desconhecido e pedido de conferir. Uma mensagem igual com outra referência não confirma "
        "nada. As outras chamadas seguem a regra da lição: leitura roda de novo, o resto recebe is_error."
    ),
)
def sms_confirmed_not_guessed(ctx: Context, fixture: Fixture) -> None:
    run = sms_reconciled(ctx, fixture)
    gateway = run.gateway
    for tool_use_id in ids_expecting(fixture, "confirmed"):
        call = call_by_id(fixture, tool_use_id)
        resent = [m for m in gateway.sent if m["to"] == call["input"]["to"]]
        original = next(m for m in fixture.data["gateway"]["messages"] if m.get("reference") == tool_use_id)
        if resent:
            raise CheckFailed(
                f"reconcile_sms reenviou o SMS de {tool_use_id} para {call['input']['to']}, mas o gateway já tinha "
                f"essa mensagem ({original['sid']}, referência {tool_use_id}): o gateway não tem chave de idempotência, "
                "cada send é um SMS novo. É o e-mail duplicado do incidente, agora por SMS. Consulte "
                "gateway.find(tool_use_id) antes de enviar.",
                expected="0 envios", observed=quantity(len(resent), "envio", "envios"),
            )
        block = result_for(run, tool_use_id)
        if block is None:
            raise CheckFailed(missing_result_message(run, tool_use_id), expected="tool_result", observed="nenhum")
        text = block_text(block.get("content")) or ""
        if block.get("is_error"):
            raise CheckFailed(
                f"O tool_result de {tool_use_id} diz que o desfecho é desconhecido (is_error), mas o gateway sabe: "
                f"gateway.find({tool_use_id!r}) devolve a mensagem {original['sid']}. Admitir a dúvida é para quando não "
                "há como saber; aqui basta perguntar. Responda sem is_error, com o sid da mensagem confirmada.",
                expected=f"tool_result sem is_error citando {original['sid']}", observed=show(text, 120),
            )
        if original["sid"] not in text:
            raise CheckFailed(
                f"O tool_result de {tool_use_id} não cita o SMS que o gateway confirmou ({original['sid']}): "
                "entregue ao modelo o que o envio teria devolvido (sms_result da mensagem encontrada).",
                expected=original["sid"], observed=show(text, 120),
            )
    for tool_use_id in ids_expecting(fixture, "send"):
        call = call_by_id(fixture, tool_use_id)
        to = call["input"]["to"]
        sends = [m for m in gateway.sent if m["to"] == to]
        lookalike = next((m for m in fixture.data["gateway"]["messages"]
                          if m["to"] == to and m["text"] == call["input"]["text"]), None)
        if not sends:
            if lookalike is not None:
                raise CheckFailed(
                    f"O SMS de {tool_use_id} nunca saiu: gateway.find({tool_use_id!r}) não acha nada. Há, sim, um SMS "
                    f"igual para {to} ({lookalike['sid']}), mas com a referência {lookalike['reference']!r}: é de outra "
                    "execução. Só a sua referência, o tool_use_id, confirma um envio; texto e destinatário iguais são "
                    "um palpite. Envie o SMS agora, uma vez.",
                    expected="1 envio", observed="0 envios",
                )
            raise CheckFailed(
                f"O SMS de {tool_use_id} nunca saiu (gateway.find({tool_use_id!r}) devolve []), e reconcile_sms não o "
                "enviou: o modelo pediu o envio e o paciente ficaria sem o lembrete. Quando a consulta prova que não "
                "houve envio, enviar agora, uma vez, não duplica nada.",
                expected="1 envio", observed="0 envios",
            )
        if len(sends) > 1:
            raise CheckFailed(
                f"reconcile_sms enviou {len(sends)} SMS para {to} ({tool_use_id}); um basta.",
                expected="1 envio", observed=f"{len(sends)} envios",
            )
        sent = sends[0]
        if sent["reference"] != tool_use_id:
            raise CheckFailed(
                f"O SMS de {tool_use_id} saiu com reference={sent['reference']!r}: o envio leva o tool_use_id como "
                "referência, senão, numa próxima queda, nenhuma consulta o confirmaria e ele sairia de novo.",
                expected=tool_use_id, observed=sent["reference"],
            )
        if sent["text"] != call["input"]["text"]:
            raise CheckFailed(
                f"O SMS de {tool_use_id} saiu com outro texto: envie a entrada da chamada pendente, como está.",
                expected=call["input"]["text"], observed=sent["text"],
            )
        block = result_for(run, tool_use_id)
        if block is None:
            raise CheckFailed(missing_result_message(run, tool_use_id), expected="tool_result", observed="nenhum")
        text = block_text(block.get("content")) or ""
        if block.get("is_error") or sent["sid"] not in text:
            raise CheckFailed(
                f"O SMS de {tool_use_id} saiu agora ({sent['sid']}), mas o tool_result não diz isso: sem is_error e "
                "com o sid do envio (sms_result da mensagem que send devolveu).",
                expected=f"tool_result sem is_error citando {sent['sid']}", observed=show(text, 120),
            )
    strangers = [m for m in gateway.sent if m["to"] not in
                 {call_by_id(fixture, i)["input"]["to"] for i in ids_expecting(fixture, "send")}]
    if strangers:
        who = ", ".join(sorted({m["to"] for m in strangers}))
        down = " A consulta não respondeu: sem resposta, não se sabe se o SMS saiu, e enviar de novo pode " \
               "duplicar." if fixture.data["gateway"]["lookup"] == "down" else ""
        raise CheckFailed(
            f"reconcile_sms enviou SMS que não devia ({who}).{down} Só se envia o que a consulta provou que não saiu.",
            expected="nenhum envio além dos que a consulta provou faltar",
            observed=quantity(len(strangers), "envio a mais", "envios a mais"),
        )
    for tool_use_id in ids_expecting(fixture, "is_error"):
        call = call_by_id(fixture, tool_use_id)
        if [c for c in run.calls if c.name == call["name"]]:
            raise CheckFailed(
                f"reconcile_sms reexecutou `{call['name']}` ({tool_use_id}): fora de READ_ONLY_TOOLS e sem como "
                "consultar o efeito, a chamada não roda de novo.",
                expected="0 execuções", observed="executada",
            )
        block = result_for(run, tool_use_id)
        if block is None:
            raise CheckFailed(missing_result_message(run, tool_use_id), expected="tool_result", observed="nenhum")
        if block.get("is_error") is not True:
            cause = "a consulta ao gateway falhou" if call["name"] == "send_sms" else \
                f"`{call['name']}` não tem consulta que confirme o efeito"
            raise CheckFailed(
                f"O tool_result de {tool_use_id} ({call['name']}) precisa de \"is_error\": True: {cause}, então o "
                "desfecho é desconhecido.",
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
        runs = [c for c in run.calls if c.name == call["name"] and c.input == call["input"]]
        reference = ctx.reference_tool_result(fixture, call["name"], call["input"])
        block = result_for(run, tool_use_id)
        if len(runs) != 1 or block is None or block_text(block.get("content")) != reference["content"]:
            raise CheckFailed(
                f"`{call['name']}` ({tool_use_id}) é somente leitura: roda de novo uma vez e o tool_result leva o "
                "resultado real (content e is_error de execute_tool).",
                expected=f"{call['name']} executada 1 vez, com o resultado real",
                observed=f"{quantity(len(runs), 'vez', 'vezes')}; " + (show(block.get("content"), 80) if block else "sem tool_result"),
            )
    if run.emails_after != run.emails_before or run.tickets_after != run.tickets_before:
        raise CheckFailed(
            "reconcile_sms mudou a caixa de saída ou os chamados: nenhuma ferramenta de alto impacto roda na "
            "reconciliação.", expected="nenhum efeito novo", observed="efeito novo",
        )
    if not gateway.lookups and (ids_expecting(fixture, "confirmed") or ids_expecting(fixture, "send")):
        raise CheckFailed(
            "reconcile_sms não consultou o gateway (gateway.find): acertou sem perguntar?",
            expected="uma consulta por send_sms pendente", observed="nenhuma",
        )
