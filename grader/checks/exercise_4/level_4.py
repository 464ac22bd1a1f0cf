"""Level 4: ``run_tool_uses`` with the ledger and the approval gate."""
from __future__ import annotations

import json

from grader.checks.exercise_4.fixtures import EXERCISE
from grader.checks.exercise_4.probes import Raised
from grader.checks.exercise_4.turn_probe import (
    EMAIL,
    ENSURE,
    NOTES,
    READ,
    Clock,
    approve_all,
    results_by_id,
    run_turn,
)
from grader.checks.framework import CheckFailed, Context, block_text, nothing_observed, show
from grader.core.plural import quantity


@EXERCISE.check(
    level=4,
    title="Livro-razão → aprovação → executar → registrar, com a chave",
    criterion=(
        "Num turno com send_email, read_file e ensure_ticket: só as de alto impacto passam pela "
        "aprovação, antes de executar; a intenção está gravada quando a ferramenta roda; o "
        "recibo committed está gravado no fim; idempotency_key = tool_use_id nas de alto impacto; "
        "um tool_result por chamada, na ordem."
    ),
)
def order_and_keys(ctx: Context) -> None:
    turn = [EMAIL, READ, ENSURE]
    observed = run_turn(ctx, "n4-ordem", turn, approver=approve_all)
    results = results_by_id(observed, turn)
    events = observed["events"]
    approvals = [e[1] for e in events if e[0] == "approval"]
    if "read_file" in approvals:
        raise CheckFailed("read_file passou pela válvula: ferramentas somente leitura não têm o que aprovar.",
                          expected=["send_email", "ensure_ticket"], observed=approvals)
    for call in (EMAIL, ENSURE):
        asked = [i for i, e in enumerate(events) if e[0] == "approval" and e[2] == call["id"]]
        ran = [i for i, e in enumerate(events) if e[0] == "execute" and e[1] == call["name"]]
        if not asked:
            raise CheckFailed(
                f"`{call['name']}` executou sem passar pela válvula: chame check_approval antes de executar "
                "uma ferramenta de alto impacto.",
                expected="aprovação consultada", observed="nenhuma consulta",
            )
        if not ran:
            raise CheckFailed(f"`{call['name']}` aprovada, mas não executada.", expected="1 execução", observed="0")
        if len(ran) > 1:
            raise CheckFailed(f"`{call['name']}` executou {len(ran)} vezes.", expected="1", observed=len(ran))
        if asked[0] > ran[0]:
            raise CheckFailed(f"`{call['name']}` executou antes de a aprovação ser consultada: a ordem é aprovação → executar.",
                              expected="aprovação, depois execução", observed="execução, depois aprovação")
        key, ledger_status = events[ran[0]][2], events[ran[0]][3]
        if key != call["id"]:
            raise CheckFailed(
                f"`{call['name']}` rodou com idempotency_key={key!r}: ferramentas de alto impacto recebem o "
                "tool_use_id como chave.",
                expected=call["id"], observed=key,
            )
        if ledger_status == "committed":
            raise CheckFailed(
                f"Quando `{call['name']}` rodou, o livro-razão já dizia committed: o recibo foi gravado antes "
                "de executar. Intenção antes, recibo depois: o recibo só com o resultado real nas mãos.",
                expected="intent no instante da execução", observed="committed",
            )
        if ledger_status != "intent":
            raise CheckFailed(
                f"Quando `{call['name']}` rodou, não havia registro de intenção no livro-razão: grave a "
                "intenção antes (record_intent, ou use execute_and_record), para a retomada separar "
                "\"nunca começou\" de \"começou\".",
                expected="intent", observed=ledger_status,
            )
        final = (observed["ledger"].get(call["id"]) or {}).get("status")
        if final != "committed":
            raise CheckFailed(f"Depois do turno, o livro-razão deveria ter o recibo committed de {call['id']}.",
                              expected="committed", observed=final)
    read_runs = [e for e in events if e[0] == "execute" and e[1] == "read_file"]
    if len(read_runs) != 1 or read_runs[0][2] is not None:
        raise CheckFailed("read_file deveria rodar uma vez, sem chave de idempotência.",
                          expected="1 execução sem chave", observed=[e[2] for e in read_runs])
    if results[READ["id"]].get("content") != NOTES["notes/conclusoes.md"]:
        raise CheckFailed("O tool_result do read_file deveria trazer o conteúdo do arquivo.",
                          expected=NOTES["notes/conclusoes.md"], observed=results[READ["id"]].get("content"))
    if observed["emails"] != 1 or observed["tickets"] != 1:
        raise CheckFailed("O turno deveria deixar exatamente um e-mail e um chamado.",
                          expected={"emails": 1, "tickets": 1},
                          observed={"emails": observed["emails"], "tickets": observed["tickets"]})


