#!/usr/bin/env python3
"""Prepara o ambiente do curso e executa uma tarefa: abrir o JupyterLab, rodar os testes, corrigir.

    python3 bootstrap.py lab            # cria .venv se preciso, instala e abre a lição 1 no JupyterLab
    python3 bootstrap.py test [args]    # cria .venv se preciso, instala e roda o pytest
    python3 bootstrap.py grade exercise-3   # qualquer comando do ambiente: grade, course, python

Só usa a biblioteca padrão: funciona numa máquina nova que tem apenas Python 3.10+.
A instalação é refeita quando o pyproject.toml muda (um carimbo com o hash dele fica em .venv).
"""
from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
STAMP = VENV / ".instalado"
FIRST_LESSON = "lessons/01-memoria-e-estado-de-execucao.ipynb"
LAB_FILES = ROOT / ".lab"  # o que o curso entrega ao JupyterLab: ajustes padrão e o rc do terminal
# Aviso informativo do setuptools sobre instalações editáveis (uma caixa de asteriscos a cada
# instalação). Só ele é silenciado: erros e outros avisos do pip continuam aparecendo.
EDITABLE_NOTICE_FILTER = "ignore:Editable installation"


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
    quiet_notice = {**os.environ, "PYTHONWARNINGS": EDITABLE_NOTICE_FILTER}
    subprocess.run([*pip, "-e", f"{ROOT}[test]"], check=True, env=quiet_notice)
    STAMP.write_text(requirements_hash())


def environment() -> dict:
    """O PATH do .venv na frente: no terminal do JupyterLab, `grade` e `course` já funcionam."""
    env = dict(os.environ)
    env["VIRTUAL_ENV"] = str(VENV)
    env["PATH"] = str(BIN) + os.pathsep + env.get("PATH", "")
    return env


def running_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def terminal_command(bin_dir: Path) -> list[str] | None:
    """O shell dos terminais do Lab: bash com o rc do curso, que põe `bin_dir` na frente do PATH.

    Sem isso o Jupyter abre um shell de login quando não foi iniciado num terminal, e o
    /etc/profile do Debian troca o PATH: `grade` viraria "command not found".
    """
    bash, env = shutil.which("bash"), shutil.which("env")
    if bash is None or env is None:
        return None  # Windows sem bash: fica o terminal padrão do Jupyter
    return [env, f"CURSO_BIN={bin_dir}", bash, "--rcfile", str(LAB_FILES / "terminal.bashrc"), "-i"]


def lab_command(
    extra: list[str] | tuple[str, ...] = (), *, python: Path = BIN / "python", root: Path = ROOT,
) -> list[str]:
    """O comando exato de `bootstrap.py lab` (o teste do navegador sobe o JupyterLab por aqui).

    Serve a raiz do projeto (lições, exercícios e soluções no mesmo navegador de arquivos, e os
    links entre eles funcionam) e abre a lição 1.
    """
    command = [
        str(python), "-m", "jupyterlab",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.default_url=/lab/tree/{FIRST_LESSON}",
        # overrides.json: nada de perguntar sobre notícias nem procurar atualizações na internet
        f"--LabApp.app_settings_dir={LAB_FILES / 'settings'}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        # a lição que ninguém editou continua igual no git: salvar não troca os metadados do kernel
        "--ContentsManager.pre_save_hook=authoring.lab_save_hook.keep_kernel_metadata",
    ]
    shell = terminal_command(Path(python).parent)
    if shell is not None:
        command.append(f"--ServerApp.terminado_settings={{'shell_command': {shell!r}}}")
    if running_as_root():
        command.append("--allow-root")
    return [*command, *extra]


def run_child(command: list[str], env: dict, cwd: Path | None = None) -> int:
    """Roda `command` e espera por ele, como se fosse o próprio processo.

    Ctrl-C no terminal chega ao filho direto (mesmo grupo de processos): aqui ele só é ignorado,
    e o filho (o JupyterLab, o grade) encerra do seu jeito. SIGTERM e SIGHUP mandados só a este
    processo são repassados ao filho, para nenhum JupyterLab ficar órfão segurando a porta.
    """
    try:
        child = subprocess.Popen(command, env=env, cwd=cwd)
    except FileNotFoundError:
        say(f"comando desconhecido: {command[0]!r}. Use lab, test ou um comando do ambiente "
            "(grade, course, python).")
        return 2

    def forward(signum: int, _frame: object) -> None:
        if child.poll() is None:
            child.send_signal(signum)

    handlers = {signal.SIGINT: signal.SIG_IGN, signal.SIGTERM: forward}
    if hasattr(signal, "SIGHUP"):
        handlers[signal.SIGHUP] = forward
    previous = {number: signal.signal(number, handler) for number, handler in handlers.items()}
    try:
        code = child.wait()
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    return 128 - code if code < 0 else code  # morto por um sinal: 128 + o número, como o shell


