"""Exercise-2: the solution scores 100%, the generated exercise fails every check as not
implemented, and plausible wrong answers fail the check that names their mistake
(while the same check ids pass on the solution)."""
from __future__ import annotations

import tempfile

import pytest

from grader.checks.framework import NOT_IMPLEMENTED_PREFIX
from tests.exercise_support import (
    edited,
    exercise_path,
    failing,
    grade_file,
    replaced,
    run_checks,
    solution_path,
    solution_results_fixture,
)

EXERCISE = "exercise-2"
SAVE = "def save_checkpoint(state, path):"
LOAD = "def load_checkpoint(path):"
RUN = "def run_agent(client, state, checkpoint_path, max_turns=MAX_TURNS):"
BUDGET = "def run_agent_within_budget(client, state, checkpoint_path, max_turns=MAX_TURNS):"

CRASH = "n1.survives_a_crash_mid_write"
SERIALIZATION = "n1.survives_a_serialization_error"
WRITES = "n1.writes_the_state"
NO_TMP = "n1.no_temporary_left"
REPLACE = "n1.replaced_in_the_same_folder"
FSYNC = "n1.fsyncs_file_and_folder"
CRASHES = "n1.every_crash_state_loads"
FAILED_SWAP = "n1.a_failed_swap_is_reported"
WRITERS = "n1.two_writers_at_once"
UNWRITABLE = "n1.an_unwritable_state_is_refused"
LOAD_CHECK = "n2.loads_as_expected[{}]"
ERROR_FIXTURES = ["load-cut-mid-character", "load-empty", "load-messages-as-object", "load-missing-messages",
                  "load-missing-pending-tool-use", "load-missing-task", "load-missing-turns", "load-missing-version",
                  "load-not-an-object", "load-older-version", "load-other-version", "load-pending-as-object",
                  "load-tokens-used-as-text", "load-truncated", "load-turns-as-text", "load-turns-bool",
                  "load-version-as-text", "load-version-float", "load-version-bool", "load-tokens-used-bool",
                  "load-folder-in-place", "load-missing-save-point", "load-save-point-unknown",
                  "load-point-b-with-pending", "load-point-a-pending-not-asked"]


solution_results = solution_results_fixture(EXERCISE)


def results_for(notebook, tmp_path, monkeypatch, level):
    return run_checks(EXERCISE, notebook, tmp_path / "checks", monkeypatch, level=level)


def test_solution_passes_every_check_in_process(solution_results):
    assert failing(solution_results) == {}
    # 12 checks of level 1, 24 load fixtures, 7 checks on each of the 5 runs (point B does not apply to the answer
    # at once), 3 checks on each of the 4 budget runs
    assert len(solution_results) == 13 + 29 + 8 * 5 - 1 + 3 * 4


@pytest.mark.slow
def test_solution_scores_100_percent_in_a_real_kernel():
    report = grade_file(EXERCISE, solution_path(EXERCISE))
    assert report.notebook_error is None
    assert [c.id for c in report.checks if not c.passed] == []
    assert report.score == 1.0 and len(report.checks) == 93


@pytest.mark.slow
def test_generated_exercise_fails_every_check_as_not_implemented():
    report = grade_file(EXERCISE, exercise_path(EXERCISE))
    assert report.checks and not any(c.passed for c in report.checks)
    assert all(c.message.startswith(NOT_IMPLEMENTED_PREFIX) for c in report.checks), \
        [c.message for c in report.checks if not c.message.startswith(NOT_IMPLEMENTED_PREFIX)]


# ------------------------------------------------------------------ level 1

# The save-point refusal every body below keeps, so each test shows its one mistake.
REFUSES_UNLABELLED = ('    if state.get("save_point") not in ("A", "B"):\n'
                      '        raise CheckpointError("sem ponto de gravação")\n')


def save_as(body):
    return replaced(EXERCISE, SAVE, SAVE + "\n" + REFUSES_UNLABELLED + body)


def level1(body, tmp_path, monkeypatch):
    return failing(results_for(save_as(body), tmp_path, monkeypatch, level=1))


IN_PLACE = '''    with open(path, "w", encoding="utf-8") as file:
        json.dump(state, file)
'''


