"""Exercise 1 and the shape of its fixtures (items to classify, scripted runs), as ``grade fixtures`` checks them, with the run each script implies."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from grader.checks.fixture_shape import (
    COUNT, POSITIVE, TEXT, closed, kinds_schema, problem, response_problems, schema_problems, scripted_run_schema,
    workspace_problems,
)
from grader.checks.framework import Exercise, Fixture, plain_text, response_tokens
from grader.core.plural import quantity


EXERCISE = Exercise("exercise-1")


MEMORY, RUN_STATE = "memória", "estado de execução"


LABELS = (MEMORY, RUN_STATE)


def normalized_label(value: Any) -> str | None:
    """"Memoria", " estado de execucao " and friends -> the canonical label; None if neither."""
    if not isinstance(value, str):
        return None
    return {"memoria": MEMORY, "estado de execucao": RUN_STATE}.get(plain_text(value))


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


# The token_budget the grader passes to run_agent when a fixture sets none: large enough never to stop a run.
UNLIMITED_BUDGET = 10**9


def budget_of(data: dict) -> int:
    return data.get("token_budget", UNLIMITED_BUDGET)


def expected_run(data: dict) -> ExpectedRun | None:
    """What a correct loop does on this script: calls, tokens_used, messages, final status.

    The budget stops the loop like the turn ceiling: before a call, once tokens_used has
    reached token_budget (the turn that crossed it still gets its tool_results)."""
    responses = data.get("responses")
    if not isinstance(responses, list) or not responses:
        return None
    limit = data.get("max_turns", len(responses))
    budget = budget_of(data)
    calls = tokens = entered = 0
    messages = 1
    status = "running"
    for response in responses[:limit]:
        if tokens >= budget:
            break
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


def stopped_by_budget(data: dict) -> bool:
    """A correct loop stops on this script because tokens_used reached token_budget."""
    run = expected_run(data)
    if run is None or "token_budget" not in data or run.status != "running":
        return False
    return run.tokens >= data["token_budget"] and run.calls < data.get("max_turns", len(data["responses"]))


def block_keys(message: dict) -> list:
    """What identifies an answer's content: each block's type with its text or tool_use id."""
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    return [(b.get("type"), b.get("text", b.get("id"))) for b in blocks if isinstance(b, dict)]


def kept_out_ids(fixture: Fixture) -> set:
    return {block.get("id") for response in fixture.data.get("responses", []) if kept_out(response)
            for block in response.get("content", []) if block.get("type") == "tool_use"}


# Level 1: items to classify, each with its answer and the words shown when it is missed.
CLASSIFICATION_SCHEMA = closed(["description", "kind", "items"], {
    "description": TEXT,
    "kind": {"const": "classification"},
    "items": {
        "type": "object",
        "minProperties": 1,
        "additionalProperties": closed(["answer", "why"], {
            "answer": {"enum": list(LABELS)},
            "why": {**TEXT, "x-mensagens": dict.fromkeys(
                ("*", "required"), "obrigatório: a explicação mostrada quando o item está errado")},
        }, messages={"type": "deveria ser um objeto {answer, why}"}),
        "x-mensagens": {"*": "obrigatório, deveria mapear item -> {answer, why}"},
    },
})
# Level 2: a scripted run; its expect is what a correct loop does with the script (checked against it).
RUN_EXPECT = closed(
    ["model_calls", "tokens_used", "status"],
    {"model_calls": COUNT, "tokens_used": COUNT, "status": {"type": "string"}},
    messages={"type": "deveria ser {model_calls, tokens_used, status}"},
)
RUN_SCHEMA = scripted_run_schema(RUN_EXPECT)
RUN_SCHEMA["properties"]["token_budget"] = POSITIVE
# Level 3: another agent, whose tools are Python functions the grader hands to the loop.
TOOL_ANSWER_SCHEMA = {
    "type": "object", "required": ["input"], "additionalProperties": False,
    "properties": {"input": {"type": "object"}, "returns": TEXT, "raises": TEXT},
    "oneOf": [{"required": ["returns"]}, {"required": ["raises"]}],
    "x-mensagens": {"*": "deveria ser {input, returns} ou {input, raises}"},
}
TOOL_SCHEMA = closed(["description", "input_schema", "answers"], {
    "description": TEXT,
    "input_schema": {"type": "object"},
    "answers": {"type": "array", "items": TOOL_ANSWER_SCHEMA},
}, messages={"*": "deveria ser {description, input_schema, answers}"})
TOOLS_RUN_SCHEMA = closed(["description", "kind", "task", "tools", "responses", "expect"], {
    "description": TEXT,
    "kind": {"const": "tools_run"},
    "task": TEXT,
    "tools": {"type": "object", "minProperties": 1, "additionalProperties": TOOL_SCHEMA},
    "responses": {"type": "array", "minItems": 1, "x-mensagens": {"*": "deveria ser uma lista não vazia de respostas"}},
    "max_turns": POSITIVE,
    "expect": RUN_EXPECT,
})
FIXTURE_SCHEMA = kinds_schema({"classification": CLASSIFICATION_SCHEMA, "run": RUN_SCHEMA,
                               "tools_run": TOOLS_RUN_SCHEMA})
FIXTURE_SCHEMAS = (CLASSIFICATION_SCHEMA, RUN_SCHEMA, TOOLS_RUN_SCHEMA)


@EXERCISE.fixture_validator
def validate_fixture(data: dict) -> list[str]:
    """The shape (FIXTURE_SCHEMA), then what a schema cannot say: a run's responses and
    its expect against the script."""
    problems = schema_problems(FIXTURE_SCHEMA, data) + workspace_problems(data)
    if problems or data["kind"] == "classification":
        return problems
    problems = response_problems(data["responses"]) or run_expect_problems(data)
    if problems or data["kind"] != "tools_run":
        return problems
    return tool_answer_problems(data)


def tool_answer(data: dict, name: str, tool_input: dict) -> dict | None:
    """The scripted outcome of one of a tools_run fixture's tools for this input, or None."""
    tool = data["tools"].get(name)
    return next((answer for answer in tool["answers"] if answer["input"] == tool_input), None) if tool else None


