"""What a class's batch says about the class: computed once, drawn by class_report.py.

Everything here comes from the batch's rows (grader/instructor/batch.py ``Row``). Only a row
whose notebook ran (``ran``) says anything about what the class understood: its checks count in
the failure rates and the groups, its scores in the charts. A row whose notebook never ran (no
notebook, not a notebook, its kernel died or did not start, a worker that failed, a batch
interrupted before it) fails every check without any check having looked at an answer: it counts
in no rate and is listed among the submissions with a problem. A check that failed because the
function it calls is still the exercise's stub (``CheckResult.unwritten``) is "not written", not
a misunderstanding: it is counted apart, and a submission with nothing written is listed as blank.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

BINS = 10  # score histogram: 0-10 %, 10-20 %, ..., 90-100 % (100 % falls in the last bin)


@dataclass
class CheckStats:
    id: str
    level: int
    fixture: str | None
    title: str
    runs: int = 0  # the submissions whose answer it judged: passed or failed, never "not written"
    failures: int = 0
    unwritten: int = 0  # the runs where it judged no answer: a stub, or a name a failing cell never defined

    @property
    def failure_rate(self) -> float:
        return self.failures / self.runs if self.runs else 0.0


@dataclass
class FailureGroup:
    """Submissions that fail exactly the same set of checks: likely the same misunderstanding."""

    check_ids: tuple[str, ...]
    submissions: list[str] = field(default_factory=list)


@dataclass
class Trouble:
    """A submission whose grading stopped short or whose notebook did not run as written."""

    submission: str
    what: str  # a few Portuguese words: "tempo esgotado", "memória esgotada", "não abriu"...
    message: str


@dataclass
class ClassData:
    exercise: str
    levels: list[int]
    level_titles: dict[int, str]
    submissions: list[str]
    level_scores: dict[int, list[float]]  # level -> scores (0-100) of the rows that ran and graded it
    overall_scores: list[float]  # one per row that ran
    ran: list[str]  # the submissions of overall_scores, in its order
    not_run: list[str]  # the submissions whose notebook never ran (listed in troubles too)
    blank: list[str]  # the submissions that ran with every function still the stub
    checks: list[CheckStats]  # sorted: the most failed first
    groups: list[FailureGroup]  # the largest first
    troubles: list[Trouble]
    sections: dict[int, str]  # level -> the lesson heading it tests

    def check(self, check_id: str) -> CheckStats:
        return next(stats for stats in self.checks if stats.id == check_id)

    def troubled_submissions(self) -> list[str]:
        """Each submission with at least one trouble, once, in the order of the troubles."""
        return list(dict.fromkeys(trouble.submission for trouble in self.troubles))


# Row status -> what went wrong, in words (batch.py's statuses, listed here by value so this
# module needs nothing from the instructor layer).
TROUBLE_WORDS = {
    "tempo_esgotado": "tempo esgotado",
    "memoria_esgotada": "memória esgotada",
    "notebook_invalido": "o arquivo não é um notebook válido",
    "erro_no_notebook": "o notebook não pôde ser executado",
    "kernel_morreu": "o kernel morreu",
    "kernel_nao_iniciou": "o kernel não iniciou",
    "sem_notebook": "nenhum notebook na entrega",
    "erro_na_correcao": "erro na correção",
    "nao_corrigido": "não corrigida",
}
SYNTAX_ERRORS = ("SyntaxError", "IndentationError", "TabError")
# The engine's kinds for checks that stopped short (results.py): the checks after the stop judged
# nothing, and which ones those are the report cannot say, so the row counts in no rate.
STOPPED_SHORT = ("kernel_died", "timeout", "grader_error")


def histogram(scores: list[float], bins: int = BINS) -> list[int]:
    counts = [0] * bins
    for score in scores:
        counts[max(0, min(int(score * bins // 100), bins - 1))] += 1
    return counts


BLANK_WORDS = "em branco"
BLANK_MESSAGE = "nenhuma das funções pedidas foi escrita: todas ainda levantam NotImplementedError"


def ran(row: Any) -> bool:
    """Whether the row's notebook ran and its checks were graded on it (see the module's docstring)."""
    report = row.report
    return (report is not None and bool(report.checks) and not report.notebook_error
            and report.notebook_error_kind not in STOPPED_SHORT)


def judged_no_answer(check: Any) -> bool:
    """A failed check that never reached an answer: its function is still the stub, or a failing
    cell kept it from being defined (that cell is listed among the troubles)."""
    return not check.passed and bool(check.unwritten or check.undefined)


def is_blank(row: Any) -> bool:
    """A row that ran with nothing written: no check passed, and each one failed on a stub."""
    return ran(row) and all(not check.passed and check.unwritten for check in row.report.checks)


def _troubles(row: Any) -> list[Trouble]:
    found = []
    if row.status in TROUBLE_WORDS:
        found.append(Trouble(row.submission, TROUBLE_WORDS[row.status], row.message))
    elif row.report is not None and not ran(row):  # a status this table does not know, and nothing ran
        found.append(Trouble(row.submission, "não rodou", row.message))
    if is_blank(row):
        found.append(Trouble(row.submission, BLANK_WORDS, BLANK_MESSAGE))
    report = row.report
    for problem in getattr(report, "cell_problems", []) if report is not None else []:
        if problem.ename in SYNTAX_ERRORS:
            found.append(Trouble(row.submission, "erro de sintaxe", problem.message))
        elif problem.ename == "TimeoutError" and row.status != "tempo_esgotado":
            found.append(Trouble(row.submission, "tempo esgotado numa célula", problem.message))
        elif problem.ename == "MemoryError" and row.status != "memoria_esgotada":
            found.append(Trouble(row.submission, "memória esgotada numa célula", problem.message))
        elif problem.ename not in ("NotImplementedError", "TimeoutError", "MemoryError"):
            found.append(Trouble(row.submission, "erro numa célula", problem.message))
    return found


def class_data(exercise: str, rows: list[Any], levels: list[int], level_titles: dict[int, str] | None = None,
               sections: dict[int, str] | None = None) -> ClassData:
    stats: dict[str, CheckStats] = {}
    order: list[str] = []
    level_scores: dict[int, list[float]] = {level: [] for level in levels}
    overall: list[float] = []
    by_failures: dict[tuple[str, ...], list[str]] = {}
    troubles: list[Trouble] = []
    not_run: list[str] = []
    blank: list[str] = []
    ran_names: list[str] = []
    for row in rows:
        troubles += _troubles(row)
        if not ran(row):
            not_run.append(row.submission)
            continue
        if is_blank(row):
            blank.append(row.submission)
        report = row.report
        overall.append(row.total)
        ran_names.append(row.submission)
        for level in levels:
            if row.level_scores.get(level) is not None:
                level_scores.setdefault(level, []).append(row.level_scores[level])
        failed = []
        for check in report.checks:
            if check.id not in stats:
                stats[check.id] = CheckStats(check.id, check.level, check.fixture, check.title)
                order.append(check.id)
            if judged_no_answer(check):
                stats[check.id].unwritten += 1
                continue
            stats[check.id].runs += 1
            if not check.passed:
                stats[check.id].failures += 1
                failed.append(check.id)
        if failed:
            by_failures.setdefault(tuple(sorted(failed)), []).append(row.submission)
    position = {check_id: index for index, check_id in enumerate(order)}
    checks = sorted(stats.values(), key=lambda s: (-s.failure_rate, -s.failures, position[s.id]))
    groups = sorted((FailureGroup(ids, names) for ids, names in by_failures.items()),
                    key=lambda g: (-len(g.submissions), len(g.check_ids), g.check_ids))
    return ClassData(
        exercise=exercise, levels=list(levels), level_titles=dict(level_titles or {}),
        submissions=[row.submission for row in rows], level_scores=level_scores, overall_scores=overall,
        not_run=not_run, blank=blank, ran=ran_names,
        checks=checks, groups=groups, troubles=troubles, sections=dict(sections or {}),
    )