def test_overwriting_in_place_loses_the_last_good_checkpoint(tmp_path, monkeypatch, solution_results):
    failed = level1(IN_PLACE, tmp_path, monkeypatch)
    assert "o último checkpoint bom foi destruído" in failed[CRASH]
    assert "sobrescrever no lugar" in failed[CRASH]
    assert "o último checkpoint bom foi destruído" in failed[SERIALIZATION]
    assert "não chamou os.replace" in failed[REPLACE]
    assert WRITES not in failed  # it does write the state...
    assert failed[NO_TMP].startswith("Nada observado: save_checkpoint não escreveu nenhum arquivo temporário")
    for check in (CRASH, SERIALIZATION, REPLACE):
        assert solution_results[check]["status"] == "pass"


def test_serializing_first_then_overwriting_still_tears_on_a_crash(tmp_path, monkeypatch):
    failed = level1('''    text = json.dumps(state)
    with open(path, "w", encoding="utf-8") as file:
        file.write(text)
''', tmp_path, monkeypatch)
    assert CRASH in failed and "destruído" in failed[CRASH]
    assert SERIALIZATION not in failed  # the json error happens before the file is touched


ATOMIC_WITHOUT_FSYNC = '''    temporary = os.fspath(path) + ".tmp"
    with open(temporary, "w", encoding="utf-8") as file:
        json.dump(state, file)
    os.replace(temporary, path)
'''


def test_atomic_but_without_fsync_fails_the_fsync_the_crash_states_and_two_writers(tmp_path, monkeypatch,
                                                                                      solution_results):
    failed = level1(ATOMIC_WITHOUT_FSYNC, tmp_path, monkeypatch)
    assert set(failed) == {FSYNC, CRASHES, WRITERS}
    assert "Nenhum os.fsync (nem os.fdatasync) no arquivo" in failed[FSYNC]
    assert "`os.replace(checkpoint.json.tmp, checkpoint.json)`" in failed[CRASHES]
    assert "vazio" in failed[CRASHES] and "os.fsync(f.fileno())" in failed[CRASHES]  # the torn state comes first
    assert "checkpoint.json.tmp" in failed[WRITERS]
    for check in (FSYNC, CRASHES, WRITERS):
        assert solution_results[check]["status"] == "pass"


def test_the_fsyncs_observed_are_told_in_words(tmp_path, monkeypatch):
    """Only the folder is fsynced: the failure lists what was fsynced in Portuguese, not as raw tuples."""
    body = ATOMIC_WITHOUT_FSYNC + '''    folder = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    os.fsync(folder)
    os.close(folder)
'''
    results = results_for(save_as(body), tmp_path, monkeypatch, level=1)
    observed = str(results[FSYNC]["observed"])
    assert observed.startswith("fsync da pasta /") and "[" not in observed


def test_a_checkpoint_reformatted_in_place_after_the_swap_is_blamed_on_the_rewrite(tmp_path, monkeypatch):
    """The fsynced temporary became the checkpoint, then the checkpoint was rewritten bigger (indent=2):
    the cause is the rewrite in place, not a missing flush."""
    body = '''    descriptor, temporary = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)))
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        json.dump(state, file)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)
    folder = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    os.fsync(folder)
    os.close(folder)
    with open(path, "r+", encoding="utf-8") as file:
        data = json.load(file)
        file.seek(0)
        file.truncate()
        json.dump(data, file, indent=2)
'''
    failed = level1(body, tmp_path, monkeypatch)
    assert "reescrito no lugar" in failed[FSYNC] and "flush" not in failed[FSYNC]
    assert "aberto de novo para escrita" in failed[CRASHES]


def test_fsync_before_flush_is_caught_by_the_size_at_fsync_time(tmp_path, monkeypatch):
    notebook = edited(EXERCISE, SAVE, "            file.flush()\n", "")
    failed = failing(results_for(notebook, tmp_path, monkeypatch, level=1))
    assert set(failed) == {FSYNC, CRASHES} and "faltou f.flush()" in failed[FSYNC]


