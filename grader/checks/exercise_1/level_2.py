"""Level 2: ``run_agent`` stops at the right time, answers every tool use and returns the whole run state."""
from __future__ import annotations

from grader.checks.exercise_1.fixtures import (
    EXERCISE,
    budget_of,
    stopped_by_budget,
    action_of,
    block_keys,
    expected_run,
    has_kept_out_answer,
    kept_out,
    kept_out_ids,
)
from grader.checks.exercise_1.messages import STATUS_RULES
from grader.checks.exercise_1.run_probe import (
    agent_run,
    asks_for_tools,
    assistant_count_problem,
    ceiling_problem,
    require_state,
)
from grader.checks.framework import (
    CheckFailed,
    Context,
    Fixture,
    content_blocks,
    is_kind,
    nothing_observed,
    response_tokens,
    show,
)
from grader.core.plural import quantity


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=is_kind("run"),
    title="Para quando o stop_reason encerra, ou no teto MAX_TURNS",
    criterion=(
        "run_agent segue chamando o modelo depois de tool_use e de pause_turn, para na primeira resposta "
        "com qualquer outro stop_reason e nunca faz mais que max_turns chamadas, mesmo com um modelo "
        "que não para; turns conta as chamadas."
    ),
)
def stops_at_the_right_time(ctx: Context, fixture: Fixture) -> None:
    run = agent_run(ctx, fixture)
    too_many = ceiling_problem(run, fixture)
    if too_many:
        raise too_many
    state = require_state(run)
    calls = fixture.expect["model_calls"]
    if len(run.requests) < calls:
        stopped_at = run.served[-1].get("stop_reason") if run.served else None
        spent = sum(response_tokens(r) for r in run.served)
        why = ("um pause_turn não encerra: o modelo só pausou o turno, e a próxima chamada (com a resposta "
               "pausada de volta na conversa) o continua" if stopped_at == "pause_turn" else
               f"o orçamento ainda não tinha acabado: tokens_used era {spent}, menos que "
               f"token_budget={fixture.data['token_budget']}" if "token_budget" in fixture.data
               and stopped_at in ("tool_use", "pause_turn") and spent < fixture.data["token_budget"] else
               "enquanto a resposta vier com stop_reason \"tool_use\" ou \"pause_turn\", o laço continua")
        raise CheckFailed(
            f"run_agent parou cedo: fez {quantity(len(run.requests), 'chamada', 'chamadas')}, mas a execução só termina na {calls}ª "
            f"({why}).",
            expected=f"{calls} chamadas", observed=f"{len(run.requests)} chamadas",
        )
    if state.get("turns") != calls:
        raise CheckFailed(
            f"state[\"turns\"] vale {state.get('turns')!r}, mas o modelo foi chamado {quantity(calls, 'vez', 'vezes')}: "
            "some 1 a turns a cada chamada.",
            expected=calls, observed=state.get("turns"),
        )


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=asks_for_tools,
    title="Todo tool_use respondido, resultados primeiro",
    criterion=(
        "Cada turno com ferramentas é respondido com uma única mensagem do usuário que traz um "
        "tool_result por tool_use, com o mesmo tool_use_id e na mesma ordem, antes de qualquer texto; "
        "a API aceita cada pedido e a conversa devolvida não termina com um tool_use sem resposta."
    ),
)
def every_tool_use_answered(ctx: Context, fixture: Fixture) -> None:
    from grader.checks.conversation import protocol_diagnosis, refusal_failure, tool_result_ids, tool_use_ids
    from grader.checks.reference import validate_messages

    run = agent_run(ctx, fixture)
    if not run.requests:
        require_state(run)
        raise nothing_observed("run_agent não chamou o modelo nenhuma vez, então não há turno para conferir",
                               expected=f"{quantity(fixture.expect['model_calls'], 'chamada', 'chamadas')} ao modelo")
    for number, body in enumerate(run.requests, start=1):
        messages = body.get("messages", [])
        refusal = validate_messages(messages)
        if refusal:
            raise refusal_failure(f"a {number}ª chamada ao modelo", messages, f"HTTP 400: {refusal}")
    state = require_state(run)
    messages = state["messages"]
    for index, message in enumerate(messages):
        ids = tool_use_ids(message)
        if not ids:
            continue
        if index + 1 >= len(messages):
            if set(ids) & kept_out_ids(fixture):
                raise CheckFailed(
                    "A conversa devolvida termina no tool_use de uma resposta cortada ou recusada: essa resposta "
                    "não pode entrar em messages (ninguém conseguiria continuar a conversa, e o pedido nela "
                    "não deve ser respondido nem executado).",
                    expected="a conversa sem a resposta cortada ou recusada", observed=f"termina em {', '.join(ids)}",
                )
            raise CheckFailed(
                "A conversa devolvida termina com um tool_use sem resposta: quando um teto chega (max_turns ou "
                "o orçamento de tokens), o turno em andamento ainda precisa dos seus tool_result (senão ninguém consegue continuar essa conversa).",
                expected=f"tool_result para {', '.join(ids)}", observed="a conversa acaba no tool_use",
            )
        answered = tool_result_ids(messages[index + 1])
        if answered != ids:
            raise CheckFailed(
                f"Na conversa devolvida, a mensagem {index + 1} responde a {answered}, mas o modelo pediu "
                f"{ids}: um tool_result por tool_use, na mesma ordem.",
                expected=ids, observed=answered,
            )
    refusal = validate_messages(messages)
    if refusal:
        raise CheckFailed(protocol_diagnosis(messages, refusal), expected="conversa válida", observed=refusal)


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=asks_for_tools,
    title="Cada ferramenta roda uma vez e o resultado volta ao modelo",
    criterion=(
        "Cada tool_use de uma resposta com stop_reason \"tool_use\" executa a ferramenta exatamente uma "
        "vez, com a entrada pedida, e o tool_result leva o content e o is_error que a ferramenta devolveu "
        "(um erro de ferramenta vira is_error True e o loop continua)."
    ),
)
def tool_results_carry_outputs(ctx: Context, fixture: Fixture) -> None:
    run = agent_run(ctx, fixture)
    state = require_state(run)
    expected_calls = [
        block for response in run.served if action_of(response) == "run_tools"
        for block in response["content"] if block.get("type") == "tool_use"
    ]
    if not expected_calls and not run.calls:
        raise nothing_observed(
            f"nenhuma ferramenta rodou: run_agent parou depois de {quantity(len(run.requests), 'chamada', 'chamadas')} ao modelo, "
            "antes de qualquer turno com ferramentas", expected="as ferramentas que o roteiro pede")
    observed = [(call.name, call.input) for call in run.calls]
    wanted = [(block["name"], block["input"]) for block in expected_calls]
    if observed != wanted:
        never = [(block["name"], block["input"]) for response in fixture.data["responses"] if kept_out(response)
                 for block in response["content"] if block.get("type") == "tool_use"]
        if any(call in never for call in observed):
            message = ("run_agent executou o tool_use de uma resposta cortada (max_tokens) ou recusada (refusal): "
                       "a entrada pode estar pela metade, e essa chamada nunca pode rodar.")
        elif len(observed) > len(wanted) and all(o in wanted for o in observed):
            message = "Alguma ferramenta rodou mais de uma vez para o mesmo tool_use: execute cada pedido uma vez só."
        elif len(observed) < len(wanted):
            message = (f"O modelo pediu {quantity(len(wanted), 'execução', 'execuções')} de ferramenta e só {len(observed)} "
                       "aconteceram: todos os tool_use de um turno precisam ser executados.")
        else:
            message = "As ferramentas executadas não são as que o modelo pediu (nome, entrada ou ordem)."
        raise CheckFailed(message, expected=wanted, observed=observed)
    results = {
        block.get("tool_use_id"): block
        for message in state["messages"] if isinstance(message, dict) and message.get("role") == "user"
        for block in content_blocks(message, "tool_result")
    }
    for block, call in zip(expected_calls, run.calls):
        result = results.get(block["id"])
        if result is None:
            raise CheckFailed(
                f"Não há tool_result para {block['id']} ({block['name']}) na conversa devolvida.",
                expected=call.result, observed="sem tool_result",
            )
        content = result.get("content")
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        if content != call.result["content"]:
            raise CheckFailed(
                f"O tool_result de {block['id']} não traz a saída de `{block['name']}`: o content é o "
                "campo \"content\" do dict que execute_tool devolveu.",
                expected=call.result["content"], observed=result.get("content"),
            )
        if bool(result.get("is_error")) != bool(call.result["is_error"]):
            raise CheckFailed(
                f"`{block['name']}` ({block['id']}) terminou com is_error={call.result['is_error']}, mas o "
                f"tool_result diz is_error={result.get('is_error')!r}: o modelo precisa saber quando a "
                "ferramenta falhou.",
                expected=call.result["is_error"], observed=result.get("is_error"),
            )


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=is_kind("run"),
    title="O estado devolvido: tarefa, mensagens e tokens_used",
    criterion=(
        "O estado devolvido começa pela tarefa como primeira mensagem do usuário, guarda como mensagem do "
        "assistente cada resposta a partir da qual a execução segue ou termina bem (nunca uma recusada ou "
        "cortada), e tokens_used é a soma de input_tokens + output_tokens de todas as respostas."
    ),
)
def returned_state_is_complete(ctx: Context, fixture: Fixture) -> None:
    run = agent_run(ctx, fixture)
    state = require_state(run)
    task = fixture.data["task"]
    messages = state["messages"]
    if not messages or messages[0] != {"role": "user", "content": task}:
        raise CheckFailed(
            "A primeira mensagem da conversa deveria ser o pedido do usuário, {\"role\": \"user\", "
            "\"content\": task} (new_run_state já a monta).",
            expected={"role": "user", "content": task}, observed=messages[0] if messages else "<vazia>",
        )
    assistant = [m for m in messages if isinstance(m, dict) and m.get("role") == "assistant"]
    expected = expected_run(fixture.data)
    if len(assistant) == expected.entered - 1 and len(run.requests) == expected.calls and "token_budget" in fixture.data:
        raise CheckFailed(
            "A última resposta ficou fora da conversa: a que passou do orçamento já foi paga, e é tratada como "
            "qualquer outra (entra em messages, seus tool_use recebem tool_result, e um end_turn encerra a tarefa). "
            "O orçamento só impede a próxima chamada: confira-o no começo da volta, junto com max_turns.",
            expected=expected.entered, observed=len(assistant))
    if len(assistant) != expected.entered:
        raise CheckFailed(assistant_count_problem(run, expected, len(assistant)),
                          expected=expected.entered, observed=len(assistant))
    tokens, count = expected.tokens, expected.messages
    if len(messages) != count:
        raise CheckFailed(
            f"A conversa devolvida tem {len(messages)} mensagens; um loop correto deixa {count} "
            "(a tarefa, uma mensagem do assistente por resposta aproveitável e uma do usuário por turno "
            "com ferramentas).",
            expected=count, observed=len(messages),
        )
    if state.get("tokens_used") != tokens:
        used = state.get("tokens_used")
        only_output = sum(r["usage"]["output_tokens"] for r in run.served)
        last = run.served[-1]["usage"]
        if used == only_output:
            detail = "só output_tokens foram somados; some input_tokens + output_tokens."
        elif used == last["input_tokens"] + last["output_tokens"]:
            detail = "o valor é o da última resposta: acumule com +=, não substitua."
        else:
            detail = "some input_tokens + output_tokens de cada resposta."
        raise CheckFailed(f"tokens_used vale {used!r}, mas deveria ser {tokens}: {detail}", expected=tokens, observed=used)


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=is_kind("run"),
    title="O status diz como a execução terminou",
    criterion=(
        "state[\"status\"] termina em \"completed\" (end_turn, stop_sequence), \"refused\" (refusal), "
        "\"failed\" (max_tokens, model_context_window_exceeded) ou continua \"running\" quando o teto "
        "max_turns interrompeu a execução."
    ),
)
def status_says_how_it_ended(ctx: Context, fixture: Fixture) -> None:
    run = agent_run(ctx, fixture)
    state = require_state(run)
    wanted = fixture.expect["status"]
    if "status" not in state:
        raise CheckFailed(
            "O estado devolvido não tem \"status\": new_run_state o cria como \"running\", e o loop o troca "
            f"quando a resposta encerra a execução ({STATUS_RULES[wanted]}).",
            expected=wanted, observed="<ausente>",
        )
    if state["status"] != wanted:
        rule = STATUS_RULES["budget"] if stopped_by_budget(fixture.data) else STATUS_RULES[wanted]
        raise CheckFailed(
            f"state[\"status\"] vale {state['status']!r}, mas nesta tarefa deveria ser {wanted!r}: "
            f"{rule}.",
            expected=wanted, observed=state["status"],
        )


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=has_kept_out_answer,
    title="Resposta cortada ou recusada: nada roda, nada entra na conversa",
    criterion=(
        "Quando a resposta vem com stop_reason \"max_tokens\", \"model_context_window_exceeded\" ou "
        "\"refusal\", nenhum tool_use dela é "
        "executado (a entrada pode estar pela metade), nenhum e-mail sai, e ela não entra em messages: "
        "a conversa fica como estava antes da chamada."
    ),
)
def kept_out_answer_never_runs(ctx: Context, fixture: Fixture) -> None:
    run = agent_run(ctx, fixture)
    state = require_state(run)
    position, answer = next((i, r) for i, r in enumerate(fixture.data["responses"]) if kept_out(r))
    if len(run.requests) <= position:
        raise nothing_observed(
            f"run_agent parou depois de {quantity(len(run.requests), 'chamada', 'chamadas')} ao modelo e nunca recebeu a resposta com "
            f"stop_reason \"{answer['stop_reason']}\" (a {position + 1}ª), então não dá para ver o que faria com ela",
            expected=f"{position + 1} chamadas ao modelo")
    blocks = [b for b in answer["content"] if b.get("type") == "tool_use"]
    ran = [call for call in run.calls if any(call.name == b["name"] and call.input == b["input"] for b in blocks)]
    if ran:
        raise CheckFailed(
            f"run_agent executou {ran[0].name} com a entrada {show(ran[0].input, 80)}, que veio numa resposta "
            f"com stop_reason \"{answer['stop_reason']}\": a entrada pode estar cortada, e essa chamada nunca "
            "pode rodar.",
            expected="nenhuma ferramenta executada dessa resposta", observed=[c.name for c in ran],
        )
    if any(block_keys(m) == block_keys({"content": answer["content"]}) for m in state["messages"]
           if isinstance(m, dict) and m.get("role") == "assistant"):
        raise CheckFailed(
            f"A resposta com stop_reason \"{answer['stop_reason']}\" entrou em messages. Ela fica de fora: "
            "assim a conversa continua aceitável pela API e o mesmo pedido pode ser repetido (com um "
            "max_tokens maior, ou com outro modelo).",
            expected="a conversa sem essa resposta", observed="a resposta está em messages",
        )


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=is_kind("run"),
    title="O orçamento de tokens mora no estado de execução",
    criterion=(
        "O estado devolvido guarda em state[\"token_budget\"] o orçamento recebido, ao lado de tokens_used: "
        "um processo que continuasse a execução precisaria dos dois para saber quanto ainda pode gastar."
    ),
)
def budget_kept_in_the_state(ctx: Context, fixture: Fixture) -> None:
    run = agent_run(ctx, fixture)
    state = require_state(run)
    budget = budget_of(fixture.data)
    if "token_budget" not in state:
        raise CheckFailed(
            "O estado devolvido não tem \"token_budget\". O orçamento é estado de execução, como turns e "
            "tokens_used: numa variável local (ou global) ele morre com o processo, e quem continuasse a "
            "execução a partir do estado não saberia quanto ainda pode gastar. Grave-o no estado logo no começo.",
            expected={"token_budget": budget}, observed="<ausente>",
        )
    if state["token_budget"] != budget:
        raise CheckFailed(
            f"state[\"token_budget\"] vale {state['token_budget']!r}, mas run_agent recebeu token_budget={budget}: "
            "guarde o orçamento desta execução (o argumento), não o padrão TOKEN_BUDGET nem o que sobrou dele.",
            expected=budget, observed=state["token_budget"],
        )
