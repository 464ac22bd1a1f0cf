"""How an error ends `python -m harness`: the exit code and the one line on stderr, per command.

Every case is a real process running `python -m harness` (the package's `__main__`, at the
interpreter's own top level) with one function of the harness swapped, in that process only, for
one that raises the error. The processes are forked from a warm interpreter that has imported the
SDK and nothing more (tests/warm_python.py): an uncaught error still reaches the interpreter's
top level, which prints the traceback and exits 1. The expected codes and lines are written out here, not read from the table in
harness/exit_codes.py: they are what the command line said before that table existed, and what
the README and the lessons promise. An error the table does not name ends as it always did,
with Python's traceback and exit 1.

Three places an error can come from:
- RUNNING: inside the loop of `run` (``drive`` raises, after the run took its lease and saved
  its first scene), where `run` has its own words ("não dá para começar", "processo derrubado");
- COMMAND: inside any other command (``pause``: ``control_run`` raises), where the words are
  "não deu" and "agora não";
- BEFORE_RUN: in `run`, before the loop starts (the step that settles an interrupted rewind),
  which speaks like any other command.
"""
from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from harness.fake_endpoint import make_stub_client
from harness.scenarios import load_scenario
from tests.warm_python import run_python

REPO_ROOT = Path(__file__).resolve().parent.parent
HARNESS = REPO_ROOT / "harness"

# Where each error the table names is defined (the child imports them all before raising one).
PRELUDE = """
import errno
import anthropic
import httpx2
from harness.approval import ApprovalError
from harness.checkpoint import CheckpointError
from harness.cli_args import BadInput, UsageError
from harness.cli_endpoint import EndpointSettingError
from harness.crash import SimulatedCrash
from harness.effects import EffectsLedgerError
from harness.lifecycle import LeaseFileError, LeaseHeld, LeaseLost, RunNotResumable
from harness.model import LiveModeUnavailable
from harness.runner import NoCheckpoint, ScenarioUnknown
from harness.state_json import StateFileError
from harness.stores.base import StoreError
from harness.timeline import TimelineError
"""

# The child: swap RAISE_AT ("module:function") for a function raising RAISE_WHAT, then start the
# command line exactly as `python -m harness` does.
CHILD = """
import importlib, os, runpy, sys
module_name, attribute = os.environ["RAISE_AT"].split(":")

def raise_it(*args, **kwargs):
    names = {}
    exec(os.environ["RAISE_PRELUDE"], names)
    raise eval(os.environ["RAISE_WHAT"], names)

setattr(importlib.import_module(module_name), attribute, raise_it)
runpy.run_module("harness", run_name="__main__", alter_sys=True)
"""

RUNNING, COMMAND, BEFORE_RUN = "harness.runner:drive", "harness.cli:control_run", "harness.cli:settle_what_a_crash_left"

DISK_FULL = "OSError(errno.ENOSPC, 'No space left on device', '/pasta/checkpoint.json')"
DISK_FULL_SAID = "não deu para gravar em /pasta/checkpoint.json: No space left on device; o disco está cheio: libere espaço"
TRACEBACK = "traceback"   # expected line: Python's traceback, whose last line is the error itself
USAGE = "usage"           # expected line: argparse's usage, then "python -m harness: erro: ..."
CTRL_C = "ctrl-c"         # expected line: the shared "interrompido (Ctrl-C)." of every course command

