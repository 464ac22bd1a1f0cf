"""`grade fixtures [exercise-N]`: check every fixture's shape, then run the reference
solution against the valid ones. A fixture the solution fails is a broken fixture."""
from __future__ import annotations

import argparse
from pathlib import Path

from grader.core import registry
from grader.core.errors import GraderError
from grader.core.plural import quantity
from grader.core.results import CheckResult


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("exercises", nargs="*", metavar="exercise-N",
                        help="exercícios a verificar (padrão: todos)")
    parser.add_argument("--fixtures", type=Path, action="append", default=[], metavar="PASTA",
                        help="pasta extra de fixtures (do instrutor); pode repetir")
    parser.add_argument("--solutions", type=Path, default=None, metavar="PASTA",
                        help="pasta das soluções de referência (padrão: solutions/ na pasta do curso)")
    parser.add_argument("--shape-only", action="store_true",
                        help="só valida a forma, sem rodar a solução de referência")


def disagreement(check: CheckResult) -> str:
    """What the fixture expects against what the reference solution did, in the instructor's
    terms: the check's message is written for a student whose answer is wrong, which here
    is the fixture's answer key, not the solution."""
    if check.expected and check.observed:
        return f"a fixture espera {check.expected}; a solução de referência deu {check.observed}"
    return (f"a solução de referência não passa em \"{check.title}\" com esta fixture (o texto que um aluno "
            f"leria: {check.message})")


def check_exercise(name: str, extra_dirs: list[Path], solutions_dir: Path, shape_only: bool = False) -> tuple[int, list[str]]:
    """(number of problems, printable lines) for one exercise."""
    from grader.core.engine import grade_with_fixtures, load_exercise
    from grader.core.fixture_loader import read_fixture_files

    exercise = load_exercise(name)
    files = read_fixture_files(name, extra_dirs, exercise.validate_fixture)
    lines = [f"{name}: {quantity(len(files), 'fixture', 'fixtures')}"]
    problems = 0
    for item in files:
        if item.problems:
            problems += len(item.problems)
            lines.append(f"  PROBLEMA  {item.name}")
            lines += [f"      {problem}" for problem in item.problems]
        else:
            lines.append(f"  forma ok  {item.name}  ({item.label})")
    valid = [item.fixture() for item in files if not item.problems]
    if shape_only or not valid:
        return problems, lines
    solution = solutions_dir / f"{name}.ipynb"
    if not solution.exists():
        lines.append(f"  PROBLEMA  não achei a solução de referência {solution}; não deu para rodá-la.")
        return problems + 1, lines
    lines.append(f"  Rodando a solução de referência ({solution.name}) contra {quantity(len(valid), 'fixture', 'fixtures')}...")
    report = grade_with_fixtures(exercise, valid, solution)
    if report.notebook_error:
        lines.append(f"  PROBLEMA  a própria solução de referência não rodou: {report.notebook_error}")
        return problems + 1, lines
    for fixture in valid:
        failed = [c for c in report.checks if c.fixture == fixture.name and not c.passed]
        total = sum(1 for c in report.checks if c.fixture == fixture.name)
        if failed:
            problems += 1
            lines.append(f"  QUEBRADA  {fixture.name}: a fixture e a solução de referência discordam em "
                         f"{len(failed)} de {quantity(total, 'verificação', 'verificações')}")
            lines += [f"      {c.id}: {disagreement(c)}" for c in failed]
            lines.append(f"      Uma fixture vale quando a solução de referência passa nela: confira o `expect` de "
                         f"{Path(fixture.source).name or fixture.name} (ou a solução, se ela é que está errada).")
        else:
            lines.append(f"  ok        {fixture.name}: a solução passa em {quantity(total, 'verificação', 'verificações')}")
    general = [c for c in report.checks if c.fixture is None and not c.passed]
    for check in general:
        problems += 1
        lines.append(f"  PROBLEMA  a solução de referência falha em {check.id}: {check.message}")
    return problems, lines


def run(args: argparse.Namespace) -> int:
    from grader.core.course_folder import course_root

    names = args.exercises or registry.known_exercises()
    for name in names:
        registry.load_exercise(name)  # an unknown name is the caller's mistake (exit 2), before any work
    solutions_dir = args.solutions or course_root() / "solutions"
    total = 0
    for name in names:
        try:
            problems, lines = check_exercise(name, args.fixtures, solutions_dir, args.shape_only)
        except GraderError as error:
            problems, lines = 1, [f"{name}: {error}"]
        total += problems
        print("\n".join(lines))
    print(f"\ngrade fixtures: {quantity(total, 'problema', 'problemas')}." if total else "\ngrade fixtures: tudo certo.")
    return 1 if total else 0
