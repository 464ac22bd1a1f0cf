"""Errors the grader raises to its callers (never for a student's bad notebook)."""
from __future__ import annotations


class GraderError(Exception):
    """A problem the person running the grader must fix; the message is in Portuguese."""


class UnknownExercise(GraderError, LookupError):
    """An exercise name with no checks module behind it."""

    def __init__(self, name: str, known: list[str]):
        self.name = name
        self.known = list(known)
        listed = ", ".join(known) if known else "(nenhum)"
        super().__init__(
            f"Exercício desconhecido: {name!r}. Os exercícios que o corretor conhece são: {listed}."
        )


class FixtureError(GraderError):
    """One or more fixture files have the wrong shape; each problem names file and field."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        lines = "\n".join(f"  - {problem}" for problem in problems)
        super().__init__(f"{'Fixture com problema' if len(self.problems) == 1 else 'Fixtures com problema'}:\n{lines}")