def test_forgetting_the_folder_fsync(tmp_path, monkeypatch):
    notebook = edited(EXERCISE, SAVE, "        os.fsync(directory)\n", "        pass\n")
    failed = failing(results_for(notebook, tmp_path, monkeypatch, level=1))
    assert set(failed) == {FSYNC, CRASHES} and "Faltou o fsync da pasta" in failed[FSYNC]
    assert "depois que a gravação voltou" in failed[CRASHES] and "fsync da pasta" in failed[CRASHES]


def test_temporary_file_in_another_folder(tmp_path, monkeypatch):
    system_temp = tmp_path / "tmp"  # where mkstemp() puts the answer's temporaries: not the real /tmp
    system_temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(system_temp))
    failed = level1('''    descriptor, temporary = tempfile.mkstemp(suffix=".json")
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        json.dump(state, file)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)
    folder = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    os.fsync(folder)
    os.close(folder)
''', tmp_path, monkeypatch)
    assert set(failed) == {REPLACE, "n1.saves_to_a_relative_path"} and "outra pasta" in failed[REPLACE]
    assert "o temporário foi criado em" in failed["n1.saves_to_a_relative_path"]
    assert any(system_temp.iterdir())  # the wrong answer did write there, and it stayed in this test's folder


@pytest.mark.slow
def test_rename_instead_of_replace_and_a_copy_that_leaves_the_temporary(tmp_path, monkeypatch):
    failed = level1(ATOMIC_WITHOUT_FSYNC.replace("os.replace", "os.rename"), tmp_path / "rename", monkeypatch)
    assert "os.rename" in failed[REPLACE] and "Windows" in failed[REPLACE]

    failed = level1(ATOMIC_WITHOUT_FSYNC.replace("os.replace(temporary, path)",
                                                 "import shutil; shutil.copyfile(temporary, path)"),
                    tmp_path / "copy", monkeypatch)
    assert "checkpoint.json.tmp" in failed[NO_TMP]
    assert "não chamou os.replace" in failed[REPLACE]


def test_a_temporary_written_through_the_mkstemp_descriptor_is_a_temporary(tmp_path, monkeypatch):
    """Written by descriptor (os.fdopen of mkstemp's), copied onto the checkpoint, then removed:
    there was a temporary, and the message must not say there was none."""
    failed = level1('''    import shutil
    descriptor, temporary = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)))
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        json.dump(state, file)
        file.flush()
        os.fsync(file.fileno())
    shutil.copyfile(temporary, path)
    os.remove(temporary)
''', tmp_path, monkeypatch)
    assert "não chamou os.replace" in failed[REPLACE]
    assert not any("nenhum arquivo temporário" in message for message in failed.values())


def test_a_path_object_plus_string_is_reported_with_the_line(tmp_path, monkeypatch):
    failed = level1(ATOMIC_WITHOUT_FSYNC.replace("os.fspath(path) + ", "path + "), tmp_path, monkeypatch)
    assert "TypeError" in failed[WRITES] and "linha" in failed[WRITES]


# ------------------------------------------------------------------ level 2

def load_as(body):
    return replaced(EXERCISE, LOAD, LOAD + "\n" + body)


def level2(notebook, tmp_path, monkeypatch):
    return failing(results_for(notebook, tmp_path, monkeypatch, level=2))


def test_the_quiet_loader_turns_every_broken_file_into_a_fresh_start(tmp_path, monkeypatch, solution_results):
    failed = level2(load_as('''    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
'''), tmp_path, monkeypatch)
    for name in ("load-empty", "load-truncated", "load-cut-mid-character"):
        assert "devolveu None para um arquivo que existe" in failed[LOAD_CHECK.format(name)]
        assert solution_results[LOAD_CHECK.format(name)]["status"] == "pass"
    assert LOAD_CHECK.format("load-absent") not in failed
    assert LOAD_CHECK.format("load-valid") not in failed


def test_a_loader_without_validation_leaks_json_errors_and_accepts_bad_shapes(tmp_path, monkeypatch):
    failed = level2(load_as('''    if not Path(path).exists():
        return None
    return json.loads(Path(path).read_text(encoding="utf-8"))
'''), tmp_path, monkeypatch)
    assert "levantou JSONDecodeError" in failed[LOAD_CHECK.format("load-truncated")]
    assert "aceitou um checkpoint que não presta" in failed[LOAD_CHECK.format("load-missing-messages")]
    assert "aceitou" in failed[LOAD_CHECK.format("load-other-version")]
    assert set(failed) == {LOAD_CHECK.format(name) for name in ERROR_FIXTURES}


