"""Level 5 (transfer): ``send_sms_once(call, effects_path, sms)`` sends one SMS through a provider
with no idempotency key (``harness.sms.SmsGateway``): the ledger plus a lookup by the sender's own
reference (``client_ref``) must do what the key did in the lesson. Each check builds its scene:
a ledger on disk, a provider holding (or not) the message, a lookup that answers (or not)."""
from __future__ import annotations

import json

from grader.checks.exercise_4.fixtures import EXERCISE
from grader.checks.exercise_4.probes import Raised, capturing, ledger_error_class, read_ledger
from grader.checks.framework import CheckFailed, Context, show
from grader.core.plural import quantity

SMS = {"id": "toolu_05SM1", "name": "send_sms",
       "input": {"to": "+5511988887777", "text": "Seu pedido 4471 saiu para entrega."}}
EARLIER_SMS = {"sid": "SM0001", "to": SMS["input"]["to"], "text": SMS["input"]["text"], "client_ref": SMS["id"]}
OTHER_SMS = {"sid": "SM0001", "to": "+5511911112222", "text": "Outro cliente, outro pedido.", "client_ref": "toolu_05XX9"}


def record(status: str, result: dict | None = None) -> dict:
    from harness.approval import input_hash

    return {"tool": SMS["name"], "input_hash": input_hash(SMS["name"], SMS["input"]), "status": status,
            "result": result, "recorded_at": "2026-11-20T14:03:10+00:00"}


def sms_run(ctx: Context, label: str, ledger: dict | None = None, sent: list | None = None,
            lookup_fails: bool = False, raw_ledger: str | None = None) -> dict:
    """Runs the student's send_sms_once once on a fresh scene and reports what happened."""
    from harness.sms import SmsGateway

    send_sms_once = ctx.student_function("send_sms_once")
    folder = ctx.fresh_dir(label)
    path = folder / "effects.json"
    if raw_ledger is not None:
        path.write_text(raw_ledger, encoding="utf-8")
    elif ledger is not None:
        path.write_text(json.dumps(ledger, ensure_ascii=False), encoding="utf-8")
    at_send = []
    gateway = SmsGateway(sent=sent, lookup_fails=lookup_fails,
                         on_send=lambda message: at_send.append((read_ledger(path) or {}).get(SMS["id"])))
    before = len(gateway.sent)
    returned = ctx.call(capturing(send_sms_once, ledger_error_class()), dict(SMS, input=dict(SMS["input"])),
                        path, gateway)
    return {"returned": returned, "sends": gateway.sent[before:], "lookups": list(gateway.lookups),
            "at_send": at_send, "ledger": read_ledger(path) if path.exists() else {}}


def result_of(observed: dict, where: str) -> dict:
    returned = observed["returned"]
    if isinstance(returned, Raised):
        raise CheckFailed(f"{where}: send_sms_once levantou {type(returned.error).__name__}: {returned.error}",
                          expected="um resultado {\"content\", \"is_error\"}", observed=type(returned.error).__name__)
    if not isinstance(returned, dict) or not isinstance(returned.get("content"), str) \
            or not isinstance(returned.get("is_error"), bool):
        raise CheckFailed(f"{where}: send_sms_once deveria devolver {{\"content\": texto, \"is_error\": bool}}.",
                          expected={"content": "...", "is_error": False}, observed=show(returned, 120))
    return returned


def status_after(observed: dict) -> str | None:
    entry = observed["ledger"].get(SMS["id"]) if isinstance(observed["ledger"], dict) else None
    return entry.get("status") if isinstance(entry, dict) else None


def sends_count(observed: dict) -> str:
    return quantity(len(observed["sends"]), "SMS enviado", "SMS enviados")



