"""Shared checks and process utilities for the durability tests (runner, crash matrix, soak).

Every check returns a list of problems (empty = fine) so the soak test can count them,
and the other tests can assert on an empty list and see every problem at once.
"""
from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness.checkpoint import CheckpointError
from harness.cli_endpoint import ENDPOINT_LOG_ENV
from harness.display.crash_lab import wait_or_kill
from harness.effects import EffectsLedgerError
from harness.fake_endpoint import validate_messages
from harness.request_log import read_requests
from harness.runner import WORLD_DIR
from harness.stores import StoreError
from harness.stores.files import FileStore
from harness.tools import HIGH_IMPACT_TOOLS, Workspace

REPO_ROOT = Path(__file__).resolve().parent.parent


# --- What the world and the run's store say ----------------------------------------------------

def store_of(run_dir, store=None):
    """The store to read: the one given, or the lessons' files in ``run_dir``."""
    return store if store is not None else FileStore(run_dir)


def world(run_dir, store=None) -> Workspace:
    return store.world() if store is not None else Workspace(Path(run_dir) / WORLD_DIR)


def emails(run_dir, store=None) -> list[dict]:
    return world(run_dir, store).emails()


def logged_requests(log_path) -> list[dict]:
    """Every whole request the fake endpoint received, from every process, as {"pid", "body"}."""
    return read_requests(log_path)


def orphan_problems(log_path) -> list[str]:
    """The API's own 400 text for each logged request that would have been refused."""
    problems = []
    for number, request in enumerate(logged_requests(log_path)):
        error = validate_messages(request["body"]["messages"])
        if error:
            problems.append(f"request {number} (pid {request['pid']}): {error}")
    return problems


def _tool_blocks(messages, kind):
    return [block for message in messages if isinstance(message["content"], list)
            for block in message["content"] if block.get("type") == kind]


def ledger_problems(run_dir, store=None) -> list[str]:
    """The scene, the ledger, the sequence and the outbox must tell the same story."""
    store = store_of(run_dir, store)
    try:
        state = store.load()
        effects = store.effects()
        points = store.points()
        latest = store.read_point(points[-1].id) if points else None
    except (CheckpointError, EffectsLedgerError, StoreError) as error:
        return [f"unreadable: {error}"]
    if state is None:
        return ["no checkpoint"]
    problems = []
    uses = {block["id"]: block for block in _tool_blocks(state["messages"], "tool_use")}
    results = {block["tool_use_id"]: block for block in _tool_blocks(state["messages"], "tool_result")}
    pending = {call["id"] for call in state["pending_tool_use"] or []}
    for tool_use_id, use in uses.items():
        if use["name"] not in HIGH_IMPACT_TOOLS or tool_use_id in pending:
            continue
        record = effects.get(tool_use_id)
        result = results.get(tool_use_id)
        if result is None:
            problems.append(f"{tool_use_id}: tool_use without tool_result in a non-pending turn")
        elif record is None:
            if not (result.get("is_error") or result["content"].startswith("[dry-run]")):
                problems.append(f"{tool_use_id}: successful high-impact result with no ledger record")
        elif record["status"] not in ("committed", "rejected"):
            problems.append(f"{tool_use_id}: answered in the checkpoint but ledger says {record['status']}")
        elif (record["result"]["content"], record["result"]["is_error"]) != \
                (result["content"], bool(result.get("is_error"))):
            problems.append(f"{tool_use_id}: ledger result differs from the checkpoint's tool_result")
    for tool_use_id in effects:
        if tool_use_id not in uses:
            problems.append(f"{tool_use_id}: ledger record for a call the checkpoint never saw")
    committed_keys = {key for key, record in effects.items() if record["status"] == "committed"}
    for email in emails(run_dir, store):
        if email.get("idempotency_key") not in committed_keys and email.get("idempotency_key") not in pending:
            problems.append(f"email with key {email.get('idempotency_key')} has no committed receipt")
    if latest is not None and latest["messages"] != state["messages"]:
        problems.append(f"the latest sequence point {points[-1].id} and the latest scene disagree")
    return problems


def final_run_problems(run_dir, log_path=None, expected_emails=1, store=None) -> list[str]:
    """Everything a finished run must satisfy: completed, one email, ledger agrees, no orphan."""
    store = store_of(run_dir, store)
    problems = ledger_problems(run_dir, store)
    state = store.load() if not problems else None
    if state is not None and state["status"] != "completed":
        problems.append(f"status is {state['status']}, not completed")
    count = len(emails(run_dir, store))
    if count != expected_emails:
        problems.append(f"outbox holds {count} emails, expected {expected_emails}")
    if log_path is not None:
        problems += orphan_problems(log_path)
    return problems


# --- Processes ------------------------------------------------------------------------------

