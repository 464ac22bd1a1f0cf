"""`course gradescope exercise-N`: build the zip a Gradescope programming assignment runs.

The zip follows Gradescope's autograder specification ("Autograder Specifications",
https://gradescope-autograders.readthedocs.io/en/latest/specs/): ``setup.sh`` and
``run_autograder`` at its root. Gradescope unpacks it into ``/autograder/source``,
runs ``setup.sh`` once when it builds the image, and ``run_autograder`` for every
submission. Inside: the course's Python packages (never ``solutions/``), the
instructor's public and hidden fixtures, and ``gradescope.json`` with the exercise,
the time and memory limits and the visibility of the hidden fixtures' checks.

Everything is checked before the zip is written: the exercise exists, every fixture
is valid and the manifest's points fit the checks.
"""
from __future__ import annotations

import argparse
import json
import stat
import zipfile
from pathlib import Path

from grader.core.atomic_write import atomic_file
from grader.core.limits import DEFAULT_CELL_SECONDS, DEFAULT_MEMORY_MB, DEFAULT_TOTAL_SECONDS, Limits
from grader.instructor.gradescope import CONFIG_NAME, HIDDEN_FIXTURES, PUBLIC_FIXTURES, VISIBILITIES
from grader.reports import console

COURSE_DIR = "curso"  # the packages' folder inside the zip
PACKAGES = ("grader", "harness")
COURSE_FILES = ("pyproject.toml", "README.md")

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image.
set -euo pipefail
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y python3 python3-venv python3-pip
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install --upgrade pip
/autograder/venv/bin/pip install /autograder/source/{course}
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission, from /autograder. AUTOGRADER_ROOT and
# AUTOGRADER_PYTHON change the paths, so the same script runs on a copy of that tree.
set -uo pipefail
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
PYTHON="${{AUTOGRADER_PYTHON:-$ROOT/venv/bin/python}}"
SOURCE="$ROOT/source"
export PYTHONPATH="$SOURCE/{course}${{PYTHONPATH:+:$PYTHONPATH}}"
mkdir -p "$ROOT/results"
exec "$PYTHON" -m grader.instructor.gradescope --source "$SOURCE" --submission "$ROOT/submission" \\
  --results "$ROOT/results/results.json"
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("exercise", metavar="exercise-N", help="o exercício que o Gradescope vai corrigir")
    parser.add_argument("--out", type=Path, default=None, metavar="ARQUIVO",
                        help="onde gravar o zip (padrão: autograder-exercise-N.zip)")
    parser.add_argument("--fixtures", type=Path, action="append", default=[], metavar="PASTA",
                        help="fixtures extras cujos resultados o aluno vê logo (pode repetir)")
    parser.add_argument("--hidden-fixtures", type=Path, action="append", default=[], metavar="PASTA",
                        help="fixtures particulares: o aluno só vê o resultado delas conforme --visibility")
    parser.add_argument("--visibility", default="after_due_date",
                        choices=[v for v in VISIBILITIES if v != "visible"],
                        help="quando o aluno vê as verificações das fixtures particulares (padrão: after_due_date)")
    parser.add_argument("--timeout", type=console.seconds(), default=DEFAULT_TOTAL_SECONDS, metavar="S",
                        help=f"tempo máximo do notebook inteiro, em segundos (padrão: {DEFAULT_TOTAL_SECONDS:g})")
    parser.add_argument("--cell-timeout", type=console.seconds(), default=DEFAULT_CELL_SECONDS, metavar="S",
                        help=f"tempo máximo de cada célula, em segundos (padrão: {DEFAULT_CELL_SECONDS:g})")
    parser.add_argument("--memory-mb", type=console.memory_mb, default=DEFAULT_MEMORY_MB, metavar="M",
                        help=f"memória máxima do kernel em MB (padrão: {DEFAULT_MEMORY_MB}; 0 = sem limite)")


def _fixture_files(folders: list[Path], exercise: str) -> list[Path]:
    from grader.core.fixture_loader import SUFFIXES, fixture_folders

    files = []
    for folder in fixture_folders(exercise, folders)[1:]:  # the first is the course's own
        files += sorted(path for path in folder.iterdir() if path.suffix in SUFFIXES and path.is_file())
    return files


def check_inputs(exercise: str, public: list[Path], hidden: list[Path]) -> None:
    """Raise GraderError (Portuguese) for an unknown exercise, a bad fixture or bad points."""
    from grader.core.engine import load_exercise
    from grader.core.errors import GraderError
    from grader.core.fixture_loader import load_fixtures
    from grader.core.points import points_for

    for folder in [*public, *hidden]:
        if not Path(folder).is_dir():
            raise GraderError(f"a pasta de fixtures {folder} não existe.")
    spec = load_exercise(exercise)
    fixtures = load_fixtures(exercise, [*public, *hidden], spec.validate_fixture)
    points_for(exercise, spec.plan(fixtures))


def _add_tree(archive: zipfile.ZipFile, folder: Path, prefix: str) -> None:
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            archive.write(path, f"{prefix}/{path.relative_to(folder).as_posix()}")


def _add_text(archive: zipfile.ZipFile, name: str, text: str, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
    info.external_attr = ((0o755 if executable else 0o644) | stat.S_IFREG) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, text)


def build_zip(root: Path, exercise: str, out: Path, *, public: list[Path], hidden: list[Path],
              visibility: str, limits: Limits) -> Path:
    check_inputs(exercise, public, hidden)
    config = {
        "exercise": exercise,
        "limits": limits.to_json(),  # the autograder reads them back with Limits.from_json
        "hidden_visibility": visibility,
        "remove_hidden_fixtures": True,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(out) as handle, zipfile.ZipFile(handle, "w", zipfile.ZIP_DEFLATED) as archive:
        _add_text(archive, "setup.sh", SETUP_SH.format(course=COURSE_DIR), executable=True)
        _add_text(archive, "run_autograder", RUN_AUTOGRADER.format(course=COURSE_DIR), executable=True)
        _add_text(archive, CONFIG_NAME, json.dumps(config, ensure_ascii=False, indent=2) + "\n")
        for name in COURSE_FILES:
            archive.write(root / name, f"{COURSE_DIR}/{name}")
        for package in PACKAGES:
            _add_tree(archive, root / package, f"{COURSE_DIR}/{package}")
        for folder, sources in ((PUBLIC_FIXTURES, public), (HIDDEN_FIXTURES, hidden)):
            for path in _fixture_files(sources, exercise):
                archive.write(path, f"{folder}/{path.name}")
    return out


def run(args: argparse.Namespace) -> int:
    import sys

    from grader.core.errors import GraderError

    out = args.out or Path(f"autograder-{args.exercise}.zip")
    try:
        build_zip(args.root, args.exercise, out, public=args.fixtures, hidden=args.hidden_fixtures,
                  visibility=args.visibility, limits=Limits.with_cell_capped(
                      total_seconds=args.timeout, cell_seconds=args.cell_timeout, memory_mb=args.memory_mb))
    except GraderError as error:
        print(f"course gradescope: {error}", file=sys.stderr)
        return 2
    print(f"Autograder do {args.exercise} gravado em {out}.")
    print("No Gradescope: crie uma tarefa de programação (Programming Assignment), envie este zip em "
          "Configure Autograder e peça aos alunos que enviem o arquivo "
          f"{args.exercise}.ipynb.")
    return 0
