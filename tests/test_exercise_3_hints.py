"""Exercise 3's hints are a ladder that leads to the answer: every rung names at least as much of
what the checks require as the one before, the last rung names all of it (every action, tool set,
field, annotation and server call the fixtures make the checks look for), and an unknown-outcome
text a rung offers as an example passes the wording rule, so following the last rung literally
cannot fail."""
from __future__ import annotations

import re

import pytest

from grader.checks.exercise_3.calendar_server import TOOLS
from grader.checks.exercise_3.fixtures import is_mcp
from grader.checks.exercise_3.wording import wording_problem
from grader.core.fixture_loader import read_fixture_files
from grader.core.manifest import get_exercise
from grader.checks.framework import Fixture

# What a level's checks require, in the words a hint must use to name it.
REQUIRED = {
    1: ["pending_tool_use", "None", "{}", "READ_ONLY_TOOLS", '"rerun"', '"is_error"'],
    2: ["READ_ONLY_TOOLS", "execute_tool", "is_error", "tool_result", "tool_use_id", '"role": "user"',
        "content", "pending_tool_use", "None", "turns", "tokens_used", "confira antes de repetir"],
    3: ["server.tools()", "annotations", "readOnlyHint", "idempotentHint", "server.call_tool", "execute_tool",
        "is_error", "tool_use_id", "pending_tool_use", "None", "turns", "tokens_used", "confira antes de repetir"],
}
# What each expected action of a fixture asks the hints to say.
ACTION_WORDS = {"rerun": "READ_ONLY_TOOLS", "is_error": "is_error"}


def hints(level: int) -> tuple[str, ...]:
    return get_exercise("exercise-3").levels[level - 1].hints


def fixtures() -> list[Fixture]:
    return [Fixture(item.name, item.data) for item in read_fixture_files("exercise-3") if item.data is not None]


@pytest.mark.parametrize("level", sorted(REQUIRED))
def test_the_last_rung_names_everything_the_checks_require(level):
    ladder = hints(level)
    assert len(ladder) >= 3, f"level {level}: a ladder has at least three rungs"
    missing = [word for word in REQUIRED[level] if word not in ladder[-1]]
    assert not missing, f"level {level}: the last hint never names {missing}"


@pytest.mark.parametrize("level", sorted(REQUIRED))
def test_each_rung_names_at_least_as_much_as_the_one_before(level):
    ladder = hints(level)
    named = [sum(word in "\n".join(ladder[: i + 1]) for word in REQUIRED[level]) for i in range(len(ladder))]
    assert named == sorted(named) and named[0] < named[-1], (level, named)


def test_every_action_a_fixture_expects_is_named_by_its_level():
    for fixture in fixtures():
        level, key = (3, "reconcile_mcp") if is_mcp(fixture) else (1, "resume_action")
        text = "\n".join(hints(level))
        for tool_use_id, action in fixture.expect[key].items():
            assert action in text or ACTION_WORDS[action] in text, (fixture.name, tool_use_id, action)
            if level == 1:
                assert f'"{action}"' in hints(1)[-1], (fixture.name, action)


def test_every_hint_a_level_3_decision_turns_on_is_named_by_its_hints():
    """The server's declarations the checks judge by: each annotation a tool declares, and the case of
    a tool with none and of a tool the server does not list."""
    text = "\n".join(hints(3))
    for tool in TOOLS:
        for hint in tool.get("annotations", {}):
            assert hint in text, (tool["name"], hint)
    assert "padrão do MCP" in text and "nem lista" in text
    assert any(not tool.get("annotations") for tool in TOOLS)  # the scenes do have an undeclared tool
    names = {call["name"] for fixture in filter(is_mcp, fixtures()) for call in fixture.data["checkpoint"]["pending_tool_use"]}
    assert names - {tool["name"] for tool in TOOLS}, "a scene with a tool the server does not list"


QUOTED = re.compile(r'"([^"]*(?:desconhecid|Desfecho)[^"]*)"')


@pytest.mark.parametrize("level", [2, 3])
def test_the_unknown_outcome_texts_the_hints_offer_pass_the_wording_rule(level):
    texts = [text for hint in hints(level) for text in QUOTED.findall(hint.replace("\n", " "))]
    assert texts, f"level {level}: no example of an unknown-outcome text in the hints"
    for text in texts:
        assert wording_problem(text) is None, (level, text, wording_problem(text))


def test_a_hint_that_says_the_call_failed_would_be_caught():
    """The control: the rule this file leans on refuses the text a careless hint would suggest."""
    assert wording_problem("O envio do SMS falhou; tente novamente.") is not None
