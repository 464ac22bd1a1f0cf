"""Level 3: the loop carried to another agent, with its own tools (Python functions), parallel
calls, a tool that raises and one the agent does not have."""
from __future__ import annotations

from grader.checks.exercise_1.fixtures import EXERCISE, expected_run, kept_out, requested_calls, tool_answer
from grader.checks.exercise_1.messages import STATUS_RULES
from grader.checks.exercise_1.run_probe import ToolsRun, tools_run
from grader.checks.framework import CheckFailed, Context, Fixture, content_blocks, is_kind, nothing_observed, show
from grader.core.plural import quantity

FUNCTION = "run_agent_with_tools"


def escaped_tool_error(run: ToolsRun, fixture: Fixture) -> CheckFailed | None:
    """The loop died of an exception one of the agent's tools raised (or of a KeyError for a tool
    it does not have): named as such, not as a bare traceback."""
    said = run.problem.message if run.problem is not None else ""
    for block in requested_calls(fixture.data):
        answer = tool_answer(fixture.data, block["name"], block["input"])
        if answer is None and block["name"] not in fixture.data["tools"] and "KeyError" in said \
                and block["name"] in said:
            return CheckFailed(
                f"O modelo pediu {block['name']}, que este agente não tem, e tools[{block['name']!r}] levantou KeyError, "
                "que derrubou o laço. Confira se o nome está em tools antes de chamar; se não estiver, responda com "
                "is_error: True e um texto que diga que essa ferramenta não existe aqui.",
                expected="um tool_result com is_error", observed=said)
        if answer is not None and "raises" in answer and answer["raises"] in said:
            return CheckFailed(
                f"{block['name']} levantou ValueError({answer['raises']!r}) e a exceção escapou de {FUNCTION}, "
                "derrubando a execução inteira. A falha de uma ferramenta é um resultado como outro: capture-a "
                "(um try/except em volta de cada chamada) e devolva-a ao modelo com is_error: True.",
                expected="um tool_result com is_error", observed=said)
    return None


def require_tools_state(run: ToolsRun, fixture: Fixture | None = None) -> dict:
    if run.problem is not None:
        escaped = escaped_tool_error(run, fixture) if fixture is not None and not run.problem.unwritten else None
        raise escaped or run.problem
    if not isinstance(run.state, dict) or not isinstance(run.state.get("messages"), list):
        raise CheckFailed(
            f"{FUNCTION} deveria devolver o estado de execução (um dict com a lista messages), mas devolveu "
            f"{show(run.state, 120)}.",
            expected="dict com turns, tokens_used, messages, status", observed=run.state,
        )
    return run.state