def harness_env(log_path=None, crash_after=None, crash_mode=None) -> dict:
    env = {key: value for key, value in os.environ.items()
           if key not in ("CRASH_AFTER", "CRASH_MODE", ENDPOINT_LOG_ENV)}
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    if log_path is not None:
        env[ENDPOINT_LOG_ENV] = str(log_path)
    if crash_after:
        env["CRASH_AFTER"] = crash_after
    if crash_mode:
        env["CRASH_MODE"] = crash_mode
    return env


def start_harness(args, env) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "harness", *args], env=env, cwd=REPO_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_until_stopped(process: subprocess.Popen, timeout=60.0) -> None:
    """Block until ``process`` froze itself (CRASH_MODE=stop); fail clearly if it exited instead."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            state = "gone"
        if state == "T":
            return
        if process.poll() is not None:
            out, err = process.communicate()
            raise AssertionError(f"process exited ({process.returncode}) instead of stopping:\n{out}\n{err}")
        time.sleep(0.02)
    process.kill()
    raise AssertionError("process did not reach its stop point in time")


SDK_MODULES = ("anthropic", "httpx2", "harness.model", "harness.fake_endpoint")


def fork_harness(args, env_updates=None, output_path=None, in_child=None) -> int:
    """Run ``harness.cli.main(args)`` in a forked child and return its pid.

    The child is a separate process with its own memory (it can be SIGKILLed like any
    other), but it skips the interpreter start-up and imports, so hundreds fit in a test.
    ``in_child`` runs in the child just before ``main`` (to plant a fault there, never here).
    """
    from harness import cli, crash

    # The harness imports the SDK only when a run makes its client. Imported here, before the fork,
    # every child inherits it; left to each child, each pays the 2 s import again (so a test file
    # run alone, with no other module having imported the SDK, took ten times as long).
    for module in SDK_MODULES:
        importlib.import_module(module)
    pid = os.fork()
    if pid:
        return pid
    code = 70
    try:
        if output_path is not None:
            descriptor = os.open(output_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.dup2(descriptor, 1)
            os.dup2(descriptor, 2)
            # pytest swapped sys.stdout/err for its capture files: point them at fd 1 and 2 again
            sys.stdout = open(1, "w", encoding="utf-8", buffering=1, closefd=False)
            sys.stderr = open(2, "w", encoding="utf-8", buffering=1, closefd=False)
        for key in ("CRASH_AFTER", "CRASH_MODE", ENDPOINT_LOG_ENV):
            os.environ.pop(key, None)
        os.environ.update(env_updates or {})
        crash.reset_crash_counts()
        if in_child is not None:
            in_child()
        code = cli.main(list(args))
    except BaseException as error:  # the child must never fall back into pytest
        try:
            os.write(2, f"child crashed: {error!r}\n".encode())
        finally:
            code = 71
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def wait_child(pid, timeout=60.0) -> int:
    """The child's exit code, or minus the signal that killed it (-9 for SIGKILL)."""
    code, killed = wait_or_kill(pid, timeout, poll=0.002)
    if killed:
        raise AssertionError(f"child {pid} did not finish in {timeout} s")
    return code


def run_forked(args, env_updates=None, output_path=None, timeout=60.0, in_child=None) -> int:
    return wait_child(fork_harness(args, env_updates, output_path, in_child), timeout)


# The calls through which a command changes files: a SIGKILL just before the n-th of them is a
# crash at the n-th step of whatever the command writes (a mkdir, a copy, an fsync, a rename...).
FILESYSTEM_CALLS = ("open", "mkdir", "rename", "replace", "unlink", "rmdir", "fsync", "sendfile", "utime",
                    "chmod", "symlink", "link")


def kill_before_filesystem_call(number, tally_path):
    """For ``in_child``: count every filesystem call in ``tally_path`` (one byte each) and SIGKILL
    the process right before call ``number`` (0: never, just count)."""
    import builtins

    tally = os.open(tally_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    write, kill, getpid = os.write, os.kill, os.getpid

    def counted(call):
        def step(*args, **kwargs):
            write(tally, b".")
            if number and os.fstat(tally).st_size >= number:
                kill(getpid(), signal.SIGKILL)
            return call(*args, **kwargs)
        return step

    for name in FILESYSTEM_CALLS:
        if hasattr(os, name):
            setattr(os, name, counted(getattr(os, name)))
    builtins.open = counted(builtins.open)


def filesystem_calls(tally_path) -> int:
    return Path(tally_path).stat().st_size if Path(tally_path).exists() else 0


def wait_child_stopped(pid, timeout=60.0) -> None:
    """Block until the forked child froze itself (CRASH_MODE=stop); fail if it exited instead."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG | os.WUNTRACED)
        if done and os.WIFSTOPPED(status):
            return
        if done:
            raise AssertionError(f"child exited ({os.waitstatus_to_exitcode(status)}) instead of stopping")
        time.sleep(0.005)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    raise AssertionError("child did not reach its stop point in time")
