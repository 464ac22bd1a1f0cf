"""Level 3: ``repair_run`` diagnoses a crashed run folder and repairs it; its ``reconcile`` closes every
pending call the way its ledger record says."""
from __future__ import annotations

from grader.checks.exercise_4.fixtures import EXERCISE
from grader.checks.exercise_4.reconcile_probe import (
    answer_block,
    executions_of,
    pending_calls,
    reconciled,
    ways,
)
from grader.checks.framework import CheckFailed, Context, Fixture, block_text, content_blocks, show
from grader.core.plural import quantity


WAY_MEANING = {
    "reuse": "há recibo committed ou rejected no livro-razão: o desfecho é conhecido",
    "rerun": "é somente leitura e não tem recibo: ler de novo não muda o mundo",
    "confirm": "há intenção (ou unknown) sem recibo e o sistema externo já tem o efeito com a chave",
    "run": "nunca começou (nenhum registro), ou começou e o sistema externo não tem o efeito com a chave",
}


@EXERCISE.check(
    level=3,
    per_fixture=True,
    title="O diagnóstico diz a via de cada chamada pendente, como a pasta estava na queda",
    criterion=(
        "repair_run devolve {tool_use_id: via} com uma entrada por chamada pendente: \"reuse\" (recibo "
        "committed ou rejected), \"rerun\" (somente leitura sem recibo), \"confirm\" (intenção ou unknown "
        "e o efeito já no sistema externo pela chave) ou \"run\" (nunca começou, ou o sistema externo não "
        "tem o efeito). O diagnóstico é da pasta como a queda a deixou, antes de reparar."
    ),
)
def diagnosis_names_each_way(ctx: Context, fixture: Fixture) -> None:
    run = reconciled(ctx, fixture)
    expected = ways(fixture)
    observed = run.diagnosis
    if not isinstance(observed, dict):
        raise CheckFailed("repair_run deveria devolver o diagnóstico, um dict {tool_use_id: via}.",
                          expected=expected, observed=show(observed, 120))
    if expected and not observed:
        raise CheckFailed(
            "O diagnóstico está vazio, mas a queda deixou chamadas pendentes. Depois do reparo, pending_tool_use "
            "já é None e todo efeito tem recibo: diagnostique a pasta como a queda a deixou, antes de reconciliar.",
            expected=expected, observed=observed)
    if sorted(observed) != sorted(expected):
        raise CheckFailed("O diagnóstico deveria ter uma entrada por chamada pendente do checkpoint, e só elas.",
                          expected=sorted(expected), observed=sorted(observed))
    wrong = {key: observed[key] for key in expected if observed[key] != expected[key]}
    if not wrong:
        return
    if len(expected) > 1 and all(way == "reuse" for way in observed.values()) \
            and any(way != "reuse" for way in expected.values()):
        raise CheckFailed(
            "Toda chamada saiu como \"reuse\": o diagnóstico parece ter lido o livro-razão depois do reparo, "
            "quando o reconcile já tinha gravado os recibos. Diagnostique a pasta como a queda a deixou, "
            "antes de reconciliar.", expected=expected, observed=observed)
    key = next(iter(wrong))
    record = (run.ledger_before.get(key) or {}).get("status", "nenhum registro")
    call = next(c for c in pending_calls(fixture) if c["id"] == key)
    late = (" Na queda não havia recibo dela: o diagnóstico leu o livro-razão depois do reparo? Diagnostique "
            "antes de reconciliar.") if observed[key] == "reuse" and record not in ("committed", "rejected") else ""
    raise CheckFailed(
        f"{key} ({call['name']}, no livro-razão: {record}) é \"{expected[key]}\": {WAY_MEANING[expected[key]]}. "
        f"O diagnóstico disse \"{observed[key]}\".{late}",
        expected=expected, observed=observed)


