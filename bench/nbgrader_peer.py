"""nbgrader's `autograde` on the same notebook and the same student code as `grade batch`.

An nbgrader course folder is set up as an instructor would: ``source/ps1/`` holds the
solution notebook with nbgrader's cell metadata (every ``### BEGIN SOLUTION`` cell is a
solution cell; nbgrader uses the same markers) and one autograded test cell worth the
exercise's points, which runs the course's own checks in the kernel, against the
student's functions, exactly as ``grade`` does after the notebook. ``nbgrader
generate_assignment`` releases it; each student's submission (the solution, as a
student who got everything right would hand in) goes to ``submitted/STUDENT/ps1/``;
``nbgrader autograde ps1`` grades them all in one process, a fresh kernel each.

Needs the optional ``bench`` extra (``python3 bootstrap.py python -m pip install -e ".[bench]"``).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat

from grader.core.environment import GRADER_ENV

ASSIGNMENT = "ps1"

CHECKS_CELL = '''# Verificações do curso, no kernel, contra as funções do aluno (as mesmas do `grade`).
import tempfile
from pathlib import Path
from grader.checks.framework import Session
from grader.checks.runner import run_plan
from grader.core.engine import load_exercise
from grader.core.fixture_loader import load_fixtures

_spec = load_exercise({exercise!r})
_fixtures = load_fixtures({exercise!r}, (), _spec.validate_fixture)
_results = run_plan({exercise!r}, _spec.plan(_fixtures), _fixtures,
                    Session(namespace=globals(), workdir=Path(tempfile.mkdtemp()), check_timeout=10.0, cell_problems=[]))
_failed = [r["id"] for r in _results if r["status"] != "pass"]
assert not _failed, _failed
'''


def available() -> str | None:
    """None when nbgrader can run here, else why not (in Portuguese)."""
    try:
        import nbgrader  # noqa: F401
    except ImportError:
        return ('nbgrader não está instalado (python3 bootstrap.py python -m pip install -e ".[bench]"); '
                "a comparação com ele foi pulada.")
    if shutil.which("nbgrader", path=str(Path(sys.executable).parent)) is None:
        return "o comando nbgrader não está no ambiente; a comparação com ele foi pulada."
    return None


def _nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    command = [str(Path(sys.executable).parent / "nbgrader"), *args]
    # Marked like the grader's kernels, so the notebook's own check() cell is a no-op here too.
    env = dict(os.environ, **{GRADER_ENV: "1"})
    # As in an activated environment: nbgrader runs its own tools (alembic) from PATH.
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return subprocess.run(command, cwd=course, capture_output=True, text=True, env=env)


def _instructor_notebook(solution: Path, exercise: str, points: int) -> nbformat.NotebookNode:
    notebook = nbformat.read(str(solution), as_version=4)
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code" and "### BEGIN SOLUTION" in cell.source:
            cell.metadata["nbgrader"] = {"solution": True, "grade": False, "locked": False,
                                         "grade_id": f"resposta-{index}", "schema_version": 3}
    test = nbformat.v4.new_code_cell(CHECKS_CELL.format(exercise=exercise))
    test.metadata["nbgrader"] = {"solution": False, "grade": True, "locked": True, "points": points,
                                 "grade_id": "verificacoes", "schema_version": 3}
    notebook.cells.append(test)
    return notebook


def setup_course(folder: Path, solution: Path, exercise: str, students: list[str], points: int) -> Path:
    """An nbgrader course in ``folder`` with the assignment released and every student's
    submission in place; returns the course folder."""
    course = folder / "curso-nbgrader"
    (course / "source" / ASSIGNMENT).mkdir(parents=True)
    (course / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.root = {str(course)!r}\n"
        "c.ExecutePreprocessor.timeout = 300\n",
        encoding="utf-8",
    )
    notebook = _instructor_notebook(solution, exercise, points)
    nbformat.write(notebook, str(course / "source" / ASSIGNMENT / f"{exercise}.ipynb"))
    done = _nbgrader(course, "generate_assignment", ASSIGNMENT, "--force")
    if done.returncode != 0:
        raise RuntimeError(f"nbgrader generate_assignment falhou:\n{done.stdout}\n{done.stderr}")
    for student in students:
        target = course / "submitted" / student / ASSIGNMENT
        target.mkdir(parents=True)
        # The student's notebook: the released cells with every answer filled in (the solution).
        nbformat.write(notebook, str(target / f"{exercise}.ipynb"))
    return course


def autograde(course: Path, students: list[str]) -> float:
    """Seconds for ``nbgrader autograde`` of every submission in the course; each must come
    out with full points, or the figure would time failures."""
    started = time.perf_counter()
    done = _nbgrader(course, "autograde", ASSIGNMENT, "--create", "--force")
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"nbgrader autograde falhou:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    _check_scores(course, students)
    return seconds


def _check_scores(course: Path, students: list[str]) -> None:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for student in students:
            submission = gradebook.find_submission(ASSIGNMENT, student)
            if submission.score != submission.max_score or submission.max_score == 0:
                raise RuntimeError(
                    f"nbgrader deu {submission.score}/{submission.max_score} a {student}: nada a comparar")