def test_bool_turns_slip_through_isinstance_int(tmp_path, monkeypatch):
    notebook = edited(EXERCISE, LOAD, "if isinstance(value, bool) or not isinstance(value, expected):",
                      "if not isinstance(value, expected):")
    failed = level2(notebook, tmp_path, monkeypatch)
    assert set(failed) == {LOAD_CHECK.format(name) for name in ("load-turns-bool", "load-version-bool", "load-tokens-used-bool")}
    assert "aceitou" in failed[LOAD_CHECK.format("load-turns-bool")]


def test_a_version_error_that_names_only_one_version(tmp_path, monkeypatch):
    notebook = edited(EXERCISE, LOAD,
                      'f"{path}: o arquivo é da versão {version}; este código lê a versão {CHECKPOINT_VERSION}"',
                      '"versão de checkpoint não suportada"')
    failed = level2(notebook, tmp_path, monkeypatch)
    assert set(failed) == {LOAD_CHECK.format("load-other-version"), LOAD_CHECK.format("load-older-version")}
    assert "'2' e '1'" in failed[LOAD_CHECK.format("load-other-version")]


def test_reading_text_directly_lets_a_cut_character_escape_as_unicode_error(tmp_path, monkeypatch):
    notebook = edited(EXERCISE, LOAD, '''        raw = Path(path).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:  # uma pasta no lugar do arquivo, falta de permissão...
        raise CheckpointError(f"{path}: não dá para ler o arquivo ({error.strerror or error})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CheckpointError(f"{path}: não é texto UTF-8 válido (gravação interrompida?)") from None
''', '''        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as error:
        raise CheckpointError(f"{path}: não dá para ler o arquivo ({error})") from None
''')
    failed = level2(notebook, tmp_path, monkeypatch)
    assert set(failed) == {LOAD_CHECK.format("load-cut-mid-character")}
    assert "UnicodeDecodeError" in failed[LOAD_CHECK.format("load-cut-mid-character")]


def test_a_missing_field_message_that_does_not_name_the_field(tmp_path, monkeypatch):
    notebook = edited(EXERCISE, LOAD, 'f"{path}: falta o campo obrigatório {field}"', '"checkpoint incompleto"')
    failed = level2(notebook, tmp_path, monkeypatch)
    assert "'messages'" in failed[LOAD_CHECK.format("load-missing-messages")]
    assert LOAD_CHECK.format("load-truncated") not in failed


def test_the_learners_message_is_shown_with_the_file_name_not_the_grading_folder(tmp_path, monkeypatch):
    """The lesson puts the path first in every message; the long grading path would hide the rest."""
    notebook = edited(EXERCISE, LOAD, 'f"{path}: falta o campo obrigatório {field}"', 'f"{path}: está incompleto"')
    results = results_for(notebook, tmp_path, monkeypatch, level=2)
    observed = results[LOAD_CHECK.format("load-missing-version")]["observed"]
    assert observed.startswith("checkpoint.json: está incompleto") and "/tmp" not in observed, observed
    message = results[LOAD_CHECK.format("load-missing-version")]["message"]
    assert "como o campo se chama no JSON, sem traduzir" in message


# ------------------------------------------------------------------ level 3

def level3(notebook, tmp_path, monkeypatch):
    return failing(results_for(notebook, tmp_path, monkeypatch, level=3))


def run_edit(old, new):
    return edited(EXERCISE, RUN, old, new)


SEVERAL = "[run-several-tools-per-turn]"


@pytest.mark.slow
def test_saving_only_at_the_end_of_the_turn_misses_point_a(tmp_path, monkeypatch, solution_results):
    notebook = run_edit("        save_checkpoint(state, checkpoint_path)  # ponto A\n        if tool_uses is None:\n            break\n",
                        "        if tool_uses is None:\n            save_checkpoint(state, checkpoint_path)\n            break\n")
    failed = level3(notebook, tmp_path, monkeypatch)
    assert "Houve 3 gravações" in failed["n3.saves_twice_per_tool_turn" + SEVERAL]
    assert "Não há ponto A no turno 1" in failed["n3.point_a_records_the_decision" + SEVERAL]
    assert solution_results["n3.point_a_records_the_decision" + SEVERAL]["status"] == "pass"


