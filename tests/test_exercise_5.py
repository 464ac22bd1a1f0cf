"""Exercise 5 (rewind and fork, carried to new cases): the solution scores 100%, the generated
exercise fails every check as not implemented, and plausible wrong answers fail with a message
naming the mistake (more of them in tests/wrong_answers/exercise-5/).

Two gradings go through a real kernel; the wrong answers run the same checks in-process
(the notebook's cells executed into a dict), which the engine tests show is equivalent.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import nbformat
import pytest

from grader.checks.framework import NOT_IMPLEMENTED_PREFIX, Session
from grader.checks.runner import run_plan
from grader.core.engine import grade, load_exercise
from grader.core.fixture_loader import load_fixtures
from tests.exercise_support import assert_fails, edited_definition, run_checks
from tests.exercise_support import failing as failures
from tests.grader_support import defining_cell, namespace_of

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = ROOT / "solutions" / "exercise-5.ipynb"
EXERCISE_NOTEBOOK = ROOT / "exercises" / "exercise-5.ipynb"
FIXTURES = ROOT / "grader" / "fixtures" / "exercise-5"


def solution() -> nbformat.NotebookNode:
    return nbformat.read(str(SOLUTION), as_version=4)


def replaced(name: str, old: str, new: str) -> nbformat.NotebookNode:
    return edited_definition(solution(), name, old, new)


def defined(name: str, source: str) -> nbformat.NotebookNode:
    notebook = solution()
    defining_cell(notebook, name).source = source
    return notebook


def graded(notebook, tmp_path, monkeypatch, level) -> dict[str, dict]:
    return run_checks("exercise-5", notebook, tmp_path / "checks", monkeypatch, level=level, check_timeout=30.0)


# ----------------------------------------------------------------- real kernel


@pytest.mark.slow
def test_solution_scores_100_percent():
    report = grade("exercise-5", SOLUTION)
    assert report.notebook_error is None
    statuses = {check.id: check.status for check in report.checks}
    assert len(statuses) == 116
    assert set(statuses.values()) == {"pass"}, {k: v for k, v in statuses.items() if v != "pass"}
    assert {check.level for check in report.checks} == {1, 2, 3, 4}


@pytest.mark.slow
def test_generated_exercise_fails_every_check_as_not_implemented():
    report = grade("exercise-5", EXERCISE_NOTEBOOK)
    assert report.checks and all(check.status != "pass" for check in report.checks)
    assert all(NOT_IMPLEMENTED_PREFIX in check.message for check in report.checks)


# ----------------------------------------------------------------- level 1: another agent's names


def test_the_lessons_pick_latest_point_finds_nothing_in_the_other_agents_folder(tmp_path, monkeypatch):
    """The lesson's function under the new name: it looks for turn-NNN-A.json in checkpoints/."""
    source = ('''def latest_step(run_dir, step=None):
    points = list_points(run_dir)
    if step is not None:
        points = [p for p in points if parse_point_name(p.name)[0] == step]
    return points[-1] if points else None
''')
    results = graded(defined("latest_step", source), tmp_path, monkeypatch, 1)
    assert_fails(results, "n1.latest_of_the_run[equipe-completa]", "Devolveu None", "step-3-pre.json")
    assert_fails(results, "n1.steps_compare_as_numbers", "Devolveu None")


@pytest.mark.slow
def test_alphabetical_phase_order_is_named(tmp_path, monkeypatch):
    notebook = replaced("latest_step", 'phase_order = {"pre": 0, "post": 1}', 'phase_order = {"pre": 1, "post": 0}')
    results = graded(notebook, tmp_path, monkeypatch, 1)
    assert_fails(results, "n1.latest_of_each_step[equipe-completa]", "step-1-pre.json", "\"post\" é gravado depois de \"pre\"")


def test_a_folder_named_like_a_step_is_not_a_step(tmp_path, monkeypatch):
    notebook = replaced("latest_step", "if path.is_file() and match", "if match")
    results = graded(notebook, tmp_path, monkeypatch, 1)
    assert_fails(results, "n1.latest_of_the_run[pasta-com-nome-de-ponto]", "isso é uma pasta")


