"""Exercise 2 and the shape of its fixtures: files for ``load_checkpoint`` (level 2) and scripted runs (level 3), as ``grade fixtures`` checks them."""
from __future__ import annotations

from dataclasses import dataclass

from grader.checks.fixture_shape import (
    COUNT, TEXT, TEXTS, closed, kinds_schema, problem, response_problems, schema_problems, scripted_run_schema,
    workspace_problems,
)
from grader.checks.framework import Exercise, Fixture, is_kind
from grader.core.plural import quantity


EXERCISE = Exercise("exercise-2")


LOAD_OUTCOMES = ("None", "checkpoint", "CheckpointError")


STATUSES = ("completed", "refused", "failed", "running")
BUDGET_STATUSES = STATUSES  # a run the budget stops keeps "running", as in exercise 1 and under max_turns
MAX_TURNS_DEFAULT = 40  # harness.loop.MAX_TURNS: what a budget fixture without max_turns runs under
GOES_ON = ("run_tools", "continue")  # tool_use runs the tools, pause_turn calls again: the run goes on


def action_of(response: dict) -> str:
    """What the stop-reason rule (harness.loop.STOP_REASON_ACTIONS) asks of the loop."""
    from grader.checks.reference import STOP_REASON_ACTIONS

    return STOP_REASON_ACTIONS.get(response.get("stop_reason"), "failed")


def scripted_turns(data: dict) -> list[dict]:
    """The responses a correct loop receives from this script: up to the first one that ends
    the run (neither tool_use nor pause_turn), and never more than max_turns."""
    limit = data.get("max_turns", len(data["responses"]))
    turns = []
    for response in data["responses"][:limit]:
        turns.append(response)
        if action_of(response) not in GOES_ON:
            break
    return turns


def expected_saves(data: dict) -> int:
    """Points A and B in every turn with tools, only A in a paused turn and in the final one."""
    return sum(2 if action_of(response) == "run_tools" else 1 for response in scripted_turns(data))


def expected_status(data: dict) -> str:
    """The status a correct loop records: the last response's, or running when the ceiling stopped it."""
    action = action_of(scripted_turns(data)[-1])
    return "running" if action in GOES_ON else action


def has_tool_turns(fixture: Fixture) -> bool:
    return is_kind("run")(fixture) and any(r.get("stop_reason") == "tool_use" for r in scripted_turns(fixture.data))


FILE_SPEC = 'obrigatório: {"absent": true}, {"folder": true}, {"json": ...} ou {"text": "..."}'
# Level 2: the checkpoint.json load_checkpoint reads (absent, a folder in its place, any JSON
# value, or exact text, maybe cut short) and what it should do with it.
LOAD_SCHEMA = closed(["description", "kind", "file", "expect"], {
    "description": TEXT,
    "kind": {"const": "load"},
    "file": {
        "type": "object",
        "anyOf": [{"required": ["absent"]}, {"required": ["folder"]}, {"required": ["json"]}, {"required": ["text"]}],
        "additionalProperties": False,
        "properties": {"absent": {"const": True, "x-mensagens": {"*": "deveria ser true (o arquivo não existe)"}},
                       "folder": {"const": True, "x-mensagens": {"*": "deveria ser true (uma pasta no lugar do arquivo)"}},
                       "json": {}, "text": {"type": "string"}, "drop_last_bytes": COUNT},
        "x-mensagens": {"type": FILE_SPEC, "anyOf": FILE_SPEC},
    },
    "expect": closed(["load_checkpoint"], {"load_checkpoint": {"enum": list(LOAD_OUTCOMES)}, "mentions": TEXTS},
                     messages={"type": "deveria ser um objeto com load_checkpoint (e mentions)"}),
})
# Level 3: a scripted run; its expect is what a correct loop does with the script (checked against it).
RUN_SCHEMA = scripted_run_schema(closed(["saves", "status"], {"saves": COUNT, "status": {"enum": list(STATUSES)}},
                                        messages={"type": "deveria ser {saves, status}"}))
