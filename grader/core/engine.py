"""The grading engine: one function, ``grade``, behind every entry point.

``grade`` raises only for the grader's own inputs (an unknown exercise, a bad
fixture, a level that does not exist). Anything wrong with the student's notebook
becomes a report whose checks fail with a Portuguese message.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from grader.core.declarations import Exercise, Fixture, PlannedCheck
from grader.core.results import MEMORY
from grader.core import registry
from grader.core.errors import GraderError
from grader.core.execution import execute_and_grade
from grader.core.fixture_loader import load_fixtures
from grader.core.limits import DEFAULT_LIMITS, Limits
from grader.core.notebook_file import read_notebook
from grader.core.points import points_for
from grader.core.scratch import scratch_folder
from grader.core.results import FAIL, KERNEL_DIED, MEMORY_EXHAUSTED, CheckResult, GradeReport
from grader.core.sandbox import Sandbox

__all__ = ["grade", "GradeReport", "CheckResult"]


def load_exercise(exercise_name: str, level: int | None = None) -> Exercise:
    """The exercise's check declarations; raises GraderError subclasses (Portuguese)."""
    exercise: Exercise = registry.load_exercise(exercise_name).EXERCISE
    if level is not None and level not in exercise.levels:
        known = ", ".join(str(n) for n in sorted(exercise.levels))
        raise GraderError(f"O {exercise_name} não tem nível {level}; os níveis dele são: {known}.")
    return exercise


def shown_path(path: Path) -> str:
    """The notebook's path as the person grading typed it, relative to the cwd when inside it."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(path)


def _failed(planned: PlannedCheck, message: str) -> CheckResult:
    return CheckResult(
        id=planned.id,
        level=planned.level,
        fixture=planned.fixture,
        title=planned.title,
        criterion=planned.criterion,
        status=FAIL,
        observed=message,
        message=message,
        hint_ref=planned.hint_ref,
    )


def _missing_result_message(
    planned: PlannedCheck, error_kind: str | None, grading_error: str | None, culprit: str | None
) -> str:
    if error_kind == KERNEL_DIED:
        if planned.id == culprit:
            return (
                "O kernel do Python morreu durante esta verificação: o seu código encerrou o "
                "processo (um sinal, um travamento) ou estourou a memória."
            )
        if culprit is None:
            return "Não executada: o kernel do Python morreu antes de a primeira verificação começar."
        return f"Não executada: o kernel do Python morreu antes, durante a verificação {culprit}."
    return grading_error or "Não executada: a correção parou antes desta verificação."


def with_points(report: GradeReport, points: dict[str, float]) -> GradeReport:
    """Give each check of ``report`` the points the manifest says it is worth."""
    for check in report.checks:
        check.points = points.get(check.id, check.points)
    return report


def grade(
    exercise: str,
    notebook: Path,
    *,
    level: int | None = None,
    fixture_dirs: Sequence[Path] = (),
    limits: Limits = DEFAULT_LIMITS,
    sandbox: Sandbox | None = None,
    prelaunched: Any = None,
) -> GradeReport:
    """Grade ``notebook`` (never written) against ``exercise``'s checks, in one fresh kernel.

    ``limits.total_seconds`` bounds the notebook's own cells; each check then has
    ``limits.check_seconds`` inside the same kernel.
    """
    spec_exercise = load_exercise(exercise, level)
    fixtures = load_fixtures(exercise, fixture_dirs, spec_exercise.validate_fixture)
    return grade_with_fixtures(
        spec_exercise, fixtures, notebook, level=level, limits=limits, sandbox=sandbox, prelaunched=prelaunched,
    )


def grade_with_fixtures(
    spec_exercise: Exercise,
    fixtures: Sequence[Fixture],
    notebook: Path,
    *,
    level: int | None = None,
    limits: Limits = DEFAULT_LIMITS,
    sandbox: Sandbox | None = None,
    prelaunched: Any = None,
) -> GradeReport:
    """``grade`` with fixtures already loaded (``grade fixtures`` passes only the valid ones)."""
    exercise = spec_exercise.name
    plan = spec_exercise.plan(list(fixtures), level)
    if not plan:  # 0/0 would read as a grade; it is a course folder missing its fixtures
        from grader.core.fixture_loader import FIXTURES_ROOT, display_path

        raise GraderError(
            f"O {exercise} não tem nenhuma verificação para rodar: não há fixtures em "
            f"{display_path(FIXTURES_ROOT / exercise)} (a pasta sumiu ou está vazia?). "
            "Recupere-a do repositório do curso (git checkout -- grader/fixtures)."
        )
    points = points_for(exercise, plan)  # a bad points entry stops here, before any kernel
    report = GradeReport(
        exercise=exercise,
        checks=[],
        notebook=shown_path(notebook),
        title=spec_exercise.title,
        level=level,
        level_titles={n: t for n, t in spec_exercise.levels.items() if level in (None, n)},
    )
    nb, problem = read_notebook(Path(notebook))
    if problem is not None:
        report.notebook_error, report.notebook_error_kind = problem.message, problem.kind
        report.checks = [_failed(planned, problem.message) for planned in plan]
        return with_points(report, points)

    with (prelaunched.folder() if prelaunched else scratch_folder()) as temporary:
        workdir = Path(temporary)
        spec = {
            "exercise": exercise,
            "plan": [planned.to_dict() for planned in plan],
            "fixtures": [fixture.to_dict() for fixture in fixtures],
            "workdir": str(workdir / "checks"),
            "limits": limits.to_json(),  # the kernel's runner reads each check's time from it
            "results_path": str(workdir / "results.jsonl"),
        }
        (workdir / "checks").mkdir(exist_ok=True)
        execution = execute_and_grade(
            nb,
            workdir=workdir,
            spec=spec,
            limits=limits,
            sandbox=sandbox,
            prelaunched=prelaunched,
        )

    report.cell_problems = execution.cell_problems
    report.notebook_error_kind = execution.error_kind
    if execution.notebook_error is not None:
        report.notebook_error = execution.notebook_error
        report.checks = [_failed(planned, execution.notebook_error) for planned in plan]
        return with_points(report, points)

    results = {r["result"]["id"]: r["result"] for r in execution.records if "result" in r}
    started = [r["started"] for r in execution.records if "started" in r]
    culprit = next((id_ for id_ in reversed(started) if id_ not in results and id_ not in execution.check_notes), None)
    if report.notebook_error_kind is None and (
            execution.memory_exhausted or any(r.get("stopped_by") == MEMORY for r in results.values())):
        report.notebook_error_kind = MEMORY_EXHAUSTED  # the grading went on; the kind says why points were lost
    for planned in plan:
        if planned.id in results:
            report.checks.append(CheckResult.from_dict(results[planned.id]))
        elif planned.id in execution.check_notes:
            report.checks.append(_failed(planned, execution.check_notes[planned.id]))
        else:
            message = _missing_result_message(planned, execution.error_kind, execution.grading_error, culprit)
            report.checks.append(_failed(planned, message))
    return with_points(report, points)
