"""Students' and instructors' tools around the engine: manifest, list, hint, watch, batch."""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from grader.core.course_folder import find_project_root
from grader.core.manifest import ManifestError, UnknownExerciseError, load_manifest, parse_manifest
from grader.core.results import PASS, FAIL, CellProblem, CheckResult, GradeReport
from grader.instructor import batch
from grader.student import hints, progress
from grader.student.watch import file_signature, watch


def check(level: int, status: str, name: str = "c", fixture: str | None = None) -> CheckResult:
    return CheckResult(id=f"{name}-{level}", level=level, fixture=fixture, title=f"verificação {name}", criterion="critério", status=status)


def report(exercise: str, *checks: CheckResult, notebook_error: str | None = None, kind: str | None = None) -> GradeReport:
    return GradeReport(exercise=exercise, checks=list(checks), notebook_error=notebook_error, notebook_error_kind=kind)


def passing_every_level(exercise: str) -> list[CheckResult]:
    """One passed check per level the manifest gives the exercise (however many it has today)."""
    return [check(level.number, PASS, f"todos-{level.number}") for level in load_manifest().exercise(exercise).levels]


@pytest.fixture
def state_file(tmp_path, monkeypatch):
    path = tmp_path / ".grade-state.json"
    monkeypatch.setenv(progress.STATE_PATH_ENV, str(path))
    return path


# ------------------------------------------------------------------ manifest


def test_manifest_lists_six_exercises_in_order_with_levels():
    manifest = load_manifest()
    assert manifest.names == [f"exercise-{n}" for n in range(1, 7)]
    assert [len(e.levels) for e in manifest.exercises] == [3, 4, 3, 5, 4, 4]
    assert manifest.exercise("exercise-3").title == "Retomando de um checkpoint: reiniciando o loop"
    for name in ("exercise-1", "exercise-2", "exercise-3"):
        for level in manifest.exercise(name).levels:
            assert 2 <= len(level.hints) <= 3, (name, level.number)


def test_unknown_exercise_and_level_have_portuguese_messages():
    manifest = load_manifest()
    with pytest.raises(UnknownExerciseError, match="Exercício desconhecido: 'exercise-42'.*exercise-1, exercise-2"):
        manifest.exercise("exercise-42")
    with pytest.raises(UnknownExerciseError, match="não tem nível 7; os níveis dele são: 1, 2"):
        manifest.exercise("exercise-3").level(7)


GOOD = """
version: 1
exercises:
  - name: exercise-1
    title: Um
    levels:
      - {level: 1, title: Primeiro, hints: [a, b]}
"""


@pytest.mark.parametrize(
    "broken, problem",
    [
        (GOOD.replace("version: 1", "version: 2"), "version: versão 2 não suportada"),
        (GOOD.replace("hints: [a, b]", "hint: [a, b]"), "exercise-1.levels\\[0\\]: chave desconhecida 'hint'"),
        (GOOD.replace("{level: 1, ", "{level: 2, "), "levels\\[0\\].level: deveria ser 1"),
        (GOOD.replace("name: exercise-1", "name: exercicio-1"), "deveria ter a forma exercise-N"),
        (GOOD.replace("title: Um", "title: ''"), "exercise-1.title: deveria ser um texto não vazio"),
        (GOOD.replace("[a, b]", "a"), "hints: deveria ser uma lista de textos"),
        (GOOD.replace("[a, b]", "[a, 3]"), "hints\\[1\\]: deveria ser um texto não vazio"),
        (GOOD.replace("    title: Um\n", ""), "falta a chave 'title'"),
        ("exercises: [", "YAML inválido"),
    ],
)
def test_manifest_shape_errors_name_the_spot(broken, problem):
    parse_manifest(GOOD)  # the unbroken text is fine
    with pytest.raises(ManifestError, match=problem):
        parse_manifest(broken)


# ------------------------------------------------------------------ progress


def test_record_then_list_shows_status_and_next(state_file):
    progress.record("exercise-1", report("exercise-1", *passing_every_level("exercise-1"), check(2, PASS, "x")))
    progress.record("exercise-2", report("exercise-2", check(1, PASS), check(2, FAIL), check(3, FAIL), check(3, PASS, "z"),
                                         *[c for c in passing_every_level("exercise-2") if c.level > 3]))
    text = progress.render_list(progress.load_state(), load_manifest())
    lines = {line.split()[1]: line for line in text.splitlines() if line.strip().startswith(("✓", "→", "◐", "·"))}
    assert lines["exercise-1"].strip().startswith("✓") and lines["exercise-1"].endswith("passou")
    beyond_three = len(load_manifest().exercise("exercise-2").levels) - 3
    assert lines["exercise-2"].strip().startswith("→") and \
        lines["exercise-2"].endswith(f"{2 + beyond_three} de {4 + beyond_three} verificações")
    assert lines["exercise-3"].endswith("nunca rodado")
    assert "Próximo: exercise-2 — Checkpoint: gravando a cena de execução" in text
    assert "Progresso: 1 de 6 exercícios concluídos" in text


