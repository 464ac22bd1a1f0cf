"""Exercise-1: the solution scores 100%, the generated exercise fails every check as not
implemented, and plausible wrong answers fail the check that names their mistake
(while the same check ids pass on the solution)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from grader.checks.framework import NOT_IMPLEMENTED_PREFIX
from tests.exercise_support import (
    edited,
    edited_definition,
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
RUN_FIXTURES = ["budget-crossed-by-the-last-answer", "budget-exact", "budget-reached", "context-window-full", "cut-tool-use",
                "never-stops", "pause-turn", "refusal", "several-tools-per-turn", "single-tool",
                "stop-sequence", "tool-error"]  # each asks for tools
ANSWER_AT_ONCE = "answer-at-once"  # the first turn ends: the tool checks do not apply to it
KEPT_OUT_FIXTURES = ["context-window-full", "cut-tool-use", "refusal"]  # the only ones the "kept out" check runs on
SHOP_FIXTURES = ["shop-cut-reserve", "shop-never-stops", "shop-parallel", "shop-pause-then-stop-sequence", "shop-refusal",
                 "shop-tool-raises", "shop-unknown-tool"]
# Per fixture asking for tools: when it stops, tool_use answered, tool outputs, the state, the status, the budget.
LEVEL_2_COUNT = 6 * len(RUN_FIXTURES) + 4 + len(KEPT_OUT_FIXTURES)  # answer-at-once: stops, state, status, budget
LEVEL_3_COUNT = 4 * len(SHOP_FIXTURES)  # tools offered, stop rule, tools run, tool_use answered
CHECK_COUNT = 2 + LEVEL_2_COUNT + LEVEL_3_COUNT
CLASSIFY = "n1.classification_matches[memory-vs-run-state]"
COMPLETE = "n1.every_item_classified[memory-vs-run-state]"


solution_results = solution_results_fixture(EXERCISE)


def results_for(notebook, tmp_path, monkeypatch, level=None):
    return run_checks(EXERCISE, notebook, tmp_path / "checks", monkeypatch, level=level)


@pytest.mark.slow
def test_solution_passes_every_check_in_process(solution_results):
    assert failing(solution_results) == {}
    assert len(solution_results) == CHECK_COUNT


@pytest.mark.slow
def test_solution_scores_100_percent_in_a_real_kernel():
    report = grade_file(EXERCISE, solution_path(EXERCISE))
    assert report.notebook_error is None
    assert [c.id for c in report.checks if not c.passed] == []
    assert report.score == 1.0 and len(report.checks) == CHECK_COUNT


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

RUN_AGENT = "def run_agent(client, task, max_turns=MAX_TURNS, token_budget=TOKEN_BUDGET):"
SOLUTION_APPEND = '            state["messages"].append({"role": "user", "content": answer_tool_uses(tool_uses_in(content))})\n'


def run_agent_with(old, new):
    return edited(EXERCISE, RUN_AGENT, old, new)


def level2(notebook, tmp_path, monkeypatch):
    return results_for(notebook, tmp_path, monkeypatch, level=2)


def test_results_in_separate_messages_are_refused_by_the_api(tmp_path, monkeypatch, solution_results):
    notebook = run_agent_with(SOLUTION_APPEND, (
        "            for result in answer_tool_uses(tool_uses_in(content)):\n"
        '                state["messages"].append({"role": "user", "content": [result]})\n'
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
    notebook = run_agent_with('state["turns"] < max_turns and ', "")
    failed = failing(level2(notebook, tmp_path, monkeypatch))
    check = "n2.stops_at_the_right_time[never-stops]"
    assert "nunca encerra" in failed[check] and "max_turns=5" in failed[check]
    assert not any("several-tools" in id_ or "single-tool" in id_ for id_ in failed)
    assert solution_results[check]["status"] == "pass"


@pytest.mark.slow
def test_stopping_at_the_ceiling_before_answering_leaves_an_orphan(tmp_path, monkeypatch, solution_results):
    notebook = run_agent_with('        if response.stop_reason == "tool_use":\n', (
        '        if state["turns"] == max_turns:\n            break\n'
        '        if response.stop_reason == "tool_use":\n'
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
        '            results = [{"type": "tool_result", "tool_use_id": r["tool_use_id"], "content": r["content"]}\n'
        "                       for r in answer_tool_uses(tool_uses_in(content))]\n"
        '            state["messages"].append({"role": "user", "content": results})\n'
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


@pytest.mark.slow
def test_a_loop_that_never_calls_the_model_fails_the_tool_checks_as_nothing_observed(tmp_path, monkeypatch, solution_results):
    notebook = replaced(EXERCISE, RUN_AGENT, RUN_AGENT + "\n    return new_run_state(task)\n")
    failed = failing(level2(notebook, tmp_path, monkeypatch))
    for name in RUN_FIXTURES:
        for check in (f"n2.every_tool_use_answered[{name}]", f"n2.tool_results_carry_outputs[{name}]"):
            assert failed[check].startswith("Nada observado:"), failed[check]
            assert solution_results[check]["status"] == "pass"
    assert "n2.every_tool_use_answered[answer-at-once]" not in solution_results  # no tool_use to answer there


# ------------------------------------------------------------------ level 2: the stop-reason rule

OLD_RULE = (
    "    state = new_run_state(task)\n"
    '    state["token_budget"] = token_budget\n'
    '    while state["turns"] < max_turns and state["tokens_used"] < state["token_budget"]:\n'
    '        state["turns"] += 1\n'
    '        response = call_model(client, state["messages"])\n'
    '        state["tokens_used"] += response.usage.input_tokens + response.usage.output_tokens\n'
    "        content = [block.model_dump(exclude_none=True) for block in response.content]\n"
    '        state["messages"].append({"role": "assistant", "content": content})\n'
    '        if response.stop_reason != "tool_use":\n'
    "            break\n"
    '        state["messages"].append({"role": "user", "content": answer_tool_uses(tool_uses_in(content))})\n'
    "    return state\n"
)


def solution_body():
    source = next(c.source for c in solution_notebook(EXERCISE).cells if RUN_AGENT in c.source)
    return source[source.index("    state = new_run_state(task)"):source.index("    ### END SOLUTION")]


def test_the_old_rule_anything_but_tool_use_ends_fails_on_every_other_stop_reason(tmp_path, monkeypatch,
                                                                                  solution_results):
    """"stop_reason != tool_use: the task is over": a pause stops the run, a cut send_email stays in
    the conversation, and no status is ever written."""
    failed = failing(level2(run_agent_with(solution_body(), OLD_RULE), tmp_path, monkeypatch))
    assert "pause_turn não encerra" in failed["n2.stops_at_the_right_time[pause-turn]"]
    assert "entrou em messages" in failed["n2.kept_out_answer_never_runs[refusal]"]
    assert "entrou em messages" in failed["n2.kept_out_answer_never_runs[cut-tool-use]"]
    assert "resposta cortada ou recusada" in failed["n2.every_tool_use_answered[cut-tool-use]"]
    assert "vale 'running'" in failed["n2.status_says_how_it_ended[single-tool]"]
    for check in ("stops_at_the_right_time[pause-turn]", "kept_out_answer_never_runs[refusal]",
                  "kept_out_answer_never_runs[cut-tool-use]", "every_tool_use_answered[cut-tool-use]",
                  "status_says_how_it_ended[single-tool]"):
        assert solution_results[f"n2.{check}"]["status"] == "pass"


def test_running_the_cut_send_email_is_caught_by_the_spy(tmp_path, monkeypatch):
    notebook = run_agent_with('if response.stop_reason in ("refusal", "max_tokens", "model_context_window_exceeded"):',
                              'if response.stop_reason == "refusal":')
    notebook = edited_definition(notebook, "run_agent", '        if response.stop_reason == "tool_use":\n',
                               '        if response.stop_reason in ("tool_use", "max_tokens"):\n')
    failed = failing(level2(notebook, tmp_path, monkeypatch))
    message = failed["n2.kept_out_answer_never_runs[cut-tool-use]"]
    assert "executou send_email" in message and "team@example.com" in message
    assert "resposta cortada (max_tokens)" in failed["n2.tool_results_carry_outputs[cut-tool-use]"]
    assert "n2.kept_out_answer_never_runs[refusal]" not in failed


def test_keeping_the_refused_answer_in_the_conversation_fails(tmp_path, monkeypatch):
    notebook = run_agent_with(
        '            state["status"] = "refused" if response.stop_reason == "refusal" else "failed"\n',
        '            state["status"] = "refused" if response.stop_reason == "refusal" else "failed"\n'
        '            state["messages"].append({"role": "assistant", "content": [b.model_dump(exclude_none=True) '
        'for b in response.content]})\n')
    failed = failing(level2(notebook, tmp_path, monkeypatch))
    assert "\"refusal\" entrou em messages" in failed["n2.kept_out_answer_never_runs[refusal]"]
    assert "recusada ou cortada e fica de fora" in failed["n2.returned_state_is_complete[refusal]"]


def test_the_wrong_status_for_a_refusal_names_the_rule(tmp_path, monkeypatch, solution_results):
    notebook = run_agent_with('"refused" if response.stop_reason == "refusal" else "failed"', '"failed"')
    failed = failing(level2(notebook, tmp_path, monkeypatch))
    message = failed["n2.status_says_how_it_ended[refusal]"]
    assert "'failed'" in message and "'refused'" in message and "refusal" in message
    assert set(failed) == {"n2.status_says_how_it_ended[refusal]"}
    assert solution_results["n2.status_says_how_it_ended[refusal]"]["status"] == "pass"


@pytest.mark.slow
def test_calling_a_run_stopped_by_the_ceiling_completed_fails(tmp_path, monkeypatch, solution_results):
    notebook = run_agent_with("    return state\n", '    state["status"] = state.get("status", "running")\n'
                                                     '    if state["status"] == "running":\n'
                                                     '        state["status"] = "completed"\n'
                                                     "    return state\n")
    failed = failing(level2(notebook, tmp_path, monkeypatch))
    assert set(failed) == {f"n2.status_says_how_it_ended[{name}]" for name in ("never-stops", "budget-reached", "budget-exact")}
    assert "teto max_turns" in failed["n2.status_says_how_it_ended[never-stops]"]
    assert "orçamento" in failed["n2.status_says_how_it_ended[budget-reached]"]
    assert solution_results["n2.status_says_how_it_ended[never-stops]"]["status"] == "pass"


def test_treating_pause_turn_as_the_end_stops_early(tmp_path, monkeypatch):
    notebook = run_agent_with('if response.stop_reason in ("end_turn", "stop_sequence"):',
                              'if response.stop_reason in ("end_turn", "stop_sequence", "pause_turn"):')
    failed = failing(level2(notebook, tmp_path, monkeypatch))
    assert "pause_turn não encerra" in failed["n2.stops_at_the_right_time[pause-turn]"]
    assert all("pause-turn" in check for check in failed)
    # the conversation is short because the run stopped, not because answers were refused
    conversation = failed["n2.returned_state_is_complete[pause-turn]"]
    assert conversation.startswith("run_agent parou depois de 2 respostas do modelo, mas um loop correto lê 4 "
                                   "(a 2ª, com stop_reason \"pause_turn\", não encerra a tarefa)"), conversation
    assert "recusada" not in conversation and "-2" not in conversation


def test_not_stopping_on_a_stop_sequence_keeps_calling_the_model(tmp_path, monkeypatch, solution_results):
    notebook = run_agent_with('if response.stop_reason in ("end_turn", "stop_sequence"):',
                              'if response.stop_reason == "end_turn":')
    failed = failing(level2(notebook, tmp_path, monkeypatch))
    message = failed["n2.stops_at_the_right_time[stop-sequence]"]
    assert "\"stop_sequence\", que encerra a execução" in message
    assert solution_results["n2.stops_at_the_right_time[stop-sequence]"]["status"] == "pass"


def test_a_state_built_by_hand_without_status_is_told_where_status_comes_from(tmp_path, monkeypatch):
    notebook = run_agent_with("    state = new_run_state(task)\n", (
        '    state = {"version": 1, "task": task, "turns": 0, "tokens_used": 0,\n'
        '             "messages": [{"role": "user", "content": task}], "pending_tool_use": None}\n'
    ))
    notebook = edited_definition(notebook, "run_agent", '            state["status"] = "completed"\n', "")
    failed = failing(level2(notebook, tmp_path, monkeypatch))
    assert "não tem \"status\"" in failed["n2.status_says_how_it_ended[single-tool]"]
    assert "new_run_state o cria" in failed["n2.status_says_how_it_ended[single-tool]"]


# ------------------------------------------------------------------ level 2: the token budget

def test_the_budget_stops_the_loop_after_answering_the_turn_that_crossed_it(solution_results):
    """budget-reached: the second turn takes tokens_used past the budget, its two reads are
    answered, and no third call is made; the run is still running, as with the ceiling."""
    for check in ("stops_at_the_right_time", "every_tool_use_answered", "status_says_how_it_ended",
                  "budget_kept_in_the_state"):
        for name in ("budget-reached", "budget-exact", "budget-crossed-by-the-last-answer"):
            assert solution_results[f"n2.{check}[{name}]"]["status"] == "pass"


def test_calling_again_when_tokens_used_equals_the_budget_fails_only_the_exact_budget(tmp_path, monkeypatch):
    notebook = run_agent_with('state["tokens_used"] < state["token_budget"]', 'state["tokens_used"] <= state["token_budget"]')
    failed = failing(level2(notebook, tmp_path, monkeypatch))
    assert "alcançá-lo já basta" in failed["n2.stops_at_the_right_time[budget-exact]"]
    assert "n2.stops_at_the_right_time[budget-reached]" not in failed


@pytest.mark.slow
def test_dropping_the_paid_final_answer_fails_the_budget_crossed_by_it(tmp_path, monkeypatch):
    notebook = run_agent_with(
        "        state[\"tokens_used\"] += response.usage.input_tokens + response.usage.output_tokens\n",
        "        state[\"tokens_used\"] += response.usage.input_tokens + response.usage.output_tokens\n"
        "        if state[\"tokens_used\"] >= token_budget:\n            break\n")
    failed = failing(level2(notebook, tmp_path, monkeypatch))
    assert "já foi paga" in failed["n2.returned_state_is_complete[budget-reached]"]
    assert "já foi paga" in failed["n2.returned_state_is_complete[budget-crossed-by-the-last-answer]"]
    assert "'running'" in failed["n2.status_says_how_it_ended[budget-crossed-by-the-last-answer]"]


def test_the_pasted_lesson_loop_fails_every_level_2_check(tmp_path, monkeypatch):
    """The lesson's run_agent, pasted as it is: it has no token_budget, so level 2 gives it nothing."""
    from tests.paste_from_lessons import pasted_notebook

    notebook, found = pasted_notebook(EXERCISE)
    assert found == {"run_agent": True, "run_agent_with_tools": False}
    results = run_checks(EXERCISE, notebook, tmp_path, monkeypatch)
    assert all(r["status"] != "pass" for check, r in results.items() if not check.startswith("n1."))
    assert "token_budget" in failing(results)["n2.budget_kept_in_the_state[single-tool]"]