# (the error, in the child's words) -> the error's str()
ERRORS = {
    "simulated": ("SimulatedCrash('queda simulada em after-tool-run (passagem 1)')",
                  "queda simulada em after-tool-run (passagem 1)"),
    "lease-held": ("LeaseHeld('a posse é de 123@outra (token 4)')", "a posse é de 123@outra (token 4)"),
    "lease-lost": ("LeaseLost('o token 3 ficou velho')", "o token 3 ficou velho"),
    "cancelled": ("RunNotResumable('a execução r1 está cancelled', 'cancelled')", "a execução r1 está cancelled"),
    "failed": ("RunNotResumable('a execução r1 está failed', 'failed')", "a execução r1 está failed"),
    "no-checkpoint": ("NoCheckpoint('não há checkpoint em /pasta')", "não há checkpoint em /pasta"),
    "checkpoint": ("CheckpointError('checkpoint.json: turns não é inteiro')", "checkpoint.json: turns não é inteiro"),
    "ledger": ("EffectsLedgerError('/pasta/effects.json', 'não é JSON')",
               "/pasta/effects.json: livro-razão de efeitos ilegível (não é JSON). A retomada parou para não repetir "
               "efeitos que talvez já tenham acontecido; restaure o arquivo ou confira o mundo externo à mão antes "
               "de continuar."),
    "approval": ("ApprovalError('approvals.json: decisão sem hash')", "approvals.json: decisão sem hash"),
    "lease-file": ("LeaseFileError('lease.json: token negativo')", "lease.json: token negativo"),
    "state-file": ("StateFileError('/pasta/timeline.json', 'não é JSON')", "/pasta/timeline.json: não é JSON"),
    "store": ("StoreError('--store desconhecido: redis')", "--store desconhecido: redis"),
    "endpoint": ("EndpointSettingError(\"HARNESS_ENDPOINT_LATENCY='x': esperava um número de segundos >= 0\")",
                 "HARNESS_ENDPOINT_LATENCY='x': esperava um número de segundos >= 0"),
    "scenario": ("ScenarioUnknown('diga o cenário: --scenario NOME')", "diga o cenário: --scenario NOME"),
    "live": ("LiveModeUnavailable('ANTHROPIC_API_KEY não está definida')", "ANTHROPIC_API_KEY não está definida"),
    "timeline": ("TimelineError('não há turno 9')", "não há turno 9"),
    "usage": ("UsageError('diga a pasta da execução: --workdir PASTA')", "diga a pasta da execução: --workdir PASTA"),
    "bad-input": ("BadInput('--workdir está vazio')", "--workdir está vazio"),
    "api": ("anthropic.APITimeoutError(request=httpx2.Request('POST', 'https://api.anthropic.com/v1/messages'))",
            "a API não respondeu a tempo; tente de novo em instantes"),
    "disk": (DISK_FULL, DISK_FULL_SAID),
    "ctrl-c": ("KeyboardInterrupt()", ""),
    "unexpected": ("RuntimeError('um defeito que ninguém previu')", "um defeito que ninguém previu"),
}

# Which exception class each error above is (for the check that every row of the table is covered here).
CLASS_OF = {
    "simulated": "SimulatedCrash", "lease-held": "LeaseHeld", "lease-lost": "LeaseLost",
    "cancelled": "RunNotResumable", "failed": "RunNotResumable", "no-checkpoint": "NoCheckpoint",
    "checkpoint": "CheckpointError", "ledger": "EffectsLedgerError", "approval": "ApprovalError",
    "lease-file": "LeaseFileError", "state-file": "StateFileError", "store": "StoreError",
    "endpoint": "EndpointSettingError", "scenario": "ScenarioUnknown", "live": "LiveModeUnavailable",
    "timeline": "TimelineError", "usage": "UsageError", "bad-input": "BadInput", "api": "APIError",
    "disk": "OSError", "ctrl-c": "KeyboardInterrupt", "unexpected": None,
}

PAUSED = "a execução ficou pausada no turno 0 (não conta como queda); continue com: {resume}"

# (where, error) -> (exit code, the line on stderr); {resume} is the command that resumes the run.
CASES = {
    (RUNNING, "simulated"): (137, "processo derrubado: {error}"),
    (RUNNING, "lease-held"): (4, "não começou: {error}"),
    (RUNNING, "lease-lost"): (5, "parou sem gravar: {error}"),
    (RUNNING, "cancelled"): (12, "não dá para retomar: {error}"),
    (RUNNING, "failed"): (13, "não dá para retomar: {error}"),
    **{(RUNNING, name): (2, "não dá para começar: {error}")
       for name in ("no-checkpoint", "checkpoint", "ledger", "approval", "lease-file", "state-file", "store",
                    "endpoint", "scenario", "live")},
    (RUNNING, "timeline"): (2, "não deu: {error}"),
    (RUNNING, "usage"): (2, USAGE),
    (RUNNING, "api"): (2, "parou: {error}. " + PAUSED),
    (RUNNING, "ctrl-c"): (130, "interrompida (Ctrl-C): " + PAUSED),
    (RUNNING, "disk"): (2, "parou: {error}. A última cena gravada continua inteira; resolvido isso, retome com "
                           "--resume"),
    (RUNNING, "unexpected"): (1, TRACEBACK),

    (COMMAND, "lease-held"): (4, "agora não: {error}"),
    **{(COMMAND, name): (2, "não deu: {error}")
       for name in ("no-checkpoint", "checkpoint", "approval", "cancelled", "lease-file", "timeline", "ledger",
                    "store", "state-file", "bad-input")},
    (COMMAND, "usage"): (2, USAGE),
    (COMMAND, "disk"): (2, "não deu: {error}"),
    **{(COMMAND, name): (1, TRACEBACK)
       for name in ("simulated", "lease-lost", "endpoint", "scenario", "live", "api", "unexpected")},
    (COMMAND, "ctrl-c"): (130, CTRL_C),

    (BEFORE_RUN, "no-checkpoint"): (2, "não deu: {error}"),
    (BEFORE_RUN, "lease-held"): (4, "agora não: {error}"),
    (BEFORE_RUN, "simulated"): (1, TRACEBACK),
}