def test_level_run_updates_that_level_and_keeps_the_others(state_file):
    progress.record("exercise-3", report("exercise-3", check(1, PASS), check(2, FAIL)))
    progress.record("exercise-3", report("exercise-3", check(2, PASS), check(2, PASS, "b")))
    entry = progress.load_state()["exercises"]["exercise-3"]
    assert entry["levels"] == {"1": {"passed": 1, "total": 1}, "2": {"passed": 2, "total": 2}}
    progress.record("exercise-3", report("exercise-3", check(3, PASS)))  # the exercise's last level
    status = progress.exercise_status(progress.load_state(), load_manifest().exercise("exercise-3"))
    assert status.passed


def test_a_level_never_graded_keeps_the_exercise_open(state_file):
    progress.record("exercise-3", report("exercise-3", check(1, PASS)))
    status = progress.exercise_status(progress.load_state(), load_manifest().exercise("exercise-3"))
    assert not status.passed
    assert status.describe() == "1 de 1 verificações; níveis 2, 3 ainda não corrigidos"


def test_notebook_error_is_shown_and_blocks_a_pass(state_file):
    progress.record("exercise-3", report("exercise-3", check(1, PASS), check(2, PASS), notebook_error="O kernel morreu."))
    status = progress.exercise_status(progress.load_state(), load_manifest().exercise("exercise-3"))
    assert not status.passed and "não rodou até o fim" in status.describe()


def test_state_is_written_atomically_as_json(state_file):
    progress.record("exercise-1", report("exercise-1", check(1, PASS)))
    data = json.loads(state_file.read_text(encoding="utf-8"))
    assert data["version"] == 1 and "exercise-1" in data["exercises"]
    assert [p.name for p in state_file.parent.iterdir()] == [state_file.name]  # no temp file left


def test_damaged_state_file_is_kept_aside_not_lost(state_file, capsys):
    state_file.write_text("{ isto não é json", encoding="utf-8")
    progress.record("exercise-1", report("exercise-1", check(1, PASS)))
    backup = state_file.with_name(state_file.name + ".danificado")
    assert backup.read_text(encoding="utf-8") == "{ isto não é json"
    assert "danificado" in capsys.readouterr().err
    assert "exercise-1" in progress.load_state()["exercises"]


@pytest.mark.parametrize("damage", [
    '{"version": 1, "exercises": {"exercise-1": "aç'.encode("utf-8")[:-1],  # cut inside a character
    '{"version": 1, "exercises": {}, "hints": {"ação": 1}}'.encode("latin-1"),  # saved in another encoding
    b"[" * 100_000,  # nested deeper than the parser goes
])
def test_a_state_file_damaged_in_any_way_is_set_aside_and_progress_goes_on(damage, state_file, capsys):
    from grader.student import hints

    state_file.write_bytes(damage)
    assert "Progresso: 0 de 6" in progress.render_list(progress.load_state(), load_manifest())
    backup = state_file.with_name(state_file.name + ".danificado")
    assert backup.read_bytes() == damage and "danificado" in capsys.readouterr().err
    assert hints.show_hint("exercise-1")[0] == 0  # hint works and saves again
    progress.record("exercise-1", report("exercise-1", check(1, PASS)))
    assert "exercise-1" in progress.load_state()["exercises"]


def test_hand_edited_counts_that_cannot_be_true_are_ignored(state_file):
    entry = {"levels": {"1": {"passed": 4, "total": 2}, "2": {"passed": -1, "total": 3},
                        "3": {"passed": True, "total": 1}}, "notebook_error": None}
    state_file.write_text(json.dumps({"version": 1, "exercises": {"exercise-1": entry}, "hints": {}}),
                          encoding="utf-8")
    text = progress.render_list(progress.load_state(), load_manifest())
    assert "4 de 2" not in text and "passou" not in text.split("exercise-1")[1].splitlines()[0]