def test_saving_point_a_after_the_tools_ran(tmp_path, monkeypatch, solution_results):
    notebook = run_edit(
        "        save_checkpoint(state, checkpoint_path)  # ponto A\n        if tool_uses is None:\n            break\n"
        "        if tool_uses:  # num pause_turn não há o que executar: a próxima chamada continua o turno\n"
        "            state[\"messages\"].append({\"role\": \"user\", \"content\": answer_tool_uses(tool_uses)})\n",
        "        if tool_uses is None:\n            save_checkpoint(state, checkpoint_path)\n            break\n"
        "        if tool_uses:\n            results = answer_tool_uses(tool_uses)\n"
        "            save_checkpoint(state, checkpoint_path)  # A tarde demais\n"
        "            state[\"messages\"].append({\"role\": \"user\", \"content\": results})\n")
    failed = level3(notebook, tmp_path, monkeypatch)
    check = "n3.point_a_comes_before_the_tools" + SEVERAL
    assert "quando 1 ferramenta do turno já tinha rodado" in failed[check]
    assert "n3.saves_twice_per_tool_turn" + SEVERAL not in failed
    assert solution_results[check]["status"] == "pass"


def test_point_b_with_pending_left_over(tmp_path, monkeypatch, solution_results):
    notebook = run_edit('            state["pending_tool_use"] = None\n', "")
    failed = level3(notebook, tmp_path, monkeypatch)
    check = "n3.point_b_records_the_results" + SEVERAL
    assert "pending_tool_use continua" in failed[check]
    assert solution_results[check]["status"] == "pass"


def test_pending_holding_whole_blocks_instead_of_id_name_input(tmp_path, monkeypatch):
    notebook = run_edit('state["pending_tool_use"] = tool_uses or None',
                        'state["pending_tool_use"] = '
                        '[b for b in state["messages"][-1]["content"] if b["type"] == "tool_use"] or None')
    failed = level3(notebook, tmp_path, monkeypatch)
    assert "guarde só {id, name, input}" in failed["n3.point_a_records_the_decision" + SEVERAL]


def test_only_the_first_of_two_pending_calls(tmp_path, monkeypatch):
    notebook = run_edit('state["pending_tool_use"] = tool_uses or None',
                        'state["pending_tool_use"] = (tool_uses or [])[:1] or None')
    failed = level3(notebook, tmp_path, monkeypatch)
    assert set(failed) == {"n3.point_a_records_the_decision" + SEVERAL}
    assert "todas ficam pendentes" in failed["n3.point_a_records_the_decision" + SEVERAL]


def test_a_loop_without_point_a_fails_the_point_a_checks_as_nothing_observed(tmp_path, monkeypatch, solution_results):
    notebook = run_edit("        save_checkpoint(state, checkpoint_path)  # ponto A\n", "")
    failed = level3(notebook, tmp_path, monkeypatch)
    for name in ("run-several-tools-per-turn", "run-stopped-by-the-ceiling", "run-tool-error", "run-answer-at-once"):
        for check in (f"n3.point_a_comes_before_the_tools[{name}]", f"n3.tokens_used_adds_every_response[{name}]"):
            assert failed[check].startswith("Nada observado: não há ponto A gravado no turno 1"), failed[check]
            assert solution_results[check]["status"] == "pass"


def test_a_save_that_never_tries_to_write_fails_the_serialization_check_as_nothing_observed(tmp_path, monkeypatch):
    failed = level1("    pass\n", tmp_path, monkeypatch)
    assert failed[SERIALIZATION].startswith("Nada observado: save_checkpoint recebeu um estado que o json não sabe gravar")
    assert failed[NO_TMP].startswith("Nada observado")


