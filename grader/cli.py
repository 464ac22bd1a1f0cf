"""The ``grade`` command.

``grade exercise-N [...]`` grades a notebook; any other first word names a
subcommand from ``COMMANDS``. Each subcommand is a module exposing
``add_arguments(parser)`` and ``run(args) -> int``; adding one is one line here.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from grader.core.course_folder import course_root
from grader.core.errors import GraderError, os_reason
from grader.reports import console

# subcommand -> (module, help shown by `grade --help`)
COMMANDS: dict[str, tuple[str, str]] = {
    "fixtures": ("grader.instructor.fixture_command", "valida as fixtures e roda a solução de referência contra elas"),
    "list": ("grader.student.progress", "mostra cada exercício com a situação da última correção e o próximo a fazer"),
    "hint": ("grader.student.hints", "mostra a próxima dica do exercício (--all: todas as do nível)"),
    "watch": ("grader.student.watch", "corrige de novo cada vez que o notebook é salvo"),
    "batch": ("grader.instructor.batch", "corrige uma pasta de submissões e grava um gradebook CSV"),
}

USAGE = """uso: grade exercise-N [--level K] [--notebook CAMINHO] [--fixtures PASTA ...] [--json] [--junit ARQUIVO]
       grade COMANDO [...]

Corrige o seu notebook exercises/exercise-N.ipynb (o arquivo salvo) num kernel novo
e mostra, nível por nível, o que passou e o que falhou.
"""


def grade_parser() -> argparse.ArgumentParser:
    from grader.core.limits import DEFAULT_MEMORY_MB  # only grading needs it: `grade list` starts without it

    parser = console.ArgumentParser(prog="grade", usage=USAGE.split("\n\n")[0].removeprefix("uso: "),
                                     description="Corrige um exercício do curso.")
    parser.add_argument("exercise", metavar="exercise-N", help="o exercício a corrigir, por exemplo exercise-3")
    parser.add_argument("--level", type=console.whole_number(1), default=None, metavar="K", help="corrige só este nível")
    parser.add_argument("--notebook", type=Path, default=None, metavar="CAMINHO",
                        help="o notebook a corrigir (padrão: exercises/exercise-N.ipynb na pasta do curso)")
    parser.add_argument("--fixtures", type=Path, action="append", default=[], metavar="PASTA",
                        help="pasta extra de fixtures (do instrutor); pode repetir")
    parser.add_argument("--json", action="store_true", help="imprime o resultado em JSON")
    parser.add_argument("--junit", type=Path, default=None, metavar="ARQUIVO",
                        help="grava também um relatório JUnit XML")
    parser.add_argument("--sandbox", action="store_true",
                        help="executa o notebook isolado no bubblewrap: sem rede, sem ver outros arquivos, com limites")
    parser.add_argument("--verbose", "-v", action="store_true", help="mostra todas as falhas (não só a primeira) e também as verificações que passaram")
    parser.add_argument("--cell-timeout", type=console.seconds(), default=None, help=argparse.SUPPRESS)
    parser.add_argument("--total-timeout", type=console.seconds(), default=None, help=argparse.SUPPRESS)
    parser.add_argument("--check-timeout", type=console.seconds(), default=None, help=argparse.SUPPRESS)
    parser.add_argument("--memory-mb", type=console.memory_mb, default=None, metavar="M",
                        help=f"memória máxima do kernel em MB (padrão: {DEFAULT_MEMORY_MB}; 0 = sem limite)")
    return parser


def run_grade(argv: list[str]) -> int:
    from grader.core.limits import Limits

    args = grade_parser().parse_args(argv)
    limits = Limits.from_grade_flags(args)
    sandbox = None
    junit_problem = args.junit and console.output_file_problem(args.junit, "o relatório JUnit", "junit.xml")
    if junit_problem:  # before a grading that may take minutes
        print(f"grade: {junit_problem}", file=sys.stderr)
        return 2
    prelaunched = None
    try:
        notebook = args.notebook or course_root() / "exercises" / f"{args.exercise}.ipynb"
        if args.sandbox:
            from grader.core import sandbox as sandbox_module

            sandbox = sandbox_module.require()
        prelaunched = launch_kernel_early(notebook, sandbox)
        from grader.core.engine import grade  # imports nbclient and the checks while the kernel starts

        report = grade(args.exercise, notebook, level=args.level, fixture_dirs=args.fixtures,
                       limits=limits, sandbox=sandbox, prelaunched=prelaunched)
    except GraderError as error:
        print(f"grade: {error}", file=sys.stderr)
        return 2
    finally:
        if prelaunched is not None:
            prelaunched.discard()  # already done when the grading took it; here for the ways out before
    from grader.core.atomic_write import write_atomic
    from grader.reports import render
    from grader.student.progress import record_progress

    record_progress(args.exercise, report, notebook)
    if args.junit:
        try:
            write_atomic(args.junit, render.junit_report(report))
        except OSError as error:
            print(f"grade: não consegui gravar {args.junit}: {os_reason(error)}.", file=sys.stderr)
    if args.json:
        sys.stdout.write(render.json_report(report))
    else:
        text = render.text_report(report, verbose=args.verbose)
        sys.stdout.write(render.colored(text) if console.wants_color() else text)
    return 0 if report.passed else 1


def launch_kernel_early(notebook: Path, sandbox) -> object | None:
    """The grading's kernel, launched before the grader imports the notebook machinery, so its
    start (seconds of imports in its own process) overlaps with the grader's; None when there is
    no notebook file to grade (that is reported without starting anything)."""
    if not Path(notebook).is_file():
        return None
    from grader.core.prelaunch import PrelaunchedKernel

    return PrelaunchedKernel(sandbox)


def print_help() -> None:
    print(USAGE)
    print("comandos:")
    print(f"  {'exercise-N':<10}  corrige um exercício (grade exercise-N --help para as opções)")
    for name, (_, help_text) in COMMANDS.items():
        print(f"  {name:<10}  {help_text}")


def main(argv: list[str] | None = None) -> int:
    return console.run_command("grade", lambda: dispatch(list(sys.argv[1:] if argv is None else argv)))


def dispatch(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print_help()
        return 0 if argv else 2
    if argv[0] in COMMANDS:
        module_name, help_text = COMMANDS[argv[0]]
        module = importlib.import_module(module_name)
        parser = console.ArgumentParser(prog=f"grade {argv[0]}", description=help_text)
        module.add_arguments(parser)
        args = parser.parse_args(argv[1:])
        try:
            return int(module.run(args) or 0)
        except GraderError as error:
            print(f"grade {argv[0]}: {error}", file=sys.stderr)
            return 2
    return run_grade(argv)


if __name__ == "__main__":
    sys.exit(main())