@EXERCISE.check(
    level=4,
    title="Um recibo no livro-razão é reaproveitado antes de qualquer aprovação",
    criterion=(
        "Se o livro-razão já tem o recibo de uma chamada, committed ou rejected, run_tool_uses devolve "
        "o resultado registrado sem pedir aprovação e sem executar (já foi feito vem antes de deve ser feito)."
    ),
)
def ledger_before_approval(ctx: Context) -> None:
    from harness.effects import make_receipt

    outcomes = {
        "committed": {"content": "e-mail enviado para team@example.com: Conclusões", "is_error": False},
        "rejected": {"content": "ação recusada pela aprovação: fora do horário comercial", "is_error": True},
    }
    for status, recorded in outcomes.items():

        def setup(workspace, ledger, status=status, recorded=recorded):
            ledger.write_text(json.dumps({EMAIL["id"]: make_receipt(EMAIL, recorded, status)}), encoding="utf-8")

        observed = run_turn(ctx, f"n4-recibo-{status}", [EMAIL], approver=approve_all, setup=setup)
        results = results_by_id(observed, [EMAIL])
        events = observed["events"]
        if any(e[0] == "execute" for e in events):
            extra = (" Um recibo rejected também é um desfecho conhecido: a recusa já aconteceu, e executar "
                     "agora passaria por cima dela." if status == "rejected" else "")
            raise CheckFailed(f"A chamada já tinha recibo {status} e foi executada.{extra} Reaproveite os recibos "
                              "committed e rejected (SETTLED_STATUSES) sem executar.",
                              expected="0 execuções", observed="executada")
        if any(e[0] == "approval" for e in events):
            raise CheckFailed(
                f"A válvula foi consultada para uma chamada que o livro-razão já registrou ({status}): consulte "
                "o livro-razão primeiro; não se pede aprovação para o que já tem desfecho.",
                expected="nenhuma consulta", observed="aprovação consultada",
            )
        block = results[EMAIL["id"]]
        if block.get("content") != recorded["content"] or bool(block.get("is_error")) != recorded["is_error"]:
            raise CheckFailed(f"O tool_result deveria trazer o resultado registrado no recibo {status}.",
                              expected=recorded,
                              observed={"content": block.get("content"), "is_error": block.get("is_error")})


@EXERCISE.check(
    level=4,
    title="Aprovação recusada vira is_error com o motivo",
    criterion=(
        "Recusada, a chamada não executa: o tool_result tem is_error True e o motivo no texto, a "
        "caixa de saída não muda e o livro-razão guarda um recibo rejected, também quando já havia a "
        "intenção de uma tentativa anterior."
    ),
)
def rejection_is_an_error_result(ctx: Context) -> None:
    from harness.approval import input_hash, reject

    reason = "destinatário fora do horário comercial"

    def after_an_intent(workspace, ledger):
        # an earlier attempt wrote its intent and died before the e-mail left: nothing is in the outbox
        ledger.write_text(json.dumps({EMAIL["id"]: {
            "tool": EMAIL["name"], "input_hash": input_hash(EMAIL["name"], EMAIL["input"]), "status": "intent",
            "result": None, "recorded_at": "2026-11-20T14:03:10+00:00"}}), encoding="utf-8")

    for label, setup in (("n4-recusa", None), ("n4-recusa-depois-da-intencao", after_an_intent)):
        observed = run_turn(ctx, label, [EMAIL], approver=lambda call: reject(reason), setup=setup)
        results = results_by_id(observed, [EMAIL])
        block = results[EMAIL["id"]]
        if any(e[0] == "execute" for e in observed["events"]) or observed["emails"]:
            raise CheckFailed("A aprovação recusou, mas send_email executou: uma recusa impede o efeito.",
                              expected="0 e-mails", observed=f"{quantity(observed['emails'], 'e-mail', 'e-mails')}")
        if block.get("is_error") is not True:
            raise CheckFailed("Uma recusa vira tool_result com \"is_error\": True, para o modelo saber e se adaptar.",
                              expected=True, observed=block.get("is_error", "<ausente>"))
        if reason not in (block_text(block.get("content")) or ""):
            raise CheckFailed("O texto do tool_result deveria trazer o motivo da recusa (decision.reason).",
                              expected=f"um texto com {reason!r}", observed=block.get("content"))
        status = (observed["ledger"].get(EMAIL["id"]) or {}).get("status")
        if status == "intent" and setup is not None:
            raise CheckFailed(
                "O livro-razão já tinha a intenção desta chamada (uma tentativa anterior caiu antes de enviar), a "
                "aprovação recusou, e o livro continua dizendo intent: o recibo rejected não substituiu a intenção. "
                "Numa retomada, a recusa se perderia e a aprovação seria pedida de novo. save_effect põe o registro "
                "novo no lugar do anterior da mesma chamada.",
                expected="rejected", observed="intent",
            )
        if status != "rejected":
            raise CheckFailed(
                "Grave um recibo rejected para a chamada recusada (save_effect com make_receipt(..., \"rejected\")): "
                "numa retomada, a recusa é reaproveitada em vez de perguntada de novo.",
                expected="rejected", observed=status,
            )


