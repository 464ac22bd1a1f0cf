"""Fixtures are data: ``grader/fixtures/exercise-N/NAME.json`` (or .yaml / .yml).

Dropping a file in that folder adds a fixture; ``--fixtures DIR`` adds an
instructor's own folder (``DIR/exercise-N/`` when it exists, else ``DIR`` itself).
Reading never raises for a bad file: every problem is collected with the file and
field it concerns, so ``grade fixtures`` can list them all at once.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

import yaml

from grader.checks.framework import Fixture
from grader.core.errors import FixtureError
from grader.core.yaml_reading import yaml_problem

FIXTURES_ROOT = Path(__file__).parents[1] / "fixtures"  # grader/fixtures
SUFFIXES = (".json", ".yaml", ".yml")


@dataclass
class FixtureFile:
    name: str
    path: Path
    data: dict | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return display_path(self.path)

    def fixture(self) -> Fixture:
        assert self.data is not None
        return Fixture(name=self.name, data=self.data, source=self.label)


def display_path(path: Path) -> str:
    """A short, machine-independent label: relative to the package or to the cwd."""
    path = Path(path).resolve()
    for base in (FIXTURES_ROOT.parent.parent, Path.cwd()):
        try:
            return str(path.relative_to(base.resolve()))
        except ValueError:
            continue
    return str(path)


def fixture_folders(exercise: str, extra_dirs: Sequence[Path] = ()) -> list[Path]:
    folders = [FIXTURES_ROOT / exercise]
    for extra in extra_dirs:
        extra = Path(extra)
        folders.append(extra / exercise if (extra / exercise).is_dir() else extra)
    return folders


def _parse(path: Path) -> tuple[object, str | None]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        return None, f"não consegui ler o arquivo ({error})"
    if path.suffix == ".json":
        try:
            return json.loads(text), None
        except json.JSONDecodeError as error:
            return None, f"JSON inválido na linha {error.lineno}, coluna {error.colno}: {error.msg}"
    try:
        return yaml.safe_load(text), None
    except yaml.YAMLError as error:
        return None, yaml_problem(error, text)


def _fixture_files_in(folder: Path) -> list[Path]:
    return [path for path in folder.iterdir() if path.suffix in SUFFIXES and path.is_file()]


def _holds_fixtures(folder: Path) -> bool:
    """An instructor's folder holds fixtures when it has fixture files, or ``exercise-N/``
    subfolders with some (one folder for several exercises: this exercise may have none)."""
    return bool(_fixture_files_in(folder)) or any(
        sub.is_dir() and sub.name.startswith("exercise-") and _fixture_files_in(sub) for sub in folder.iterdir()
    )


def _empty_folder_problem(folder: Path, exercise: str) -> str:
    """A --fixtures folder with nothing to add: most likely a wrong path, which would grade
    without the instructor's fixtures if it passed in silence."""
    near = sorted(sub.name for sub in folder.iterdir() if sub.is_dir())
    seen = f" (subpastas encontradas: {', '.join(near[:5])})" if near else ""
    return (f"{display_path(folder)}: a pasta de fixtures não tem nenhuma fixture{seen}; esperado "
            f"{display_path(folder)}/{exercise}/NOME.json (ou .yaml), ou os arquivos direto nela")


def read_fixture_files(
    exercise: str,
    extra_dirs: Sequence[Path] = (),
    validate: Callable[[dict], Iterable[str]] | None = None,
) -> list[FixtureFile]:
    """Every fixture file of ``exercise``, parsed and validated; problems recorded, not raised."""
    files: list[FixtureFile] = []
    seen: dict[str, FixtureFile] = {}
    for folder in fixture_folders(exercise, extra_dirs):
        if folder != FIXTURES_ROOT / exercise and not folder.is_dir():
            files.append(FixtureFile(folder.name, folder, problems=[
                f"{display_path(folder)}: a pasta de fixtures não existe"
            ]))
            continue
        if not folder.is_dir():
            continue
        if folder != FIXTURES_ROOT / exercise and not _holds_fixtures(folder):
            files.append(FixtureFile(folder.name, folder, problems=[_empty_folder_problem(folder, exercise)]))
            continue
        for path in sorted(_fixture_files_in(folder)):
            item = FixtureFile(path.stem, path)
            files.append(item)
            data, problem = _parse(path)
            if problem:
                item.problems.append(f"{item.label}: {problem}")
                continue
            if not isinstance(data, dict):
                item.problems.append(f"{item.label}: o arquivo deveria ser um objeto (mapeamento) no topo")
                continue
            item.data = data
            if item.name in seen:
                item.problems.append(
                    f"{item.label}: o nome {item.name!r} repete a fixture {seen[item.name].label}; "
                    "dê outro nome ao arquivo"
                )
                continue
            seen[item.name] = item
            if validate is not None:
                item.problems.extend(f"{item.label}: {problem}" for problem in validate(data))
    return files


def load_fixtures(
    exercise: str,
    extra_dirs: Sequence[Path] = (),
    validate: Callable[[dict], Iterable[str]] | None = None,
) -> list[Fixture]:
    """The exercise's fixtures; FixtureError listing every problem if any file is bad."""
    files = read_fixture_files(exercise, extra_dirs, validate)
    problems = [problem for item in files for problem in item.problems]
    if problems:
        raise FixtureError(problems)
    return [item.fixture() for item in files]
