"""Memory and time limits end to end, each through a real kernel (kept few: each grading
costs seconds). A cell or a check that exhausts memory or ignores the interrupt is named,
and the student's correct functions keep their points."""
from __future__ import annotations

import contextlib
import csv
import io
import json
import time

import pytest

from grader import cli
from grader.core.engine import grade
from grader.core.limits import DEFAULT_MEMORY_MB, Limits
from grader.core.results import GradeReport
from grader.instructor import batch
from grader.reports import render
from tests.grader_support import make_notebook, solution_notebook, write
from tests.test_grader_engine import RESUME_OK, SETUP

# Bounded at 3 GB, so that a grader without a memory limit makes this test fail instead of
# the machine: 3 GB fit in RAM, not in the default limit.
MEMORY_BOMB = "hog = []\nwhile len(hog) < 300:\n    hog.append(bytearray(10 * 1024 * 1024))"
HOLDS_MOST_OF_THE_LIMIT = f"cache = bytearray({int(DEFAULT_MEMORY_MB * 0.7)} * 1024 * 1024)"
SWALLOWS_THE_INTERRUPT = "import time\nwhile True:\n    try:\n        time.sleep(0.05)\n    except:\n        pass"


def solution_with_cell(source: str, position: int = 3):
    notebook = solution_notebook()
    notebook.cells.insert(position, make_notebook(source).cells[0])
    return notebook


@pytest.fixture(scope="module")
def bomb_json(tmp_path_factory):
    """`grade exercise-3 --level 1 --json` on the solution plus a cell that fills memory."""
    path = write(solution_with_cell(MEMORY_BOMB), tmp_path_factory.mktemp("bomba") / "exercise-3.ipynb")
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out):
        patch.setenv("GRADE_STATE_FILE", str(path.parent / "grade-state.json"))
        code = cli.main(["exercise-3", "--level", "1", "--json", "--notebook", str(path)])
    return code, json.loads(out.getvalue())


@pytest.mark.slow
def test_a_memory_bomb_cell_is_named_as_memory_exhaustion_and_costs_no_points(bomb_json):
    code, report = bomb_json
    assert report["notebook_error_kind"] == "memory_exhausted" and report["notebook_error"] is None
    [problem] = report["cell_problems"]
    assert problem["cell"] == 4 and problem["ename"] == "MemoryError"
    assert f"A célula 4 (`hog = []`) esgotou a memória do kernel (limite de {DEFAULT_MEMORY_MB} MB)" in problem["message"]
    assert "Avise o instrutor" not in json.dumps(report, ensure_ascii=False)
    # the correct resume_action defined in another cell keeps every point
    assert report["passed_count"] == report["total"] == 12 and code == 0


@pytest.mark.slow
def test_the_memory_bomb_in_the_text_report(bomb_json):
    text = render.text_report(GradeReport.from_dict(bomb_json[1]))
    assert "esgotou a memória do kernel" in text and "`hog = []`" in text


@pytest.mark.slow
def test_batch_rows_say_memoria_esgotada_for_a_bomb_and_for_a_cell_holding_most_of_the_limit(tmp_path):
    entregas = tmp_path / "entregas"
    entregas.mkdir()
    write(solution_with_cell(MEMORY_BOMB), entregas / "ana.ipynb")
    write(solution_with_cell(HOLDS_MOST_OF_THE_LIMIT), entregas / "bruno.ipynb")
    gradebook = tmp_path / "gradebook.csv"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert cli.main(["batch", str(entregas), "exercise-3", "-j", "2", "--csv", str(gradebook)]) == 0
    rows = {row["submissao"]: row for row in csv.DictReader(gradebook.open(encoding="utf-8"))}
    assert rows["ana"]["situacao"] == rows["bruno"]["situacao"] == batch.MEMORY_EXHAUSTED == "memoria_esgotada"
    assert "A célula 4 (`hog = []`) esgotou a memória" in rows["ana"]["mensagem"]
    assert "A célula 4 (`cache = bytearray(" in rows["bruno"]["mensagem"]
    assert "mais da metade do limite" in rows["bruno"]["mensagem"]
    assert rows["ana"]["total"] == rows["bruno"]["total"] == "100"  # the functions were graded all the same


@pytest.mark.slow
def test_a_cell_that_swallows_the_interrupt_ends_a_few_seconds_after_its_limit(tmp_path):
    notebook = make_notebook(SETUP, RESUME_OK, SWALLOWS_THE_INTERRUPT, 'ROOT_CAUSE = "B"')
    started = time.monotonic()
    report = grade("exercise-3", write(notebook, tmp_path / "teimosa.ipynb"), limits=Limits(cell_seconds=3, total_seconds=240))
    elapsed = time.monotonic() - started
    assert report.notebook_error is None
    [problem] = report.cell_problems
    assert problem.cell == 3 and "não terminou em 3 s e ignorou a interrupção" in problem.message
    assert "O kernel foi encerrado e reiniciado" in problem.message
    by_id = {c.id: c for c in report.checks}
    assert by_id["n2.root_cause_identified"].passed  # the cell after it ran
    assert by_id["n1.resume_action_decides[cpC]"].passed  # the cell before it ran again in the fresh kernel
    # Never the 240 s total limit: the kill comes seconds after the 3 s cell limit (the rest is
    # two kernel starts and the checks).
    assert elapsed < 90, elapsed