# ------------------------------------------------------------------ level 3: another agent's tools

SHOP = "def run_agent_with_tools(client, task, tools, schemas, max_turns=MAX_TURNS):"


def shop_with(old, new):
    return edited(EXERCISE, SHOP, old, new)


def level3(notebook, tmp_path, monkeypatch):
    return results_for(notebook, tmp_path, monkeypatch, level=3)


def test_the_lesson_tools_offered_to_the_shop_agent_fail_every_fixture(tmp_path, monkeypatch, solution_results):
    notebook = shop_with('response = client.messages.create(model=MODEL, max_tokens=MAX_TOKENS, tools=schemas,\n'
                         '                                          messages=state["messages"])',
                         'response = call_model(client, state["messages"])')
    failed = failing(level3(notebook, tmp_path, monkeypatch))
    for name in SHOP_FIXTURES:
        assert "call_model manda sempre TOOL_SCHEMAS" in failed[f"n3.offers_the_agents_tools[{name}]"]
        assert solution_results[f"n3.offers_the_agents_tools[{name}]"]["status"] == "pass"


def test_a_tool_that_raises_must_not_cost_the_calls_after_it(tmp_path, monkeypatch, solution_results):
    notebook = shop_with('result["content"] = str(tools[call["name"]](**call["input"]))',
                         'result["content"] = str(tools[call["name"]](**call["input"]))\n'
                         '                    except ValueError:\n                        raise\n'
                         '                    except ZeroDivisionError:\n                        pass')
    failed = failing(level3(notebook, tmp_path, monkeypatch))
    assert "escapou de run_agent_with_tools" in failed["n3.follows_the_stop_rule[shop-tool-raises]"]
    assert "n3.follows_the_stop_rule[shop-parallel]" not in failed
    assert solution_results["n3.follows_the_stop_rule[shop-tool-raises]"]["status"] == "pass"