# Level 4: a scripted run resumed from a checkpoint that holds a token budget and what was already
# spent of it; its expect is what a correct loop does (checked against the script).
BUDGET_SCHEMA = closed(["description", "task", "responses", "token_budget", "tokens_already_used", "expect"], {
    "description": TEXT,
    "kind": {"const": "budget"},
    "task": TEXT,
    "workspace": scripted_run_schema({})["properties"]["workspace"],
    "responses": {"type": "array", "minItems": 1, "x-mensagens": {"*": "deveria ser uma lista não vazia de respostas"}},
    "token_budget": COUNT,
    "tokens_already_used": COUNT,
    "max_turns": COUNT,
    "expect": closed(["calls", "status"], {"calls": COUNT, "status": {"enum": list(BUDGET_STATUSES)}},
                     messages={"type": "deveria ser {calls, status}"}),
})
FIXTURE_SCHEMA = kinds_schema({"load": LOAD_SCHEMA, "run": RUN_SCHEMA, "budget": BUDGET_SCHEMA})
FIXTURE_SCHEMAS = (LOAD_SCHEMA, RUN_SCHEMA, BUDGET_SCHEMA)


@EXERCISE.fixture_validator
def validate_fixture(data: dict) -> list[str]:
    """The shape (FIXTURE_SCHEMA), then what a schema cannot say: which file each outcome
    needs; a run's responses and its saves against the script."""
    problems = schema_problems(FIXTURE_SCHEMA, data) + workspace_problems(data)
    if problems:
        return problems
    if data["kind"] == "load":
        return load_outcome_problems(data["file"], data["expect"]["load_checkpoint"])
    if data["kind"] == "budget":
        return response_problems(data["responses"]) or budget_problems(data)
    return response_problems(data["responses"]) or saves_problems(data)


@dataclass(frozen=True)
class BudgetRun:
    """What a correct loop does with a budget fixture's script."""
    calls: int          # model calls made
    status: str         # the status it records at the end
    tokens_used: int    # what the state has spent at the end, the checkpoint's tokens included


def budget_run(data: dict) -> BudgetRun | None:
    """The model is called only while the checkpoint's tokens_used is below the checkpoint's
    token_budget, checked before each call; the stop-reason rule and max_turns as in level 3.
    None when the script ends before a correct loop would stop."""
    from grader.checks.framework import response_tokens

    spent, calls = data.get("tokens_already_used", 0), 0
    limit = data.get("max_turns", MAX_TURNS_DEFAULT)
    while calls < limit:
        if spent >= data["token_budget"]:
            return BudgetRun(calls, "running", spent)
        if calls >= len(data["responses"]):
            return None
        response = data["responses"][calls]
        calls += 1
        spent += response_tokens(response)
        if action_of(response) not in GOES_ON:
            return BudgetRun(calls, action_of(response), spent)
    return BudgetRun(calls, "running", spent)


def budget_problems(data: dict) -> list[str]:
    wanted, said = budget_run(data), data["expect"]
    if wanted is None:
        return [problem("responses", "o roteiro acaba antes de um loop correto parar (pelo orçamento, pelo teto ou "
                                     "por uma resposta final)")]
    problems = []
    if said["calls"] != wanted.calls:
        problems.append(problem("expect.calls", f"pelo roteiro e pelo orçamento, um loop correto chama o modelo "
                                                f"{quantity(wanted.calls, 'vez', 'vezes')} (está {said['calls']!r})"))
    if said["status"] != wanted.status:
        problems.append(problem("expect.status", f"pelo roteiro e pelo orçamento, um loop correto termina com status "
                                                 f"{wanted.status!r} (está {said['status']!r})"))
    return problems


def load_outcome_problems(spec: dict, outcome: str) -> list[str]:
    if outcome == "checkpoint" and not isinstance(spec.get("json"), dict):
        return [problem("file", "um checkpoint válido se descreve com {\"json\": {...}}")]
    if outcome == "None" and spec.get("absent") is not True:
        return [problem("expect.load_checkpoint", "None só quando o arquivo não existe (file.absent)")]
    return []


def saves_problems(data: dict) -> list[str]:
    problems = []
    saves, got = expected_saves(data), data["expect"]["saves"]
    if got != saves:
        problems.append(problem("expect.saves", f"pelo roteiro, um loop correto grava {quantity(saves, 'vez', 'vezes')} (está {got!r})"))
    status, said = expected_status(data), data["expect"]["status"]
    if said != status:
        problems.append(problem("expect.status", f"pelo roteiro, um loop correto termina com status {status!r} (está {said!r})"))
    return problems
