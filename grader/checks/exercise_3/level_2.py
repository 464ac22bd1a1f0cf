"""Level 2: the incident's root cause, and ``reconcile`` answering every pending call without repeating an effect."""
from __future__ import annotations

from grader.checks.exercise_3.fixtures import (
    EXERCISE,
    call_by_id,
    checks_world,
    crash_scene,
    high_impact_tools,
    ids_expecting,
    pending_calls,
)
from grader.checks.exercise_3.messages import (
    ROOT_CAUSE_ANSWER,
    ROOT_CAUSE_FEEDBACK,
    ROOT_CAUSE_OPTIONS,
    UNCLASSIFIED_RULE,
)
from grader.checks.exercise_3.reconcile_probe import (
    _effect_note,
    answer_message,
    missing_result_message,
    reconciled,
    result_for,
    world_changes,
)
from grader.checks.exercise_3.wording import unknown_outcome_message, wording_problem
from grader.checks.framework import CheckFailed, Context, Fixture, block_text, content_blocks, show
from grader.core.plural import quantity


@EXERCISE.check(
    level=2,
    title="A causa raiz do e-mail duplicado",
    criterion=(
        "ROOT_CAUSE aponta a causa: o reconcile de produção reexecuta toda chamada pendente sem "
        "distinguir ferramenta somente leitura de ferramenta de alto impacto."
    ),
)
def root_cause_identified(ctx: Context) -> None:
    answer = ctx.student_answer("ROOT_CAUSE")
    letter = answer.strip().upper() if isinstance(answer, str) else answer
    if letter not in ROOT_CAUSE_OPTIONS:
        raise CheckFailed(
            f"ROOT_CAUSE deveria ser uma das letras {', '.join(ROOT_CAUSE_OPTIONS)} (é {answer!r}).",
            expected="uma letra entre A e D", observed=answer,
        )
    if letter != ROOT_CAUSE_ANSWER:
        raise CheckFailed(
            ROOT_CAUSE_FEEDBACK[letter],
            expected="a alternativa que explica o segundo envio", observed=letter,
        )


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=crash_scene,
    title="Um tool_result para cada chamada pendente, com o id certo, no começo da mensagem",
    criterion=(
        "reconcile acrescenta UMA mensagem user com um tool_result por chamada pendente, cada um "
        "com o tool_use_id da chamada, antes de qualquer outro conteúdo; sem nada pendente, não "
        "acrescenta nada e não executa nada."
    ),
)
def answers_every_pending_call(ctx: Context, fixture: Fixture) -> None:
    judge_answer(reconciled(ctx, fixture), pending_calls(fixture))