def test_the_course_tools_answering_the_shop_calls_are_caught(tmp_path, monkeypatch):
    notebook = shop_with('            state["messages"].append({"role": "user", "content": results})\n',
                         '            state["messages"].append({"role": "user", "content": answer_tool_uses(tool_uses)})\n')
    failed = failing(level3(notebook, tmp_path, monkeypatch))
    assert "execute_tool do curso" in failed["n3.runs_each_requested_tool[shop-parallel]"]


def test_running_the_cut_reservation_is_caught(tmp_path, monkeypatch, solution_results):
    notebook = shop_with("        tool_uses = take_response(state, response)\n",
                         "        tool_uses = take_response(state, response)\n"
                         "        if response.stop_reason == \"max_tokens\":\n"
                         "            tool_uses = tool_uses_in([b.model_dump() for b in response.content])\n")
    failed = failing(level3(notebook, tmp_path, monkeypatch))
    assert "resposta cortada ou recusada" in failed["n3.runs_each_requested_tool[shop-cut-reserve]"]
    assert solution_results["n3.runs_each_requested_tool[shop-cut-reserve]"]["status"] == "pass"


def test_no_ceiling_on_the_shop_loop_is_caught_by_the_model_that_never_stops(tmp_path, monkeypatch):
    notebook = shop_with('while state["turns"] < max_turns:', "while True:")
    failed = failing(level3(notebook, tmp_path, monkeypatch))
    assert "max_turns=4" in failed["n3.follows_the_stop_rule[shop-never-stops]"]