def child_env(raise_at, what):
    env = {key: value for key, value in os.environ.items() if key not in ("CRASH_AFTER", "CRASH_MODE")}
    env.update(PYTHONPATH=str(REPO_ROOT), RAISE_AT=raise_at, RAISE_WHAT=what, RAISE_PRELUDE=PRELUDE)
    return env


def harness_process(args, env):
    return run_python(["-c", CHILD, *args], cwd=REPO_ROOT, env=env, timeout=120)


def command_for(where, workdir):
    if where == COMMAND:
        return ["pause", "--workdir", str(workdir)]
    return ["run", "--scenario", "team-email", "--workdir", str(workdir)]


@pytest.mark.slow
@pytest.mark.parametrize(("where", "name"), list(CASES), ids=[f"{w.split(':')[1]}-{n}" for w, n in CASES])
def test_each_error_gives_its_exit_code_and_its_line(tmp_path, where, name):
    workdir = tmp_path / "r"
    if where == COMMAND:
        workdir.mkdir()
    what, said = ERRORS[name]
    done = harness_process(command_for(where, workdir), child_env(where, what))
    code, line = CASES[where, name]
    assert done.returncode == code, done.stderr[-3000:]
    lines = done.stderr.splitlines()
    if line == TRACEBACK:
        assert lines[0] == "Traceback (most recent call last):", done.stderr[-3000:]
        raised = what.split("(")[0].split(".")[-1]
        assert lines[-1].split(":")[0].split(".")[-1] == raised, lines[-1]
    elif line == USAGE:
        assert lines[0].startswith("uso: python -m harness "), lines
        assert lines[-1] == f"python -m harness: erro: {said}", lines
    elif line == CTRL_C:
        assert lines == ["", "interrompido (Ctrl-C)."], lines
    else:
        resume = f"python -m harness run --resume --workdir {workdir}"
        assert lines == [line.format(error=said, resume=resume)], done.stderr[-3000:]
    if "pausada" in line:
        assert load_status(workdir) == "paused"


def load_status(workdir):
    from harness.lifecycle import CHECKPOINT_FILE, load_run_checkpoint

    return load_run_checkpoint(workdir / CHECKPOINT_FILE)["status"]


@pytest.mark.slow
def test_a_bad_input_while_resuming_says_retomar(tmp_path):
    from harness.runner import run_durable

    scenario = load_scenario("team-email")
    workdir = tmp_path / "r"
    run_durable(make_stub_client(scenario.responses), workdir, scenario, max_turns=1)
    what, said = ERRORS["checkpoint"]
    done = harness_process(["run", "--resume", "--workdir", str(workdir)], child_env("harness.runner:reopen", what))
    assert (done.returncode, done.stderr.splitlines()) == (2, [f"não dá para retomar: {said}"]), done.stderr


@pytest.mark.slow
@pytest.mark.parametrize(("env", "args", "line"), [
    ({}, ["run", "--scenario", "team-email", "--workdir", ""],
     "não deu: --workdir está vazio: diga uma pasta (. para a pasta atual)"),
    ({"CRASH_AFTER": "depois-de-tudo:1"}, ["run", "--scenario", "team-email", "--workdir", "{tmp}/r"],
     "não deu: CRASH_AFTER: rótulo desconhecido 'depois-de-tudo'; use um de after-model-response, after-save-A, "
     "after-tool-run, after-effect-write, after-save-B, mid-checkpoint-write"),
    ({}, ["pause", "--workdir", "{tmp}/r", "--store", "sqlite", "--lease-seconds", "1"], None),
], ids=["empty-workdir", "crash-after-typo", "not-an-option"])
def test_what_the_options_say_before_any_command(tmp_path, env, args, line):
    """Checked before anything runs (no function swapped): the same words and code 2."""
    args = [arg.replace("{tmp}", str(tmp_path)) for arg in args]
    done = run_python(["-m", "harness", *args], cwd=REPO_ROOT, timeout=120, env={**child_env("x:y", ""), **env})
    assert done.returncode == 2, done.stderr
    if line is None:
        assert done.stderr.splitlines()[-1].startswith("python -m harness: erro: argumentos não reconhecidos")
    else:
        assert done.stderr.splitlines() == [line]
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_the_lease_seconds_limit_is_a_usage_error(tmp_path):
    done = run_python(["-m", "harness", "run", "--scenario", "team-email", "--workdir", str(tmp_path / "r"),
                       "--lease-seconds", "100000"], cwd=REPO_ROOT, timeout=120, env=child_env("x:y", ""))
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and lines[0].startswith("uso: python -m harness "), done.stderr
    assert lines[-1].startswith("python -m harness: erro: --lease-seconds: "), lines
    assert not (tmp_path / "r").exists()


