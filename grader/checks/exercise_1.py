"""Checks for exercise-1: memory versus run state, and the in-memory agent loop.

Level 1 grades the structured answer ``CLASSIFICATION`` (item -> "memória" or
"estado de execução") against every ``classification`` fixture. Level 2 runs the
student's ``run_agent(client, task, max_turns=...)`` on every ``run`` fixture: the real
``anthropic`` client over the offline endpoint, instrumented tools, and then the
requests the endpoint received and the state returned are compared with the script.

Fixture shapes (``grader/fixtures/exercise-1/*.json``)::

    {"description": "...", "kind": "classification",
     "items": {"<key>": {"answer": "memória" | "estado de execução", "why": "..."}}}

    {"description": "...", "kind": "run", "task": "...",
     "workspace": {"files": {...}},            # optional
     "responses": [<compact scripted responses>],
     "max_turns": 5,                           # optional; absent = the student's default
     "expect": {"model_calls": 3, "tokens_used": 1952, "status": "completed"}}

``expect`` is checked against the script when the fixture loads, so an instructor's
arithmetic slip is reported as a fixture problem, not as a student mistake. The
script may use every stop_reason; the loop must follow the stop-reason rule of
``harness.loop.STOP_REASON_ACTIONS``: tool_use runs the tools, pause_turn calls again,
end_turn/stop_sequence complete, refusal ends as refused and a cut answer (max_tokens,
model_context_window_exceeded) as failed,
and a refused or cut answer neither runs nor enters the conversation.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grader.checks.fixture_shape import problem, required_text, scripted_run_problems, unknown_keys
from grader.checks.framework import (
    CheckFailed,
    Context,
    Exercise,
    Fixture,
    StudentProblem,
    content_blocks,
    is_kind,
    nothing_observed,
    plain_text,
    response_tokens,
    show,
)
from grader.core.plural import quantity

EXERCISE = Exercise("exercise-1")

MEMORY, RUN_STATE = "memória", "estado de execução"
LABELS = (MEMORY, RUN_STATE)


def normalized_label(value: Any) -> str | None:
    """"Memoria", " estado de execucao " and friends -> the canonical label; None if neither."""
    if not isinstance(value, str):
        return None
    return {"memoria": MEMORY, "estado de execucao": RUN_STATE}.get(plain_text(value))


# ----------------------------------------------------------------- fixture shape


@dataclass(frozen=True)
class ExpectedRun:
    calls: int
    tokens: int
    messages: int
    status: str
    entered: int  # responses that enter the conversation as assistant messages


def action_of(response: dict) -> str:
    from grader.checks.reference import STOP_REASON_ACTIONS

    return STOP_REASON_ACTIONS.get(response.get("stop_reason"), "failed")


def expected_run(data: dict) -> ExpectedRun | None:
    """What a correct loop does on this script: calls, tokens_used, messages, final status."""
    responses = data.get("responses")
    if not isinstance(responses, list) or not responses:
        return None
    limit = data.get("max_turns", len(responses))
    calls = tokens = entered = 0
    messages = 1
    status = "running"
    for response in responses[:limit]:
        calls += 1
        tokens += response_tokens(response)
        action = action_of(response)
        if action in ("refused", "failed"):
            status = action
            break
        entered += 1
        messages += 2 if action == "run_tools" else 1
        if action == "completed":
            status = action
            break
    return ExpectedRun(calls, tokens, messages, status, entered)


def kept_out(response: dict) -> bool:
    """A refused or cut answer: nothing of it runs and it stays out of the conversation."""
    return action_of(response) in ("refused", "failed")


def has_kept_out_answer(fixture: Fixture) -> bool:
    return fixture.data.get("kind") == "run" and any(kept_out(r) for r in fixture.data.get("responses", []))


def block_keys(message: dict) -> list:
    """What identifies an answer's content: each block's type with its text or tool_use id."""
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    return [(b.get("type"), b.get("text", b.get("id"))) for b in blocks if isinstance(b, dict)]


def kept_out_ids(fixture: Fixture) -> set:
    return {block.get("id") for response in fixture.data.get("responses", []) if kept_out(response)
            for block in response.get("content", []) if block.get("type") == "tool_use"}


@EXERCISE.fixture_validator
def validate_fixture(data: dict) -> list[str]:
    kind = data.get("kind")
    if kind == "classification":
        problems = unknown_keys(data, {"description", "kind", "items"})
        problems += required_text(data, "description", "description")
        items = data.get("items")
        if not isinstance(items, dict) or not items:
            return problems + [problem("items", "obrigatório, deveria mapear item -> {answer, why}")]
        for key, item in items.items():
            if not isinstance(item, dict) or item.get("answer") not in LABELS:
                problems.append(problem(f"items.{key}.answer", f"deveria ser {LABELS[0]!r} ou {LABELS[1]!r}"))
            elif not isinstance(item.get("why"), str) or not item["why"].strip():
                problems.append(problem(f"items.{key}.why", "obrigatório: a explicação mostrada quando o item está errado"))
        return problems
    if kind == "run":
        return validate_run_fixture(data)
    return [problem("kind", f"deveria ser \"classification\" ou \"run\" (é {kind!r})")]


def validate_run_fixture(data: dict) -> list[str]:
    problems = scripted_run_problems(data)
    if problems:
        return problems
    run = expected_run(data)
    if run.status == "running" and run.calls < data.get("max_turns", 10**9):
        problems.append(problem("responses", "o roteiro acaba antes de a execução terminar; acrescente uma resposta final ou defina max_turns"))
    expect = data.get("expect")
    if not isinstance(expect, dict):
        return problems + [problem("expect", "obrigatório, deveria ser {model_calls, tokens_used, status}")]
    problems += unknown_keys(expect, {"model_calls", "tokens_used", "status"}, "expect")
    if expect.get("model_calls") != run.calls:
        problems.append(problem("expect.model_calls", f"pelo roteiro, um loop correto faz {quantity(run.calls, 'chamada', 'chamadas')} (está {expect.get('model_calls')!r})"))
    if expect.get("tokens_used") != run.tokens:
        problems.append(problem("expect.tokens_used", f"pela soma do usage do roteiro, deveria ser {run.tokens} (está {expect.get('tokens_used')!r})"))
    if expect.get("status") != run.status:
        problems.append(problem("expect.status", f"pela regra do stop_reason, a execução termina em {run.status!r} (está {expect.get('status')!r})"))
    return problems


# ----------------------------------------------------------------- level 1


def student_classification(ctx: Context) -> dict:
    answer = ctx.student_answer("CLASSIFICATION")
    if not isinstance(answer, dict):
        raise CheckFailed(
            f"CLASSIFICATION deveria ser um dicionário item -> \"memória\" ou \"estado de execução\", "
            f"mas é {type(answer).__name__}.",
            expected="um dict", observed=answer,
        )
    return answer


@EXERCISE.check(
    level=1,
    per_fixture=True,
    applies=is_kind("classification"),
    title="Todos os itens classificados",
    criterion=(
        "CLASSIFICATION tem uma entrada para cada item da lista, e cada valor é exatamente "
        "\"memória\" ou \"estado de execução\"."
    ),
)
def every_item_classified(ctx: Context, fixture: Fixture) -> None:
    answer = student_classification(ctx)
    items = fixture.data["items"]
    missing = [key for key in items if key not in answer]
    if missing:
        raise CheckFailed(
            f"Faltou classificar {quantity(len(missing), 'item', 'itens')}: {', '.join(missing)}. Copie as chaves da "
            "lista ITEMS, sem mudar a grafia.",
            expected=sorted(items), observed=sorted(answer),
        )
    invalid = {key: answer[key] for key in items if normalized_label(answer[key]) is None}
    if invalid:
        raise CheckFailed(
            "Cada valor precisa ser \"memória\" ou \"estado de execução\"; estes não são: "
            + ", ".join(f"{key}={value!r}" for key, value in invalid.items()) + ".",
            expected=list(LABELS), observed=invalid,
        )


@EXERCISE.check(
    level=1,
    per_fixture=True,
    applies=is_kind("classification"),
    title="Cada item no grupo certo",
    criterion=(
        "Memória é o que o modelo já viu (inclusive notas em arquivo, como um NOTES.md); "
        "estado de execução é o que o processo segura para continuar (messages, turns, "
        "tokens_used, chamadas sem resultado). Cada item coincide com o gabarito."
    ),
)
def classification_matches(ctx: Context, fixture: Fixture) -> None:
    answer = student_classification(ctx)
    items = fixture.data["items"]
    wrong = [key for key in items if key in answer and normalized_label(answer[key]) not in (None, items[key]["answer"])]
    unusable = [key for key in items if key not in answer or normalized_label(answer[key]) is None]
    if unusable:
        raise CheckFailed(
            f"Há itens sem classificação válida ({', '.join(unusable)}); resolva primeiro a verificação "
            "\"Todos os itens classificados\".",
            expected=f"{len(items)} itens classificados", observed=f"{len(items) - len(unusable)} válidos",
        )
    if wrong:
        reasons = " ".join(f"[{key}] {items[key]['why']}" for key in wrong)
        raise CheckFailed(
            f"{len(wrong)} de {quantity(len(items), 'item', 'itens')} no grupo trocado: {', '.join(wrong)}. {reasons}",
            expected=f"{len(items)} de {len(items)} certos", observed=f"{len(items) - len(wrong)} certos",
        )


# ----------------------------------------------------------------- level 2: one run per fixture


@dataclass
class AgentRun:
    state: Any
    requests: list[dict]
    calls: list  # ToolCall records from the spy
    problem: StudentProblem | None = None
    served: list[dict] = field(default_factory=list)  # the scripted responses the loop received


def agent_run(ctx: Context, fixture: Fixture) -> AgentRun:
    """The student's run_agent on this fixture, once per grading run (memoized)."""

    def compute() -> AgentRun:
        from grader.checks.reference import make_stub_client

        run_agent = ctx.student_function("run_agent")
        client = make_stub_client(fixture.data["responses"])
        options = {"max_turns": fixture.data["max_turns"]} if "max_turns" in fixture.data else {}
        with ctx.tools(fixture, "run_agent") as spy:
            state, problem_found = ctx.call_or_problem(run_agent, client, fixture.data["task"], **options)
            calls = list(spy.calls)
        requests = list(client.stub_endpoint.requests)
        served = fixture.data["responses"][: len(requests)]
        return AgentRun(state, requests, calls, problem_found, served)

    return ctx.memo(f"run_agent:{fixture.name}", compute)


