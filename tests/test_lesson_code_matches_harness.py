"""Every function, class and constant a lesson writes in a code cell is the same code as in harness/.

Lessons build the harness step by step, so each lesson is paired with the modules it
builds. A definition or UPPER_CASE constant in a lesson (module level, inside if/try/with
blocks too) is compared (AST, docstrings aside) with the one of the same name in its
own modules first, then anywhere in harness/; a name found twice at the same step is an
error, not a first-come pick. A lesson name with no harness counterpart must be declared
lesson-only in LESSON_MODULES, so a rename in harness/ cannot orphan the lesson's copy.

Equal bodies are not enough: the lesson's copy runs in the notebook's namespace, so
every global name a lesson's function reads must be imported or defined by the
notebook itself (the harness module may import it while the lesson forgets to).
"""
from __future__ import annotations

import pkgutil

import pytest

import harness
from tests.glossary_fixtures import notebook, write_notebook
from tests.lesson_code import (
    comparison_problems,
    code_cell_sources,
    lesson_path,
    module_source,
    unresolved_names,
)

# lesson number -> (modules that lesson builds, names it must show in full, names that are
# the lesson's own: demos, spies and the deliberately wrong versions it shows failing).
LESSON_MODULES = {
    1: (["harness.loop"],
        {"new_run_state", "call_model", "tool_uses_in", "answer_tool_uses", "run_agent", "take_response",
         "MAX_TURNS", "STOP_REASON_ACTIONS", "CUT_OFF_STOP_REASONS"},
        set()),
    2: (["harness.checkpoint", "harness.checkpointed_loop"],
        {"write_json_atomic", "save_checkpoint", "load_checkpoint", "run_agent", "CHECKPOINT_VERSION",
         "CHECKPOINT_FIELDS"},
        {"load_checkpoint_quietly", "number_text", "record", "save_without_folder_fsync", "spy_fsync",
         "spy_replace", "write_progress_atomic", "load_progress", "ProgressFileError", "PROGRESS_LINE",
         "run_and_record"}),
    3: (["harness.resume"], {"resume_run", "UNKNOWN_OUTCOME"},
        {"copy_of_crash", "safe_to_rerun", "crash_after_every_tool", "crash_resume_loop", "reconcile_rerun_everything",
         "resume_run_resetting_counters", "run_until_killed", "LESSON_DIR", "CRASH_SCRIPT", "CAUTIOUS_ANSWER"}),
    4: (["harness.effects", "harness.approval", "harness.tool_runner"],
        {"load_effects", "save_effect", "reconcile", "run_tool_uses"},
        {"append_notice", "blind_reconcile", "counting_execute_tool", "crash_case", "fresh_run", "internal_only",
         "keyless_execute_tool", "load_effects_forgiving", "put_in_ledger", "read_ledger", "run_one_tool_use",
         "run_until_send", "three_way", "traced", "write_status"}),
    5: (["harness.timeline"], {"pick_latest_point", "rewind_to", "fork_from"},
        {"ask_someone", "crash_before_sending", "fingerprint", "fresh_world", "naive_rewind", "new_attempt"}),
    6: (["harness.crash", "harness.lifecycle", "harness.runner"],
        {"parse_crash_after", "crash_point", "remove_run_files", "check_fence"},
        {"as_new_process", "crash_points_in", "exactly_one_email", "files_in", "fingerprint", "restart_from_prompt",
         "show_outcome", "EMAIL_TURN"}),
    # The appendix shows the stores (by inspect.getsource) and the rules that run around the loop (status,
    # recovery attempts, migration); any function it writes must match them.
    7: (["harness.stores.base", "harness.stores.sql", "harness.stores.sqlite", "harness.stores.postgres",
         "harness.lifecycle"], {"note_recovery_attempt", "migrate_v1_to_v2"},
        {"as_new_process", "crash_after_the_send", "fingerprint", "folder_bytes", "launch_worker", "long_run",
         "start_command", "NOTES"}),
    # The second appendix builds the model's side: retries, the streamed call, the budget, the loop with them.
    8: (["harness.model_errors", "harness.model_stream", "harness.token_budget", "harness.resilient_loop"],
        {"is_retryable", "retry_wait", "call_with_retries", "with_cache_breakpoint", "stream_model", "over_budget",
         "stop_for_budget", "count_cached_tokens", "new_budgeted_state", "ask_model", "run_agent", "resume_run"},
        {"crash_before_tools", "spy_tool", "usage_of", "DONE", "LIST", "SECOND_TURN", "TASK", "THOUGHT",
         "TOOL_TURN"}),
}


