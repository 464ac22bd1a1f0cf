"""The exercise manifest: order, titles, levels and tiered hints of every exercise.

`manifest.yaml` (beside this module) is the single source. Loading validates its
shape strictly and reports the first problem with the exact place in the file,
in Portuguese, because instructors edit it by hand.
"""
from __future__ import annotations
from grader.core.errors import os_reason

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

MANIFEST_PATH = Path(__file__).with_name("manifest.yaml")

_EXERCISE_NAME = re.compile(r"^exercise-(\d+)$")
_TOP_KEYS = {"version", "exercises"}
_EXERCISE_KEYS = {"name", "title", "levels"}
_LEVEL_KEYS = {"level", "title", "hints"}
_OPTIONAL_LEVEL_KEYS = {"points", "check_points"}


class ManifestError(ValueError):
    """The manifest file is missing or has the wrong shape."""


class UnknownExerciseError(LookupError):
    """An exercise name that the manifest does not list."""


@dataclass(frozen=True)
class Level:
    number: int
    title: str
    hints: tuple[str, ...]
    # What the level is worth (None: one point per check run) and the points of named
    # checks within it; grader/core/points.py turns both into points per check.
    points: float | None = None
    check_points: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Exercise:
    name: str
    title: str
    levels: tuple[Level, ...]

    @property
    def number(self) -> int:
        return int(self.name.split("-", 1)[1])

    def level(self, number: int) -> Level:
        for level in self.levels:
            if level.number == number:
                return level
        known = ", ".join(str(level.number) for level in self.levels)
        raise UnknownExerciseError(
            f"O {self.name} não tem nível {number}; os níveis dele são: {known}."
        )


@dataclass(frozen=True)
class Manifest:
    exercises: tuple[Exercise, ...]
    source: Path

    @property
    def names(self) -> list[str]:
        return [exercise.name for exercise in self.exercises]

    def exercise(self, name: str) -> Exercise:
        for exercise in self.exercises:
            if exercise.name == name:
                return exercise
        raise UnknownExerciseError(unknown_exercise_message(name, self.names))


def unknown_exercise_message(name: str, known: list[str]) -> str:
    return (
        f"Exercício desconhecido: {name!r}. Os exercícios do curso são: "
        f"{', '.join(known)}."
    )


def _fail(source: Path, where: str, problem: str) -> ManifestError:
    return ManifestError(f"{source.name}: {where}: {problem}")


def _check_keys(source: Path, where: str, data: dict, allowed: set[str], optional: set[str] = frozenset()) -> None:
    unknown = sorted(set(data) - allowed - optional)
    if unknown:
        raise _fail(source, where, f"chave desconhecida {unknown[0]!r} (aceitas: {', '.join(sorted(allowed | optional))})")
    missing = sorted(allowed - set(data))
    if missing:
        raise _fail(source, where, f"falta a chave {missing[0]!r}")