def test_record_never_raises_when_the_state_cannot_be_written(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(progress.STATE_PATH_ENV, str(tmp_path / "missing-folder" / ".grade-state.json"))
    progress.record("exercise-1", report("exercise-1", check(1, PASS)))
    assert "não consegui salvar o progresso" in capsys.readouterr().err


def test_all_passed_congratulates(state_file):
    for exercise in load_manifest().exercises:
        progress.record(exercise.name, report(exercise.name, *[check(level.number, PASS) for level in exercise.levels]))
    text = progress.render_list(progress.load_state(), load_manifest())
    assert "Parabéns: todos os exercícios passaram" in text and "Próximo" not in text


def test_project_root_is_found_upward(tmp_path):
    (tmp_path / "exercises").mkdir()
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    deep = tmp_path / "lessons" / "sub"
    deep.mkdir(parents=True)
    assert find_project_root(deep) == tmp_path.resolve()


# --------------------------------------------------------------------- hints


def test_hint_reveals_one_more_tier_each_time(state_file):
    level = load_manifest().exercise("exercise-3").level(1)
    seen = []
    for _ in range(4):
        code, text = hints.show_hint("exercise-3")
        assert code == 0
        seen.append(text)
    assert "Dica 1 de 3" in seen[0] and " ".join(level.hints[0].split()[:5]) in " ".join(seen[0].split())
    assert "Dica 2 de 3" in seen[1] and "grade hint exercise-3 --level 1" in seen[1]
    assert "Dica 3 de 3" in seen[2] and "última dica" in seen[2]
    assert "Dica 3 de 3" in seen[3] and "já viu todas as dicas" in seen[3]
    assert progress.load_state()["hints"]["exercise-3"]["1"] == 3


def test_hint_default_level_is_the_first_not_passed(state_file):
    progress.record("exercise-3", report("exercise-3", check(1, PASS), check(2, FAIL)))
    _, text = hints.show_hint("exercise-3")
    assert text.startswith("exercise-3 — nível 2: O incidente do e-mail duplicado")
    _, text = hints.show_hint("exercise-3", level=1)
    assert "nível 1" in text.splitlines()[0] and "Dica 1 de 3" in text


def test_hint_all_shows_every_tier(state_file):
    _, text = hints.show_hint("exercise-2", level=2, show_all=True)
    assert [f"Dica {n} de 3" in text for n in (1, 2, 3)] == [True, True, True]


def test_hint_for_a_level_without_hints_says_so():
    from grader.core.manifest import Exercise, Level

    exercise = Exercise("exercise-9", "Nove", (Level(1, "Primeiro", ()), Level(2, "Segundo", ("uma dica",))))
    state = progress.empty_state()
    text = hints.hint_text(exercise, exercise.level(1), state)
    assert "ainda não há dicas para este nível" in text.lower()
    assert state["hints"] == {}  # nothing counted as seen
    assert "Dica 1 de 1" in hints.hint_text(exercise, exercise.level(2), state)


def test_hint_errors_for_unknown_exercise_and_level(state_file):
    assert hints.show_hint("exercise-99")[0] == 2
    assert "Exercício desconhecido" in hints.show_hint("exercise-99")[1]
    missing = len(load_manifest().exercise("exercise-1").levels) + 1
    code, text = hints.show_hint("exercise-1", level=missing)
    assert code == 2 and f"não tem nível {missing}" in text


def test_hint_when_everything_passed(state_file):
    progress.record("exercise-1", report("exercise-1", *passing_every_level("exercise-1")))
    code, text = hints.show_hint("exercise-1")
    assert code == 0 and "Todos os níveis do exercise-1 passaram" in text


# --------------------------------------------------------------------- watch


class FakeClock:
    """A sleep() that runs scripted file edits instead of waiting."""

    def __init__(self, actions: dict[int, callable]):
        self.calls = 0
        self.actions = actions

    def __call__(self, seconds: float) -> None:
        self.calls += 1
        action = self.actions.get(self.calls)
        if action:
            action()


def test_watch_grades_again_after_the_file_changes(tmp_path):
    notebook = tmp_path / "exercise-3.ipynb"
    notebook.write_text("{}", encoding="utf-8")
    graded: list[str] = []

    def edit() -> None:
        notebook.write_text('{"cells": []}', encoding="utf-8")  # size changes too

    clock = FakeClock({2: edit})
    count = watch(notebook, lambda: graded.append(notebook.read_text()), interval=0.5, max_polls=5, sleep=clock, out=io.StringIO())
    assert count == 2
    assert graded == ["{}", '{"cells": []}']


def test_watch_does_not_regrade_an_unchanged_file(tmp_path):
    notebook = tmp_path / "exercise-3.ipynb"
    notebook.write_text("{}", encoding="utf-8")
    graded = []
    assert watch(notebook, lambda: graded.append(1), max_polls=4, sleep=lambda s: None, out=io.StringIO()) == 1


def test_watch_survives_a_file_that_disappears_and_comes_back(tmp_path):
    notebook = tmp_path / "exercise-3.ipynb"
    notebook.write_text("{}", encoding="utf-8")
    out = io.StringIO()
    graded = []
    clock = FakeClock({1: notebook.unlink, 4: lambda: notebook.write_text("[1]", encoding="utf-8")})
    count = watch(notebook, lambda: graded.append(1), max_polls=6, sleep=clock, out=out)
    assert count == 2
    assert "sumiu" in out.getvalue()


def test_watch_stop_hook_ends_the_loop(tmp_path):
    notebook = tmp_path / "exercise-3.ipynb"
    notebook.write_text("{}", encoding="utf-8")
    polls = []
    watch(notebook, lambda: None, should_stop=lambda: len(polls) >= 3, sleep=lambda s: polls.append(s), out=io.StringIO())
    assert len(polls) == 3


def test_file_signature_tracks_mtime_and_size(tmp_path):
    path = tmp_path / "a.ipynb"
    assert file_signature(path) is None
    path.write_text("ab", encoding="utf-8")
    first = file_signature(path)
    assert first[1] == 2



def test_watch_grades_a_whole_saved_file_without_waiting_for_it_to_settle(tmp_path):
    """A file that parses as a whole JSON document is a finished save (a prefix of one never parses):
    no second reading is waited for, the grading starts at once."""
    notebook = tmp_path / "exercise-3.ipynb"
    notebook.write_text("{}", encoding="utf-8")
    graded: list[str] = []
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 2:
            notebook.write_text('{"cells": []}', encoding="utf-8")

    watch(notebook, lambda: graded.append(notebook.read_text()), interval=0.5, max_polls=3, sleep=sleep, out=io.StringIO())
    assert graded == ["{}", '{"cells": []}']
    assert slept == [0.5, 0.5, 0.5], slept  # the polls only: no settling pause after the change


def test_watch_waits_for_a_save_still_being_written_before_grading_it(tmp_path):
    notebook = tmp_path / "exercise-3.ipynb"
    notebook.write_text("{}", encoding="utf-8")
    graded: list[str] = []
    whole = '{"cells": [], "nbformat": 4}'
    writes = iter([whole[:12], whole[:20], whole])
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) >= 2:  # the editor goes on writing while the watcher waits
            text = next(writes, None)
            if text is not None:
                notebook.write_text(text, encoding="utf-8")

    watch(notebook, lambda: graded.append(notebook.read_text()), interval=0.5, max_polls=3, sleep=sleep, out=io.StringIO())
    assert graded == ["{}", whole], graded  # never the half-written file