def requested_calls(data: dict) -> list[dict]:
    """The tool_use blocks a correct loop answers, in order: those of the answers it takes in
    (a refused or cut answer runs nothing)."""
    run = expected_run(data)
    return [block for response in data["responses"][:run.calls] if not kept_out(response)
            for block in response["content"] if block.get("type") == "tool_use"]


def tool_answer_problems(data: dict) -> list[str]:
    """Every call a correct loop makes to one of the agent's tools has a scripted outcome."""
    problems = []
    for block in requested_calls(data):
        if block["name"] in data["tools"] and tool_answer(data, block["name"], block["input"]) is None:
            problems.append(problem("tools", f"{block['name']} não tem resposta para a entrada {block['input']!r} "
                                             f"(pedida em {block['id']})"))
    return problems


def run_expect_problems(data: dict) -> list[str]:
    problems = []
    run = expected_run(data)
    if run.status == "running" and run.calls < data.get("max_turns", 10**9) and run.tokens < budget_of(data):
        problems.append(problem("responses", "o roteiro acaba antes de a execução terminar; acrescente uma resposta final ou defina max_turns"))
    expect = data["expect"]
    if expect.get("model_calls") != run.calls:
        problems.append(problem("expect.model_calls", f"pelo roteiro, um loop correto faz {quantity(run.calls, 'chamada', 'chamadas')} (está {expect.get('model_calls')!r})"))
    if expect.get("tokens_used") != run.tokens:
        problems.append(problem("expect.tokens_used", f"pela soma do usage do roteiro, deveria ser {run.tokens} (está {expect.get('tokens_used')!r})"))
    if expect.get("status") != run.status:
        problems.append(problem("expect.status", f"pela regra do stop_reason, a execução termina em {run.status!r} (está {expect.get('status')!r})"))
    return problems
