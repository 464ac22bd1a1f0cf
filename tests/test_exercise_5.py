"""Exercise 5 (rewind and fork): the solution scores 100%, the generated exercise fails every
check as not implemented, and plausible wrong answers fail with a message naming the mistake.

Two gradings go through a real kernel; the wrong answers run the same checks in-process
(the notebook's cells executed into a dict), which the engine tests show is equivalent.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import nbformat

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


def test_solution_scores_100_percent():
    report = grade("exercise-5", SOLUTION)
    assert report.notebook_error is None
    statuses = {check.id: check.status for check in report.checks}
    assert len(statuses) == 76
    assert set(statuses.values()) == {"pass"}, {k: v for k, v in statuses.items() if v != "pass"}
    assert {check.level for check in report.checks} == {1, 2, 3}


def test_generated_exercise_fails_every_check_as_not_implemented():
    report = grade("exercise-5", EXERCISE_NOTEBOOK)
    assert report.checks and all(check.status != "pass" for check in report.checks)
    assert all(NOT_IMPLEMENTED_PREFIX in check.message for check in report.checks)


# ----------------------------------------------------------------- level 1


LISTDIR_SORTED = '''import os

def pick_latest_point(run_dir, turn=None):
    folder = Path(run_dir) / "checkpoints"
    if not folder.is_dir():
        return None
    names = sorted(os.listdir(folder))
    if turn is not None:
        names = [name for name in names if name.startswith(f"turn-{turn:03d}-")]
    return folder / names[-1] if names else None
'''

NEWEST_FILE = '''def pick_latest_point(run_dir, turn=None):
    folder = Path(run_dir) / "checkpoints"
    if not folder.is_dir():
        return None
    candidates = [p for p in folder.iterdir() if parse_point_name(p.name)
                  and (turn is None or parse_point_name(p.name)[0] == turn)]
    return max(candidates, key=lambda p: p.stat().st_mtime) if candidates else None
'''

EVERY_SUBFOLDER = '''def pick_latest_point(run_dir, turn=None):
    points = [p for p in Path(run_dir).rglob("turn-*.json") if parse_point_name(p.name)
              and (turn is None or parse_point_name(p.name)[0] == turn)]
    return max(points, key=lambda p: parse_point_name(p.name)) if points else None
'''


def test_sorting_the_folder_listing_picks_the_torn_tmp_file(tmp_path, monkeypatch):
    results = graded(defined("pick_latest_point", LISTDIR_SORTED), tmp_path, monkeypatch, 1)
    assert_fails(results, "n1.latest_of_the_run[queda-gravando-b]", "turn-002-B.json.tmp", "Um .tmp nunca é um ponto")
    assert_fails(results, "n1.latest_of_each_turn[queda-gravando-b]", ".tmp")
    assert "n1.latest_of_the_run[equipe-completa]" not in failures(results)


def test_trusting_modification_times_fails_on_a_restored_backup(tmp_path, monkeypatch):
    results = graded(defined("pick_latest_point", NEWEST_FILE), tmp_path, monkeypatch, 1)
    assert_fails(results, "n1.latest_of_the_run[notas-datas-trocadas]", "data de modificação", "backup")
    assert set(failures(results)) <= {"n1.latest_of_the_run[notas-datas-trocadas]",
                                      "n1.latest_of_each_turn[notas-datas-trocadas]",
                                      # it takes the folder named like a point too (no is_file)
                                      "n1.latest_of_the_run[pasta-com-nome-de-ponto]",
                                      "n1.latest_of_each_turn[pasta-com-nome-de-ponto]"}


def test_returning_the_path_as_text_keeps_level_1(tmp_path, monkeypatch):
    # right but different: a str names the point as well as a Path (fork_from, as written, needs a Path)
    notebook = replaced("pick_latest_point", "    return max(candidates)[1]", "    return str(max(candidates)[1])")
    assert failures(graded(notebook, tmp_path, monkeypatch, 1)) == {}


def test_a_folder_named_like_a_point_is_not_a_point(tmp_path, monkeypatch):
    notebook = replaced("pick_latest_point", "if path.is_file() and parsed is not None", "if parsed is not None")
    results = graded(notebook, tmp_path, monkeypatch, 1)
    assert_fails(results, "n1.latest_of_the_run[pasta-com-nome-de-ponto]", "uma pasta, não um arquivo", "is_file")
    assert set(failures(results)) == {"n1.latest_of_the_run[pasta-com-nome-de-ponto]",
                                      "n1.latest_of_each_turn[pasta-com-nome-de-ponto]"}


def test_searching_subfolders_picks_a_point_set_aside_by_a_rewind(tmp_path, monkeypatch):
    results = graded(defined("pick_latest_point", EVERY_SUBFOLDER), tmp_path, monkeypatch, 1)
    assert_fails(results, "n1.latest_of_the_run[ja-rebobinada]", "rewound-001", "FORA da sequência ativa")
    assert_fails(results, "n1.latest_of_each_turn[ja-rebobinada]", "rewound-001")


def test_the_first_point_instead_of_the_last_says_b_comes_after_a(tmp_path, monkeypatch):
    notebook = replaced("pick_latest_point", "return max(candidates)[1]", "return min(candidates)[1]")
    results = graded(notebook, tmp_path, monkeypatch, 1)
    assert_fails(results, "n1.latest_of_each_turn[equipe-completa]", "o ponto B é gravado depois do A")
    assert_fails(results, "n1.latest_of_the_run[equipe-completa]", "turn-003-A.json")


def test_ignoring_the_turn_argument_is_named(tmp_path, monkeypatch):
    notebook = replaced("pick_latest_point", "(turn is None or parsed[0] == turn)", "True")
    results = graded(notebook, tmp_path, monkeypatch, 1)
    assert_fails(results, "n1.latest_of_each_turn[equipe-completa]", "Pedi o turno 1", "argumento turn")
    assert not any(id_.startswith("n1.latest_of_the_run") for id_ in failures(results))


# ----------------------------------------------------------------- level 2


NAIVE_REWIND = '''def rewind_to(run_dir, turn):
    scene = read_point(Path(run_dir) / "checkpoints" / f"turn-{turn:03d}-A.json")
    save_checkpoint(scene, Path(run_dir) / CHECKPOINT_FILE)
    return scene
'''


def test_rewinding_to_point_a_loses_what_point_b_had_recorded(tmp_path, monkeypatch):
    results = graded(defined("rewind_to", NAIVE_REWIND), tmp_path, monkeypatch, 2)
    assert_fails(results, "n2.scene_of_the_turn[equipe-completa]", "Voltou ao ponto A")
    assert_fails(results, "n2.rewind_runs_nothing[equipe-completa]", "pending_tool_use da cena devolvida")


OLD_REWIND = '''from harness.effects import reconcile

def rewind_to(run_dir, turn):
    run_dir = Path(run_dir)
    path = pick_latest_point(run_dir, turn)
    if path is None:
        raise TimelineError(f"não há ponto gravado para o turno {turn}")
    scene = read_point(path)
    if scene["pending_tool_use"]:
        scene = reconcile(scene, run_dir / EFFECTS_FILE)
        save_point(run_dir, scene, "B")
    set_aside_points_after(run_dir, turn)
    save_checkpoint(scene, run_dir / CHECKPOINT_FILE)
    return scene
'''


def test_closing_open_calls_through_the_ledger_sends_the_email_that_never_started(tmp_path, monkeypatch):
    """The rewind this course used to teach: the ledger's reconcile runs a call that never started."""
    results = graded(defined("rewind_to", OLD_REWIND), tmp_path, monkeypatch, 2)
    assert_fails(results, "n2.rewind_runs_nothing[envio-nunca-comecou]", "executou send_email", "mudou o mundo",
                 "válvula de aprovação")
    assert_fails(results, "n2.rewind_runs_nothing[notas-leitura-pendente]", "executou read_file")
    assert_fails(results, "n2.rewind_runs_nothing[queda-gravando-b]", "foram fechadas na rebobinagem")
    assert_fails(results, "n2.scene_of_the_turn[queda-gravando-b]", "a mais do que o ponto gravado")
    assert "n2.rewind_runs_nothing[equipe-completa]" not in failures(results)  # no open call there


