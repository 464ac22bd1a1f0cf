"""The shared fixture shapes are JSON Schema (fixture_shape.CHECKPOINT_SCHEMA,
WORKSPACE_SCHEMA, scripted_run_schema) and exercise-3's whole fixture is FIXTURE_SCHEMA:
each hostile input is reported, every problem at once, by its Portuguese message."""
from __future__ import annotations

import json

import pytest

from grader.checks import fixture_shape
from grader.checks.exercise_1.fixtures import validate_fixture as validate_exercise_1
from grader.checks.exercise_3.fixtures import FIXTURE_SCHEMA, validate_fixture
from tests.grader_support import ROOT

BASE = json.loads((ROOT / "grader" / "fixtures" / "exercise-3" / "cpA.json").read_text(encoding="utf-8"))


def with_change(path: str, value):
    data = json.loads(json.dumps(BASE))
    *parents, last = path.split(".")
    target = data
    for key in parents:
        target = target[int(key)] if isinstance(target, list) else target[key]
    target[last] = value
    return data


@pytest.mark.parametrize("path, value, message", [
    ("checkpoint.turns", True, "campo `checkpoint.turns`: deveria ser um inteiro >= 0 (é True)"),
    ("checkpoint.turns", 1.0, "campo `checkpoint.turns`: deveria ser um inteiro >= 0 (é 1.0)"),
    ("checkpoint.tokens_used", -1, "campo `checkpoint.tokens_used`: deveria ser um inteiro >= 0 (é -1)"),
    ("checkpoint.task", "  ", "campo `checkpoint.task`: deveria ser um texto não vazio (é '  ')"),
    ("checkpoint.version", True, "campo `checkpoint.version`: deveria ser 1 (é True)"),
    ("checkpoint.messages", [], "campo `checkpoint.messages`: deveria ser uma lista não vazia de mensagens"),
    ("checkpoint.pending_tool_use", [], "campo `checkpoint.pending_tool_use`: deveria ser null ou uma lista não vazia"),
    ("description", "", "campo `description`: deveria ser um texto não vazio (é '')"),
    ("workspace", {"files": {"/etc/passwd": "x"}}, "campo `workspace.files`: o caminho '/etc/passwd' precisa ficar dentro da sandbox"),
    ("workspace", {"files": {"a/../../fora": "x"}}, "campo `workspace.files`: o caminho 'a/../../fora' precisa ficar dentro da sandbox"),
    ("workspace", {"files": {"notas.md": 3}}, "campo `workspace.files.notas.md`: deveria ser um texto (é 3)"),
    ("workspace", {"outbox": [1]}, "campo `workspace.outbox[0]`: deveria ser um objeto (é 1)"),
    ("workspace", {"mailbox": []}, "campo `workspace.mailbox`: chave desconhecida (aceitas: files, outbox, tickets)"),
    ("expect", {"resume_action": {}, "tickets_after": False}, "campo `expect.tickets_after`: deveria ser um inteiro >= 0 (é False)"),
    ("expect", {"resume_action": []}, "campo `expect.resume_action`: deveria mapear tool_use_id"),
])
def test_each_hostile_value_is_named_by_field(path, value, message):
    assert validate_fixture(BASE) == []
    problems = validate_fixture(with_change(path, value))
    assert any(message in problem for problem in problems), problems


def test_a_relative_path_inside_the_sandbox_is_fine_and_names_with_dots_are_not_parents():
    data = with_change("workspace", {"files": {"docs/..notas.md": "x", "a/b.txt": "y"}})
    assert [p for p in validate_fixture(data) if "workspace" in p] == []


def test_every_problem_is_reported_at_once():
    data = with_change("description", 7)
    data["checkpoint"]["turns"] = -2
    data["expect"]["surpresa"] = 1
    assert validate_fixture(data) == [
        "campo `description`: deveria ser um texto não vazio (é 7)",
        "campo `checkpoint.turns`: deveria ser um inteiro >= 0 (é -2)",
        "campo `expect.surpresa`: chave desconhecida (aceitas: resume_action, outbox_after, tickets_after)",
    ]


def test_a_message_with_a_blockless_content_and_a_stranger_role():
    data = with_change("checkpoint.messages", [{"role": "system", "content": [{"text": "oi"}]}])
    problems = validate_fixture(data)
    assert "campo `checkpoint.messages[0].role`: deveria ser \"user\" ou \"assistant\" (é 'system')" in problems
    assert "campo `checkpoint.messages[0].content[0].type`: cada bloco precisa de um campo 'type' (texto)" in problems


def test_a_scripted_run_is_checked_by_its_schema_before_its_responses():
    run = {"description": "d", "kind": "run", "task": "t", "responses": [], "max_turns": 0,
           "expect": {"model_calls": 1, "tokens_used": 1, "status": "completed", "extra": 1}}
    assert validate_exercise_1(run) == [
        "campo `responses`: deveria ser uma lista não vazia de respostas",
        "campo `max_turns`: deveria ser um inteiro >= 1 (é 0)",
        "campo `expect.extra`: chave desconhecida (aceitas: model_calls, tokens_used, status)",
    ]
    run.update(responses=[{"stop_reason": "nunca"}], max_turns=1)
    del run["expect"]["extra"]
    assert [p.split(":")[0] for p in validate_exercise_1(run)] == ["campo `responses[0]`"]


def test_the_schemas_are_draft_2020_12():
    from jsonschema import Draft202012Validator

    for schema in (FIXTURE_SCHEMA, fixture_shape.CHECKPOINT_SCHEMA, fixture_shape.WORKSPACE_SCHEMA,
                   fixture_shape.scripted_run_schema({})):
        Draft202012Validator.check_schema(schema)