def _text(source: Path, where: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _fail(source, where, "deveria ser um texto não vazio")
    return " ".join(value.split())


def _points(source: Path, where: str, value: object, allow_zero: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or (value == 0 and not allow_zero):
        wanted = "um número maior ou igual a zero" if allow_zero else "um número maior que zero"
        raise _fail(source, where, f"deveria ser {wanted}, é {value!r}")
    return float(value)


def _check_points(source: Path, where: str, value: object) -> tuple[tuple[str, float], ...]:
    if not isinstance(value, dict) or not value:
        raise _fail(source, where, "deveria ser um mapeamento nome_da_verificacao: pontos")
    return tuple(
        (_text(source, where, name), _points(source, f"{where}.{name}", points, allow_zero=True))
        for name, points in value.items()
    )


def _parse_level(source: Path, where: str, data: object, expected_number: int) -> Level:
    if not isinstance(data, dict):
        raise _fail(source, where, "cada nível deveria ser um mapeamento com level, title e hints")
    _check_keys(source, where, data, _LEVEL_KEYS, _OPTIONAL_LEVEL_KEYS)
    number = data["level"]
    if not isinstance(number, int) or isinstance(number, bool) or number != expected_number:
        raise _fail(source, f"{where}.level", f"deveria ser {expected_number} (níveis numerados 1, 2, 3... em ordem), é {number!r}")
    hints = data["hints"]
    if not isinstance(hints, list):
        raise _fail(source, f"{where}.hints", "deveria ser uma lista de textos (pode ser vazia: [])")
    return Level(
        number=number,
        title=_text(source, f"{where}.title", data["title"]),
        hints=tuple(_text(source, f"{where}.hints[{i}]", hint) for i, hint in enumerate(hints)),
        points=_points(source, f"{where}.points", data["points"], allow_zero=False) if "points" in data else None,
        check_points=_check_points(source, f"{where}.check_points", data["check_points"]) if "check_points" in data else (),
    )


def _parse_exercise(source: Path, where: str, data: object, position: int) -> Exercise:
    if not isinstance(data, dict):
        raise _fail(source, where, "cada exercício deveria ser um mapeamento com name, title e levels")
    _check_keys(source, where, data, _EXERCISE_KEYS)
    name = data["name"]
    expected = f"exercise-{position}"
    if not isinstance(name, str) or not _EXERCISE_NAME.match(name):
        raise _fail(source, f"{where}.name", f"deveria ter a forma exercise-N, é {name!r}")
    if name != expected:
        raise _fail(source, f"{where}.name", f"a posição {position} da lista deveria ser {expected}, é {name}")
    levels = data["levels"]
    if not isinstance(levels, list) or not levels:
        raise _fail(source, f"{name}.levels", "deveria ser uma lista com pelo menos um nível")
    return Exercise(
        name=name,
        title=_text(source, f"{name}.title", data["title"]),
        levels=tuple(
            _parse_level(source, f"{name}.levels[{i}]", level, i + 1) for i, level in enumerate(levels)
        ),
    )


def parse_manifest(text: str, source: Path = MANIFEST_PATH) -> Manifest:
    """Parse and validate manifest text; raise ManifestError naming the bad spot."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ManifestError(f"{source.name}: YAML inválido: {error}") from None
    if not isinstance(data, dict):
        raise ManifestError(f"{source.name}: o arquivo deveria ser um mapeamento com 'version' e 'exercises'")
    _check_keys(source, "raiz", data, _TOP_KEYS)
    if data["version"] != 1:
        raise _fail(source, "version", f"versão {data['version']!r} não suportada (esperada: 1)")
    exercises = data["exercises"]
    if not isinstance(exercises, list) or not exercises:
        raise _fail(source, "exercises", "deveria ser uma lista com pelo menos um exercício")
    return Manifest(
        exercises=tuple(
            _parse_exercise(source, f"exercises[{i}]", item, i + 1) for i, item in enumerate(exercises)
        ),
        source=source,
    )


def load_manifest(path: Path | None = None) -> Manifest:
    """Load a manifest file (the packaged one by default)."""
    path = Path(path) if path is not None else MANIFEST_PATH
    if path == MANIFEST_PATH:
        return _load_packaged()
    return _read(path)


def _read(path: Path) -> Manifest:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ManifestError(f"Não consegui ler o manifesto {path.name}: {os_reason(error)}") from None
    return parse_manifest(text, path)


@lru_cache(maxsize=1)
def _load_packaged() -> Manifest:
    return _read(MANIFEST_PATH)


def exercise_names() -> list[str]:
    """Every exercise name, in course order."""
    return load_manifest().names


def get_exercise(name: str) -> Exercise:
    """The manifest entry for `name`; UnknownExerciseError (Portuguese) otherwise."""
    return load_manifest().exercise(name)


def exercise_title(name: str) -> str:
    return get_exercise(name).title


def level_title(name: str, level: int) -> str:
    return get_exercise(name).level(level).title
