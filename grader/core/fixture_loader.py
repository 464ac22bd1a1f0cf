"""Fixtures are data: ``grader/fixtures/exercise-N/NAME.json`` (or .yaml / .yml).

Dropping a file in that folder adds a fixture; ``--fixtures DIR`` adds an
instructor's own folder (``DIR/exercise-N/`` when it exists, else ``DIR`` itself).
Reading never raises for a bad file: every problem is collected with the file and
field it concerns, so ``grade fixtures`` can list them all at once.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

import yaml

from grader.core.declarations import Fixture
from grader.core.errors import FixtureError
from grader.core.yaml_reading import StrictSafeLoader, yaml_problem

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
    # Absolute but not resolved: a linked fixture is named by its link, where the instructor put it.
    path = Path(os.path.abspath(path))
    for base in (FIXTURES_ROOT.parent.parent, Path.cwd()):
        for candidate in (Path(os.path.abspath(base)), base.resolve()):
            try:
                return str(path.relative_to(candidate))
            except ValueError:
                continue
    return str(path)


def fixture_folders(exercise: str, extra_dirs: Sequence[Path] = ()) -> list[Path]:
    folders = [FIXTURES_ROOT / exercise]
    for extra in extra_dirs:
        extra = Path(extra)
        folders.append(extra / exercise if (extra / exercise).is_dir() else extra)
    return folders


def files_signature(exercise: str, extra_dirs: Sequence[Path] = ()) -> tuple:
    """Names and status of everything ``read_fixture_files`` looks at (and the cwd its labels are
    relative to): a fixture added, edited, removed, renamed or linked elsewhere changes it. Equal
    signatures, equal fixtures: a warm session reads them again only when it changes."""
    entries: list[object] = [os.getcwd()]
    for given in (FIXTURES_ROOT / exercise, *map(Path, extra_dirs)):
        for folder in (given, given / exercise):
            entries.append((str(folder), _status(folder)))
            try:
                inside = list(os.scandir(folder))
            except OSError:
                continue
            entries += sorted((entry.path, entry.is_symlink(), _status(entry.path)) for entry in inside)
    return tuple(entries)


def _status(path: str | Path) -> tuple[int, ...] | None:
    try:
        found = os.stat(path)  # through a link: the file it names is the fixture
    except OSError:
        return None
    return found.st_mode, found.st_ino, found.st_dev, found.st_size, found.st_mtime_ns, found.st_ctime_ns


def _parse(path: Path) -> tuple[object, str | None]:
    try:
        # utf-8-sig: a BOM some editors write is not part of the data.
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        return None, f"não consegui ler o arquivo ({error})"
    try:
        if path.suffix.lower() == ".json":
            return json.loads(text, object_pairs_hook=_refuse_repeated_keys), None
        data = yaml.load(text, Loader=StrictSafeLoader)
        key = _first_key_not_text(data)
        if key is not None:
            return None, (f"a chave {key!r} não é um texto: em YAML, escreva-a entre aspas (\"{key}\": ...), "
                          "como as chaves de um JSON")
        return data, None
    except json.JSONDecodeError as error:
        return None, f"JSON inválido na linha {error.lineno}, coluna {error.colno}: {error.msg}"
    except yaml.YAMLError as error:
        return None, yaml_problem(error, text)
    except _RepeatedKey as error:
        return None, f"JSON inválido: a chave {error.args[0]!r} aparece duas vezes no mesmo objeto"
    except RecursionError:
        return None, "o arquivo aninha listas ou objetos fundo demais para ser lido"
    except ValueError as error:  # an integer of thousands of digits, among others
        if "digits" in str(error):
            return None, "um número inteiro tem milhares de dígitos (o limite de leitura é 4300): confira o valor"
        return None, f"valor que não pode ser lido ({str(error)[:120]})"


def _first_key_not_text(data: object) -> object | None:
    """YAML reads ``1:`` or ``true:`` as a number or a bool; a fixture's keys are texts, as in JSON."""
    pending = [data]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if not isinstance(key, str):
                    return key
                pending.append(value)
        elif isinstance(item, list):
            pending.extend(item)
    return None


class _RepeatedKey(ValueError):
    pass


def _refuse_repeated_keys(pairs: list[tuple[str, object]]) -> dict:
    data = dict(pairs)
    if len(data) != len(pairs):
        seen: set[str] = set()
        raise _RepeatedKey(next(key for key, _ in pairs if key in seen or seen.add(key)))
    return data


def _fixture_files_in(folder: Path) -> list[Path]:
    """Every entry named like a fixture (the suffix in any case), regular file or not: a folder, a
    broken link or a pipe named ``x.json`` is reported, never skipped in silence."""
    return [path for path in folder.iterdir() if path.suffix.lower() in SUFFIXES]


def _other_exercises_hold_fixtures(folder: Path) -> bool:
    """One instructor's folder for several exercises (``exercise-N/`` subfolders with fixtures):
    this exercise may have none there."""
    return any(sub.is_dir() and sub.name.startswith("exercise-") and _fixture_files_in(sub) for sub in folder.iterdir())


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
        found = sorted(_fixture_files_in(folder))
        if not found and folder != FIXTURES_ROOT / exercise and not _other_exercises_hold_fixtures(folder):
            files.append(FixtureFile(folder.name, folder, problems=[_empty_folder_problem(folder, exercise)]))
            continue
        for path in found:
            item = FixtureFile(path.stem, path)
            files.append(item)
            if not path.is_file():
                item.problems.append(f"{item.label}: não é um arquivo comum (uma pasta, um link quebrado, "
                                     "um pipe?); uma fixture é um arquivo .json ou .yaml")
                continue
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
