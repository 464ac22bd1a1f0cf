"""What a grading report shows, decided once for the terminal and for Jupyter alike.

``report_view(report)`` picks the content; ``render`` only draws it as text or HTML, so
`grade exercise-N`, ``check()`` in a notebook and ``check()`` outside Jupyter say the same.

- Each level lists its failures first, one entry per check: its criterion once, the first
  way it failed in full, then one line per other fixture (fixtures failing the same way
  share that line); then the level folds its passes into a count.
- A blank or partly written exercise gets the short form: one line per function (or
  answer) not written yet, with the levels it blocks, then only the first failing check
  in full. The hint ladder stays in `grade hint`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from grader.core.plural import quantity
from grader.core.points import shown as shown_points
from grader.core.results import INVALID_NOTEBOOK, NOTEBOOK_UNREADABLE, CheckResult, GradeReport


@dataclass
class Case:
    """How one check failed on one or more fixtures, for the same reason."""

    fixtures: list[str]
    message: str
    expected: str
    observed: str
    output: str

    def same_reason(self, check: CheckResult) -> bool:
        return check.fixture is not None and self.fixtures != [] and (
            self.message, self.expected, self.observed
        ) == (check.message, check.expected, _observed(check))

    def summary(self) -> str:
        """The case in a few words: what was expected and what came, else the message's start."""
        if self.expected and self.observed:
            return f"esperado {self.expected}; obtido {self.observed}"
        return self.message


@dataclass
class Failure:
    """One check that failed: its criterion once, then each way it failed (the first in full,
    the others a line each in the rendering)."""

    level: int
    key: str  # the check's id without the fixture: which check this is
    title: str
    criterion: str
    cases: list[Case]

    @property
    def first(self) -> Case:
        return self.cases[0]

    @property
    def fixtures(self) -> list[str]:
        return [name for case in self.cases for name in case.fixtures]

    @property
    def message(self) -> str:
        return self.first.message

    @property
    def expected(self) -> str:
        return self.first.expected

    @property
    def observed(self) -> str:
        return self.first.observed

    @property
    def output(self) -> str:
        return self.first.output


def _check_key(check: CheckResult) -> str:
    return check.id.split("[", 1)[0]


def _observed(check: CheckResult) -> str:
    """What the check saw, when it says more than the message."""
    return check.observed if check.observed != check.message else ""


@dataclass
class LevelView:
    number: int
    title: str
    passed: int
    total: int
    hint: str  # `grade hint exercise-N --level K` when something failed
    failures: list[Failure] = field(default_factory=list)
    passes: list[CheckResult] = field(default_factory=list)
    points: str = ""  # "7.5/30 pontos" when the manifest weighs the checks

    @property
    def heading(self) -> str:
        return f"Nível {self.number}" + (f" — {self.title}" if self.title else "")

    @property
    def count(self) -> str:
        return f"{self.passed}/{self.total}" + (f"; {self.points}" if self.points else "")


@dataclass
class Unwritten:
    """A function or answer the student has not written yet, and what it holds back."""

    name: str
    levels: list[int]
    checks: int

    def describe(self) -> str:
        levels = ", ".join(str(n) for n in self.levels)
        word = "o nível" if len(self.levels) == 1 else "os níveis"
        return f"`{self.name}`: trava {word} {levels} ({quantity(self.checks, 'verificação', 'verificações')})"


@dataclass
class ReportView:
    heading: str
    notebook: str
    notebook_error: str | None
    warnings: list[str]
    levels: list[LevelView]
    unwritten: list[Unwritten]
    focus: Failure | None  # short form: the one failure shown in full
    more_failures: int  # short form: failures left out
    score: str
    passed: bool
    hint: str

    @property
    def short(self) -> bool:
        return self.focus is not None