@pytest.mark.slow
def test_a_wholly_wrong_attempt_earns_only_what_it_gets_right(tmp_path, monkeypatch):
    """In-place writes, a reader that turns every problem into None, one save at the end of the run:
    only the valid files it reads and the last save it makes count."""
    notebook = replaced(EXERCISE, SAVE, SAVE + '\n    with open(path, "w", encoding="utf-8") as f:\n        json.dump(state, f)\n')
    for marker, source in ((LOAD, LOAD + "\n    try:\n        return json.loads(Path(path).read_text())\n"
                                         "    except Exception:\n        return None\n"),
                           (RUN, RUN + '''
    while state["turns"] < max_turns:
        state["turns"] += 1
        response = call_model(client, state["messages"])
        state["tokens_used"] += response.usage.input_tokens + response.usage.output_tokens
        content = [block.model_dump(exclude_none=True) for block in response.content]
        state["messages"].append({"role": "assistant", "content": content})
        if response.stop_reason != "tool_use":
            break
        state["messages"].append({"role": "user", "content": answer_tool_uses(tool_uses_in(content))})
    save_checkpoint(state, checkpoint_path)
    return state
'''), (BUDGET, BUDGET + "\n    return run_agent(client, state, checkpoint_path, max_turns)  # o orçamento fica para depois\n")):
        next(c for c in notebook.cells if c.cell_type == "code" and marker in c.source).source = source
    results = results_for(notebook, tmp_path, monkeypatch, level=None)
    passed = sorted(check for check, result in results.items() if result["status"] == "pass")
    assert passed == [
        "n1.a_save_after_a_failed_save",  # writing in place, the next save starts from an empty file: right
        "n1.saves_to_a_relative_path",
        "n1.writes_the_state",
        "n2.loads_as_expected[load-absent]", "n2.loads_as_expected[load-valid-pending]",
        "n2.loads_as_expected[load-valid-point-b]", "n2.loads_as_expected[load-valid]",
        "n3.final_checkpoint_is_the_returned_state[run-answer-at-once]",
        "n3.final_checkpoint_is_the_returned_state[run-pause-turn]",  # it stops at the pause, and saves what it returns
        "n3.final_checkpoint_is_the_returned_state[run-several-tools-per-turn]",
        "n3.final_checkpoint_is_the_returned_state[run-stopped-by-the-ceiling]",
        "n3.final_checkpoint_is_the_returned_state[run-tool-error]",
        # its one save in a one-turn run is at the right place, but says no save point: no point A is found
        "n3.records_the_status[run-stopped-by-the-ceiling]",  # never recording one, it keeps "running": right here
        "n4.calls_the_model_within_the_budget[budget-ample]",  # with budget to spare, ignoring it is right
        "n4.counts_every_token[budget-ample]",
    ]
    assert len(passed) / len(results) < 0.3  # it scored 45% when checks could pass on nothing


def test_a_checkpoint_in_a_message_is_one_short_line():
    """A 100 KB checkpoint left in the wrong place is summarised, each field cut short, lists by their length."""
    from grader.checks.exercise_2.save_probe import state_to_save, torn_checkpoint

    failure = torn_checkpoint(dict(state_to_save("nova", 6), task="Tarefa " + "muito longa " * 40, extra=1, more=2))
    assert len(failure.message) < 600 and "\n" not in failure.message
    assert "messages: [121 itens]" in failure.message and "(+3 campos)" in failure.message
    assert len(failure.observed) < 300


def test_a_budget_fixture_is_checked_against_its_script_and_budget():
    """expect says what a correct loop does with the script; a fixture that says otherwise, or whose
    script ends before the loop would stop, is refused with the field named."""
    import json
    from pathlib import Path

    from grader.checks.exercise_2.fixtures import validate_fixture

    data = json.loads((Path(__file__).resolve().parents[1] / "grader/fixtures/exercise-2/budget-counts-the-checkpoint.json")
                      .read_text(encoding="utf-8"))
    assert validate_fixture(data) == []
    assert any("expect.calls" in p and "1 vez" in p for p in validate_fixture(dict(data, expect={"calls": 3, "status": "running"})))
    assert any("expect.status" in p for p in validate_fixture(dict(data, expect={"calls": 1, "status": "completed"})))
    short = dict(data, token_budget=100_000, expect={"calls": 5, "status": "running"})
    assert any(p.startswith("campo `responses`") or "responses" in p for p in validate_fixture(short))