def judge_answer(run, pending: list[dict], who: str = "reconcile") -> None:
    """The reply to the pending calls: one user message, one tool_result per call, ids matched, results first."""
    message, added = answer_message(run)
    if not pending:
        if added != 0 or run.calls:
            did = []
            if added:
                did.append(f"acrescentou {quantity(added, 'mensagem', 'mensagens')}")
            if run.calls:
                did.append("executou " + ", ".join(sorted({c.name for c in run.calls})))
            raise CheckFailed(
                f"Nada estava pendente, mas {who} " + " e ".join(did) + ": o checkpoint deveria voltar como estava.",
                expected="nenhuma mensagem nova, nenhuma ferramenta executada", observed="; ".join(did),
            )
        return
    ids = [call["id"] for call in pending]
    if message is None and added <= 0:
        if added < 0 or run.after["messages"][: len(run.before["messages"])] != run.before["messages"]:
            raise CheckFailed(
                "A mensagem do assistente com o tool_use não está mais onde estava: sem ela, nenhum "
                "tool_result tem a que responder.",
                expected=f"tool_result para {ids}", observed="histórico alterado",
            )
        raise CheckFailed(
            f"Nenhum tool_result foi acrescentado: as chamadas {ids} continuam sem resposta, e a API "
            "recusaria a conversa.",
            expected=f"uma mensagem user com tool_result para {ids}", observed="nenhuma mensagem nova",
        )
    if message is None:
        raise CheckFailed(
            "O histórico anterior foi alterado, então não dá para achar a resposta às chamadas pendentes.",
            expected=f"tool_result para {ids}", observed="histórico alterado",
        )
    if added > 1:
        raise CheckFailed(
            f"Os tool_result devem ir juntos numa única mensagem user; {who} acrescentou {added} mensagens.",
            expected="1 mensagem nova", observed=f"{added} mensagens novas",
        )
    if message.get("role") != "user":
        raise CheckFailed(
            f"A mensagem com os tool_result deve ter role \"user\" (tem {message.get('role')!r}).",
            expected="role user", observed=message.get("role"),
        )
    results = content_blocks(message, "tool_result")
    got = [block.get("tool_use_id") for block in results]
    names = {call["id"]: call["name"] for call in pending}
    for tool_use_id in got:
        if tool_use_id not in names:
            missing = [i for i in ids if i not in got]
            target = f"a chamada pendente é {missing[0]!r} ({names[missing[0]]})" if missing else f"as chamadas pendentes são {ids}"
            raise CheckFailed(
                f"O tool_result responde ao id {tool_use_id!r}, mas {target}: use o id que está em "
                "pending_tool_use, senão a API não sabe a que chamada ele responde.",
                expected=ids, observed=got,
            )
    duplicated = sorted({i for i in got if got.count(i) > 1})
    if duplicated:
        raise CheckFailed(
            f"Mais de um tool_result para {duplicated}: cada chamada recebe exatamente um.",
            expected=ids, observed=got,
        )
    missing = [i for i in ids if i not in got]
    if missing:
        raise CheckFailed(
            f"Faltou o tool_result de {missing} ({', '.join(names[i] for i in missing)}).",
            expected=ids, observed=got,
        )
    content = message.get("content")
    positions = [i for i, block in enumerate(content) if isinstance(block, dict) and block.get("type") == "tool_result"]
    if positions != list(range(len(positions))):
        raise CheckFailed(
            "Os tool_result devem vir antes de qualquer outro bloco (texto, por exemplo) na mensagem.",
            expected="tool_result primeiro", observed=[b.get("type") for b in content if isinstance(b, dict)],
        )


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=crash_scene,
    title="A mensagem do assistente e o histórico anterior ficam intactos",
    criterion=(
        "Todas as mensagens que já estavam no checkpoint continuam lá, iguais e na mesma ordem — "
        "em especial a do assistente com o tool_use órfão."
    ),
)
def keeps_history(ctx: Context, fixture: Fixture) -> None:
    judge_history(reconciled(ctx, fixture), pending_calls(fixture))


def judge_history(run, pending: list[dict], who: str = "reconcile") -> None:
    """Every message already in the checkpoint is still there, unchanged and in order."""
    before, after = run.before["messages"], run.after["messages"]
    if after[: len(before)] == before:
        return
    last = before[-1]
    if pending and last not in after:
        raise CheckFailed(
            "A mensagem do assistente com o tool_use foi apagada: o modelo esqueceria a decisão que "
            "já tinha tomado, e um efeito que talvez já tenha acontecido ficaria escondido.",
            expected=f"{len(before)} mensagens anteriores intactas",
            observed=f"{len(after)} mensagens; a do assistente com o tool_use sumiu",
        )
    first_difference = next(
        (i for i, (a, b) in enumerate(zip(before, after)) if a != b), min(len(before), len(after))
    )
    raise CheckFailed(
        f"As mensagens anteriores foram alteradas (a primeira diferença está em messages[{first_difference}]): "
        f"{who} só acrescenta ao fim.",
        expected=show(before[first_difference], 200) if first_difference < len(before) else "",
        observed=show(after[first_difference], 200) if first_difference < len(after) else "mensagem removida",
    )


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=lambda fixture: crash_scene(fixture) and bool(pending_calls(fixture)),
    title="pending_tool_use volta a None",
    criterion="Depois de reconciliar, nada mais está pendente: cp[\"pending_tool_use\"] é None.",
)
def clears_pending(ctx: Context, fixture: Fixture) -> None:
    judge_cleared(reconciled(ctx, fixture))


def judge_cleared(run) -> None:
    """Nothing is pending any more: pending_tool_use is None."""
    if "pending_tool_use" not in run.after:
        raise CheckFailed(
            "A chave pending_tool_use sumiu do checkpoint: ela continua existindo, valendo None.",
            expected=None, observed="chave ausente",
        )
    value = run.after["pending_tool_use"]
    if value is not None:
        raise CheckFailed(
            f"pending_tool_use continua {show(value, 160)}: depois de responder às chamadas, "
            "esqueceu de limpar pending_tool_use (use None). Numa próxima retomada elas seriam "
            "reconciliadas de novo.",
            expected=None, observed=value,
        )


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=crash_scene,
    title="turns, tokens_used, task e version seguem do checkpoint",
    criterion=(
        "reconcile não zera nem recalcula contadores: turns e tokens_used continuam de onde "
        "pararam (é o que mantém o teto MAX_TURNS valendo numa tarefa que cai e volta)."
    ),
)
def keeps_counters(ctx: Context, fixture: Fixture) -> None:
    judge_counters(reconciled(ctx, fixture))


