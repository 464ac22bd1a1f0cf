"""Ctrl-C during `python -m harness run` is the user stopping the run, not a crash.

A real SIGINT reaches a forked `run` child frozen at a labelled step (CRASH_MODE=stop, then
SIGINT and SIGCONT): the child saves the run as paused, releases the lease and exits 130
with one Portuguese line; the next --resume counts no recovery attempt, so any number of
Ctrl-C's never make the run "failed", and it still ends with exactly one email.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from harness.cli_text import INTERRUPTED
from tests.durability_checks import (
    REPO_ROOT,
    final_run_problems,
    fork_harness,
    harness_env,
    wait_child,
    wait_child_stopped,
    wait_until_stopped,
)
from tests.test_crash_matrix import EMAIL_TURN_PASS

MOMENTS = sorted(EMAIL_TURN_PASS.items())


def as_from_a_terminal():
    """A fresh `python -m harness` gets Python's own SIGINT handler: KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.default_int_handler)


def interrupted_run(run_dir, store_case, output, label, number, *extra):
    """`run` (or `run --resume`) frozen at the ``number``-th pass of ``label``, then Ctrl-C."""
    args = ["run", "--scenario", "team-email", "--workdir", str(run_dir), *store_case.cli_args(run_dir), *extra]
    pid = fork_harness(args, {"CRASH_AFTER": f"{label}:{number}", "CRASH_MODE": "stop"}, output,
                       in_child=as_from_a_terminal)
    wait_child_stopped(pid)
    os.kill(pid, signal.SIGINT)
    os.kill(pid, signal.SIGCONT)
    return wait_child(pid)


def resume(run_dir, store_case, output):
    args = ["run", "--workdir", str(run_dir), "--resume", *store_case.cli_args(run_dir)]
    return wait_child(fork_harness(args, {}, output))


@pytest.mark.slow
@pytest.mark.parametrize("label, number", MOMENTS, ids=[label for label, _ in MOMENTS])
def test_ctrl_c_at_any_step_pauses_the_run_and_is_not_a_crash(tmp_path, store_case, label, number):
    run_dir, output = tmp_path / "run", tmp_path / "output.txt"
    assert interrupted_run(run_dir, store_case, output, label, number) == INTERRUPTED, output.read_text()
    lines = [line for line in output.read_text().splitlines() if "Ctrl-C" in line or "Traceback" in line]
    assert len(lines) == 1 and "interrompida (Ctrl-C)" in lines[0] and "--resume" in lines[0], output.read_text()
    with store_case.open(run_dir) as store:
        state = store.load()
        assert state["status"] == "paused" and state["recovery_attempts"] == 0, state["status_reason"]
        lease = store.read_lease()
        assert lease is None or lease["released"], lease
    assert resume(run_dir, store_case, output) == 0, output.read_text()
    with store_case.open(run_dir) as store:
        assert store.load()["recovery_attempts"] == 0
        assert final_run_problems(run_dir, store=store) == []


@pytest.mark.slow
def test_four_ctrl_c_in_a_row_never_make_the_run_failed(tmp_path, store_case):
    """Each Ctrl-C lands before the email turn's model answer, so no turn is ever completed twice in
    a row: were they counted as crashes, the fourth would mark the run failed."""
    run_dir, output = tmp_path / "run", tmp_path / "output.txt"
    assert interrupted_run(run_dir, store_case, output, "after-model-response", 2) == INTERRUPTED, output.read_text()
    for _ in range(4):
        assert interrupted_run(run_dir, store_case, output, "after-model-response", 1, "--resume") == INTERRUPTED, \
            output.read_text()
        with store_case.open(run_dir) as store:
            state = store.load()
        assert (state["status"], state["recovery_attempts"]) == ("paused", 0), output.read_text()
    assert resume(run_dir, store_case, output) == 0, output.read_text()
    with store_case.open(run_dir) as store:
        assert store.load()["status"] == "completed"
        assert final_run_problems(run_dir, store=store) == []