def test_watch_with_file_events_grades_a_save_long_before_the_next_poll(tmp_path):
    notebook = tmp_path / "exercise-3.ipynb"
    notebook.write_text("{}", encoding="utf-8")
    graded: list[str] = []
    second = threading.Event()

    def grade_once() -> None:
        graded.append(notebook.read_text(encoding="utf-8"))
        if len(graded) == 2:
            second.set()

    def save_like_an_editor() -> None:
        # Jupyter writes a temporary file and renames it over the notebook.
        temporary = tmp_path / ".~exercise-3.ipynb"
        temporary.write_text('{"cells": []}', encoding="utf-8")
        os.replace(temporary, notebook)

    out = io.StringIO()
    # An hour between polls: only a file event can bring the second grade.
    watcher = threading.Thread(target=watch, args=(notebook, grade_once), daemon=True, kwargs=dict(
        interval=3600.0, should_stop=second.is_set, out=out, use_events=True))
    watcher.start()
    deadline = time.monotonic() + 30
    while "Observando" not in out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # the watcher's first wait has begun
    save_like_an_editor()
    assert second.wait(timeout=30), out.getvalue()
    assert graded == ["{}", '{"cells": []}']
    assert "pelos eventos do sistema de arquivos" in out.getvalue()
    watcher.join(timeout=10)


def test_watch_falls_back_to_polling_when_file_events_cannot_start(tmp_path, monkeypatch):
    import watchfiles

    def no_watcher(*args, **kwargs):
        raise OSError("OS file watch limit reached")
        yield  # a generator, like watchfiles.watch

    monkeypatch.setattr(watchfiles, "watch", no_watcher)
    notebook = tmp_path / "exercise-3.ipynb"
    notebook.write_text("{}", encoding="utf-8")
    graded: list[str] = []

    def edit() -> None:
        notebook.write_text('{"cells": []}', encoding="utf-8")

    out = io.StringIO()
    count = watch(notebook, lambda: graded.append(notebook.read_text()), interval=0.5, max_polls=5,
                  sleep=FakeClock({2: edit}), out=out, use_events=True)
    assert count == 2 and graded == ["{}", '{"cells": []}']
    assert "Eventos de arquivo indisponíveis aqui (OS file watch limit reached)" in out.getvalue()


@pytest.mark.parametrize("argv, environment, events", [
    ([], None, True),
    (["--polling"], None, False),
    ([], "1", False),
    ([], "0", True),
])
def test_watch_command_uses_file_events_unless_polling_is_forced(argv, environment, events, monkeypatch, tmp_path):
    from grader.reports import console
    from grader.student import watch as watch_module

    if environment is None:
        monkeypatch.delenv(watch_module.POLLING_ENV, raising=False)
    else:
        monkeypatch.setenv(watch_module.POLLING_ENV, environment)
    seen = {}
    monkeypatch.setattr(watch_module, "watch", lambda path, grade_once, **options: seen.update(options))
    parser = console.ArgumentParser(prog="grade watch")
    watch_module.add_arguments(parser)
    args = parser.parse_args(["exercise-3", "--notebook", str(tmp_path / "x.ipynb"), *argv])
    assert watch_module.run(args) == 0
    assert seen["use_events"] is events

# --------------------------------------------------------------------- batch


def test_find_submissions_files_and_folders(tmp_path):
    (tmp_path / "ana.ipynb").write_text("{}", encoding="utf-8")
    (tmp_path / "bruno").mkdir()
    (tmp_path / "bruno" / "exercise-3.ipynb").write_text("{}", encoding="utf-8")
    (tmp_path / "bruno" / "rascunho.ipynb").write_text("{}", encoding="utf-8")
    (tmp_path / "carla" / "exercises").mkdir(parents=True)
    (tmp_path / "carla" / "exercises" / "meu.ipynb").write_text("{}", encoding="utf-8")
    (tmp_path / "carla" / ".ipynb_checkpoints").mkdir()
    (tmp_path / "carla" / ".ipynb_checkpoints" / "meu-checkpoint.ipynb").write_text("{}", encoding="utf-8")
    (tmp_path / "davi").mkdir()
    (tmp_path / "eva").mkdir()
    (tmp_path / "eva" / "a.ipynb").write_text("{}", encoding="utf-8")
    (tmp_path / "eva" / "b.ipynb").write_text("{}", encoding="utf-8")
    (tmp_path / "notas.txt").write_text("x", encoding="utf-8")
    (tmp_path / ".DS_Store").write_text("x", encoding="utf-8")
    submissions, ignored = batch.find_submissions(tmp_path, "exercise-3")
    assert [(s.name, s.label, s.problem) for s in submissions] == [
        ("ana", "ana.ipynb", None),
        ("bruno", "bruno/exercise-3.ipynb", None),
        ("carla", "carla/exercises/meu.ipynb", None),
        ("davi", "davi/", "nenhum notebook .ipynb na pasta"),
        ("eva", "eva/", "2 notebooks na pasta e nenhum se chama exercise-3.ipynb"),
    ]
    assert ignored == ["notas.txt"]