@EXERCISE.check(
    level=3,
    per_fixture=True,
    title="Uma mensagem com um tool_result por chamada pendente; nada mais muda",
    criterion=(
        "reconcile acrescenta UMA mensagem user com um tool_result por chamada pendente, na ordem, "
        "ids casados; as mensagens anteriores ficam; pending_tool_use vira None; turns e "
        "tokens_used seguem; a API aceita a conversa. Sem nada pendente, nada é acrescentado."
    ),
)
def closes_every_pending_call(ctx: Context, fixture: Fixture) -> None:
    from grader.checks.conversation import require_api_accepts

    ctx.student_function("reconcile")  # this check is about reconcile's answer: named first while still a stub
    run = reconciled(ctx, fixture)
    before, after = run.before["messages"], run.after["messages"]
    ids = [call["id"] for call in pending_calls(fixture)]
    if after[: len(before)] != before:
        raise CheckFailed("As mensagens anteriores foram alteradas: reconcile só acrescenta ao fim.",
                          expected="histórico intacto", observed="histórico alterado")
    added = after[len(before):]
    if not ids and added:
        raise CheckFailed("Nada estava pendente, mas reconcile acrescentou mensagens.",
                          expected="nenhuma mensagem nova", observed=added)
    if ids:
        if len(added) != 1:
            raise CheckFailed(
                f"Os tool_result vão juntos numa única mensagem user; reconcile acrescentou {len(added)}.",
                expected="1 mensagem nova", observed=f"{len(added)} mensagens novas",
            )
        message = added[0]
        answered = [b.get("tool_use_id") for b in content_blocks(message, "tool_result")] \
            if isinstance(message, dict) else []
        if message.get("role") != "user" or answered != ids:
            raise CheckFailed(
                "A mensagem nova deveria ser {\"role\": \"user\"} com um tool_result por chamada pendente, "
                "na mesma ordem, cada um com o tool_use_id da chamada.",
                expected=ids, observed={"role": message.get("role"), "tool_use_ids": answered},
            )
    if run.after.get("pending_tool_use", "<ausente>") is not None:
        raise CheckFailed("pending_tool_use deveria voltar a None depois de reconciliar.",
                          expected=None, observed=run.after.get("pending_tool_use", "<ausente>"))
    for key in ("turns", "tokens_used", "task", "version"):
        if run.after.get(key) != run.before[key]:
            raise CheckFailed(f"{key} mudou de {run.before[key]!r} para {run.after.get(key)!r}: reconciliar não é um turno novo.",
                              expected=run.before[key], observed=run.after.get(key))
    require_api_accepts("a conversa retomada", after)


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=lambda fixture: bool(ways(fixture)),
    title="Cada chamada segue a sua via",
    criterion=(
        "Recibo no livro-razão → o resultado registrado volta e nada executa. Somente leitura sem "
        "recibo → reexecuta uma vez. Alto impacto sem recibo e sem intenção (ou com intenção e "
        "nada no sistema externo) → roda uma vez com idempotency_key = tool_use_id. Intenção com "
        "o efeito já no sistema externo → nada executa."
    ),
)
def each_call_takes_its_way(ctx: Context, fixture: Fixture) -> None:
    run = reconciled(ctx, fixture)
    for call in pending_calls(fixture):
        way = ways(fixture)[call["id"]]
        ran = executions_of(run, call)
        block = answer_block(run, call["id"])
        if block is None:
            raise CheckFailed(f"Não achei o tool_result de {call['id']} na mensagem acrescentada.",
                              expected="um tool_result por chamada", observed="sem tool_result")
        text, flagged = block_text(block.get("content")), block.get("is_error") is True
        if way == "reuse":
            recorded = run.ledger_before[call["id"]]
            if ran:
                raise CheckFailed(
                    f"`{call['name']}` ({call['id']}) tinha recibo {recorded['status']} no livro-razão e mesmo "
                    "assim foi executada: é a via 1, reaproveite record[\"result\"] sem executar.",
                    expected="0 execuções", observed=f"{quantity(len(ran), 'execução', 'execuções')}",
                )
            if text != recorded["result"]["content"] or flagged != recorded["result"]["is_error"]:
                raise CheckFailed(
                    f"O tool_result de {call['id']} deveria trazer o resultado registrado no recibo "
                    "(content e is_error de record[\"result\"]).",
                    expected=recorded["result"], observed={"content": block.get("content"), "is_error": block.get("is_error")},
                )
        elif way == "rerun":
            if len(ran) != 1:
                raise CheckFailed(
                    f"`{call['name']}` ({call['id']}) é somente leitura e não tem recibo: reexecute-a uma vez "
                    f"(rodou {quantity(len(ran), 'vez', 'vezes')}).",
                    expected="1 execução", observed=f"{len(ran)}",
                )
            if text != ran[0].result["content"]:
                raise CheckFailed(f"O tool_result de {call['id']} deveria trazer o resultado real da leitura.",
                                  expected=ran[0].result["content"], observed=block.get("content"))
        elif way == "run":
            intent = run.ledger_before.get(call["id"]) is not None
            if not ran:
                reason = ("há só a intenção e o sistema externo não tem efeito com a chave (find_effect devolve "
                          "None): rodar de novo com a mesma chave é seguro") if intent else (
                          "não há registro nenhum no livro-razão: a chamada nunca começou e deve rodar uma vez")
                extra = " Responder is_error, como na lição 3, deixaria a tarefa sem o efeito." if flagged else ""
                raise CheckFailed(f"`{call['name']}` ({call['id']}) não foi executada, mas {reason}.{extra}",
                                  expected="1 execução, com a chave", observed="0 execuções")
            if len(ran) > 1:
                raise CheckFailed(f"`{call['name']}` ({call['id']}) rodou {len(ran)} vezes; uma basta.",
                                  expected="1 execução", observed=f"{len(ran)}")
            if ran[0].idempotency_key != call["id"]:
                raise CheckFailed(
                    f"`{call['name']}` rodou com idempotency_key={ran[0].idempotency_key!r}: passe o "
                    "tool_use_id como chave, para que o sistema externo reconheça uma repetição.",
                    expected=call["id"], observed=ran[0].idempotency_key,
                )
        elif way == "confirm":
            status = run.ledger_before[call["id"]]["status"]
            if ran:
                raise CheckFailed(
                    f"`{call['name']}` ({call['id']}) foi executada de novo, mas havia um registro {status} no "
                    "livro-razão e o efeito já existe no sistema externo com a chave: pergunte antes (find_effect, "
                    "ou confirmed_effect) e só rode o que não aconteceu.",
                    expected="0 execuções", observed=f"{quantity(len(ran), 'execução', 'execuções')}",
                )
            if flagged and status == "unknown":
                raise CheckFailed(
                    f"O registro de {call['id']} no livro-razão era unknown, e o tool_result repetiu o is_error "
                    "dele. unknown não é um desfecho (só committed e rejected são, SETTLED_STATUSES): é uma "
                    "pergunta que ficou sem resposta. Pergunte de novo ao sistema externo (confirmed_effect): "
                    "aqui o efeito está lá, e o recibo vira committed.",
                    expected="efeito confirmado, sem is_error", observed="is_error do registro unknown",
                )
            if flagged:
                raise CheckFailed(
                    f"O efeito de {call['id']} foi confirmado no sistema externo, mas o tool_result diz is_error: "
                    "o modelo acharia que a ação falhou.",
                    expected=False, observed=True,
                )


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=lambda fixture: any(w in ("run", "confirm") for w in ways(fixture).values()),
    title="O livro-razão termina com o recibo de cada efeito",
    criterion=(
        "Depois de reconcile, toda chamada de alto impacto que rodou ou foi confirmada tem um "
        "recibo committed em effects.json (intenção antes, recibo depois), e o arquivo "
        "continua legível."
    ),
)
def ledger_holds_receipts(ctx: Context, fixture: Fixture) -> None:
    run = reconciled(ctx, fixture)
    if run.ledger_after is None:
        raise CheckFailed("Depois de reconcile, effects.json ficou ilegível.", expected="um objeto JSON",
                          observed="arquivo ilegível")
    for call in pending_calls(fixture):
        if ways(fixture)[call["id"]] not in ("run", "confirm"):
            continue
        record = run.ledger_after.get(call["id"])
        status = record.get("status") if isinstance(record, dict) else None
        if status != "committed":
            detail = "nenhum registro" if record is None else f"status {status!r}"
            raise CheckFailed(
                f"Depois de repair_run, {call['id']} ({call['name']}) ficou com {detail} no livro-razão: grave o "
                "recibo committed (execute_and_record e confirmed_effect já fazem isso). Sem ele, a próxima "
                "retomada não sabe que o efeito aconteceu.",
                expected="committed", observed=status,
            )


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=lambda fixture: "outbox_after" in fixture.expect or "tickets_after" in fixture.expect,
    title="O mundo termina com exatamente os efeitos esperados",
    criterion="A caixa de saída e o sistema de chamados terminam com a contagem que a fixture espera (um e-mail, nunca dois).",
)
def world_counts(ctx: Context, fixture: Fixture) -> None:
    run = reconciled(ctx, fixture)
    expect = fixture.expect
    if "outbox_after" in expect and run.emails_after != expect["outbox_after"]:
        raise CheckFailed(
            f"A caixa de saída terminou com {quantity(run.emails_after, 'e-mail', 'e-mails')}; o esperado é {expect['outbox_after']}.",
            expected=expect["outbox_after"], observed=run.emails_after,
        )
    if "tickets_after" in expect and run.tickets_after != expect["tickets_after"]:
        raise CheckFailed(
            f"O sistema de chamados terminou com {run.tickets_after}; o esperado é {expect['tickets_after']}.",
            expected=expect["tickets_after"], observed=run.tickets_after,
        )