def _failures(checks: list[CheckResult]) -> list[Failure]:
    """One entry per failing check; a per-fixture check's failures on every fixture go in its
    one entry, fixtures failing the same way sharing one case."""
    failures: list[Failure] = []
    for check in checks:
        if check.passed:
            continue
        entry = next((f for f in failures if check.fixture is not None and f.key == _check_key(check)
                      and f.fixtures), None)
        if entry is None:
            entry = Failure(check.level, _check_key(check), check.title, check.criterion, [])
            failures.append(entry)
        case = next((c for c in entry.cases if c.same_reason(check)), None)
        if case is not None:
            case.fixtures.append(check.fixture)
            continue
        entry.cases.append(Case(
            [check.fixture] if check.fixture else [], check.message, check.expected, _observed(check),
            check.output.strip()[-400:],
        ))
    return failures


def _entry_of(levels: list[LevelView], check: CheckResult) -> Failure:
    """The failure entry that holds ``check``."""
    return next(
        failure for level in levels for failure in level.failures
        if failure.key == _check_key(check)
        and (check.fixture in failure.fixtures if check.fixture else not failure.fixtures)
    )


def _unwritten(report: GradeReport) -> list[Unwritten]:
    found: dict[str, Unwritten] = {}
    for check in report.checks:
        if check.passed or not check.unwritten:
            continue
        entry = found.setdefault(check.unwritten, Unwritten(check.unwritten, [], 0))
        entry.checks += 1
        if check.level not in entry.levels:
            entry.levels.append(check.level)
    return list(found.values())


def _percent(value: float) -> str:
    return f"{round(value * 100)}%"


def _weighted(report: GradeReport) -> bool:
    """Whether the manifest gave points; with one point per check, points repeat the counts."""
    return any(check.points != 1 for check in report.checks)


def _points_text(checks: list[CheckResult]) -> str:
    earned = sum(c.points_earned for c in checks)
    return f"{shown_points(earned)}/{shown_points(sum(c.points for c in checks))} pontos"


def _score(report: GradeReport) -> str:
    total = len(report.checks)
    if _weighted(report):
        return (f"Pontuação: {_points_text(report.checks)} ({_percent(report.score)}); "
                f"{report.passed_count}/{total} verificações passaram.")
    return f"Pontuação: {report.passed_count}/{total} verificações ({_percent(report.score)})."


# The notebook file itself could not be read (missing, renamed, a folder, not a notebook): no
# code of the student's was graded, so a hint about the exercise would answer the wrong question.
NO_NOTEBOOK_KINDS = (NOTEBOOK_UNREADABLE, INVALID_NOTEBOOK)


def report_view(report: GradeReport, *, verbose: bool = False) -> ReportView:
    levels = []
    hints = report.notebook_error_kind not in NO_NOTEBOOK_KINDS
    for number, checks in report.levels().items():
        passed = sum(c.passed for c in checks)
        failed = [c for c in checks if not c.passed]
        levels.append(LevelView(
            number, report.level_titles.get(number, ""), passed, len(checks),
            failed[0].hint_ref if hints and failed and failed[0].hint_ref else "",
            failures=[] if report.notebook_error else _failures(checks),
            passes=[c for c in checks if c.passed],
            points=_points_text(checks) if _weighted(report) else "",
        ))
    unwritten = [] if report.notebook_error else _unwritten(report)
    focus, more = None, 0
    if unwritten and not verbose:
        # The first failure of code the student did write says the most; else the very first one.
        failed = report.failed()
        first = next((c for c in failed if not c.unwritten), failed[0])
        focus = _entry_of(levels, first)
        more = len(failed) - max(1, len(focus.fixtures))
    warnings = [
        p.message for p in report.cell_problems if not (unwritten and p.ename == "NotImplementedError")
    ]
    first_failing = next((level for level in levels if level.passed < level.total), None)
    return ReportView(
        heading=f"{report.exercise} — {report.title}" if report.title else report.exercise,
        notebook=report.notebook,
        notebook_error=report.notebook_error,
        warnings=warnings,
        levels=levels,
        unwritten=unwritten,
        focus=focus,
        more_failures=more,
        score=_score(report),
        passed=report.passed,
        hint=first_failing.hint if first_failing else "",
    )