def test_the_lesson_3_reconcile_in_a_rewind_also_closes_what_is_not_its_to_close(tmp_path, monkeypatch):
    notebook = replaced("rewind_to", "    set_aside_points_after(run_dir, turn)\n",
                        "    from harness.resume import reconcile as reconcile_without_ledger\n"
                        "    scene = reconcile_without_ledger(scene)\n"
                        "    set_aside_points_after(run_dir, turn)\n")
    results = graded(notebook, tmp_path, monkeypatch, 2)
    assert_fails(results, "n2.rewind_runs_nothing[envio-nunca-comecou]", "foram fechadas na rebobinagem")
    assert "n2.rewind_runs_nothing[equipe-completa]" not in failures(results)


def test_writing_a_point_b_nobody_recorded_is_named(tmp_path, monkeypatch):
    notebook = replaced("rewind_to", "    set_aside_points_after(run_dir, turn)\n",
                        '    save_point(run_dir, {**scene, "pending_tool_use": scene["pending_tool_use"]}, "B")\n'
                        "    set_aside_points_after(run_dir, turn)\n")
    results = graded(notebook, tmp_path, monkeypatch, 2)
    assert_fails(results, "n2.rewind_runs_nothing[envio-nunca-comecou]", "gravou turn-002-B.json")


