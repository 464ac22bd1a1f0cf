"""The grader's results: one CheckResult per check, gathered in a GradeReport."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

PASS = "pass"
FAIL = "fail"
MEMORY = "memory"  # a check result's ``stopped_by`` when the check ran out of memory

# Why a grading stopped short (GradeReport.notebook_error_kind), set where it is detected.
INVALID_NOTEBOOK = "invalid_notebook"  # the file is not a usable notebook
NOTEBOOK_UNREADABLE = "notebook_unreadable"  # missing, a folder, or cannot be read
KERNEL_START_FAILED = "kernel_start_failed"  # no kernel could be started (the student's code never ran)
KERNEL_DIED = "kernel_died"  # the kernel died while running the student's code
TIMEOUT = "timeout"  # the notebook or the checks ran out of time
GRADER_ERROR = "grader_error"  # the grader itself failed (a broken connection, a runner error)
MEMORY_EXHAUSTED = "memory_exhausted"  # a cell or a check ran out of the kernel's memory limit
# nbclient never runs a cell with this tag (its skip_cells_with_tag); a CellProblem of that
# ename is a skipped cell that defines names, which then do not exist in the grading.
SKIPPED_CELL = "skip-execution"
ERROR_KINDS = (INVALID_NOTEBOOK, NOTEBOOK_UNREADABLE, KERNEL_START_FAILED, KERNEL_DIED, TIMEOUT, GRADER_ERROR,
               MEMORY_EXHAUSTED)


@dataclass
class CheckResult:
    id: str
    level: int
    fixture: str | None
    title: str
    criterion: str
    status: str  # PASS or FAIL
    expected: str = ""
    observed: str = ""
    message: str = ""
    hint_ref: str = ""
    output: str = ""
    points: float = 1.0  # what the check is worth (grader/core/points.py); earned only when it passes
    unwritten: str = ""  # the student's function or answer not written yet, when that is why it failed
    undefined: str = ""  # the one a failing cell kept from being defined, when that is why it failed

    @property
    def passed(self) -> bool:
        return self.status == PASS

    @property
    def points_earned(self) -> float:
        return self.points if self.passed else 0.0

    def failure_fields(self, output_limit: int = 400) -> list[tuple[str, str]]:
        """(label, text) pairs that explain a failure, in the order every report shows them."""
        fields = [("Esperado", self.expected)] if self.expected else []
        if self.observed and self.observed != self.message:
            fields.append(("Obtido", self.observed))
        fields.append(("Problema", self.message))
        if self.output.strip():
            fields.append(("Saída do seu código", self.output.strip()[-output_limit:]))
        return fields

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CheckResult":
        known = {key: data[key] for key in cls.__dataclass_fields__ if key in data}
        return cls(**known)


def _fraction(checks: list[CheckResult]) -> float:
    # Rounded so that shares such as 22.5/23 add back up to the level's points exactly.
    possible = round(sum(check.points for check in checks), 9)
    if possible > 0:
        return round(sum(check.points_earned for check in checks), 9) / possible
    return sum(check.passed for check in checks) / len(checks) if checks else 0.0


@dataclass
class CellProblem:
    """A cell of the student's notebook that ended in an error (grading goes on)."""

    cell: int  # 1-based position among all cells
    first_line: str
    ename: str
    evalue: str
    message: str  # Portuguese, ready to show
    names: list[str] = field(default_factory=list)  # top-level names the cell defines

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class GradeReport:
    exercise: str
    checks: list[CheckResult]
    notebook: str = ""
    title: str = ""
    level: int | None = None
    level_titles: dict[int, str] = field(default_factory=dict)
    notebook_error: str | None = None
    cell_problems: list[CellProblem] = field(default_factory=list)
    # One of ERROR_KINDS. Set with notebook_error, and also when the kernel died or the
    # time ran out during the checks, or when a cell or a check ran out of memory:
    # notebook_error stays None then, because the checks that ran keep their results.
    notebook_error_kind: str | None = None

    @property
    def passed_count(self) -> int:
        return sum(1 for check in self.checks if check.passed)

    @property
    def points_earned(self) -> float:
        return round(sum(check.points_earned for check in self.checks), 9)

    @property
    def points_possible(self) -> float:
        return round(sum(check.points for check in self.checks), 9)

    @property
    def score(self) -> float:
        """Fraction of the points earned (of the checks passed when every check is worth 0)."""
        return _fraction(self.checks)

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(check.passed for check in self.checks)

    def levels(self) -> dict[int, list[CheckResult]]:
        grouped: dict[int, list[CheckResult]] = {}
        for check in sorted(self.checks, key=lambda c: c.level):
            grouped.setdefault(check.level, []).append(check)
        return grouped

    def level_score(self, level: int) -> float:
        return _fraction(self.levels().get(level, []))

    def failed(self) -> list[CheckResult]:
        return [check for check in self.checks if not check.passed]

    def to_dict(self) -> dict[str, Any]:
        return {
            "exercise": self.exercise,
            "title": self.title,
            "notebook": self.notebook,
            "level": self.level,
            "score": self.score,
            "passed": self.passed,
            "passed_count": self.passed_count,
            "total": len(self.checks),
            "points": self.points_earned,
            "max_points": self.points_possible,
            "levels": {
                str(level): {
                    "title": self.level_titles.get(level, ""),
                    "score": self.level_score(level),
                    "passed": all(c.passed for c in checks),
                    "points": round(sum(c.points_earned for c in checks), 9),
                    "max_points": round(sum(c.points for c in checks), 9),
                }
                for level, checks in self.levels().items()
            },
            "notebook_error": self.notebook_error,
            "notebook_error_kind": self.notebook_error_kind,
            "cell_problems": [problem.to_dict() for problem in self.cell_problems],
            "checks": [check.to_dict() for check in self.checks],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GradeReport":
        return cls(
            exercise=data["exercise"],
            checks=[CheckResult.from_dict(item) for item in data.get("checks", [])],
            notebook=data.get("notebook", ""),
            title=data.get("title", ""),
            level=data.get("level"),
            level_titles={int(k): v.get("title", "") for k, v in data.get("levels", {}).items()},
            notebook_error=data.get("notebook_error"),
            notebook_error_kind=data.get("notebook_error_kind"),
            cell_problems=[CellProblem(**item) for item in data.get("cell_problems", [])],
        )
