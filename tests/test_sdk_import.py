"""The commands that never call the model never import the SDK (about 1.5 s of every process).

harness/api_errors.py stands in for the SDK's error classes in the exit-code table; these
tests hold it to the SDK's own answers once the SDK is loaded, and to "nothing is one" before.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anthropic
import httpx2
import pytest

from harness import api_errors
from harness.exit_codes import EXIT_BAD_INPUT, exit_for

ROOT = Path(__file__).resolve().parent.parent

# Run in a fresh interpreter: each command through harness.cli.main, then whether the SDK got loaded.
PROBE = """
import contextlib, io, json, sys
from harness import cli
seen = {}
for argv in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            code = cli.main(argv)
        except SystemExit as exit_:
            code = exit_.code
    seen[" ".join(argv[:1] + argv[2:3])] = [code, "anthropic" in sys.modules]
print(json.dumps(seen))
"""


def fresh_interpreter(*commands: list[str]) -> dict[str, list]:
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(commands)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("sdk") / "run"
    done = subprocess.run([sys.executable, "-m", "harness", "run", "--scenario", "team-email", "--workdir",
                           str(run_dir)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return run_dir


@pytest.mark.slow  # new interpreters, as the point is what one imports
def test_commands_that_never_call_the_model_end_without_the_sdk(finished_run, tmp_path):
    where = ["--workdir", str(finished_run)]
    seen = fresh_interpreter(
        ["status", *where], ["timeline", *where], ["pause", *where], ["approve", *where],
        ["fork", *where, "--to", "1", "--into", str(tmp_path / "fork")], ["rewind", *where, "--to", "1"],
        ["status", "--workdir", str(tmp_path / "nothing-here")], ["status", "--bogus"], ["--help"])
    assert seen["status " + str(finished_run)][0] == 0 and seen["rewind " + str(finished_run)][0] == 0
    assert seen["status " + str(tmp_path / "nothing-here")][0] == EXIT_BAD_INPUT  # the error table, consulted
    assert {key: loaded for key, (_, loaded) in seen.items() if loaded} == {}, seen


@pytest.mark.slow  # new interpreters, as the point is what one imports
def test_a_run_still_loads_the_sdk_and_calls_the_model(finished_run):
    seen = fresh_interpreter(["run", "--scenario", "team-email", "--workdir", str(finished_run.parent / "again")])
    assert list(seen.values()) == [[0, True]]


def test_before_the_sdk_is_imported_nothing_is_one_of_its_errors():
    probe = ("import sys\nfrom harness import api_errors\n"
             "found = [isinstance(e, c) for e in (RuntimeError(), OSError(), KeyboardInterrupt())\n"
             "         for c in (api_errors.APIError, api_errors.APIStatusError, api_errors.APITimeoutError)]\n"
             "print(any(found), 'anthropic' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["False", "False"], done.stderr


def test_a_module_named_anthropic_that_is_not_the_sdk_makes_nothing_an_api_error(monkeypatch):
    import types

    monkeypatch.setitem(sys.modules, "anthropic", types.ModuleType("anthropic"))  # an anthropic.py in the folder
    assert not isinstance(RuntimeError("x"), api_errors.APIError)
    assert exit_for(OSError(28, "cheio"), running=True) is not None  # the table goes on to the disk row


def sdk_errors() -> dict[str, BaseException]:
    request = httpx2.Request("POST", "https://api.anthropic.com/v1/messages")
    overloaded = httpx2.Response(529, request=request, json={"type": "error", "error": {"type": "overloaded_error"}})
    return {
        "status": anthropic.APIStatusError("sobrecarregada", response=overloaded, body=None),
        "timeout": anthropic.APITimeoutError(request=request),
        "connection": anthropic.APIConnectionError(request=request),
    }


def test_once_loaded_each_stand_in_answers_as_the_sdks_class_of_its_name():
    errors = {**sdk_errors(), "plain": RuntimeError("não é da API"), "disk": OSError(28, "cheio")}
    for stand_in in (api_errors.APIError, api_errors.APIStatusError, api_errors.APITimeoutError):
        sdk_class = getattr(anthropic, stand_in.__name__)
        assert {name: isinstance(error, stand_in) for name, error in errors.items()} == \
            {name: isinstance(error, sdk_class) for name, error in errors.items()}, stand_in.__name__
    assert isinstance(errors["status"], api_errors.APIError) and not isinstance(errors["plain"], api_errors.APIError)


def test_the_exit_table_still_pauses_a_run_on_any_api_error_and_leaves_the_rest_alone():
    for name, error in sdk_errors().items():
        exit_ = exit_for(error, running=True)
        assert exit_ is not None and exit_.code == EXIT_BAD_INPUT and exit_.pause == "{api}", name
        assert exit_for(error) is None, name  # outside the run's loop the table does not take it
    assert exit_for(ValueError("nada"), running=True) is None