@EXERCISE.check(
    level=4,
    title="Aprovação pendente interrompe o turno sem efeito",
    criterion=(
        "Com a política respondendo PENDING, run_tool_uses levanta WaitingForApproval com o pedido "
        "(id, entrada e input_hash) e nada é executado."
    ),
)
def pending_waits(ctx: Context) -> None:
    from harness.approval import PENDING, input_hash

    clock = Clock(52_000.0)
    observed = run_turn(ctx, "n4-pendente", [EMAIL], approver=lambda call: PENDING, waiting_ok=True, clock=clock)
    returned = observed["returned"]
    if observed["emails"] or any(e[0] == "execute" for e in observed["events"]):
        raise CheckFailed("Com a aprovação pendente, send_email executou: pendente não é aprovado.",
                          expected="0 e-mails", observed=f"{quantity(observed['emails'], 'e-mail', 'e-mails')}")
    if not isinstance(returned, Raised):
        raise CheckFailed(
            "Com a aprovação pendente, run_tool_uses deveria levantar WaitingForApproval (com "
            "pending_approval_for(call, now)), para a execução parar e gravar o pedido; ela devolveu "
            f"{show(returned, 160)}.",
            expected="WaitingForApproval", observed=returned,
        )
    request = getattr(returned.error, "pending_approval", None)
    if not isinstance(request, dict) or request.get("id") != EMAIL["id"] \
            or request.get("input_hash") != input_hash(EMAIL["name"], EMAIL["input"]):
        raise CheckFailed("WaitingForApproval deveria carregar o pedido da chamada: pending_approval_for(call, now).",
                          expected={"id": EMAIL["id"], "input_hash": input_hash(EMAIL["name"], EMAIL["input"])},
                          observed=request)
    if request.get("requested_at") != clock.now:
        raise CheckFailed(
            "O pedido de aprovação deveria marcar a hora do relógio do contexto (now = ctx.clock()), não a "
            "do sistema: é o relógio que a retomada e os testes controlam.",
            expected=clock.now, observed=request.get("requested_at"),
        )


@EXERCISE.check(
    level=4,
    title="A aprovação usa o relógio e o prazo do ToolContext",
    criterion=(
        "Uma decisão nova fica gravada com a hora de ctx.clock() e vence em ctx.approval_ttl segundos, "
        "qualquer que seja o prazo configurado (não um prazo fixo no código)."
    ),
)
def approval_uses_context_clock_and_ttl(ctx: Context) -> None:
    from harness.approval import approve

    clock = Clock(73_000.0)
    for ttl in (120.0, 45.0):
        observed = run_turn(ctx, f"n4-prazo-{ttl:g}", [EMAIL], approver=lambda call: approve(), clock=clock,
                            ttl=ttl)
        record = observed["approvals"].get(EMAIL["id"])
        if not isinstance(record, dict):
            raise nothing_observed(
                "nenhuma decisão de aprovação foi gravada em approvals.json para o send_email (check_approval "
                "grava a decisão da política)", expected="a decisão gravada, com decided_at e expires_at")
        if record.get("decided_at") != clock.now:
            raise CheckFailed(
                f"A decisão foi gravada com decided_at={record.get('decided_at')!r}, mas o relógio do contexto "
                f"marcava {clock.now:g}: passe now = ctx.clock() para check_approval.",
                expected=clock.now, observed=record.get("decided_at"),
            )
        if record.get("expires_at") != clock.now + ttl:
            raise CheckFailed(
                f"Com ctx.approval_ttl = {ttl:g} s, a aprovação deveria vencer em {clock.now + ttl:g}, mas vence em "
                f"{record.get('expires_at')!r}: passe ctx.approval_ttl para check_approval (o prazo é "
                "configurável, não fixo no código).",
                expected=clock.now + ttl, observed=record.get("expires_at"),
            )


