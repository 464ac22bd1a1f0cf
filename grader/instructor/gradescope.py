"""Grade one Gradescope submission and write ``results.json`` as Gradescope reads it.

``run_autograder`` (built by ``course gradescope``) calls this module inside the
autograder container. It follows Gradescope's autograder specification ("Autograder
Specifications", https://gradescope-autograders.readthedocs.io/en/latest/specs/):
the submission is in ``/autograder/submission``, the results go to
``/autograder/results/results.json`` with a ``score`` and a list of ``tests``
(``name``, ``score``, ``max_score``, ``output``, ``visibility``). Every path comes
from the command line, so the same run works on a simulated tree.

Checks on the instructor's hidden fixtures get the visibility the configuration
names (``after_due_date`` by default): students see those results only later.
A submission that cannot be graded still gets a ``results.json`` with score 0 and
the reason in Portuguese.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from grader.core.atomic_write import write_atomic
from grader.core.points import shown as shown_points
from grader.core.results import CheckResult, GradeReport

VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
CONFIG_NAME = "gradescope.json"
PUBLIC_FIXTURES = "fixtures/public"
HIDDEN_FIXTURES = "fixtures/hidden"


def test_name(check: CheckResult, level_titles: dict[int, str]) -> str:
    title = level_titles.get(check.level, "")
    where = f"Nível {check.level}" + (f" ({title})" if title else "")
    return f"{where}: {check.title}" + (f" [{check.fixture}]" if check.fixture else "")


def test_output(check: CheckResult) -> str:
    if check.passed:
        return f"Passou. Critério: {check.criterion}"
    parts = [f"Critério: {check.criterion}", *(f"{label}: {text}" for label, text in check.failure_fields())]
    if check.hint_ref:
        parts.append(f"Dica: {check.hint_ref}")
    return "\n".join(parts)


def summary_output(report: GradeReport) -> str:
    """What the whole submission shows: why it could not be graded, the cells that
    failed, the score. Per-check details stay in the tests (with their visibility)."""
    lines = [f"{report.exercise} — {report.title}" if report.title else report.exercise]
    if report.notebook_error:
        lines.append(f"O notebook não pôde ser corrigido: {report.notebook_error}")
    for problem in report.cell_problems:
        lines.append(f"- {problem.message}")
    lines.append(
        f"Pontuação: {shown_points(report.points_earned)}/{shown_points(report.points_possible)} pontos; "
        f"{report.passed_count}/{len(report.checks)} verificações passaram."
    )
    return "\n".join(lines)


def results_json(report: GradeReport, hidden_fixtures: set[str], hidden_visibility: str, seconds: float) -> dict[str, Any]:
    tests = []
    for number, check in enumerate(report.checks, start=1):
        hidden = check.fixture is not None and check.fixture in hidden_fixtures
        tests.append({
            "name": test_name(check, report.level_titles),
            "number": f"{check.level}.{number}",
            "score": check.points_earned,
            "max_score": check.points,
            "status": "passed" if check.passed else "failed",
            "output": test_output(check),
            "visibility": hidden_visibility if hidden else "visible",
        })
    return {
        "score": report.points_earned,
        "execution_time": round(seconds),
        "output": summary_output(report),
        "stdout_visibility": "hidden",
        "tests": tests,
    }


def write_results(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(data, ensure_ascii=False, indent=2))


def _fixture_names(folder: Path) -> set[str]:
    from grader.core.fixture_loader import SUFFIXES

    return {path.stem for path in folder.iterdir() if path.suffix in SUFFIXES} if folder.is_dir() else set()


def grade_submission(config: dict[str, Any], source: Path, submission: Path) -> tuple[GradeReport, set[str]]:
    from grader.core.engine import grade_with_fixtures, load_exercise
    from grader.core.fixture_loader import load_fixtures
    from grader.core.limits import Limits
    from grader.instructor.batch import notebook_in_folder

    exercise = config["exercise"]
    limits = Limits.from_json(config.get("limits"))  # as `course gradescope` wrote them; refused before any kernel
    spec = load_exercise(exercise)
    public, hidden = source / PUBLIC_FIXTURES, source / HIDDEN_FIXTURES
    hidden_names = _fixture_names(hidden)
    fixtures = load_fixtures(exercise, [folder for folder in (public, hidden) if folder.is_dir()], spec.validate_fixture)
    if config.get("remove_hidden_fixtures") and hidden.is_dir():
        # Loaded in memory now: the files are gone before the student's code starts, so
        # it cannot read them from the autograder's source folder.
        shutil.rmtree(hidden)
    notebook, problem = notebook_in_folder(submission, exercise)
    report = grade_with_fixtures(
        spec, fixtures, notebook if notebook is not None else submission / f"{exercise}.ipynb",
        limits=limits,
    )
    if notebook is None:
        # Say what the student handed in instead of "file not found".
        reason = f"A entrega não tem o notebook do {exercise}: {problem}. Envie o arquivo {exercise}.ipynb."
        report.notebook_error = reason
        for check in report.checks:
            check.message = check.observed = reason
    return report, hidden_names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.instructor.gradescope", description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True, help="the autograder's source folder (/autograder/source)")
    parser.add_argument("--submission", type=Path, required=True, help="the student's files (/autograder/submission)")
    parser.add_argument("--results", type=Path, required=True, help="where results.json goes (/autograder/results/results.json)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    config = json.loads((args.source / CONFIG_NAME).read_text(encoding="utf-8"))
    try:
        report, hidden_names = grade_submission(config, args.source, args.submission)
    except Exception as error:  # noqa: BLE001 - Gradescope must still get a results.json
        write_results(args.results, {
            "score": 0,
            "output": f"O corretor falhou antes de corrigir esta entrega ({type(error).__name__}: {error}). "
                      "Avise o instrutor.",
            "tests": [],
        })
        print(f"grader.instructor.gradescope: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    data = results_json(report, hidden_names, config.get("hidden_visibility", "after_due_date"), time.monotonic() - started)
    write_results(args.results, data)
    print(summary_output(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