def all_harness_modules() -> list[str]:
    """Every module of harness/, subpackages included (the stores live in harness.stores)."""
    return [name for _, name, _ in pkgutil.walk_packages(harness.__path__, "harness.")
            if not name.rsplit(".", 1)[-1].startswith("_")]


def lesson_cases():
    return [pytest.param(n, id=f"lesson-{n}") for n in LESSON_MODULES]


@pytest.mark.slow
@pytest.mark.parametrize("number", lesson_cases())
def test_lesson_definitions_match_harness(number):
    path = lesson_path(number)
    if path is None:
        pytest.skip(f"lesson {number} is not written yet")
    own_modules, required, lesson_only = LESSON_MODULES[number]
    problems = comparison_problems(
        code_cell_sources(path),
        {module: module_source(module) for module in own_modules},
        {module: module_source(module) for module in all_harness_modules() if module not in own_modules},
        required, lesson_only,
    )
    assert not problems, f"{path.name}:\n  - " + "\n  - ".join(problems)


@pytest.mark.parametrize("number", lesson_cases())
def test_lesson_functions_find_every_name_in_the_notebook(number):
    path = lesson_path(number)
    if path is None:
        pytest.skip(f"lesson {number} is not written yet")
    missing = unresolved_names(code_cell_sources(path))
    assert not missing, (
        f"{path.name}: functions read names the notebook never imports or defines: "
        + "; ".join(f"{name} -> {', '.join(names)}" for name, names in sorted(missing.items()))
    )


def unresolved_in(tmp_path, *cells):
    path = write_notebook(tmp_path / "licao.ipynb", notebook([("code", source) for source in cells]))
    return unresolved_names(code_cell_sources(path))


def test_a_missing_import_is_found(tmp_path):
    # The shape of lesson 6's crash_point before the fix: `signal` used, `os` imported.
    assert unresolved_in(
        tmp_path, "import os",
        "def crash_point(label):\n    os.kill(os.getpid(), signal.SIGKILL)",
    ) == {"crash_point": ["signal"]}


def test_names_bound_anywhere_in_the_notebook_count(tmp_path):
    assert unresolved_in(
        tmp_path,
        "def f(items):\n    return [helper(x) + LIMIT for x in items if x]",
        "import json\nLIMIT = 3\nfor helper in (str,):\n    pass",
        "class Box:\n    def size(self):\n        return len(json.dumps(self)) + LIMIT",
    ) == {}


def test_nested_scopes_lambdas_and_global_writes(tmp_path):
    assert unresolved_in(
        tmp_path,
        "def outer():\n    value = 1\n    def inner():\n        return value + missing_a\n"
        "    return inner, (lambda: missing_b)",
        "def setup():\n    global counter\n    counter = 0",
        "def use():\n    return counter, display, len",
    ) == {"outer": ["missing_a", "missing_b"]}


def test_a_writefile_cell_is_not_notebook_code(tmp_path):
    # %%writefile writes a script for another process: its imports give the notebook nothing.
    assert unresolved_in(
        tmp_path,
        "%%writefile script.py\nimport signal\ndef kill():\n    return signal.SIGKILL",
        "def stop():\n    return signal.SIGSTOP",
    ) == {"stop": ["signal"]}