def test_rows_from_reports_and_the_gradebook_csv():
    sub = batch.Submission("ana", Path("ana.ipynb"), label="ana.ipynb")
    full = batch.row_from_report(sub, report("exercise-3", check(1, PASS), check(2, PASS), check(2, PASS, "b")), [1, 2])
    assert (full.status, full.total, full.level_scores) == (batch.PASSED, 100.0, {1: 100.0, 2: 100.0})
    partial = batch.row_from_report(
        sub, report("exercise-3", check(1, PASS), check(2, FAIL, "dup", "incident-duplicate-email"), check(2, PASS, "b")), [1, 2]
    )
    assert partial.status == batch.INCOMPLETE
    assert partial.level_scores == {1: 100.0, 2: 50.0} and partial.total == 66.7
    assert "N2 incident-duplicate-email: verificação dup" in partial.message
    timed_out = batch.row_from_report(
        sub, report("exercise-3", check(1, FAIL), notebook_error="Tempo esgotado: a célula 4 passou de 30 s.", kind="timeout"), [1, 2]
    )
    assert timed_out.status == batch.TIMED_OUT and timed_out.level_scores == {1: 0.0, 2: None}
    missing = batch.failure_row(batch.Submission("davi", None, "nenhum notebook .ipynb na pasta", "davi/"), batch.NO_NOTEBOOK, "nenhum notebook .ipynb na pasta", [1, 2])
    text = batch.gradebook_text([full, partial, timed_out, missing], [1, 2])
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0]) == ["submissao", "notebook", "situacao", "nivel_1", "nivel_2", "total", "pontos", "pontos_possiveis", "verificacoes", "mensagem", "segundos"]
    assert rows[1]["nivel_2"] == "50" and rows[1]["verificacoes"] == "2/3"
    assert rows[2]["situacao"] == "tempo_esgotado" and rows[2]["nivel_2"] == ""
    assert rows[3]["situacao"] == "sem_notebook" and rows[3]["notebook"] == "davi/"


@pytest.mark.parametrize(
    "kind, status",
    [
        ("timeout", batch.TIMED_OUT),
        ("kernel_died", batch.KERNEL_DIED),
        ("kernel_start_failed", batch.KERNEL_START_FAILED),
        ("invalid_notebook", batch.INVALID_NOTEBOOK),
        ("notebook_unreadable", batch.NOTEBOOK_ERROR),
        ("grader_error", batch.WORKER_FAILED),
        (None, batch.NOTEBOOK_ERROR),
    ],
)
def test_a_notebook_error_row_takes_its_status_from_the_kind_the_engine_recorded(kind, status):
    sub = batch.Submission("ana", Path("ana.ipynb"), label="ana.ipynb")
    # The same words under every kind: the status never comes from the message's wording.
    row = batch.row_from_report(sub, report("exercise-3", check(1, FAIL), notebook_error="O kernel morreu (tempo esgotado).", kind=kind), [1])
    assert row.status == status and row.message == "O kernel morreu (tempo esgotado)."


def test_a_start_failure_is_never_reported_as_a_dead_kernel():
    sub = batch.Submission("bruno", Path("bruno.ipynb"), label="bruno.ipynb")
    message = ("Não consegui iniciar o kernel do Python que executaria o notebook (tentei 2 vezes; "
               "RuntimeError: Kernel died before replying to kernel_info).")
    row = batch.row_from_report(sub, report("exercise-3", check(1, FAIL), notebook_error=message, kind="kernel_start_failed"), [1])
    assert row.status == "kernel_nao_iniciou" != batch.KERNEL_DIED


def test_a_cell_that_hit_its_own_limit_does_not_make_a_finished_grading_a_timeout():
    """One cell looped past its limit and the grading went on to the end: the checks decide the
    status, and the message starts with the cell (never "tempo esgotado" beside a score of 80)."""
    sub = batch.Submission("eva", Path("eva.ipynb"), label="eva.ipynb")
    looped = CellProblem(cell=7, first_line="while True:", ename="TimeoutError", evalue="",
                         message="A célula 7 passou de 60 s e foi interrompida.", names=[])
    full = report("exercise-3", check(1, PASS), check(2, PASS))
    full.cell_problems = [looped]
    row = batch.row_from_report(sub, full, [1, 2])
    assert (row.status, row.total) == (batch.PASSED, 100.0)
    assert row.message == "A célula 7 passou de 60 s e foi interrompida. todas as 2 verificações passaram"
    partial = report("exercise-3", check(1, PASS), check(2, FAIL, "dup"))
    partial.cell_problems = [looped]
    row = batch.row_from_report(sub, partial, [1, 2])
    assert (row.status, row.total) == (batch.INCOMPLETE, 50.0)
    assert row.message.startswith("A célula 7 passou de 60 s") and "falhou: N2 verificação dup" in row.message