def test_recording_an_intent_during_a_rewind_is_named(tmp_path, monkeypatch):
    notebook = replaced("rewind_to", "    set_aside_points_after(run_dir, turn)\n",
                        "    from harness.effects import record_intent\n"
                        "    for call in scene['pending_tool_use'] or []:\n"
                        "        record_intent(run_dir / EFFECTS_FILE, call)\n"
                        "    set_aside_points_after(run_dir, turn)\n")
    results = graded(notebook, tmp_path, monkeypatch, 2)
    assert_fails(results, "n2.rewind_runs_nothing[envio-nunca-comecou]", "alterou effects.json")
    assert "n2.rewind_runs_nothing[equipe-completa]" not in failures(results)


def test_leaving_later_points_in_the_sequence_is_named(tmp_path, monkeypatch):
    notebook = replaced("rewind_to", "    set_aside_points_after(run_dir, turn)\n", "")
    results = graded(notebook, tmp_path, monkeypatch, 2)
    assert_fails(results, "n2.later_points_set_aside[equipe-completa]", "ainda tem turn-002-A.json", "história abandonada")


def test_deleting_later_points_loses_history(tmp_path, monkeypatch):
    notebook = replaced("rewind_to", "    set_aside_points_after(run_dir, turn)\n",
                        "    for later in list((run_dir / 'checkpoints').glob('turn-*.json')):\n"
                        "        if parse_point_name(later.name)[0] > turn:\n"
                        "            later.unlink()\n")
    results = graded(notebook, tmp_path, monkeypatch, 2)
    assert_fails(results, "n2.later_points_set_aside[equipe-completa]", "sumiu", "não apaga a história")


def test_forgetting_checkpoint_json_keeps_the_abandoned_story(tmp_path, monkeypatch):
    notebook = replaced("rewind_to", "    save_checkpoint(scene, run_dir / CHECKPOINT_FILE)\n", "")
    results = graded(notebook, tmp_path, monkeypatch, 2)
    assert_fails(results, "n2.checkpoint_json_is_the_scene[equipe-completa]", "turns=3", "história abandonada")


def test_a_missing_turn_must_be_a_timeline_error(tmp_path, monkeypatch):
    notebook = replaced("rewind_to", '    if path is None:\n        raise TimelineError(f"não há ponto gravado para o turno {turn}")\n', "")
    results = graded(notebook, tmp_path, monkeypatch, 2)
    assert_fails(results, "n2.unknown_turn_is_refused[equipe-completa]", "levantou TypeError", "TimelineError")


# ----------------------------------------------------------------- level 3


COPY_THE_FOLDER = '''import shutil

def fork_from(run_dir, turn, new_run_dir):
    shutil.copytree(run_dir, new_run_dir)
    scene = read_point(pick_latest_point(new_run_dir, turn))
    save_checkpoint(scene, Path(new_run_dir) / CHECKPOINT_FILE)
    return load_timeline(new_run_dir)
'''


def test_copying_the_whole_folder_is_not_a_fork(tmp_path, monkeypatch):
    results = graded(defined("fork_from", COPY_THE_FOLDER), tmp_path, monkeypatch, 3)
    assert_fails(results, "n3.identity_and_parent[equipe-completa]", "mesmo timeline_id")
    assert_fails(results, "n3.own_sequence_and_inherited_ledger[equipe-completa]", "sequência inteira")
    assert_fails(results, "n3.dry_run_keeps_the_world[equipe-completa]", "o mundo mudou", "dry_run true")
    assert "n3.original_untouched[equipe-completa]" not in failures(results)