def problems_for(lesson_cells, modules, required=frozenset(), lesson_only=frozenset(), own=("harness.own",)):
    """comparison_problems on sources given as text: modules maps a module name to its source."""
    return comparison_problems(list(lesson_cells), {m: s for m, s in modules.items() if m in own},
                               {m: s for m, s in modules.items() if m not in own}, set(required), set(lesson_only))


def test_equal_code_passes_and_a_changed_body_is_caught():
    module = {"harness.own": "def f(x):\n    return x + 1\n"}
    assert problems_for(["def f(x):\n    return x + 1"], module, {"f"}) == []
    assert any("`f`" in p for p in problems_for(["def f(x):\n    return x + 2"], module, {"f"}))


def test_a_changed_module_constant_is_caught():
    # The harness changes pause_turn's action; the lesson still teaches the old table.
    harness_table = 'ACTIONS = {"pause_turn": "completed", "end_turn": "completed"}\n'
    lesson_table = 'ACTIONS = {"pause_turn": "continue", "end_turn": "completed"}'
    found = problems_for([lesson_table], {"harness.own": harness_table}, {"ACTIONS"})
    assert any("ACTIONS" in p for p in found), found
    assert problems_for([harness_table], {"harness.own": harness_table}, {"ACTIONS"}) == []


def test_a_lesson_copy_orphaned_by_a_rename_is_caught():
    # harness renamed write_json_atomic to write_atomically; the lesson's copy compares with nothing.
    modules = {"harness.own": "def write_atomically(path, data):\n    pass\n\ndef save(state):\n    pass\n"}
    lesson = ["def write_json_atomic(path, data):\n    pass", "def save(state):\n    pass"]
    found = problems_for(lesson, modules, {"save"})
    assert any("write_json_atomic" in p for p in found), found
    # A lesson-only demo, declared as such, is fine.
    assert problems_for(lesson, modules, {"save"}, lesson_only={"write_json_atomic"}) == []


def test_every_required_name_is_itself_compared():
    # Two lesson functions compared, but not the required one: counting is not enough.
    modules = {"harness.own": "def a():\n    pass\n\ndef b():\n    pass\n"}
    lesson = ["def a():\n    pass", "def b():\n    pass", "def run():\n    pass"]
    found = problems_for(lesson, modules, {"run", "a"}, lesson_only={"run"})
    assert any("run" in p for p in found), found


def test_definitions_inside_blocks_are_collected_on_both_sides():
    harness_side = "try:\n    import fcntl\nexcept ImportError:\n    fcntl = None\nif True:\n" \
                   "    def lock(path):\n        return fcntl\n"
    lesson_side = "if True:\n    def lock(path):\n        return None"
    found = problems_for([lesson_side], {"harness.own": harness_side}, {"lock"})
    assert any("`lock`" in p and "differs" in p for p in found), found
    assert problems_for([harness_side], {"harness.own": harness_side}, {"lock"}) == []


def test_a_name_defined_in_two_candidate_modules_is_ambiguous():
    modules = {"harness.a": "def main():\n    return 1\n", "harness.b": "def main():\n    return 2\n"}
    # Not in the lesson's own modules and defined twice elsewhere: no first-come pick.
    found = problems_for(["def main():\n    return 2"], modules, {"main"}, own=())
    assert any("main" in p and "harness.a" in p and "harness.b" in p for p in found), found
    # Twice among the lesson's own modules: just as ambiguous.
    found = problems_for(["def main():\n    return 1"], modules, {"main"}, own=("harness.a", "harness.b"))
    assert any("main" in p and "harness.a" in p and "harness.b" in p for p in found), found
    # Own modules first: one own definition decides, whatever is defined elsewhere.
    assert problems_for(["def main():\n    return 2"], modules, {"main"}, own=("harness.b",)) == []