@pytest.mark.slow
def test_the_step_argument_ignored_is_named(tmp_path, monkeypatch):
    notebook = replaced("latest_step", "(step is None or int(match.group(1)) == step)", "True")
    assert_fails(graded(notebook, tmp_path, monkeypatch, 1), "n1.latest_of_each_step[equipe-completa]",
                 "o argumento step restringe")


def test_the_steps_folder_keeps_the_fixtures_points_under_the_other_names(tmp_path):
    from grader.checks.exercise_5 import fixture_steps_dir

    folder = fixture_steps_dir("ja-rebobinada", tmp_path)
    names = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert "steps/step-1-post.json" in names and "steps/rewound-001/step-2-pre.json" in names
    assert not any(name.startswith("checkpoints/") for name in names)
    nested = fixture_steps_dir("pasta-com-nome-de-ponto", tmp_path)
    assert (nested / "steps" / "step-3-pre.json").is_dir()


# ----------------------------------------------------------------- level 2: undo a decision


@pytest.mark.slow
def test_the_lessons_rewind_to_the_turn_of_the_decision_keeps_the_decision(tmp_path, monkeypatch):
    """What a learner who pastes rewind_to and passes it the decision's turn gets."""
    source = '''def undo_decision(run_dir, tool_name):
    from harness.timeline import rewind_to
    for path in list_points(run_dir):
        if any(call["name"] == tool_name for call in read_point(path)["pending_tool_use"] or []):
            return rewind_to(run_dir, parse_point_name(path.name)[0])
    raise TimelineError(tool_name)
'''
    results = graded(defined("undo_decision", source), tmp_path, monkeypatch, 2)
    assert_fails(results, "n2.scene_of_the_turn[equipe-completa]", "voltar ao turno da decisão não a desfaz")
    assert_fails(results, "n2.scene_of_the_turn[envio-nunca-comecou]")


@pytest.mark.slow
def test_a_missing_decision_must_be_a_timeline_error_and_change_nothing(tmp_path, monkeypatch):
    notebook = replaced("undo_decision", '        raise TimelineError(f"o modelo não pediu {tool_name} na sequência ativa")',
                        "        return None")
    results = graded(notebook, tmp_path, monkeypatch, 2)
    assert_fails(results, "n2.unknown_decision_is_refused[equipe-completa]", "levante TimelineError")


def test_running_the_decision_again_to_undo_it_is_caught(tmp_path, monkeypatch):
    notebook = replaced("undo_decision", "    set_aside_points_after(run_dir, *parse_point_name(target.name))\n",
                        "    set_aside_points_after(run_dir, *parse_point_name(target.name))\n"
                        "    from harness.tools import execute_tool\n"
                        "    execute_tool(\"send_email\", {\"to\": \"team@example.com\", \"subject\": \"desconsiderem\", \"body\": \".\"})\n")
    results = graded(notebook, tmp_path, monkeypatch, 2)
    assert_fails(results, "n2.rewind_runs_nothing[equipe-completa]", "Rebobinar só move estado")


# ----------------------------------------------------------------- level 3: fork at the decision


def test_forking_from_the_end_of_the_decisions_turn_is_named(tmp_path, monkeypatch):
    """The lesson's fork_from(run_dir, turn) takes the last point of the turn: B, not the decision."""
    source = '''def fork_at_decision(run_dir, tool_name, new_run_dir):
    from harness.timeline import fork_from
    for path in list_points(run_dir):
        if any(call["name"] == tool_name for call in read_point(path)["pending_tool_use"] or []):
            return fork_from(run_dir, parse_point_name(path.name)[0], new_run_dir)
    raise TimelineError(tool_name)
'''
    results = graded(defined("fork_at_decision", source), tmp_path, monkeypatch, 3)
    assert_fails(results, "n3.identity_and_parent[equipe-completa]", "parent deveria registrar")