@pytest.mark.parametrize(
    "kind, status, reason",
    [
        ("kernel_died", batch.KERNEL_DIED, "o kernel morreu durante as verificações"),
        ("timeout", batch.TIMED_OUT, "as verificações passaram do limite de tempo"),
        ("grader_error", batch.WORKER_FAILED, "a correção parou com um erro inesperado"),
    ],
)
def test_checks_that_stopped_short_keep_their_scores_and_say_why(kind, status, reason):
    sub = batch.Submission("ana", Path("ana.ipynb"), label="ana.ipynb")
    row = batch.row_from_report(sub, report("exercise-3", check(1, PASS), check(2, FAIL, "dup"), kind=kind), [1, 2])
    assert (row.status, row.level_scores, row.total) == (status, {1: 100.0, 2: 0.0}, 50.0)
    assert row.message == f"{reason}; falhou: N2 verificação dup"
    untouched = batch.row_from_report(sub, report("exercise-3", check(1, PASS), check(2, FAIL, "dup")), [1, 2])
    assert untouched.status == batch.INCOMPLETE and untouched.message == "falhou: N2 verificação dup"



def test_an_unwritten_stub_is_not_the_notebook_error_the_gradebook_leads_with():
    sub = batch.Submission("ana", Path("ana.ipynb"), label="ana.ipynb")
    stub = CellProblem(4, "resume_action(cpA)", "NotImplementedError", "escreva resume_action",
                       "A célula 4 levantou NotImplementedError.")
    name = CellProblem(6, "print(total)", "NameError", "name 'total' is not defined", "A célula 6 usa total, que não existe.")
    graded = report("exercise-3", check(1, FAIL, "dup"))
    graded.cell_problems = [stub]
    assert batch.row_from_report(sub, graded, [1]).message == "falhou: N1 verificação dup"
    graded.cell_problems = [stub, name]
    assert batch.row_from_report(sub, graded, [1]).message == "A célula 6 usa total, que não existe. falhou: N1 verificação dup"