def test_a_fork_without_dry_run_doubles_the_email(tmp_path, monkeypatch):
    notebook = replaced("fork_from", '"dry_run": True,', '"dry_run": False,')
    results = graded(notebook, tmp_path, monkeypatch, 3)
    assert_fails(results, "n3.identity_and_parent[equipe-completa]", "dry_run deveria ser true")
    assert_fails(results, "n3.dry_run_keeps_the_world[equipe-completa]", "decidiu mandar um e-mail")
    assert "n3.original_untouched[equipe-completa]" not in failures(results)


def test_writing_the_timeline_into_the_original_folder_is_caught(tmp_path, monkeypatch):
    notebook = replaced("fork_from", "write_json_atomic(new_run_dir / TIMELINE_FILE, info)",
                        "write_json_atomic(run_dir / TIMELINE_FILE, info)")
    results = graded(notebook, tmp_path, monkeypatch, 3)
    assert_fails(results, "n3.original_untouched[equipe-completa]", "a pasta original mudou", "alterou timeline.json")
    assert_fails(results, "n3.original_untouched[notas-datas-trocadas]", "criou timeline.json")
    assert_fails(results, "n3.identity_and_parent[equipe-completa]", "não tem timeline.json")


def test_copying_the_ledger_is_named(tmp_path, monkeypatch):
    notebook = replaced("fork_from", "    write_json_atomic(new_run_dir / EFFECTS_FILE, inherited)\n",
                        "    import shutil\n    if (run_dir / EFFECTS_FILE).exists():\n"
                        "        shutil.copy(run_dir / EFFECTS_FILE, new_run_dir / EFFECTS_FILE)\n")
    results = graded(notebook, tmp_path, monkeypatch, 3)
    assert_fails(results, "n3.own_sequence_and_inherited_ledger[equipe-completa]", "livro-razão da original foi copiado")
    # where the original has no ledger there is nothing to copy: the fork is told to write its own
    assert_fails(results, "n3.own_sequence_and_inherited_ledger[notas-datas-trocadas]", "não tem effects.json")


def test_a_blank_ledger_where_the_original_already_sent_the_email_is_named(tmp_path, monkeypatch):
    """Forking 2-A after the original sent the email: a blank ledger would answer it in dry-run."""
    notebook = replaced("fork_from", "    write_json_atomic(new_run_dir / EFFECTS_FILE, inherited)\n",
                        "    write_json_atomic(new_run_dir / EFFECTS_FILE, {})\n")
    results = graded(notebook, tmp_path, monkeypatch, 3)
    assert_fails(results, "n3.own_sequence_and_inherited_ledger[queda-gravando-b]",
                 "começou com o livro-razão em branco", "toolu_01TE2 (committed)")
    assert_fails(results, "n3.own_sequence_and_inherited_ledger[queda-entre-efeito-e-recibo]", "toolu_01TE2 (intent)")
    assert "n3.own_sequence_and_inherited_ledger[equipe-completa]" not in failures(results)


def test_a_wrong_parent_is_named(tmp_path, monkeypatch):
    notebook = replaced("fork_from", '"turn": turn, "point": point}', '"turn": turn, "point": "B"}')
    results = graded(notebook, tmp_path, monkeypatch, 3)
    assert_fails(results, "n3.identity_and_parent[queda-gravando-b]", "parent deveria registrar de onde a linha veio")
    assert "n3.identity_and_parent[equipe-completa]" not in failures(results)


def test_a_fork_that_closes_open_calls_runs_tools_or_decides_for_the_new_line(tmp_path, monkeypatch):
    """The fork this course used to teach: open calls closed in dry-run inside fork_from."""
    notebook = replaced("fork_from", "    save_point(new_run_dir, scene, point)",
                        "    if scene['pending_tool_use']:\n"
                        "        from harness.tool_runner import ToolContext, close_pending\n"
                        "        scene = close_pending(scene, ToolContext(effects_path=new_run_dir / EFFECTS_FILE, dry_run=True))\n"
                        "    save_point(new_run_dir, scene, point)")
    results = graded(notebook, tmp_path, monkeypatch, 3)
    assert_fails(results, "n3.own_sequence_and_inherited_ledger[notas-leitura-pendente]", "A bifurcação executou read_file")
    assert_fails(results, "n3.own_sequence_and_inherited_ledger[envio-nunca-comecou]", "seguir pendentes")
    assert "n3.own_sequence_and_inherited_ledger[equipe-completa]" not in failures(results)