def limit_of(fixture: Fixture) -> int | None:
    return fixture.data.get("max_turns")


def ceiling_problem(run: AgentRun, fixture: Fixture) -> CheckFailed | None:
    """A loop that kept calling past the ceiling (or past the end of the script)."""
    calls = fixture.expect["model_calls"]
    if len(run.requests) <= calls:
        return None
    limit = limit_of(fixture)
    if limit is not None and len(run.requests) > limit:
        return CheckFailed(
            f"O modelo deste roteiro nunca encerra, e run_agent fez {len(run.requests)} chamadas com "
            f"max_turns={limit}: o laço precisa parar quando turns chega a max_turns.",
            expected=f"{calls} chamadas", observed=f"{len(run.requests)} chamadas",
        )
    last = fixture.data["responses"][calls - 1]
    return CheckFailed(
        f"run_agent continuou chamando o modelo depois de uma resposta com stop_reason "
        f"\"{last.get('stop_reason')}\", que encerra a execução ({len(run.requests)} chamadas; o roteiro "
        f"encerra na {calls}ª). Só tool_use e pause_turn seguem para a próxima chamada.",
        expected=f"{calls} chamadas", observed=f"{len(run.requests)} chamadas",
    )


def require_state(run: AgentRun) -> dict:
    if run.problem is not None:
        raise run.problem
    if not isinstance(run.state, dict):
        raise CheckFailed(
            f"run_agent deveria devolver o estado de execução (um dict), mas devolveu {show(run.state, 120)}.",
            expected="dict com version, task, turns, tokens_used, messages, pending_tool_use",
            observed=run.state,
        )
    if not isinstance(run.state.get("messages"), list):
        raise CheckFailed(
            "O estado devolvido não tem a lista messages.",
            expected="state[\"messages\"] uma lista", observed=run.state.get("messages", "<ausente>"),
        )
    return run.state


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
        why = ("um pause_turn não encerra: o modelo só pausou o turno, e a próxima chamada (com a resposta "
               "pausada de volta na conversa) o continua" if stopped_at == "pause_turn" else
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


def asks_for_tools(fixture: Fixture) -> bool:
    """A run fixture whose script, up to where a correct loop stops, has a turn with tools."""
    responses = fixture.data.get("responses") or []
    calls = (fixture.expect or {}).get("model_calls", len(responses))
    return is_kind("run")(fixture) and any(r.get("stop_reason") == "tool_use" for r in responses[:calls])


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
                "A conversa devolvida termina com um tool_use sem resposta: quando o teto chega, o turno "
                "em andamento ainda precisa dos seus tool_result (senão ninguém consegue continuar essa conversa).",
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


def assistant_count_problem(run: AgentRun, expected: ExpectedRun, found: int) -> str:
    """Why the conversation holds `found` assistant messages where a correct loop keeps `expected.entered`.

    A loop that stopped early (or went on past the end) read a different number of answers
    than a correct one, so the count is compared with what a correct loop reads, never
    with what this loop happened to read.
    """
    answered = len(run.served)
    should = f"a conversa deveria ter {quantity(expected.entered, 'mensagem', 'mensagens')} do assistente, e tem {found}"
    if answered < expected.calls:
        stopped = (f" (a {answered}ª, com stop_reason \"{run.served[-1].get('stop_reason')}\", não encerra a tarefa)"
                   if run.served else "")
        return (f"run_agent parou depois de {quantity(answered, 'resposta', 'respostas')} do modelo, mas um loop correto "
                f"lê {expected.calls}{stopped}; por isso {should}.")
    if answered > expected.calls:
        return (f"run_agent seguiu depois do fim: leu {answered} respostas do modelo, mas a tarefa termina na "
                f"{expected.calls}ª; {should}.")
    kept_out = answered - expected.entered
    rule = ("" if not kept_out else
            "; uma delas foi recusada ou cortada e fica de fora" if kept_out == 1 else
            f"; {kept_out} delas foram recusadas ou cortadas e ficam de fora")
    return (f"O modelo respondeu {quantity(answered, 'vez', 'vezes')}{rule}; então {should}: cada resposta "
            "aproveitável entra em messages, uma resposta recusada ou cortada não.")


STATUS_RULES = {
    "completed": "end_turn e stop_sequence encerram com status \"completed\"",
    "refused": "uma resposta com stop_reason \"refusal\" encerra com status \"refused\"",
    "failed": "uma resposta cortada (stop_reason \"max_tokens\" ou \"model_context_window_exceeded\") encerra "
              "com status \"failed\"",
    "running": "quando quem para é o teto max_turns, a execução não terminou: o status continua \"running\"",
}


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
        raise CheckFailed(
            f"state[\"status\"] vale {state['status']!r}, mas nesta tarefa deveria ser {wanted!r}: "
            f"{STATUS_RULES[wanted]}.",
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