def offered_names(body: dict) -> list:
    return [tool.get("name") for tool in body.get("tools") or [] if isinstance(tool, dict)]


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=is_kind("tools_run"),
    title="O modelo recebe as ferramentas deste agente",
    criterion=(
        "Cada chamada ao modelo oferece, em tools, os schemas deste agente (e só eles), não as ferramentas do "
        "agente da lição: o modelo só pode pedir o que lhe foi oferecido."
    ),
)
def offers_the_agents_tools(ctx: Context, fixture: Fixture) -> None:
    from harness.tools import TOOL_SCHEMAS

    run = tools_run(ctx, fixture)
    if not run.requests:
        require_tools_state(run, fixture)
        raise nothing_observed(f"{FUNCTION} não chamou o modelo nenhuma vez", expected="uma chamada ao modelo por turno")
    wanted = sorted(schema["name"] for schema in run.schemas)
    course = sorted(tool["name"] for tool in TOOL_SCHEMAS)
    for number, body in enumerate(run.requests, start=1):
        offered = sorted(name for name in offered_names(body) if isinstance(name, str))
        if offered == wanted:
            continue
        if offered == course:
            message = (f"A {number}ª chamada ofereceu as ferramentas do agente da lição ({', '.join(course)}): "
                       "call_model manda sempre TOOL_SCHEMAS. Este agente tem as suas; chame "
                       "client.messages.create com tools=schemas.")
        elif not offered:
            message = f"A {number}ª chamada não ofereceu ferramenta nenhuma: passe tools=schemas a cada chamada."
        else:
            message = f"A {number}ª chamada ofereceu ferramentas diferentes das que este agente tem (o argumento schemas)."
        raise CheckFailed(message, expected=wanted, observed=offered)


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=is_kind("tools_run"),
    title="A regra do stop_reason vale para o outro agente",
    criterion=(
        "O laço segue depois de tool_use e pause_turn, para em end_turn/stop_sequence (completed), refusal "
        "(refused) ou numa resposta cortada (failed), nunca passa de max_turns (status \"running\"), e turns e "
        "tokens_used contam as chamadas e o usage de todas as respostas."
    ),
)
def follows_the_stop_rule(ctx: Context, fixture: Fixture) -> None:
    run = tools_run(ctx, fixture)
    expected = expected_run(fixture.data)
    made = len(run.requests)
    if made <= expected.calls:  # a loop that went on past the end fails here, even if it then raised
        state = require_tools_state(run, fixture)
    if made != expected.calls:
        last = fixture.data["responses"][min(made, expected.calls) - 1] if made else None
        if made > expected.calls:
            why = (f"o teto max_turns={fixture.data['max_turns']} já tinha chegado" if expected.status == "running"
                   else f"a {expected.calls}ª resposta, com stop_reason \"{last['stop_reason']}\", encerra a execução")
        else:
            why = (f"a {made}ª resposta, com stop_reason \"{last['stop_reason']}\", não encerra: só end_turn, "
                   "stop_sequence, refusal, max_tokens e model_context_window_exceeded encerram" if last
                   else "o modelo nunca foi chamado")
        raise CheckFailed(f"{FUNCTION} fez {quantity(made, 'chamada', 'chamadas')} ao modelo, e um loop correto faz "
                          f"{expected.calls}: {why}.", expected=expected.calls, observed=made)
    for field, value in (("turns", expected.calls), ("tokens_used", expected.tokens), ("status", expected.status)):
        if state.get(field) != value:
            rule = {"turns": "some 1 a cada chamada ao modelo",
                    "tokens_used": "some input_tokens + output_tokens de cada resposta, inclusive da cortada ou recusada",
                    "status": STATUS_RULES[expected.status]}[field]
            raise CheckFailed(f"state[\"{field}\"] vale {state.get(field)!r}, mas deveria ser {value!r}: {rule}.",
                              expected=value, observed=state.get(field, "<ausente>"))


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=lambda fixture: is_kind("tools_run")(fixture) and bool(requested_calls(fixture.data)),
    title="Cada pedido roda a função certa, uma vez",
    criterion=(
        "Cada tool_use chama a função de tools com o mesmo nome, com a entrada do pedido, uma vez e na ordem do "
        "turno, mesmo quando outra função do mesmo turno levanta exceção; uma ferramenta que este agente não tem, "
        "ou pedida numa resposta cortada ou recusada, não roda, e nada passa pelo execute_tool do curso."
    ),
)
def runs_each_requested_tool(ctx: Context, fixture: Fixture) -> None:
    run = tools_run(ctx, fixture)  # judged by the calls made, even when the loop then raised
    if run.course_calls:
        call = run.course_calls[0]
        raise CheckFailed(
            f"{FUNCTION} mandou {call.name} para o execute_tool do curso (answer_tool_uses faz isso): este agente "
            "executa as funções do dicionário tools, procurando cada uma pelo nome do tool_use.",
            expected="só as funções de tools", observed=[c.name for c in run.course_calls])
    wanted = [(block["name"], block["input"]) for block in requested_calls(fixture.data)
              if block["name"] in fixture.data["tools"]]
    if run.calls == wanted:
        require_tools_state(run, fixture)
        return
    cut = [(block["name"], block["input"]) for response in fixture.data["responses"] if kept_out(response)
           for block in response["content"] if block.get("type") == "tool_use"]
    if any(call in cut for call in run.calls):
        message = (f"{FUNCTION} executou o tool_use de uma resposta cortada ou recusada: a entrada pode estar pela "
                   "metade (o reserve_item cortado chegou sem a quantidade), e essa chamada nunca pode rodar.")
    elif len(run.calls) < len(wanted) and run.calls == wanted[:len(run.calls)]:
        failing_calls = [(b["name"], b["input"]) for b in requested_calls(fixture.data)
                         if "raises" in (tool_answer(fixture.data, b["name"], b["input"]) or {})]
        if failing_calls and failing_calls[0] in run.calls:
            message = (f"Depois que {failing_calls[0][0]} levantou exceção, as chamadas seguintes do mesmo turno não "
                       "rodaram: capture a exceção de cada chamada (um try/except por tool_use), responda com "
                       "is_error e siga para a próxima.")
        else:
            message = (f"O modelo pediu {quantity(len(wanted), 'execução', 'execuções')} e só {len(run.calls)} "
                       "aconteceram: todos os tool_use de um turno rodam.")
    elif len(run.calls) > len(wanted) and all(call in wanted for call in run.calls):
        message = "Alguma função rodou mais de uma vez para o mesmo tool_use: execute cada pedido uma vez só."
    else:
        message = "As funções executadas não são as que o modelo pediu (nome, entrada ou ordem)."
    raise CheckFailed(message, expected=wanted, observed=run.calls)


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=lambda fixture: is_kind("tools_run")(fixture) and bool(requested_calls(fixture.data)),
    title="Todo tool_use respondido, com o resultado ou o erro",
    criterion=(
        "A API aceita cada pedido; cada turno com ferramentas é respondido por uma só mensagem do usuário, um "
        "tool_result por tool_use, na ordem, resultados primeiro; o content é o texto que a função devolveu, e uma "
        "função que levanta exceção, ou uma ferramenta que o agente não tem, vira is_error: True com o motivo."
    ),
)
def answers_every_tool_use(ctx: Context, fixture: Fixture) -> None:
    from grader.checks.conversation import refusal_failure
    from grader.checks.reference import validate_messages

    run = tools_run(ctx, fixture)
    state = require_tools_state(run, fixture)
    for number, body in enumerate(run.requests, start=1):
        refusal = validate_messages(body.get("messages", []))
        if refusal:
            raise refusal_failure(f"a {number}ª chamada ao modelo", body.get("messages", []), f"HTTP 400: {refusal}")
    last = state["messages"][-1] if state["messages"] else {}
    if isinstance(last, dict) and last.get("role") == "assistant" and content_blocks(last, "tool_use"):
        raise CheckFailed("A conversa devolvida termina num tool_use sem tool_result: o último turno com ferramentas "
                          "também é respondido antes de o laço parar.", expected="todo tool_use respondido",
                          observed=[block.get("id") for block in content_blocks(last, "tool_use")])
    results = {block.get("tool_use_id"): block for message in state["messages"]
               if isinstance(message, dict) and message.get("role") == "user"
               for block in content_blocks(message, "tool_result")}
    for block in requested_calls(fixture.data):
        result = results.get(block["id"])
        if result is None:
            raise CheckFailed(f"Não há tool_result para {block['id']} ({block['name']}) na conversa devolvida.",
                              expected=f"um tool_result para {block['id']}", observed="sem tool_result")
        content = result.get("content")
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        answer = tool_answer(fixture.data, block["name"], block["input"])
        if answer is None:  # a tool this agent does not have
            if not result.get("is_error") or block["name"] not in str(content or ""):
                raise CheckFailed(
                    f"O modelo pediu {block['name']}, que este agente não tem: o tool_result precisa de is_error: True "
                    f"e de um texto que diga que {block['name']} não existe aqui, para o modelo mudar de plano "
                    "(procurar tools[nome] sem conferir levanta KeyError e derruba o laço).",
                    expected={"is_error": True, "content": f"... {block['name']} ..."},
                    observed={"is_error": result.get("is_error"), "content": content})
        elif "raises" in answer:
            if not result.get("is_error") or answer["raises"] not in str(content or ""):
                raise CheckFailed(
                    f"{block['name']} ({block['id']}) levantou ValueError({answer['raises']!r}): o tool_result leva "
                    "is_error: True e a mensagem da exceção no content, para o modelo saber o que deu errado.",
                    expected={"is_error": True, "content": f"... {answer['raises']} ..."},
                    observed={"is_error": result.get("is_error"), "content": content})
        elif content != answer["returns"] or result.get("is_error"):
            raise CheckFailed(
                f"O tool_result de {block['id']} deveria trazer o texto que {block['name']} devolveu, sem is_error.",
                expected={"content": answer["returns"]},
                observed={"is_error": result.get("is_error"), "content": content})
    expected = expected_run(fixture.data)
    if len(state["messages"]) != expected.messages:
        raise CheckFailed(
            f"A conversa devolvida tem {len(state['messages'])} mensagens; um loop correto deixa {expected.messages} "
            "(a tarefa, uma do assistente por resposta aproveitável, uma do usuário por turno com ferramentas; "
            "uma resposta cortada ou recusada fica de fora).",
            expected=expected.messages, observed=len(state["messages"]))