@EXERCISE.check(
    level=5,
    title="Sem registro: intenção, um envio com client_ref = tool_use_id, recibo",
    criterion=(
        "Sem registro no livro-razão, a chamada nunca começou: send_sms_once grava a intenção ANTES de "
        "enviar, envia uma vez com client_ref igual ao tool_use_id (a única coisa que a consulta acha "
        "depois) e grava o recibo committed com o resultado."
    ),
)
def never_started_sends_once(ctx: Context) -> None:
    observed = sms_run(ctx, "n5-nunca-comecou")
    output = result_of(observed, "Sem registro")
    if len(observed["sends"]) != 1:
        raise CheckFailed(f"Sem registro no livro-razão, o SMS deveria sair uma vez; saíram {len(observed['sends'])}.",
                          expected="1 SMS enviado", observed=sends_count(observed))
    if observed["sends"][0]["client_ref"] != SMS["id"]:
        raise CheckFailed(
            "O SMS saiu sem client_ref igual ao tool_use_id. Sem chave de idempotência, a referência é a única "
            "coisa pela qual uma retomada pode perguntar ao provedor se a mensagem saiu: "
            "sms.send(para, texto, client_ref=call[\"id\"]).",
            expected=SMS["id"], observed=observed["sends"][0]["client_ref"])
    seen = observed["at_send"][0]
    if not isinstance(seen, dict) or seen.get("status") != "intent":
        raise CheckFailed(
            "Na hora do envio, o livro-razão não tinha a intenção desta chamada. Uma queda logo depois do envio "
            "deixaria um livro sem registro, e a retomada leria \"nunca começou\" e mandaria o SMS de novo: sem "
            "chave, o provedor não recusa a repetição. Grave a intenção antes de sms.send.",
            expected="intent", observed=None if seen is None else seen.get("status"))
    if status_after(observed) != "committed":
        raise CheckFailed("Depois do envio, o livro-razão deveria ter o recibo committed desta chamada.",
                          expected="committed", observed=status_after(observed))
    if output["is_error"]:
        raise CheckFailed("O SMS saiu, mas o resultado diz is_error.", expected=False, observed=True)


@EXERCISE.check(
    level=5,
    title="Intenção sem recibo: a consulta por client_ref decide, e um SMS achado não sai de novo",
    criterion=(
        "Com a intenção gravada e sem recibo (a queda foi entre o envio e o recibo, ou antes do envio), "
        "send_sms_once pergunta ao provedor por client_ref: achou a mensagem → recibo committed, nada "
        "enviado; não achou (a consulta é autoritativa) → envia uma vez e grava o recibo."
    ),
)
def intent_is_settled_by_the_lookup(ctx: Context) -> None:
    found = sms_run(ctx, "n5-intencao-sms-saiu", ledger={SMS["id"]: record("intent")}, sent=[EARLIER_SMS])
    output = result_of(found, "Intenção e o SMS já no provedor")
    if found["sends"]:
        asked = "sem consultar o provedor" if SMS["id"] not in found["lookups"] else "mesmo com a consulta achando a mensagem"
        raise CheckFailed(
            f"Havia a intenção e o SMS já estava no provedor com client_ref {SMS['id']}, e send_sms_once enviou "
            f"de novo ({asked}): o cliente recebeu dois SMS. Na lição, rodar de novo com a mesma chave era "
            "seguro porque o sistema de e-mail recusava a repetição; este provedor não tem chave e repete "
            "tudo. Com intenção, pergunte primeiro: sms.find_by_client_ref(call[\"id\"]).",
            expected="0 SMS enviados", observed=sends_count(found))
    if status_after(found) != "committed" or output["is_error"]:
        raise CheckFailed(
            "A consulta achou a mensagem: o efeito aconteceu. Grave o recibo committed e devolva um resultado "
            "sem is_error, para que a próxima retomada não pergunte de novo.",
            expected={"status": "committed", "is_error": False},
            observed={"status": status_after(found), "is_error": output["is_error"]})
    missing = sms_run(ctx, "n5-intencao-sms-nao-saiu", ledger={SMS["id"]: record("intent")}, sent=[OTHER_SMS])
    result_of(missing, "Intenção e nada no provedor")
    if len(missing["sends"]) != 1:
        raise CheckFailed(
            f"Havia a intenção e a consulta por client_ref não achou nada (o provedor só tem o SMS de outra "
            f"chamada): a queda foi antes do envio, e o SMS deve sair uma vez. Saíram {len(missing['sends'])}.",
            expected="1 SMS enviado", observed=sends_count(missing))
    if missing["sends"][0]["client_ref"] != SMS["id"] or status_after(missing) != "committed":
        raise CheckFailed("O reenvio vai com client_ref = tool_use_id e termina com o recibo committed.",
                          expected={"client_ref": SMS["id"], "status": "committed"},
                          observed={"client_ref": missing["sends"][0]["client_ref"], "status": status_after(missing)})


