"""The exercise manifest: order, titles, levels and tiered hints of every exercise.

`manifest.yaml` (beside this module) is the single source. Loading validates its
shape against MANIFEST_SCHEMA and reports the first problem with the exact place in
the file, in Portuguese, because instructors edit it by hand.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from grader.core.errors import GraderError, os_reason
from grader.core.schema_errors import TEXT, Failure, describe, field_name, first_failure, shown
from grader.core.yaml_reading import StrictCSafeLoader, yaml_problem

MANIFEST_PATH = Path(__file__).with_name("manifest.yaml")
# libyaml's parser when PyYAML has it (its wheels do): the pure-Python one takes ~25 ms of
# every `grade` start on this file, more than validating it against MANIFEST_SCHEMA. Only
# construction is the project's own (a repeated key is refused).
_YAML_LOADER = StrictCSafeLoader


class ManifestError(GraderError, ValueError):
    """The manifest file is unreadable or has the wrong shape (every command reports it as
    one line, as any GraderError)."""


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
    # The heading of the lesson section the level's checks test ("" when not given); the class
    # report links each check to it (grader/core/lesson_sections.py finds it in the lesson).
    section: str = ""


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


_POINTS = {"type": "number", "exclusiveMinimum": 0}
_EXERCISE_NAME = r"^exercise-[0-9]+$"
# The file's shape as JSON Schema (Draft 2020-12), checked by fastjsonschema: `grade list`
# reads this file on every start, and fastjsonschema costs a few milliseconds there where
# jsonschema would cost more than the command. What a schema cannot say (numbers and names
# in order) is checked after it, in _check_order.
MANIFEST_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["version", "exercises"],
    "additionalProperties": False,
    "properties": {
        "version": {"const": 1, "x-mensagens": {"*": "versão {value!r} não suportada (esperada: 1)"}},
        "exercises": {"type": "array", "minItems": 1, "items": {
            "type": "object",
            "required": ["name", "title", "levels"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string", "pattern": _EXERCISE_NAME,
                         "x-mensagens": {"*": "deveria ter a forma exercise-N, é {value!r}"}},
                "title": TEXT,
                "levels": {"type": "array", "minItems": 1, "items": {
                    "type": "object",
                    "required": ["level", "title", "hints"],
                    "additionalProperties": False,
                    "properties": {
                        "level": {"type": "integer", "minimum": 1},
                        "title": TEXT,
                        "section": TEXT,
                        "hints": {"type": "array", "items": TEXT, "x-mensagens": {
                            "*": "deveria ser uma lista de textos (pode ser vazia: [])"}},
                        "points": _POINTS,
                        "check_points": {
                            "type": "object", "minProperties": 1,
                            "additionalProperties": {"type": "number", "minimum": 0},
                            "x-mensagens": {"type": "deveria ser um mapeamento nome_da_verificacao: pontos",
                                            "minProperties": "deveria ser um mapeamento nome_da_verificacao: pontos"},
                        },
                    },
                    "x-mensagens": {"type": "cada nível deveria ser um mapeamento com level, title e hints"},
                }, "x-mensagens": {"*": "deveria ser uma lista com pelo menos um nível"}},
            },
            "x-mensagens": {"type": "cada exercício deveria ser um mapeamento com name, title e levels"},
        }, "x-mensagens": {"*": "deveria ser uma lista com pelo menos um exercício"}},
    },
    "x-mensagens": {"type": "o arquivo deveria ser um mapeamento com 'version' e 'exercises'"},
}


def _fail(source: Path, where: str, problem: str) -> ManifestError:
    return ManifestError(f"{source.name}: {where}: {problem}" if where else f"{source.name}: {problem}")


def _where(data: dict, path: tuple) -> str:
    """The place of ``path`` as an instructor finds it: ``exercise-1.levels[0].title`` once the
    exercise has a well-formed name (its own ``name`` field keeps ``exercises[0].name``)."""
    if len(path) > 2 and path[0] == "exercises":
        name = data["exercises"][path[1]].get("name")
        if isinstance(name, str) and re.match(_EXERCISE_NAME, name):
            return field_name((name, *path[2:]))
    return field_name(path)


def _schema_problem(data: object, failure: Failure, source: Path) -> ManifestError:
    *parent, key = failure.path or ("",)
    if failure.keyword == "required":
        return _fail(source, _where(data, tuple(parent)) or "raiz", f"falta a chave {key!r}")
    if failure.keyword == "additionalProperties":
        return _fail(source, _where(data, tuple(parent)) or "raiz",
                     f"chave desconhecida {shown(key)} (aceitas: {', '.join(sorted(failure.expected))})")
    return _fail(source, _where(data, failure.path), describe(failure, found=", é {value!r}"))


def _check_order(data: dict, source: Path) -> None:
    """Exercise names and level numbers follow their positions: exercise-1, exercise-2...;
    levels 1, 2, 3... (a schema cannot compare a value with its position)."""
    for position, exercise in enumerate(data["exercises"], start=1):
        name = exercise["name"]
        if name != f"exercise-{position}":
            raise _fail(source, f"exercises[{position - 1}].name",
                        f"a posição {position} da lista deveria ser exercise-{position}, é {shown(name)[1:-1]}")
        for index, level in enumerate(exercise["levels"]):
            if level["level"] != index + 1:
                raise _fail(source, f"{name}.levels[{index}].level",
                            f"deveria ser {index + 1} (níveis numerados 1, 2, 3... em ordem), é {level['level']!r}")


def _text(value: str) -> str:
    return " ".join(value.split())


def _level(data: dict) -> Level:
    return Level(
        number=data["level"],
        title=_text(data["title"]),
        hints=tuple(_text(hint) for hint in data["hints"]),
        points=float(data["points"]) if "points" in data else None,
        check_points=tuple((_text(str(name)), float(points)) for name, points in data.get("check_points", {}).items()),
        section=_text(data.get("section", "")),
    )


def parse_manifest(text: str, source: Path = MANIFEST_PATH) -> Manifest:
    """Parse and validate manifest text; raise ManifestError naming the bad spot."""
    try:
        data = yaml.load(text, Loader=_YAML_LOADER)
    except yaml.YAMLError as error:
        raise ManifestError(f"{source.name}: {yaml_problem(error, text)}") from None
    failure = first_failure(MANIFEST_SCHEMA, data)
    if failure is not None:
        raise _schema_problem(data, failure, source)
    _check_order(data, source)
    return Manifest(
        exercises=tuple(
            Exercise(name=item["name"], title=_text(item["title"]), levels=tuple(map(_level, item["levels"])))
            for item in data["exercises"]
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
    except UnicodeDecodeError as error:
        line = error.object[:error.start].count(b"\n") + 1
        raise ManifestError(f"{path.name}: o arquivo não está em UTF-8 (byte 0x{error.object[error.start]:02x} "
                            f"na linha {line}); grave-o de novo como UTF-8") from None
    return parse_manifest(text, path)


def check_problems(root: Path) -> list[str]:
    """For `course check`: the problem of the manifest of the project at ``root``, if any."""
    try:
        manifest = _read(Path(root) / "grader" / "core" / MANIFEST_PATH.name)
    except ManifestError as error:
        return [str(error)]
    from grader.core.lesson_sections import section_problems

    return section_problems(manifest, Path(root))


@lru_cache(maxsize=1)
def _load_packaged() -> Manifest:
    return _read(MANIFEST_PATH)


def exercise_names() -> list[str]:
    """Every exercise name, in course order."""
    return load_manifest().names


def get_exercise(name: str) -> Exercise:
    """The manifest entry for `name`; UnknownExerciseError (Portuguese) otherwise."""
    return load_manifest().exercise(name)