@EXERCISE.check(
    level=4,
    title="A aprovação vale só para a entrada exata e dentro do prazo",
    criterion=(
        "Uma aprovação gravada para esta entrada e no prazo deixa executar sem perguntar de novo; "
        "gravada para outra entrada, ou vencida, não vale: a política é consultada e, pendente, "
        "nada é executado."
    ),
)
def approval_bound_to_input_and_time(ctx: Context) -> None:
    from harness.approval import PENDING, approve, record_decision

    clock = Clock(10_000.0)

    def approved_for(call, decided_at):
        def setup(workspace, ledger):
            record_decision(ledger.with_name("approvals.json"), call, approve(), now=decided_at, ttl_seconds=600)
        return setup

    same = run_turn(ctx, "n4-aprovada", [EMAIL], approver=lambda c: PENDING, clock=clock,
                    setup=approved_for(EMAIL, 9_900.0), waiting_ok=True)
    if isinstance(same["returned"], Raised) or same["emails"] != 1:
        asked = any(e[0] == "approval" for e in same["events"])
        raise CheckFailed(
            "Havia uma aprovação gravada para esta entrada exata, ainda no prazo, e mesmo assim o e-mail não "
            "saiu" + (" (a política foi consultada de novo)" if asked else "") + ": use check_approval, que "
            "reaproveita a decisão gravada em approvals.json.",
            expected="1 e-mail, sem nova consulta", observed=f"{quantity(same['emails'], 'e-mail', 'e-mails')}",
        )
    changed = {**EMAIL, "input": {**EMAIL["input"], "to": "todos@example.com"}}
    other = run_turn(ctx, "n4-outra-entrada", [changed], approver=lambda c: PENDING, clock=clock,
                     setup=approved_for(EMAIL, 9_900.0), waiting_ok=True)
    if other["emails"]:
        raise CheckFailed(
            "A aprovação gravada era para outra entrada (outro destinatário), com o mesmo tool_use_id, e o "
            "e-mail saiu: a aprovação fica presa ao hash da entrada exata (check_approval compara input_hash).",
            expected="WaitingForApproval, 0 e-mails", observed=f"{quantity(other['emails'], 'e-mail', 'e-mails')}",
        )
    expired = run_turn(ctx, "n4-vencida", [EMAIL], approver=lambda c: PENDING, clock=clock,
                       setup=approved_for(EMAIL, 9_000.0), waiting_ok=True)
    if expired["emails"]:
        raise CheckFailed(
            "A aprovação gravada tinha vencido (prazo de 600 s, dada 1000 s antes) e o e-mail saiu: passe "
            "ctx.clock() e ctx.approval_ttl a check_approval, que pergunta de novo quando o prazo acaba.",
            expected="WaitingForApproval, 0 e-mails", observed=f"{quantity(expired['emails'], 'e-mail', 'e-mails')}",
        )


@EXERCISE.check(
    level=4,
    title="dry_run não toca o mundo",
    criterion=(
        "Com ctx.dry_run, as ferramentas de alto impacto não executam: a caixa de saída e os chamados "
        "ficam como estavam, o livro-razão não ganha registro delas, e cada uma recebe um resultado "
        "simulado (sem is_error)."
    ),
)
def dry_run_leaves_world(ctx: Context) -> None:
    turn = [EMAIL, READ, ENSURE]
    observed = run_turn(ctx, "n4-dry-run", turn, dry_run=True)
    results = results_by_id(observed, turn)
    if not observed["outbox_same"] or observed["tickets"]:
        raise CheckFailed(
            "Com ctx.dry_run, a caixa de saída ou os chamados mudaram: em dry-run, ferramentas de alto "
            "impacto devolvem dry_run_output(call) em vez de executar.",
            expected="mundo intacto", observed={"caixa de saída igual": observed["outbox_same"], "chamados": observed["tickets"]},
        )
    for call in (EMAIL, ENSURE):
        if results[call["id"]].get("is_error") is True:
            raise CheckFailed(f"Em dry-run, {call['name']} deveria receber um resultado simulado, não um erro.",
                              expected=False, observed=True)
        record = observed["ledger"].get(call["id"])
        if record is not None:
            status = record.get("status") if isinstance(record, dict) else record
            raise CheckFailed(
                f"Em dry-run, {call['name']} não rodou, mas o livro-razão ganhou um registro {status!r} para "
                f"{call['id']}. O livro-razão só guarda o que aconteceu no mundo: um recibo de um efeito "
                "simulado faria uma retomada de verdade reaproveitá-lo, e o efeito nunca aconteceria. Em "
                "dry-run, devolva dry_run_output(call) sem gravar nada no livro-razão.",
                expected="nenhum registro de chamada simulada", observed={call["id"]: status},
            )
    if results[READ["id"]].get("content") != NOTES["notes/conclusoes.md"]:
        raise CheckFailed("Em dry-run a leitura continua real: read_file deveria devolver o conteúdo do arquivo.",
                          expected=NOTES["notes/conclusoes.md"], observed=results[READ["id"]].get("content"))
