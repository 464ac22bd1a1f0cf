"""Exercise-1: the solution scores 100%, the generated exercise fails every check as not
implemented, and plausible wrong answers fail the check that names their mistake
(while the same check ids pass on the solution)."""
from __future__ import annotations

import pytest

from grader.checks.framework import NOT_IMPLEMENTED_PREFIX
from tests.exercise_support import (
    edited,
    exercise_path,
    failing,
    grade_file,
    replaced,
    run_checks,
    solution_notebook,
    solution_path,
    solution_results_fixture,
)

EXERCISE = "exercise-1"
RUN_FIXTURES = ["never-stops", "several-tools-per-turn", "single-tool", "tool-error"]  # each asks for tools
ANSWER_AT_ONCE = "answer-at-once"  # the first turn ends: the tool checks do not apply to it
CLASSIFY = "n1.classification_matches[memory-vs-run-state]"
COMPLETE = "n1.every_item_classified[memory-vs-run-state]"


solution_results = solution_results_fixture(EXERCISE)


def results_for(notebook, tmp_path, monkeypatch, level=None):
    return run_checks(EXERCISE, notebook, tmp_path / "checks", monkeypatch, level=level)


def test_solution_passes_every_check_in_process(solution_results):
    assert failing(solution_results) == {}
    assert len(solution_results) == 2 + 4 * len(RUN_FIXTURES) + 2


@pytest.mark.slow
def test_solution_scores_100_percent_in_a_real_kernel():
    report = grade_file(EXERCISE, solution_path(EXERCISE))
    assert report.notebook_error is None
    assert [c.id for c in report.checks if not c.passed] == []
    assert report.score == 1.0 and len(report.checks) == 20


@pytest.mark.slow
def test_generated_exercise_fails_every_check_as_not_implemented():
    report = grade_file(EXERCISE, exercise_path(EXERCISE))
    assert report.checks and not any(c.passed for c in report.checks)
    assert all(c.message.startswith(NOT_IMPLEMENTED_PREFIX) for c in report.checks), \
        [c.message for c in report.checks if not c.message.startswith(NOT_IMPLEMENTED_PREFIX)]


# ------------------------------------------------------------------ level 1

def classification_with(**changes):
    notebook = solution_notebook(EXERCISE)
    source = next(c.source for c in notebook.cells if "CLASSIFICATION = {" in c.source)
    for key, value in changes.items():
        for label in ('"memória"', '"estado de execução"'):
            source = source.replace(f'"{key}": {label},', f'"{key}": {value!r},')
    return replaced(EXERCISE, "### BEGIN SOLUTION\nCLASSIFICATION", source)


def test_everything_as_memory_fails_naming_the_six_run_state_items(tmp_path, monkeypatch, solution_results):
    notebook = classification_with(turns_counter="memória", tokens_used="memória", messages_list="memória",
                                   pending_send_email="memória", tool_ran_not_recorded="memória", loop_step="memória")
    results = results_for(notebook, tmp_path, monkeypatch, level=1)
    assert results[COMPLETE]["status"] == "pass"
    message = failing(results)[CLASSIFY]
    assert "6 de 10" in message and "turns_counter" in message and "loop_step" in message
    assert "notes_md" not in message  # the right ones are not revealed
    assert solution_results[CLASSIFY]["status"] == "pass"


def test_messages_list_as_memory_is_the_subtle_mistake_and_the_message_says_why(tmp_path, monkeypatch):
    results = results_for(classification_with(messages_list="memória"), tmp_path, monkeypatch, level=1)
    message = failing(results)[CLASSIFY]
    assert "1 de 10" in message and "messages_list" in message and "a lista em si" in message


def test_notes_on_disk_taken_for_run_state_fails(tmp_path, monkeypatch):
    results = results_for(classification_with(notes_md="estado de execução"), tmp_path, monkeypatch, level=1)
    message = failing(results)[CLASSIFY]
    assert "notes_md" in message and "Estar em disco" in message


def test_missing_item_and_invalid_label_fail_completeness(tmp_path, monkeypatch):
    notebook = edited(EXERCISE, "### BEGIN SOLUTION\nCLASSIFICATION", '    "loop_step": "estado de execução",\n', "")
    message = failing(results_for(notebook, tmp_path / "a", monkeypatch, level=1))[COMPLETE]
    assert "Faltou classificar 1" in message and "loop_step" in message

    notebook = classification_with(tokens_used="run state")
    message = failing(results_for(notebook, tmp_path / "b", monkeypatch, level=1))[COMPLETE]
    assert "tokens_used='run state'" in message


def test_labels_without_accents_or_capitals_are_accepted(tmp_path, monkeypatch):
    notebook = classification_with(notes_md="Memoria", loop_step=" estado de execucao ")
    assert failing(results_for(notebook, tmp_path, monkeypatch, level=1)) == {}


# ------------------------------------------------------------------ level 2

RUN_AGENT = "def run_agent(client, task, max_turns=MAX_TURNS):"
SOLUTION_APPEND = '        state["messages"].append({"role": "user", "content": answer_tool_uses(tool_uses_in(content))})\n'


def run_agent_with(old, new):
    return edited(EXERCISE, RUN_AGENT, old, new)


