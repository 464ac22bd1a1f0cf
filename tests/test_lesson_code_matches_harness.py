"""Every function a lesson writes in a code cell is the same code as in harness/.

Lessons build the harness step by step, so each lesson is paired with the modules it
builds. A definition in a lesson is compared (AST, docstrings aside) with the
definition of the same name in its own modules first, then anywhere in harness/.

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
    code_cell_sources,
    lesson_definitions,
    lesson_path,
    module_definitions,
    normalized,
    unresolved_names,
)

# lesson number -> modules that lesson builds, and the definitions it must show in full.
LESSON_MODULES = {
    1: (["harness.loop"], {"new_run_state", "call_model", "tool_uses_in", "answer_tool_uses", "run_agent"}),
    2: (["harness.checkpoint", "harness.checkpointed_loop"],
        {"write_json_atomic", "save_checkpoint", "load_checkpoint", "run_agent"}),
    3: (["harness.resume"], {"resume_action", "reconcile", "resume_run"}),
    4: (["harness.effects", "harness.approval", "harness.tool_runner"], {"load_effects", "save_effect", "reconcile", "run_tool_uses"}),
    5: (["harness.timeline"], {"pick_latest_point", "rewind_to", "fork_from"}),
    6: (["harness.crash", "harness.lifecycle", "harness.runner"],
        {"parse_crash_after", "crash_point", "execute_run", "main", "remove_run_files", "check_fence",
         "note_recovery_attempt", "migrate_v1_to_v2"}),
    # The appendix shows the stores (by inspect.getsource); any function it writes must match them.
    7: (["harness.stores.base", "harness.stores.sql", "harness.stores.sqlite", "harness.stores.postgres"], set()),
}


def all_harness_modules() -> list[str]:
    return [f"harness.{m.name}" for m in pkgutil.iter_modules(harness.__path__) if not m.name.startswith("_")]


def lesson_cases():
    return [pytest.param(n, id=f"lesson-{n}") for n in LESSON_MODULES]


@pytest.mark.parametrize("number", lesson_cases())
def test_lesson_definitions_match_harness(number):
    path = lesson_path(number)
    if path is None:
        pytest.skip(f"lesson {number} is not written yet")
    own_modules, required = LESSON_MODULES[number]
    lesson = lesson_definitions(path)

    missing = sorted(required - lesson.keys())
    assert not missing, f"{path.name} must define {missing} (they are what the lesson builds)"

    own = {}
    for module in own_modules:
        for name, node in module_definitions(module).items():
            own.setdefault(name, (module, node))
    elsewhere = {}
    for module in all_harness_modules():
        if module in own_modules:
            continue
        for name, node in module_definitions(module).items():
            elsewhere.setdefault(name, (module, node))

    compared = 0
    for name, node in lesson.items():
        target = own.get(name) or elsewhere.get(name)
        if target is None:
            continue
        module, harness_node = target
        assert normalized(node) == normalized(harness_node), (
            f"{path.name}: `{name}` differs from {module}.{name}; lesson and harness must be the same code"
        )
        compared += 1
    assert compared >= len(required)


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