def start_as_typed(args, env) -> subprocess.Popen:
    """`python -m harness ARGS` as a command typed in a terminal starts: with SIGINT at its default.
    A shell starts background jobs (and so, maybe, this test run) with SIGINT ignored, and a child
    inherits that; then it would never see the Ctrl-C this file sends."""
    return subprocess.Popen([sys.executable, "-m", "harness", *args], env=env, cwd=REPO_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


@pytest.mark.slow
def test_ctrl_c_to_a_real_python_m_harness_is_one_line_and_exit_130(tmp_path):
    run_dir = tmp_path / "run"
    process = start_as_typed(["run", "--scenario", "team-email", "--workdir", str(run_dir)],
                             harness_env(crash_after="after-save-A:2", crash_mode="stop"))
    wait_until_stopped(process)
    process.send_signal(signal.SIGINT)
    process.send_signal(signal.SIGCONT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == INTERRUPTED
    assert err.splitlines() == [
        "interrompida (Ctrl-C): a execução ficou pausada no turno 2 (não conta como queda); continue com: "
        f"python -m harness run --resume --workdir {run_dir}"], err


def status_lines(run_dir, store_case, output):
    output.write_text("")
    args = ["status", "--workdir", str(run_dir), *store_case.cli_args(run_dir)]
    assert wait_child(fork_harness(args, {}, output)) == 0, output.read_text()
    return [line for line in output.read_text().splitlines() if line.startswith("posse:")]


@pytest.mark.slow
def test_status_tells_a_lease_left_by_a_killed_process_from_one_in_use(tmp_path, store_case):
    run_dir, output = tmp_path / "run", tmp_path / "output.txt"
    args = ["run", "--scenario", "team-email", "--workdir", str(run_dir), *store_case.cli_args(run_dir)]
    pid = fork_harness(args, {"CRASH_AFTER": "after-save-A:2", "CRASH_MODE": "stop"}, output)
    wait_child_stopped(pid)
    [line] = status_lines(run_dir, store_case, output)
    assert line.endswith(f"{pid}, em uso"), line  # frozen, but alive: still its owner's
    os.kill(pid, signal.SIGKILL)
    assert wait_child(pid) == -signal.SIGKILL
    [line] = status_lines(run_dir, store_case, output)
    assert line.endswith(f"abandonada: o processo {pid} desta máquina, que a tinha, morreu; o próximo comando a "
                         "assume"), line
    assert resume(run_dir, store_case, output) == 0, output.read_text()
    [line] = status_lines(run_dir, store_case, output)
    assert line.endswith("liberada"), line


def test_ctrl_c_while_the_sdk_is_still_loading_is_one_line_and_exit_130(tmp_path):
    """The first seconds of `run` go to `import anthropic`: a Ctrl-C there is no traceback either.

    Python's import timer reports each finished import on stderr; the SIGINT goes out the moment
    the command's own first module is in, so it lands while the SDK is loading (before any run).
    """
    run_dir = tmp_path / "run"
    process = start_as_typed(["run", "--scenario", "team-email", "--workdir", str(run_dir)],
                             {**harness_env(), "PYTHONPROFILEIMPORTTIME": "1"})
    seen = []
    for line in process.stderr:
        seen.append(line)
        if line.rstrip().endswith("harness.cli_text"):
            process.send_signal(signal.SIGINT)
            break
    assert seen and seen[-1].rstrip().endswith("harness.cli_text"), "".join(seen[-5:])
    out, err = process.communicate(timeout=60)
    imports = [line for line in err.splitlines() if line.startswith("import time:")]
    assert not any(line.rstrip().endswith("harness.runner") for line in imports), "the run had already loaded"
    said = [line for line in err.splitlines() if line.strip() and not line.startswith("import time:")]
    assert (process.returncode, said) == (INTERRUPTED, ["interrompido (Ctrl-C)."]), err[-2000:]
    assert out == "" and not run_dir.exists()
