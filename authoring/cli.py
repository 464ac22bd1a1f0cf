"""The `course` command: authoring tasks for instructors.

Each subcommand lives in its own module; this file only parses arguments and
dispatches, so adding a task never touches the others.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from grader.core.plural import quantity
from grader.reports import console

# subcommand -> (module, help). Each module exposes `add_arguments(parser)` and
# `run(args) -> int`. `check` is special: it aggregates every module's checks.
SUBCOMMANDS = {
    "build": ("authoring.exercises", "gera exercises/ a partir de solutions/"),
    "glossary": ("authoring.glossary", "marca os termos do glossary.yaml nas lições e escreve a página do glossário"),
    "site": ("authoring.site", "exporta o curso em HTML (nbconvert) com as definições ao passar o mouse"),
    "figures": ("authoring.figures", "regrava as figuras geradas (o mapa do curso e as desenhadas de uma execução) em lessons/figuras"),
    "gradescope": ("authoring.gradescope", "gera o zip do autograder do Gradescope para um exercício"),
    "originality": ("authoring.originality",
                    "conta as sequências de palavras que a prosa das lições tem em comum com textos de referência"),
}

# Modules whose `check_problems(root) -> list[str]` feed `course check`.
CHECKERS = ["grader.core.manifest", "authoring.exercises", "authoring.glossary", "authoring.figures"]


def project_root() -> Path:
    """The folder holding pyproject.toml, searched upward from the current folder."""
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / "pyproject.toml").exists() and (folder / "lessons").is_dir():
            return folder
    return Path(__file__).resolve().parent.parent


def run_check(args: argparse.Namespace) -> int:
    problems: list[str] = []
    for name in CHECKERS:
        module = importlib.import_module(name)
        problems.extend(module.check_problems(args.root))
    if problems:
        print(f"course check: {quantity(len(problems), 'problema', 'problemas')}:")
        for problem in problems:
            print(f"  - {problem}")
        return 1
    print("course check: tudo em dia.")
    return 0


def main(argv: list[str] | None = None) -> int:
    return console.run_command("course", lambda: dispatch(argv))


def dispatch(argv: list[str] | None) -> int:
    parser = console.ArgumentParser(prog="course", description="Ferramentas de autoria do curso.")
    parser.add_argument("--root", type=Path, default=None, metavar="PASTA", help="pasta do projeto (padrão: detectada)")
    # Not required here: an unknown option is reported as such first, then a missing command.
    sub = parser.add_subparsers(dest="command", metavar="COMANDO")
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        module = importlib.import_module(module_name)
        sp = sub.add_parser(name, help=help_text)
        module.add_arguments(sp)
        sp.set_defaults(func=module.run)
    sp = sub.add_parser("check", help="falha se o manifesto tiver problema ou se exercises/ ou o glossário estiverem fora de sincronia")
    sp.set_defaults(func=run_check)
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        parser.error(f"argumentos não reconhecidos: {' '.join(unknown)}")
    if args.command is None:
        parser.error("faltou informar: COMANDO")
    if args.root is None:
        args.root = project_root()
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