@EXERCISE.check(
    level=5,
    title="Consulta fora do ar: nada enviado, recibo unknown e um is_error honesto",
    criterion=(
        "Com a intenção gravada e a consulta levantando SmsApiError, não dá para saber se o SMS saiu: "
        "send_sms_once não envia (sem chave, um envio às cegas pode duplicar), grava o recibo unknown e "
        "devolve is_error True dizendo isso ao modelo."
    ),
)
def lookup_down_sends_nothing(ctx: Context) -> None:
    observed = sms_run(ctx, "n5-consulta-fora", ledger={SMS["id"]: record("intent")}, sent=[EARLIER_SMS],
                       lookup_fails=True)
    if observed["sends"]:
        raise CheckFailed(
            "A consulta não respondeu e send_sms_once enviou assim mesmo: o SMS já tinha saído antes da queda, e "
            "o cliente recebeu dois. Uma consulta que falha não é um \"não achei\": sem resposta, não envie.",
            expected="0 SMS enviados", observed=sends_count(observed))
    output = result_of(observed, "Consulta fora do ar")
    if status_after(observed) != "unknown":
        raise CheckFailed(
            "Sem resposta do provedor, grave o recibo unknown (make_receipt(call, resultado, \"unknown\")): a "
            "próxima retomada sabe que precisa perguntar de novo.",
            expected="unknown", observed=status_after(observed))
    if output["is_error"] is not True:
        raise CheckFailed("Sem saber se o SMS saiu, o resultado tem de dizer is_error True, para o modelo não supor sucesso.",
                          expected=True, observed=output["is_error"])


@EXERCISE.check(
    level=5,
    title="Recibo committed ou rejected: o resultado gravado volta, e unknown pergunta de novo",
    criterion=(
        "Um recibo committed ou rejected é reaproveitado: o resultado registrado volta e nada é enviado. "
        "Um unknown não é desfecho: send_sms_once consulta o provedor outra vez e, achando a mensagem, "
        "grava committed sem enviar."
    ),
)
def receipts_are_reused_and_unknown_asks_again(ctx: Context) -> None:
    for status, result in (("committed", {"content": "SMS enviado (SM0001)", "is_error": False}),
                           ("rejected", {"content": "número bloqueado pelo provedor", "is_error": True})):
        observed = sms_run(ctx, f"n5-recibo-{status}", ledger={SMS["id"]: record(status, result)},
                           sent=[EARLIER_SMS] if status == "committed" else [])
        output = result_of(observed, f"Recibo {status}")
        if observed["sends"]:
            raise CheckFailed(f"Havia recibo {status} e send_sms_once enviou: um recibo é o desfecho, reaproveite-o.",
                              expected="0 SMS enviados", observed=sends_count(observed))
        if output != result:
            raise CheckFailed(f"Com recibo {status}, devolva o resultado gravado (record[\"result\"]).",
                              expected=result, observed=output)
    unknown = {"content": "Desfecho desconhecido (consulta falhou)", "is_error": True}
    observed = sms_run(ctx, "n5-unknown", ledger={SMS["id"]: record("unknown", unknown)}, sent=[EARLIER_SMS])
    output = result_of(observed, "Registro unknown")
    if observed["sends"]:
        raise CheckFailed(
            "O registro era unknown e o SMS já estava no provedor, mas send_sms_once enviou de novo: pergunte "
            "antes (find_by_client_ref).", expected="0 SMS enviados", observed=sends_count(observed))
    if SMS["id"] not in observed["lookups"] or status_after(observed) != "committed" or output["is_error"]:
        raise CheckFailed(
            "unknown não é um desfecho (só committed e rejected são, SETTLED_STATUSES): consulte o provedor de "
            "novo; aqui a mensagem está lá, e o recibo vira committed, sem is_error.",
            expected={"consultou": True, "status": "committed", "is_error": False},
            observed={"consultou": SMS["id"] in observed["lookups"], "status": status_after(observed),
                      "is_error": output["is_error"]})


@EXERCISE.check(
    level=5,
    title="Livro-razão corrompido: EffectsLedgerError e nenhum SMS",
    criterion=(
        "Com effects.json ilegível, send_sms_once para com EffectsLedgerError (leia com a sua load_effects) "
        "e não envia nada: lido como vazio, o livro faria um SMS já enviado parecer \"nunca começou\"."
    ),
)
def corrupt_ledger_sends_nothing(ctx: Context) -> None:
    observed = sms_run(ctx, "n5-livro-corrompido", raw_ledger='{"toolu_05SM1": {"status": "comm', sent=[EARLIER_SMS])
    if observed["sends"]:
        raise CheckFailed(
            "O livro-razão estava corrompido e o SMS saiu de novo: tratado como vazio, ele transformou um envio "
            "feito em \"nunca começou\". Leia o livro com a sua load_effects, que falha fechada.",
            expected="EffectsLedgerError e 0 SMS", observed=sends_count(observed))
    if not isinstance(observed["returned"], Raised):
        raise CheckFailed("Com o livro-razão corrompido, send_sms_once deveria levantar EffectsLedgerError.",
                          expected="EffectsLedgerError", observed=show(observed["returned"], 120))
