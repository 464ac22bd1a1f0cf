#!/usr/bin/env python3
"""Prepara o ambiente do curso e executa uma tarefa: abrir o JupyterLab, rodar os testes, corrigir.

    python3 bootstrap.py lab            # cria .venv se preciso, instala e abre o curso
    python3 bootstrap.py test [args]    # cria .venv se preciso, instala e roda o pytest
    python3 bootstrap.py grade exercise-3   # qualquer comando do ambiente: grade, course, python

Só usa a biblioteca padrão: funciona numa máquina nova que tem apenas Python 3.10+.
A instalação é refeita quando o pyproject.toml muda (um carimbo com o hash dele fica em .venv).
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
STAMP = VENV / ".instalado"
FIRST_LESSON = "lessons/01-memoria-e-estado-de-execucao.ipynb"


def say(message: str) -> None:
    print(f"[curso] {message}", flush=True)


def requirements_hash() -> str:
    return hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()


def ensure_environment() -> None:
    if sys.version_info < (3, 10):
        sys.exit("[curso] é preciso Python 3.10 ou mais novo")
    if not (BIN / "python").exists():
        say("criando o ambiente virtual em .venv ...")
        venv.EnvBuilder(with_pip=True).create(VENV)
    if STAMP.exists() and STAMP.read_text() == requirements_hash():
        return
    say("instalando o curso e suas dependências (só na primeira vez; leva alguns minutos) ...")
    pip = [str(BIN / "python"), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, "-e", f"{ROOT}[test]"], check=True)
    STAMP.write_text(requirements_hash())


def environment() -> dict:
    """O PATH do .venv na frente: no terminal do JupyterLab, `grade` e `course` já funcionam."""
    env = dict(os.environ)
    env["VIRTUAL_ENV"] = str(VENV)
    env["PATH"] = str(BIN) + os.pathsep + env.get("PATH", "")
    return env


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    ensure_environment()
    task, rest = argv[0], argv[1:]
    if task == "lab":
        command = [str(BIN / "jupyter"), "lab", FIRST_LESSON, *rest]
    elif task == "test":
        command = [str(BIN / "python"), "-m", "pytest", *rest]
    else:
        command = [str(BIN / task) if (BIN / task).exists() else task, *rest]
    os.chdir(ROOT)
    return subprocess.call(command, env=environment())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