# --- one table, and the loop without the command line ----------------------------------------------

def code_the_table_gives(error, where):
    """The code harness.exit_codes gives ``error`` where it is raised, None when the table lets it go
    up (to Python's traceback, or to the Ctrl-C line every course command shares)."""
    from harness.exit_codes import exit_for

    exit_ = exit_for(error, running=True) if where == RUNNING else None
    exit_ = exit_ or exit_for(error)   # what `run` does not name itself goes up to main
    if exit_ is None:
        return None
    return exit_.code(error) if callable(exit_.code) else exit_.code


@pytest.mark.parametrize(("where", "name"), list(CASES), ids=[f"{w.split(':')[1]}-{n}" for w, n in CASES])
def test_the_table_gives_each_error_its_code(where, name):
    """In-process, without a command: the table alone gives the codes the processes above exit with."""
    names = {}
    exec(PRELUDE, names)
    error = eval(ERRORS[name][0], names)
    code, line = CASES[where, name]
    expected = None if line in (TRACEBACK, CTRL_C) else code
    assert code_the_table_gives(error, where) == expected


def test_every_error_the_table_names_has_a_case_here():
    from harness import exit_codes

    named = {error.__name__ for row in exit_codes.FAILURES for error in row.errors}
    covered = {CLASS_OF[name] for _, name in CASES}
    assert named == covered - {None}


def handlers_that_end_a_command(path: Path) -> list[str]:
    """The ``except`` clauses of ``path`` that end the command themselves: they return an exit code
    (a number or an EXIT_* name), print to stderr or call ``parser.error``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ExceptHandler):
            continue
        for inner in ast.walk(ast.Module(body=node.body, type_ignores=[])):
            returns_code = isinstance(inner, ast.Return) and (
                isinstance(inner.value, ast.Constant) and type(inner.value.value) is int
                or isinstance(inner.value, (ast.Name, ast.Attribute, ast.Subscript))
                and "EXIT" in ast.unparse(inner.value) or ast.unparse(inner.value or ast.Constant(None)) == "INTERRUPTED")
            says = isinstance(inner, ast.Call) and (
                ast.unparse(inner.func).endswith(".error")
                or ast.unparse(inner.func) == "print" and "sys.stderr" in ast.unparse(inner))
            if returns_code or says:
                found.append(f"{path.name}:{node.lineno}: except {ast.unparse(node.type) if node.type else ''}")
                break
    return found


def test_no_except_clause_outside_the_table_turns_an_error_into_an_exit_code():
    # cli_text.run is the last resort every course command shares (grade and course too): a closed
    # pipe and a Ctrl-C nobody else handled; __main__ says the same Ctrl-C line before cli_text loads.
    last_resort = ("exit_codes.py", "cli_text.py", "__main__.py")
    modules = sorted(path for path in HARNESS.glob("*.py") if path.name not in last_resort)
    assert [found for path in modules for found in handlers_that_end_a_command(path)] == []


def test_the_checker_sees_the_stacks_it_judges(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text("def a():\n    try:\n        pass\n    except LeaseHeld as error:\n"
                       "        print(f'agora não: {error}', file=sys.stderr)\n        return EXIT_LEASE_HELD\n"
                       "def b(parser):\n    try:\n        pass\n    except UsageError as error:\n"
                       "        parser.error(str(error))\n"
                       "def c():\n    try:\n        pass\n    except KeyError:\n        return None\n"
                       "def d():\n    try:\n        pass\n    except KeyError:\n        return False\n", encoding="utf-8")
    assert handlers_that_end_a_command(planted) == ["planted.py:4: except LeaseHeld", "planted.py:10: except UsageError"]


def test_runner_holds_the_loop_and_no_command_line():
    tree = ast.parse((HARNESS / "runner.py").read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not imported & {"argparse", "sys", "harness.cli_text", "harness.exit_codes"}, imported
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    defined = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    assert not {name for name in names | defined if name.startswith("EXIT_")}, names
    assert not defined & {"main", "execute_run", "add_run_arguments", "add_store_arguments", "make_run_client",
                          "describe_message", "endpoint_latency"}, defined
    assert "run_durable" in defined