# ------------------------------------------------------------------ hints: following the last rung cannot fail a check

def level_fixtures(kind):
    folder = Path(__file__).resolve().parents[1] / "grader" / "fixtures" / EXERCISE
    return [json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.json"))
            if json.loads(path.read_text(encoding="utf-8"))["kind"] == kind]


@pytest.mark.parametrize("level, kind", [(2, "run"), (3, "tools_run")])
def test_the_last_hint_names_every_stop_reason_and_status_the_fixtures_use(level, kind):
    """Today's defect, kept fixed: a hint named four stop reasons while a fixture used
    model_context_window_exceeded, so following it literally failed a check."""
    from grader.core.manifest import load_manifest

    hints = load_manifest().exercise(EXERCISE).levels[level - 1].hints
    last = hints[-1]
    fixtures = level_fixtures(kind)
    reasons = {r["stop_reason"] for f in fixtures for r in f["responses"]}
    statuses = {f["expect"]["status"] for f in fixtures}
    assert reasons and statuses
    for word in sorted(reasons | statuses):
        assert f'"{word}"' in last, (level, word, last)
    # each rung says more than the one before it
    assert [len(h) for h in hints] == sorted(len(h) for h in hints)
    if level == 2:
        assert "token_budget" in last and ">=" not in hints[0]
    if level == 3:
        assert "is_error" in last and "not in tools" in last and "schemas" in last


def test_every_stop_reason_the_api_documents_is_in_some_fixture():
    """The level-2 and level-3 scripts use each value of the SDK's StopReason."""
    import typing

    from anthropic.types import StopReason

    used = {r["stop_reason"] for kind in ("run", "tools_run") for f in level_fixtures(kind) for r in f["responses"]}
    assert set(typing.get_args(StopReason)) <= used