# The whole suite in three pytest-xdist workers that take tests from each other's queues as
# they free up (many tests wait on a kernel or a child process, so a third worker fills the
# gaps). Measured in one session on 2 cores, 2,980 tests: 642 s with -n 3 --dist worksteal,
# 684 s with -n 4 (and more CPU: 1,129 s against 984 s); earlier, 852 s with -n 2 --dist loadfile.
# With the temporary files on a tmpfs (tests/temp_root.py), 2,995 tests: 514 s, against 578 s
# on disk in the same session.
WHOLE_SUITE = ["-n", "3", "--dist", "worksteal"]
# Options that choose the workers themselves, or that need one process: a debugger (xdist refuses
# it) and -s (a worker's output never reaches the terminal).
CHOOSES_WORKERS = {"-n", "--numprocesses", "--dist", "--pdb", "--trace", "no:xdist", "-pno:xdist", "-s",
                   "--capture"}
# pytest's options whose value is the next argument: that value never names a test to run.
TAKES_A_VALUE = {"-k", "-m", "-p", "-o", "-c", "-r", "-W", "--ignore", "--ignore-glob", "--deselect",
                 "--durations", "--maxfail", "--basetemp", "--rootdir", "--tb", "--confcutdir"}


def chooses_workers(argument: str) -> bool:
    option = argument.split("=")[0]
    return option in CHOOSES_WORKERS or (option.startswith("-n") and option[2:].isalnum())


def from_caller(argument: str, cwd: Path) -> str | None:
    """A file, folder or test id (tests/test_x.py::test_y) that exists from the caller's folder,
    as pytest, which runs in the project's folder, must be given it; None when it names none."""
    if argument.startswith("-"):
        return None
    path, sep, test = argument.partition("::")
    if not (cwd / path).exists():  # not from there: as pytest reads it, from the project's folder
        return argument if (ROOT / path).exists() else None
    return argument if cwd == ROOT else str((cwd / path).resolve()) + sep + test


def test_command(rest: list[str], cwd: Path = ROOT) -> list[str]:
    """Sem caminho de teste, a suíte (toda ou filtrada por -m, -k...) em três processos; com um
    arquivo, pasta ou teste nomeado (a partir da pasta de quem chama), em série: quem roda um
    arquivo só não paga a partida de três processos; quem escolhe -n, --dist, -s ou um depurador
    (--pdb), também em PYTEST_ADDOPTS, fica com o que escolheu."""
    arguments, as_chosen, after_option = [], False, False
    for argument in rest:
        named = None if after_option else from_caller(argument, cwd)
        as_chosen = as_chosen or named is not None or chooses_workers(argument)
        arguments.append(named or argument)
        after_option = argument in TAKES_A_VALUE
    as_chosen = as_chosen or any(map(chooses_workers, shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))))
    return [str(BIN / "python"), "-m", "pytest", *(arguments if as_chosen else [*WHOLE_SUITE, *arguments])]


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    ensure_environment()
    task, rest = argv[0], argv[1:]
    if task == "lab":
        if running_as_root():
            say("rodando como root (contêiner, Codespaces, WSL?): o JupyterLab sobe com --allow-root.")
        return run_child(lab_command(rest), environment(), cwd=ROOT)
    if task == "test":
        return run_child(test_command(rest, Path.cwd()), environment(), cwd=ROOT)
    # Os outros comandos rodam na pasta de quem chamou: um caminho relativo (--notebook, --workdir)
    # quer dizer o que quer dizer ali. O grade acha a pasta do curso sozinho.
    return run_child([str(BIN / task) if (BIN / task).exists() else task, *rest], environment())


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:  # Ctrl-C durante a instalação
        print("\n[curso] interrompido.", file=sys.stderr)
        sys.exit(130)