def judge_counters(run, who: str = "reconcile") -> None:
    """turns, tokens_used, task and version are what the checkpoint had."""
    for key in ("turns", "tokens_used", "task", "version"):
        was, now = run.before[key], run.after.get(key, "<ausente>")
        if was == now:
            continue
        if key in ("turns", "tokens_used") and now == 0:
            raise CheckFailed(
                f"{key} foi zerado (era {was}, ficou 0): na retomada os contadores seguem do "
                "checkpoint; zerar turns deixa uma tarefa que cai e volta escapar do teto MAX_TURNS.",
                expected=was, observed=now,
            )
        raise CheckFailed(
            f"{key} mudou de {show(was, 80)} para {show(now, 80)}: reconciliar não é um turno novo, "
            "o valor fica como estava.",
            expected=was, observed=now,
        )


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=lambda fixture: crash_scene(fixture) and bool(ids_expecting(fixture, "rerun")),
    title="Ferramenta somente leitura é reexecutada uma vez, com o resultado real",
    criterion=(
        "Cada chamada pendente somente leitura roda de novo exatamente uma vez, com a mesma "
        "entrada, e o tool_result leva o resultado real da ferramenta: o content e o is_error, "
        "inclusive quando a leitura falha."
    ),
)
def reruns_read_only(ctx: Context, fixture: Fixture) -> None:
    run = reconciled(ctx, fixture)
    for tool_use_id in ids_expecting(fixture, "rerun"):
        call = call_by_id(fixture, tool_use_id)
        runs = [c for c in run.calls if c.name == call["name"] and c.input == call["input"]]
        if not runs:
            answered = result_for(run, tool_use_id)
            flagged = " Ela recebeu is_error, como se fosse de alto impacto: decida pela lista READ_ONLY_TOOLS, " \
                      "não por um nome de ferramenta escrito no código." if answered and answered.get("is_error") else ""
            raise CheckFailed(
                f"`{call['name']}` ({tool_use_id}) não foi reexecutada: uma ferramenta somente leitura "
                "roda de novo para trazer o resultado real ao modelo." + flagged,
                expected=f"{call['name']} executada 1 vez", observed="0 vezes",
            )
        if len(runs) > 1:
            raise CheckFailed(
                f"`{call['name']}` ({tool_use_id}) rodou {len(runs)} vezes; uma basta.",
                expected=f"{call['name']} executada 1 vez", observed=f"{len(runs)} vezes",
            )
        reference = ctx.reference_tool_result(fixture, call["name"], call["input"])
        block = result_for(run, tool_use_id)
        if block is None:
            raise CheckFailed(
                missing_result_message(run, tool_use_id),
                expected=reference["content"], observed="sem tool_result",
            )
        text = block_text(block.get("content"))
        if text != reference["content"]:
            raise CheckFailed(
                f"O tool_result de {tool_use_id} não traz o resultado real de `{call['name']}`: o "
                "content deve ser o texto que a ferramenta devolveu (o campo \"content\" do dict de "
                "execute_tool).",
                expected=reference["content"], observed=block.get("content"),
            )
        if bool(block.get("is_error")) != bool(reference["is_error"]):
            raise CheckFailed(
                f"O tool_result de {tool_use_id} marca is_error={block.get('is_error')!r}, mas "
                f"`{call['name']}` rodou {'com erro' if reference['is_error'] else 'com sucesso'}: o tool_result "
                "leva o is_error que execute_tool devolveu (uma leitura que falha é um erro que o modelo precisa ver).",
                expected=bool(reference["is_error"]), observed=block.get("is_error"),
            )


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=checks_world,
    title="Ferramenta de alto impacto não roda de novo e recebe is_error",
    criterion=(
        "Uma chamada pendente fora de READ_ONLY_TOOLS (send_email, create_ticket, uma ferramenta sem "
        "classificação) nunca é reexecutada: recebe um tool_result com is_error True cujo texto diz que "
        "o desfecho é desconhecido e pede para conferir antes de repetir, sem dizer que ela falhou nem "
        "mandar tentar de novo; a caixa de saída e os chamados terminam como o fixture espera."
    ),
)
def high_impact_not_repeated(ctx: Context, fixture: Fixture) -> None:
    run = reconciled(ctx, fixture)
    for tool_use_id in ids_expecting(fixture, "is_error"):
        call = call_by_id(fixture, tool_use_id)
        executed = [c for c in run.calls if c.name == call["name"]]
        block = result_for(run, tool_use_id)
        flagged = bool(block and block.get("is_error") is True)
        effect = _effect_note(run)
        if executed and call["name"] not in high_impact_tools():
            raise CheckFailed(
                f"reconcile reexecutou `{call['name']}` ({tool_use_id}), que {UNCLASSIFIED_RULE}" + effect,
                expected=f"{call['name']} executada 0 vezes", observed=f"{quantity(len(executed), 'vez', 'vezes')}",
            )
        if executed and flagged:
            raise CheckFailed(
                f"reconcile executou `{call['name']}` e também marcou is_error: o is_error não desfaz "
                "o que a ferramenta já fez de novo. Uma ferramenta de alto impacto sem registro não é "
                "executada; ela só recebe o is_error." + effect,
                expected=f"{call['name']} executada 0 vezes", observed=f"{quantity(len(executed), 'vez', 'vezes')}, com is_error",
            )
        if executed:
            by_name = "" if call["name"] == "send_email" else (
                " O send_email não é o único: decida pela lista READ_ONLY_TOOLS (só o que está nela roda "
                "de novo), não por um nome de ferramenta escrito no código."
            )
            raise CheckFailed(
                f"reconcile reexecutou `{call['name']}` ({tool_use_id}), uma ferramenta de alto impacto: "
                "é o bug do incidente — re-rodar toda chamada pendente repete o efeito (um segundo "
                "e-mail, um chamado a mais)." + effect + by_name,
                expected=f"{call['name']} executada 0 vezes", observed=f"{quantity(len(executed), 'vez', 'vezes')}",
            )
        if block is None:
            raise CheckFailed(
                missing_result_message(run, tool_use_id),
                expected="tool_result com is_error True", observed="sem tool_result",
            )
        if not flagged:
            raise CheckFailed(
                f"O tool_result de {tool_use_id} ({call['name']}) precisa de \"is_error\": True, "
                "avisando o modelo de que o estado de execução é desconhecido.",
                expected=True, observed=block.get("is_error", "<ausente>"),
            )
    grew = world_changes(run)
    if grew:
        raise CheckFailed(
            "reconcile mudou o mundo: " + "; ".join(grew) + ". Nenhum efeito de alto impacto pode "
            "acontecer durante a reconciliação.",
            expected="nenhum efeito novo", observed="; ".join(grew),
        )
    for tool_use_id in ids_expecting(fixture, "is_error"):  # the wording last: a repeated effect matters more
        call = call_by_id(fixture, tool_use_id)
        block = result_for(run, tool_use_id)
        text = block_text(block.get("content"))
        if not text or not text.strip():
            raise CheckFailed(
                f"O tool_result de {tool_use_id} tem is_error, mas nenhum texto: explique ao modelo "
                "que não se sabe se a ação aconteceu, para ele reavaliar.",
                expected="um texto explicando o estado desconhecido", observed=block.get("content"),
            )
        problem_ = wording_problem(text)
        if problem_ is not None:
            raise CheckFailed(
                unknown_outcome_message(problem_, f"{tool_use_id} ({call['name']})", text),
                expected="um texto que diga que o desfecho é desconhecido e peça para conferir antes de repetir",
                observed=text,
            )
    expect = fixture.expect
    if "outbox_after" in expect and run.emails_after != expect["outbox_after"]:
        raise CheckFailed(
            f"A caixa de saída terminou com {quantity(run.emails_after, 'e-mail', 'e-mails')}; o esperado é exatamente "
            f"{expect['outbox_after']}.",
            expected=expect["outbox_after"], observed=run.emails_after,
        )
    if "tickets_after" in expect and run.tickets_after != expect["tickets_after"]:
        raise CheckFailed(
            f"O sistema de chamados terminou com {quantity(run.tickets_after, 'chamado', 'chamados')}; o esperado é "
            f"exatamente {expect['tickets_after']}.",
            expected=expect["tickets_after"], observed=run.tickets_after,
        )


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=crash_scene,
    title="A conversa retomada é aceita pela API",
    criterion=(
        "As mensagens reconciliadas, enviadas pelo cliente anthropic de verdade ao endpoint "
        "offline, são aceitas: cada tool_use tem o seu tool_result na mensagem seguinte (os de um "
        "mesmo turno, juntos numa só mensagem) e nenhum tool_result fica sem tool_use."
    ),
)
def api_accepts_resumed_conversation(ctx: Context, fixture: Fixture) -> None:
    from grader.checks.conversation import require_api_accepts

    run = reconciled(ctx, fixture)
    require_api_accepts("a conversa retomada", run.after["messages"])