def test_a_fork_that_writes_nothing_fails_the_untouched_check_as_nothing_observed(tmp_path, monkeypatch):
    failed = failures(graded(defined("fork_at_decision", "def fork_at_decision(run_dir, tool_name, new_run_dir):\n    return None\n"),
                             tmp_path, monkeypatch, level=3))
    assert failed["n3.original_untouched[equipe-completa]"].startswith("Nada observado: fork_at_decision não gravou")
    assert failed["n3.dry_run_keeps_the_world[equipe-completa]"]


# ----------------------------------------------------------------- level 4: finish an interrupted rewind


@pytest.mark.slow
def test_finishing_by_calling_the_lessons_rewind_to_breaks_on_the_half_moved_folder(tmp_path, monkeypatch):
    """A learner who replays the lesson's rewind_to from the intent: it makes a NEW rewound-NNN
    folder, so the points end up split between two folders, and the marker is left behind."""
    source = '''def finish_rewind(run_dir):
    from harness.timeline import rewind_to
    marker = Path(run_dir) / "rewind.json"
    if not marker.exists():
        return None
    plan = json.loads(marker.read_text())
    turn, point = parse_point_name(plan["to"])
    return rewind_to(run_dir, turn, point)
'''
    results = graded(defined("finish_rewind", source), tmp_path, monkeypatch, 4)
    assert_fails(results, "n4.rewind_is_finished[rebobinagem-movendo]", "não está em checkpoints/rewound-001/")
    assert_fails(results, "n4.rewind_is_finished[rebobinagem-no-fim]", "rewind.json continua na pasta")


def test_a_finish_that_does_nothing_is_nothing_observed(tmp_path, monkeypatch):
    failed = failures(graded(defined("finish_rewind", "def finish_rewind(run_dir):\n    return None\n"),
                             tmp_path, monkeypatch, level=4))
    assert failed["n4.rewind_is_finished[rebobinagem-no-comeco]"].startswith("Nada observado")
    assert "n4.nothing_to_finish[equipe-completa]" not in failed


def test_a_finish_that_deletes_the_abandoned_points_is_named(tmp_path, monkeypatch):
    notebook = replaced("finish_rewind", "            path.replace(aside / path.name)", "            path.unlink()")
    assert_fails(graded(notebook, tmp_path, monkeypatch, 4), "n4.rewind_is_finished[rebobinagem-movendo]",
                 "nunca é apagada")


# ----------------------------------------------------------------- fixtures as data


def test_shipped_fixtures_are_valid_and_cover_every_level():
    exercise = load_exercise("exercise-5")
    fixtures = load_fixtures("exercise-5", (), exercise.validate_fixture)
    assert len(fixtures) == 15
    assert sum("undo" in f.expect for f in fixtures) >= 4
    assert sum("fork" in f.expect for f in fixtures) >= 4
    assert sum("undo_missing_tool" in f.expect for f in fixtures) >= 3
    assert any(f.data.get("mtimes") for f in fixtures)
    finishes = [f.expect["finish"] for f in fixtures if "finish" in f.expect]
    assert sum(isinstance(x, dict) and "to" in x for x in finishes) >= 4  # a crash at each step of the rewind
    assert None in finishes and {"refused": True} in finishes


def test_a_malformed_fixture_names_each_problem():
    exercise = load_exercise("exercise-5")
    data = json.loads((FIXTURES / "equipe-completa.json").read_text(encoding="utf-8"))
    broken = copy.deepcopy(data)
    broken["run_dir"]["../fora.json"] = {}
    broken["run_dir"]["checkpoints/turn-001-A.json"]["turns"] = -1
    broken["expect"]["latest"] = "turn-099-A.json"
    broken["expect"]["undo"] = {"tool": "send_email", "turn": 7, "point": "B"}
    broken["mtimes"] = {"checkpoints/nao-existe.json": 10}
    problems = exercise.validate_fixture(broken)
    joined = "\n".join(problems)
    assert "run_dir.../fora.json" in joined
    assert "run_dir.checkpoints/turn-001-A.json.turns" in joined
    assert "expect.latest" in joined and "expect.undo" in joined and "mtimes.checkpoints/nao-existe.json" in joined
    assert exercise.validate_fixture(data) == []