def level2(notebook, tmp_path, monkeypatch):
    return results_for(notebook, tmp_path, monkeypatch, level=2)


def test_results_in_separate_messages_are_refused_by_the_api(tmp_path, monkeypatch, solution_results):
    notebook = run_agent_with(SOLUTION_APPEND, (
        "        for result in answer_tool_uses(tool_uses_in(content)):\n"
        '            state["messages"].append({"role": "user", "content": [result]})\n'
    ))
    failed = failing(level2(notebook, tmp_path, monkeypatch))
    check = "n2.every_tool_use_answered[several-tools-per-turn]"
    assert "HTTP 400" in failed[check] and "mensagens separadas" in failed[check]
    assert "n2.every_tool_use_answered[single-tool]" not in failed
    assert solution_results[check]["status"] == "pass"


def test_answering_only_the_first_tool_use_names_the_missing_id(tmp_path, monkeypatch):
    notebook = run_agent_with("answer_tool_uses(tool_uses_in(content))", "answer_tool_uses(tool_uses_in(content)[:1])")
    failed = failing(level2(notebook, tmp_path, monkeypatch))
    message = failed["n2.every_tool_use_answered[several-tools-per-turn]"]
    assert "não responde a toolu_01MN3" in message
    assert "n2.every_tool_use_answered[tool-error]" not in failed


def test_a_loop_without_the_ceiling_is_caught_by_the_model_that_never_stops(tmp_path, monkeypatch, solution_results):
    notebook = run_agent_with('while state["turns"] < max_turns:', "while True:")
    failed = failing(level2(notebook, tmp_path, monkeypatch))
    check = "n2.stops_at_the_right_time[never-stops]"
    assert "nunca encerra" in failed[check] and "max_turns=5" in failed[check]
    assert not any("several-tools" in id_ or "single-tool" in id_ for id_ in failed)
    assert solution_results[check]["status"] == "pass"


def test_stopping_at_the_ceiling_before_answering_leaves_an_orphan(tmp_path, monkeypatch, solution_results):
    notebook = run_agent_with('        if response.stop_reason != "tool_use":\n            break\n', (
        '        if response.stop_reason != "tool_use" or state["turns"] == max_turns:\n            break\n'
    ))
    failed = failing(level2(notebook, tmp_path, monkeypatch))
    check = "n2.every_tool_use_answered[never-stops]"
    assert "termina com um tool_use sem resposta" in failed[check]
    assert solution_results[check]["status"] == "pass"


def test_tokens_overwritten_instead_of_accumulated(tmp_path, monkeypatch, solution_results):
    notebook = run_agent_with('state["tokens_used"] +=', 'state["tokens_used"] =')
    failed = failing(level2(notebook, tmp_path, monkeypatch))
    check = "n2.returned_state_is_complete[several-tools-per-turn]"
    assert "acumule com +=" in failed[check]
    assert solution_results[check]["status"] == "pass"


def test_text_before_the_tool_results_is_refused(tmp_path, monkeypatch):
    notebook = run_agent_with(
        '"content": answer_tool_uses(tool_uses_in(content))',
        '"content": [{"type": "text", "text": "Resultados:"}] + answer_tool_uses(tool_uses_in(content))',
    )
    failed = failing(level2(notebook, tmp_path, monkeypatch))
    assert "precisam vir primeiro" in failed["n2.every_tool_use_answered[single-tool]"]


def test_dropping_is_error_hides_the_tool_failure_from_the_model(tmp_path, monkeypatch, solution_results):
    notebook = run_agent_with(SOLUTION_APPEND, (
        '        results = [{"type": "tool_result", "tool_use_id": r["tool_use_id"], "content": r["content"]}\n'
        "                   for r in answer_tool_uses(tool_uses_in(content))]\n"
        '        state["messages"].append({"role": "user", "content": results})\n'
    ))
    failed = failing(level2(notebook, tmp_path, monkeypatch))
    check = "n2.tool_results_carry_outputs[tool-error]"
    assert "is_error=True" in failed[check]
    assert "n2.tool_results_carry_outputs[single-tool]" not in failed
    assert solution_results[check]["status"] == "pass"


def test_forgetting_to_return_the_state(tmp_path, monkeypatch):
    notebook = run_agent_with("    return state\n", "    print(state['turns'])\n")
    failed = failing(level2(notebook, tmp_path, monkeypatch))
    assert "deveria devolver o estado de execução" in failed["n2.stops_at_the_right_time[single-tool]"]


def test_a_loop_that_never_calls_the_model_fails_the_tool_checks_as_nothing_observed(tmp_path, monkeypatch, solution_results):
    notebook = replaced(EXERCISE, RUN_AGENT, RUN_AGENT + "\n    return new_run_state(task)\n")
    failed = failing(level2(notebook, tmp_path, monkeypatch))
    for name in RUN_FIXTURES:
        for check in (f"n2.every_tool_use_answered[{name}]", f"n2.tool_results_carry_outputs[{name}]"):
            assert failed[check].startswith("Nada observado:"), failed[check]
            assert solution_results[check]["status"] == "pass"
    assert "n2.every_tool_use_answered[answer-at-once]" not in solution_results  # no tool_use to answer there