# ----------------------------------------------------------------- fixtures as data


def test_shipped_fixtures_are_valid_and_cover_every_level():
    exercise = load_exercise("exercise-5")
    fixtures = load_fixtures("exercise-5", (), exercise.validate_fixture)
    assert len(fixtures) == 9
    assert sum("rewind" in f.expect for f in fixtures) >= 4
    assert sum("fork" in f.expect for f in fixtures) >= 4
    assert any(f.data.get("mtimes") for f in fixtures)


def test_a_malformed_fixture_names_each_problem():
    exercise = load_exercise("exercise-5")
    data = json.loads((FIXTURES / "equipe-completa.json").read_text(encoding="utf-8"))
    broken = copy.deepcopy(data)
    broken["run_dir"]["../fora.json"] = {}
    broken["run_dir"]["checkpoints/turn-001-A.json"]["turns"] = -1
    broken["expect"]["latest"] = "turn-099-A.json"
    broken["expect"]["rewind"] = {"turn": 7, "point": "B"}
    broken["mtimes"] = {"checkpoints/nao-existe.json": 10}
    problems = exercise.validate_fixture(broken)
    joined = "\n".join(problems)
    assert "run_dir.../fora.json" in joined
    assert "run_dir.checkpoints/turn-001-A.json.turns" in joined
    assert "expect.latest" in joined and "expect.rewind" in joined and "mtimes.checkpoints/nao-existe.json" in joined
    assert exercise.validate_fixture(data) == []


def test_an_instructor_fixture_is_graded_like_the_shipped_ones(tmp_path, monkeypatch):
    """A recorded run dropped into a folder: here, equipe-completa asked to rewind to turn 2."""
    data = json.loads((FIXTURES / "equipe-completa.json").read_text(encoding="utf-8"))
    data["expect"]["rewind"] = {"turn": 2, "point": "B"}
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
    assert len(results) == 6 and all(r["status"] == "pass" for r in results)


def test_a_rewind_that_leaves_an_empty_folder_behind_on_a_missing_turn_is_caught(tmp_path, monkeypatch):
    """Folders are part of what the checks compare: setting the later points aside before looking
    for the turn leaves an empty rewound-NNN/ behind, and nothing else changes."""
    notebook = replaced("rewind_to", '''    path = pick_latest_point(run_dir, turn)
    if path is None:''', '''    (checkpoints_dir(run_dir) / "rewound-999").mkdir(parents=True, exist_ok=True)
    path = pick_latest_point(run_dir, turn)
    if path is None:''')
    failed = failures(graded(notebook, tmp_path, monkeypatch, level=2))
    assert "criou as pastas checkpoints/, checkpoints/rewound-999/" in failed["n2.unknown_turn_is_refused[sem-sequencia]"]


def test_a_fork_that_writes_nothing_fails_the_untouched_check_as_nothing_observed(tmp_path, monkeypatch):
    failed = failures(graded(defined("fork_from", "def fork_from(run_dir, turn, new_run_dir):\n    return None\n"),
                             tmp_path, monkeypatch, level=3))
    assert failed["n3.original_untouched[equipe-completa]"].startswith("Nada observado: fork_from não gravou")
    assert failed["n3.dry_run_keeps_the_world[equipe-completa]"]


def test_writing_checkpoint_json_in_place_tears_on_a_crash(tmp_path, monkeypatch):
    notebook = replaced("rewind_to", "    save_checkpoint(scene, run_dir / CHECKPOINT_FILE)",
                        '    (run_dir / CHECKPOINT_FILE).write_text(json.dumps(scene), encoding="utf-8")')
    notebook.cells[1].source = "import json\n" + notebook.cells[1].source
    failed = failures(graded(notebook, tmp_path, monkeypatch, level=2))
    assert "checkpoint.json ficou pela metade" in failed["n2.rewind_survives_a_torn_write[equipe-completa]"]