def test_an_instructor_fixture_is_graded_like_the_shipped_ones(tmp_path, monkeypatch):
    """A recorded run dropped into a folder: here, the notes run asked to undo its first list_dir,
    which leaves no point before it (the run starts at turn 1): only the refusal is asked."""
    data = json.loads((FIXTURES / "notas-leitura-pendente.json").read_text(encoding="utf-8"))
    data["expect"]["undo_missing_tool"] = "create_ticket"
    folder = tmp_path / "extra"
    folder.mkdir()
    (folder / "rebobinar-turno-2.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    exercise = load_exercise("exercise-5")
    fixtures = load_fixtures("exercise-5", (folder,), exercise.validate_fixture)
    namespace, problems = namespace_of(solution(), monkeypatch)
    session = Session(namespace=namespace, workdir=tmp_path / "checks", check_timeout=30.0, cell_problems=problems)
    (tmp_path / "checks").mkdir()
    plan = [p for p in exercise.plan(fixtures, 2) if p.fixture == "rebobinar-turno-2"]
    results = run_plan("exercise-5", plan, fixtures, session)
    assert len(results) == 6 and all(r["status"] == "pass" for r in results), results


# ----------------------------------------------------------------- the hints ladder


def ladder(level: int) -> tuple[str, ...]:
    from grader.core.manifest import get_exercise

    return get_exercise("exercise-5").level(level).hints


def required_by_the_checks(level: int) -> set[str]:
    """The concrete names a level's checks require (read from the checks and the fixtures, not
    copied from the solution): following the last hint literally must produce each of them."""
    from grader.checks.exercise_5 import level_4
    from grader.checks.exercise_5.fixtures import STEP_PHASES, STEPS

    exercise = load_exercise("exercise-5")
    fixtures = load_fixtures("exercise-5", (), exercise.validate_fixture)
    if level == 1:
        return {f'"{STEPS}"', *STEP_PHASES.values(), "is_file", "iterdir", "int", "None"}
    if level == 2:
        return {"list_points", "pending_tool_use", "TimelineError", "set_aside_points_after", "save_checkpoint",
                "CHECKPOINT_FILE"}
    if level == 3:
        parent_keys = {key for f in fixtures if "fork" in f.expect for key in ("timeline_id", "turn", "point")}
        return {"new_timeline_id", "load_timeline", "utc_now", '"dry_run": True', "created_at", "EFFECTS_FILE",
                "pending_tool_use", "save_point", "save_checkpoint", "TimelineError", *parent_keys}
    keys = {f'"{key}"' for f in fixtures if isinstance(f.expect.get("finish"), dict) and "to" in f.expect["finish"]
            for key in f.expect["finish"]}
    return {level_4.MARKER, "TimelineError", "exist_ok", "list_points", "save_checkpoint", "unlink", *keys}


def test_every_level_has_a_ladder_of_at_least_three_rungs():
    for level in (1, 2, 3, 4):
        hints = ladder(level)
        assert len(hints) >= 3, level
        assert len(set(hints)) == len(hints), level


def test_the_last_rung_names_every_value_the_checks_require():
    for level in (1, 2, 3, 4):
        last = ladder(level)[-1]
        missing = sorted(value for value in required_by_the_checks(level) if value not in last)
        assert not missing, f"level {level}: the last hint does not name {missing}"


def test_the_ladder_goes_from_general_to_specific():
    """Each rung names at least as many of the required values as the one before, and the first
    gives the idea without the recipe (fewer than half of the values)."""
    for level in (1, 2, 3, 4):
        required = required_by_the_checks(level)
        named = [sum(value in hint for value in required) for hint in ladder(level)]
        assert named == sorted(named), (level, named)
        assert named[0] < len(required) / 2, (level, named)


def test_the_level_1_hint_shows_the_two_ways_the_alphabet_lies():
    first = ladder(1)[0]
    assert '"step-10-pre.json" < "step-9-post.json"' in first and '"post" < "pre"' in first
    assert "step-10-pre.json" < "step-9-post.json" and "post" < "pre"  # what the hint claims is true