def test_progress_bar_plain_lines_when_not_a_terminal():
    stream = io.StringIO()
    bar = batch.ProgressBar(2, stream=stream, width=4)
    bar.advance(batch.Row("ana", "ana.ipynb", batch.PASSED))
    bar.advance(batch.Row("bruno", "bruno.ipynb", batch.TIMED_OUT))
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("[##..] 1/2") and lines[0].endswith("ana: aprovado")
    assert lines[1].startswith("[####] 2/2") and lines[1].endswith("bruno: tempo_esgotado")


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("no_color", [False, True])
def test_progress_bar_on_a_terminal_is_live_and_colourless_under_no_color(no_color, monkeypatch):
    monkeypatch.delenv("TERM", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    else:
        monkeypatch.delenv("NO_COLOR", raising=False)
    stream = FakeTerminal()
    bar = batch.ProgressBar(2, stream=stream, width=4)
    bar.advance(batch.Row("ana", "ana.ipynb", batch.PASSED))
    bar.advance(batch.Row("bruno", "bruno.ipynb", batch.TIMED_OUT))
    bar.close()
    drawn = stream.getvalue()
    assert "2/2" in drawn and "bruno: tempo_esgotado" in drawn
    assert "\x1b[?25l" in drawn and "\x1b[?25h" in drawn  # cursor hidden while drawing, given back at the end
    colours = re.findall(r"\x1b\[[0-9;]*m", drawn)
    assert (colours == []) == no_color, colours
    assert "[####]" not in drawn  # the plain-text lines are for pipes and logs only


def test_a_batch_piped_into_a_file_never_imports_rich():
    code = ("import io, sys; from grader.instructor import batch; bar = batch.ProgressBar(1, stream=io.StringIO()); "
            "bar.advance(batch.Row('ana', 'ana.ipynb', batch.PASSED)); bar.close(); print('rich' in sys.modules)")
    finished = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert finished.stdout.strip() == "False"


FAKE_WORKER = r"""
import json, os, sys, time
for line in sys.stdin:
    task = json.loads(line)
    notebook, result = task["notebook"], task["result"]
    name = os.path.basename(notebook)
    if name.startswith("dies"):
        sys.stderr.write("Segmentation fault\n")
        sys.stderr.flush()
        os._exit(139)
    if name.startswith("hangs"):
        time.sleep(60)
    report = {"exercise": "exercise-3", "checks": [
        {"id": "a", "level": 1, "fixture": None, "title": "t", "criterion": "c", "status": "pass"},
        {"id": "b", "level": 2, "fixture": "cpB", "title": "t", "criterion": "c",
         "status": "fail" if name.startswith("wrong") else "pass"},
    ]}
    with open(result, "w", encoding="utf-8") as handle:
        json.dump({"report": report}, handle)
    print("done", flush=True)
"""


@pytest.fixture
def fake_workers(tmp_path, monkeypatch):
    """Warm workers that speak the real protocol but fake the grading by notebook name;
    returns a list that collects the pid of every worker started."""
    script = tmp_path / "fake_worker.py"
    script.write_text(FAKE_WORKER, encoding="utf-8")
    monkeypatch.setattr(batch, "_worker_command", lambda options, template_address=None: [sys.executable, str(script)])
    started = []
    real_start = batch.WorkerPool.start

    def start(self, command, stderr):
        process = real_start(self, command, stderr)
        if process is not None:
            started.append(process.pid)
        return process

    monkeypatch.setattr(batch.WorkerPool, "start", start)
    return started


def test_a_warm_worker_grades_many_and_is_replaced_after_it_dies_or_hangs(tmp_path, fake_workers):
    worker = batch.WarmWorker(batch.BatchOptions(exercise="exercise-3"), batch.WorkerPool())
    try:
        assert worker.run(tmp_path / "ana.ipynb", tmp_path / "1.json", True, timeout=30) == (0, "")
        assert worker.run(tmp_path / "eva.ipynb", tmp_path / "2.json", True, timeout=30) == (0, "")
        assert len(fake_workers) == 1  # one process graded both
        code, stderr = worker.run(tmp_path / "dies-bruno.ipynb", tmp_path / "3.json", True, timeout=30)
        assert code == 139 and "Segmentation fault" in stderr
        assert worker.run(tmp_path / "hangs-carla.ipynb", tmp_path / "4.json", True, timeout=0.5) == (None, "")
        assert worker.run(tmp_path / "davi.ipynb", tmp_path / "5.json", False, timeout=30) == (0, "")
        assert len(fake_workers) == 3  # a new worker after the death and after the hang
    finally:
        worker.close()
    assert worker.process is None


@pytest.mark.slow
def test_batch_goes_on_past_dead_and_hung_workers(tmp_path, fake_workers):
    folder = tmp_path / "entregas"
    folder.mkdir()
    for name in ("ana", "dies-bruno", "hangs-carla", "wrong-davi", "eva"):
        (folder / f"{name}.ipynb").write_text("{}", encoding="utf-8")
    submissions, _ = batch.find_submissions(folder, "exercise-3")
    options = batch.BatchOptions(exercise="exercise-3", hard_timeout=2.0)
    seen = []
    rows = batch.grade_all(submissions, options, [1, 2], jobs=2, on_row=lambda row: seen.append(row.submission))
    by_name = {row.submission: row for row in rows}
    assert [row.submission for row in rows] == ["ana", "dies-bruno", "eva", "hangs-carla", "wrong-davi"]
    assert sorted(seen) == sorted(by_name)
    assert by_name["ana"].status == batch.PASSED and by_name["ana"].total == 100.0
    assert by_name["dies-bruno"].status == batch.WORKER_FAILED
    assert "código 139" in by_name["dies-bruno"].message and "Segmentation fault" in by_name["dies-bruno"].message
    assert by_name["hangs-carla"].status == batch.TIMED_OUT and "interrompida à força" in by_name["hangs-carla"].message
    assert by_name["wrong-davi"].status == batch.INCOMPLETE and by_name["wrong-davi"].level_scores == {1: 100.0, 2: 0.0}
    assert by_name["eva"].status == batch.PASSED
    path = tmp_path / "out" / "gradebook.csv"
    batch.write_gradebook(path, rows, [1, 2])
    assert len(list(csv.DictReader(path.open(encoding="utf-8")))) == 5


# ------------------------------------------------- end to end, real engine

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = ROOT / "solutions" / "exercise-3.ipynb"
needs_exercise_3 = pytest.mark.skipif(not SOLUTION.exists(), reason="solutions/exercise-3.ipynb ainda não existe")


def notebook_with_extra_cell(source: str) -> str:
    import nbformat

    notebook = nbformat.read(str(SOLUTION), as_version=4)
    notebook.cells.insert(2, nbformat.v4.new_code_cell(source))
    return nbformat.writes(notebook)


def generated_exercise_text() -> str:
    from authoring.exercises import exercise_bytes_for

    return exercise_bytes_for(SOLUTION)[0].decode("utf-8")


@pytest.mark.slow
@needs_exercise_3
def test_watch_regrades_a_saved_notebook_with_the_real_engine(tmp_path):
    from grader.core.engine import grade

    notebook = tmp_path / "exercise-3.ipynb"
    notebook.write_text(generated_exercise_text(), encoding="utf-8")
    reports = []

    def student_saves_the_answer() -> None:
        notebook.write_text(SOLUTION.read_text(encoding="utf-8"), encoding="utf-8")

    out = io.StringIO()
    count = watch(
        notebook, lambda: reports.append(grade("exercise-3", notebook)),
        interval=0.1, max_polls=3, sleep=FakeClock({1: student_saves_the_answer}), out=out,
    )
    assert count == 2
    assert not reports[0].passed and reports[0].score == 0.0
    assert reports[1].passed and reports[1].score == 1.0
    assert "mudou; corrigindo de novo" in out.getvalue()


def test_watch_command_ends_cleanly_on_ctrl_c(monkeypatch, capsys):
    from grader.student import watch as watch_module

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(watch_module, "watch", interrupted)
    args = argparse.Namespace(exercise="exercise-3", notebook=Path("x.ipynb"), level=None, fixtures=[], interval=1.0)
    assert watch_module.run(args) == 0
    assert "grade watch encerrado" in capsys.readouterr().out


@pytest.mark.slow
@needs_exercise_3
def test_batch_command_writes_one_row_per_submission_whatever_happens(tmp_path, capsys):
    from grader.cli import main

    entregas = tmp_path / "entregas"
    entregas.mkdir()
    (entregas / "ana.ipynb").write_text(SOLUTION.read_text(encoding="utf-8"), encoding="utf-8")
    (entregas / "bruno").mkdir()
    (entregas / "bruno" / "exercise-3.ipynb").write_text(generated_exercise_text(), encoding="utf-8")
    (entregas / "carla.ipynb").write_text("isto não é um notebook", encoding="utf-8")
    (entregas / "davi").mkdir()
    # A loop that waits rather than spins: it reaches its cell limit (half of --timeout) all the same,
    # without taking a core from the rest of the suite (the engine's tests time out a spinning one).
    (entregas / "eva.ipynb").write_text(notebook_with_extra_cell("import time\nwhile True:\n    time.sleep(0.05)"),
                                        encoding="utf-8")
    (entregas / "fabio.ipynb").write_text(notebook_with_extra_cell("import os\nos._exit(1)"), encoding="utf-8")
    gradebook = tmp_path / "notas" / "gradebook.csv"

    code = main(["batch", str(entregas), "exercise-3", "-j", "2", "--csv", str(gradebook), "--timeout", "40", "--memory-mb", "2048"])

    assert code == 0
    rows = {row["submissao"]: row for row in csv.DictReader(gradebook.open(encoding="utf-8"))}
    assert list(rows) == ["ana", "bruno", "carla", "davi", "eva", "fabio"]
    assert rows["ana"]["situacao"] == "aprovado" and rows["ana"]["total"] == "100"
    assert rows["ana"]["nivel_1"] == "100" and rows["ana"]["nivel_2"] == "100"
    assert rows["bruno"]["situacao"] == "incompleto" and rows["bruno"]["total"] == "0"
    assert rows["bruno"]["notebook"] == "bruno/exercise-3.ipynb"
    assert rows["carla"]["situacao"] == "notebook_invalido" and "não é um notebook válido" in rows["carla"]["mensagem"]
    assert rows["davi"]["situacao"] == "sem_notebook"
    # eva's extra cell loops past its limit; the grading goes on, and the solution's checks all pass
    assert rows["eva"]["situacao"] == "aprovado" and "célula" in rows["eva"]["mensagem"]
    assert rows["fabio"]["situacao"] == "kernel_morreu"
    streams = capsys.readouterr()
    assert "6/6" in streams.err  # the progress bar went to stderr
    assert "6 submissões" in streams.out and str(gradebook) in streams.out


def test_hand_edited_state_with_wrong_shapes_is_tolerated(state_file):
    state_file.write_text(json.dumps({
        "version": 1,
        "exercises": {"exercise-1": {"levels": {"1": "passou", "2": {"passed": 1, "total": 1}}}, "exercise-2": 7},
        "hints": {"exercise-3": 5},
    }), encoding="utf-8")
    text = progress.render_list(progress.load_state(), load_manifest())
    later = [level.number for level in load_manifest().exercise("exercise-1").levels if level.number != 2]
    words = "nível" if len(later) == 1 else "níveis"
    assert "exercise-1" in text and f"1 de 1 verificações; {words} {', '.join(map(str, later))} ainda não corrigido" in text
    code, hint = hints.show_hint("exercise-3", level=1)
    assert code == 0 and "Dica 1 de 3" in hint
    progress.record("exercise-2", report("exercise-2", check(1, PASS)))
    assert progress.load_state()["exercises"]["exercise-2"]["levels"] == {"1": {"passed": 1, "total": 1}}


@pytest.mark.slow
def test_ctrl_c_during_a_batch_keeps_finished_rows_and_kills_workers(tmp_path, fake_workers):
    folder = tmp_path / "entregas"
    folder.mkdir()
    for name in ("ana", "hangs-bruno", "hangs-carla", "hangs-davi"):
        (folder / f"{name}.ipynb").write_text("{}", encoding="utf-8")
    submissions, _ = batch.find_submissions(folder, "exercise-3")
    pool = batch.WorkerPool()

    def press_ctrl_c(row):
        raise KeyboardInterrupt

    with pytest.raises(batch.BatchInterrupted) as caught:
        batch.grade_all(submissions, batch.BatchOptions(exercise="exercise-3", hard_timeout=60), [1, 2],
                        jobs=2, on_row=press_ctrl_c, pool=pool)
    rows = caught.value.rows
    assert [row.submission for row in rows] == ["ana", "hangs-bruno", "hangs-carla", "hangs-davi"]
    assert rows[0].status == batch.PASSED
    assert {row.status for row in rows[1:]} == {batch.NOT_GRADED}
    assert not pool._alive  # the hung worker was killed, none was started after


def test_batch_refuses_a_gradebook_it_cannot_write(tmp_path, capsys):
    from grader.cli import main

    (tmp_path / "entregas").mkdir()
    assert main(["batch", str(tmp_path / "entregas"), "exercise-3", "--csv", str(tmp_path)]) == 2
    assert "é uma pasta" in capsys.readouterr().err
