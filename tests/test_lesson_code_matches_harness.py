"""Every function a lesson writes in a code cell is the same code as in harness/.

Lessons build the harness step by step, so each lesson is paired with the modules it
builds. A definition in a lesson is compared (AST, docstrings aside) with the
definition of the same name in its own modules first, then anywhere in harness/.
"""
from __future__ import annotations

import pkgutil

import pytest

import harness
from tests.lesson_code import lesson_definitions, lesson_path, module_definitions, normalized

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
