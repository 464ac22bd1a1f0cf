"""Level 2's probe: the student's ``run_agent`` run once per scripted fixture, and the problems a run can show before any check looks closer."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grader.checks.exercise_1.fixtures import ExpectedRun, budget_of, tool_answer
from grader.checks.framework import CheckFailed, Context, Fixture, StudentProblem, is_kind, response_tokens, show
from grader.core.plural import quantity


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
        options["token_budget"] = budget_of(fixture.data)
        with ctx.tools(fixture, "run_agent") as spy:
            state, problem_found = ctx.call_or_problem(run_agent, client, fixture.data["task"], **options)
            calls = list(spy.calls)
        requests = list(client.stub_endpoint.requests)
        served = fixture.data["responses"][: len(requests)]
        return AgentRun(state, requests, calls, problem_found, served)

    return ctx.memo(f"run_agent:{fixture.name}", compute)


def agent_tools(fixture: Fixture, record: list) -> tuple[dict, list[dict]]:
    """The level-3 agent's tools as Python functions (each call recorded, its scripted outcome
    returned or raised) and their schemas, as the exercise hands them to the loop.

    A function accepts its input as keyword arguments or as one dict, the two ways a learner
    may call it."""
    tools, schemas = {}, []
    for name, spec in fixture.data["tools"].items():
        def tool(*args, _name=name, **kwargs):
            tool_input = args[0] if len(args) == 1 and not kwargs and isinstance(args[0], dict) else kwargs
            record.append((_name, dict(tool_input)))
            answer = tool_answer(fixture.data, _name, dict(tool_input))
            if answer is None:
                raise ValueError(f"{_name}: entrada inesperada {tool_input!r}")
            if "raises" in answer:
                raise ValueError(answer["raises"])
            return answer["returns"]

        tool.__name__ = name
        tools[name] = tool
        schemas.append({"name": name, "description": spec["description"], "input_schema": spec["input_schema"]})
    return tools, schemas


@dataclass
class ToolsRun:
    state: Any
    requests: list[dict]
    calls: list[tuple[str, dict]]  # (name, input) of each call to the agent's own tools
    course_calls: list  # calls that went to the course's execute_tool instead
    schemas: list[dict]
    problem: StudentProblem | None = None
    served: list[dict] = field(default_factory=list)


def tools_run(ctx: Context, fixture: Fixture) -> ToolsRun:
    """The student's run_agent_with_tools on a tools_run fixture, once per grading run."""

    def compute() -> ToolsRun:
        from grader.checks.reference import make_stub_client

        run = ctx.student_function("run_agent_with_tools")
        client = make_stub_client(fixture.data["responses"])
        record: list = []
        tools, schemas = agent_tools(fixture, record)
        options = {"max_turns": fixture.data["max_turns"]} if "max_turns" in fixture.data else {}
        with ctx.tools(fixture, "run_agent_with_tools") as spy:
            state, problem_found = ctx.call_or_problem(run, client, fixture.data["task"], tools, schemas, **options)
            course_calls = list(spy.calls)
        requests = list(client.stub_endpoint.requests)
        served = fixture.data["responses"][: len(requests)]
        return ToolsRun(state, requests, record, course_calls, schemas, problem_found, served)

    return ctx.memo(f"run_agent_with_tools:{fixture.name}", compute)


def limit_of(fixture: Fixture) -> int | None:
    return fixture.data.get("max_turns")


def ceiling_problem(run: AgentRun, fixture: Fixture) -> CheckFailed | None:
    """A loop that kept calling past the ceiling (or past the end of the script)."""
    calls = fixture.expect["model_calls"]
    if len(run.requests) <= calls:
        return None
    limit = limit_of(fixture)
    if "token_budget" in fixture.data and sum(response_tokens(r) for r in run.served[:calls]) >= fixture.data["token_budget"]:
        spent = sum(response_tokens(r) for r in run.served[:calls])
        return CheckFailed(
            f"Depois de {quantity(calls, 'chamada', 'chamadas')}, tokens_used já era {spent}, e o orçamento é "
            f"token_budget={fixture.data['token_budget']}: com tokens_used >= token_budget o laço não faz outra "
            f"chamada (run_agent fez {len(run.requests)}). O orçamento é um teto, como max_turns: alcançá-lo já basta.",
            expected=f"{calls} chamadas", observed=f"{len(run.requests)} chamadas",
        )
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


def asks_for_tools(fixture: Fixture) -> bool:
    """A run fixture whose script, up to where a correct loop stops, has a turn with tools."""
    responses = fixture.data.get("responses") or []
    calls = (fixture.expect or {}).get("model_calls", len(responses))
    return is_kind("run")(fixture) and any(r.get("stop_reason") == "tool_use" for r in responses[:calls])


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