@pytest.mark.slow
def test_a_check_that_swallows_its_time_limit_or_exhausts_memory_is_named_and_the_rest_is_graded(tmp_path):
    stuck = (
        "import time\n"
        "def resume_action(cp):\n"
        '    if cp["pending_tool_use"] and cp["pending_tool_use"][0]["name"] == "send_email":\n'
        "        while True:\n"
        "            try:\n"
        "                time.sleep(0.05)\n"
        "            except BaseException:\n"
        "                pass\n"
        '    return {c["id"]: ("rerun" if c["name"] in READ_ONLY_TOOLS else "is_error") for c in cp["pending_tool_use"] or []}'
    )
    # 100 MB a step: a big bytearray is mapped, not written, so the limit is met in a few steps even
    # on a loaded machine (10 MB steps could take past the 2 s check limit there, and time out instead)
    greedy = "def reconcile(cp):\n    hog = []\n    while True:\n        hog.append(bytearray(100 * 1024 * 1024))"
    notebook = make_notebook(SETUP, stuck, greedy, 'ROOT_CAUSE = "B"')
    report = grade("exercise-3", write(notebook, tmp_path / "verificacoes.ipynb"), limits=Limits(check_seconds=2))
    by_id = {c.id: c for c in report.checks}
    assert "Durante esta verificação, `resume_action` não terminou em 2 s e ignorou a interrupção" in \
        by_id["n1.resume_action_decides[cpC]"].message
    assert "`resume_action` não foi chamada de novo" in by_id["n1.resume_action_decides[incident-duplicate-email]"].message
    assert by_id["n1.resume_action_decides[cpB]"].passed
    memory = by_id["n2.keeps_counters[cpB]"].message
    assert memory.startswith("`reconcile` esgotou a memória do kernel (MemoryError)")
    assert by_id["n2.root_cause_identified"].passed  # graded in the fresh kernel, after the stuck check
    assert not any("Avise o instrutor" in c.message for c in report.checks)
    assert report.notebook_error_kind in ("timeout", "memory_exhausted")


def test_a_grading_kernel_never_inherits_a_credential(monkeypatch):
    """Grading is offline: an instructor's key or password must not reach a submission (nor its feedback)."""
    from grader.core.environment import kernel_env

    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "GITHUB_TOKEN", "MY_SECRET",
                 "PGPASSWORD", "DATABASE_URL", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "sk-segredo")
    monkeypatch.setenv("LANG", "pt_BR.UTF-8")
    env = kernel_env()
    assert "sk-segredo" not in env.values()
    assert env["LANG"] == "pt_BR.UTF-8" and env["PATH"] == __import__("os").environ["PATH"]


@pytest.mark.slow
def test_batch_with_a_short_timeout_ends_a_cell_or_a_check_that_swallows_the_interrupt_and_grades_the_rest(tmp_path):
    """--timeout 20: the cell gets half of it (10 s), is killed a few seconds after, and the
    notebook runs again without it well inside the 20 s; a check gets its own limit, and the
    checks after it run in a fresh kernel. Neither costs the submission the total limit."""
    stuck_check = (
        "import time\n"
        "def resume_action(cp):\n"
        '    if cp["pending_tool_use"] and cp["pending_tool_use"][0]["name"] == "send_email":\n'
        "        while True:\n"
        "            try:\n"
        "                time.sleep(0.05)\n"
        "            except BaseException:\n"
        "                pass\n"
        '    return {c["id"]: ("rerun" if c["name"] in READ_ONLY_TOOLS else "is_error") for c in cp["pending_tool_use"] or []}'
    )
    entregas = tmp_path / "entregas"
    entregas.mkdir()
    write(make_notebook(SETUP, RESUME_OK, SWALLOWS_THE_INTERRUPT, 'ROOT_CAUSE = "B"'), entregas / "celula.ipynb")
    write(make_notebook(SETUP, stuck_check, 'ROOT_CAUSE = "B"'), entregas / "verificacao.ipynb")
    gradebook = tmp_path / "gradebook.csv"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert cli.main(["batch", str(entregas), "exercise-3", "-j", "2", "--timeout", "20", "--csv", str(gradebook)]) == 0
    rows = {row["submissao"]: row for row in csv.DictReader(gradebook.open(encoding="utf-8"))}
    cell, check = rows["celula"], rows["verificacao"]
    assert "limite total" not in cell["mensagem"] + check["mensagem"]
    assert "A célula 3 (`import time`) não terminou em 10 s e ignorou a interrupção" in cell["mensagem"]
    assert cell["nivel_1"] == "100"  # resume_action, in the cell before, ran again in the fresh kernel
    assert check["nivel_2"] != "0"  # ROOT_CAUSE was graded in a fresh kernel after the stuck check


def test_the_instructor_guide_states_the_per_cell_limit_a_batch_worker_applies():
    """`--timeout S` is the whole notebook; one cell is cut at min(60, S/2) s (shown above with S=20: 10 s)."""
    from pathlib import Path

    from grader.core.limits import DEFAULT_CELL_SECONDS, DEFAULT_TOTAL_SECONDS

    guide = (Path(__file__).resolve().parent.parent / "docs" / "instrutores.md").read_text(encoding="utf-8")
    row = next(line for line in guide.splitlines() if line.startswith("| `--timeout S` |"))
    assert f"min({DEFAULT_CELL_SECONDS:g}, S/2) s" in row, row
    assert f"| {DEFAULT_TOTAL_SECONDS:g} |" in row and "somando todas as células" in row, row
    assert "`--timeout 20`, 10 s" in row  # the case the batch test above grades for real
