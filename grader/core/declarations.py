"""Declaring an exercise: its checks, its fixtures, and the plan of one grading."""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Callable


@dataclass
class Fixture:
    """One fixture file, as the checks see it. ``data`` is the parsed file."""

    name: str
    data: dict
    source: str = ""

    @property
    def description(self) -> str:
        return str(self.data.get("description", ""))

    @property
    def expect(self) -> dict:
        return self.data.get("expect") or {}

    @property
    def workspace(self) -> dict:
        return self.data.get("workspace") or {}

    def checkpoint(self) -> dict:
        """A fresh deep copy of the fixture's checkpoint: student code may mutate it freely."""
        return copy.deepcopy(self.data["checkpoint"])

    def to_dict(self) -> dict:
        return {"name": self.name, "data": self.data, "source": self.source}

    @classmethod
    def from_dict(cls, data: dict) -> "Fixture":
        return cls(name=data["name"], data=data["data"], source=data.get("source", ""))


def is_kind(kind: str) -> Callable[[Fixture], bool]:
    """For ``applies=``: the fixtures whose ``kind`` field is ``kind``."""
    return lambda fixture: fixture.data.get("kind") == kind


@dataclass
class CheckSpec:
    name: str
    level: int
    title: str
    criterion: str
    function: Callable[..., None]
    per_fixture: bool = False
    applies: Callable[[Fixture], bool] | None = None


@dataclass
class PlannedCheck:
    """One check to run: a CheckSpec, bound to a fixture when it is per-fixture."""

    id: str
    name: str
    level: int
    fixture: str | None
    title: str
    criterion: str
    hint_ref: str

    def to_dict(self) -> dict:
        return dict(self.__dict__)


class Exercise:
    """An exercise's checks. Create one per module as ``EXERCISE = Exercise("exercise-N")``.

    Its title and level titles are read from grader/core/manifest.yaml, the one place they are
    written, when first asked for: the grading kernel imports this module and never needs them.
    """

    def __init__(self, name: str):
        self.name = name
        self.checks: list[CheckSpec] = []
        self._fixture_validator: Callable[[dict], list[str]] | None = None

    @property
    def title(self) -> str:
        return self._manifest_entry().title

    @property
    def levels(self) -> dict[int, str]:
        """Level number -> title, in the manifest's order."""
        return {level.number: level.title for level in self._manifest_entry().levels}

    def _manifest_entry(self):
        from grader.core import manifest  # parsed once per process (cached there)

        return manifest.get_exercise(self.name)

    # --- declaring

    def check(
        self,
        *,
        level: int,
        title: str,
        criterion: str,
        per_fixture: bool = False,
        applies: Callable[[Fixture], bool] | None = None,
    ) -> Callable[[Callable[..., None]], Callable[..., None]]:
        """Register a check. Per-fixture checks run once for every fixture they apply to."""

        def register(function: Callable[..., None]) -> Callable[..., None]:
            if any(spec.name == function.__name__ for spec in self.checks):
                raise ValueError(f"{self.name}: two checks named {function.__name__}")
            self.checks.append(
                CheckSpec(function.__name__, level, title, criterion, function, per_fixture, applies)
            )
            return function

        return register

    def fixture_validator(self, function: Callable[[dict], list[str]]) -> Callable[[dict], list[str]]:
        """Register the function that lists a fixture's shape problems (field by field)."""
        self._fixture_validator = function
        return function

    # --- using

    def validate_fixture(self, data: dict) -> list[str]:
        return list(self._fixture_validator(data)) if self._fixture_validator else []

    def spec(self, name: str) -> CheckSpec:
        for spec in self.checks:
            if spec.name == name:
                return spec
        raise KeyError(name)

    def plan(self, fixtures: list[Fixture], level: int | None = None) -> list[PlannedCheck]:
        """Every check to run, in level order then declaration order then fixture order."""
        undeclared = sorted({spec.level for spec in self.checks} - set(self.levels))
        if undeclared:
            raise ValueError(f"{self.name}: checks of level {undeclared} but grader/core/manifest.yaml has no such level")
        planned: list[PlannedCheck] = []
        for spec in sorted(self.checks, key=lambda s: s.level):  # stable: keeps declaration order
            if level is not None and spec.level != level:
                continue
            targets: list[Fixture | None]
            if spec.per_fixture:
                targets = [f for f in fixtures if spec.applies is None or spec.applies(f)]
            else:
                targets = [None]
            for fixture in targets:
                suffix = f"[{fixture.name}]" if fixture else ""
                planned.append(
                    PlannedCheck(
                        id=f"n{spec.level}.{spec.name}{suffix}",
                        name=spec.name,
                        level=spec.level,
                        fixture=fixture.name if fixture else None,
                        title=spec.title,
                        criterion=spec.criterion,
                        hint_ref=f"grade hint {self.name} --level {spec.level}",
                    )
                )
        return planned
