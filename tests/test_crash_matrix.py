"""The crash matrix: the team-email run killed at every labelled step, in real processes.

- `python -m harness run` subprocesses crashed at every label in CRASH_LABELS, by
  SimulatedCrash (exit 137) and by a real SIGKILL (CRASH_MODE=kill), then resumed: at
  FRESH_LABEL in new interpreters, at the others in processes the warm interpreter forks
  (tests/warm_python.py: each runs `python -m harness` at its top level, without the 1.5 s of
  imports a new interpreter pays);
- the same at every pass of every label, in forked children (same code path, no
  interpreter start-up), plus a resume whose model script differs from the crashed one;
- the interruption cases of the pause-and-resume article, each as a named test:
  before the call, after the receipt, between send and receipt, waiting for approval,
  version change, two workers, cancel while paused.

The forked matrix and the racing workers run on every store (files, SQLite, PostgreSQL);
the SQL stores also crash and resume as `python -m harness --store ...` processes (fresh at
FRESH_LABEL),
and show a stale worker's write refused by the database with the worker's own check disabled.

Every request the fake endpoint receives, from every process, is logged (HARNESS_ENDPOINT_LOG)
and validated: the model never receives an orphan tool_use.
"""
from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from harness.cli_endpoint import ENDPOINT_LOG_ENV
from harness.crash import CRASH_LABELS, EXIT_CODE_KILLED
from harness.effects import EFFECTS_FILE, load_effects
from harness.exit_codes import EXIT_CODES, EXIT_LEASE_HELD, EXIT_LEASE_LOST
from harness.lifecycle import CHECKPOINT_FILE, MAX_RECOVERY_ATTEMPTS, load_run_checkpoint, read_lease
from tests.durability_checks import (
    emails,
    final_run_problems,
    fork_harness,
    harness_env,
    logged_requests,
    orphan_problems,
    run_forked,
    start_harness,
    wait_child,
    wait_child_stopped,
    world,
)
from tests.stores_support import FILES_CASE
from tests.test_runner import TEAM_EMAIL_PASSES
from tests.warm_python import start_python

# The pass of each label that falls in the email turn (turn 2), where a crash hurts most.
EMAIL_TURN_PASS = {
    "after-model-response": 2,   # the model chose send_email; nothing saved yet
    "after-save-A": 2,           # the call is saved as pending; not started
    "after-tool-run": 1,         # the email went out; no receipt yet
    "after-effect-write": 1,     # the receipt is in the ledger; the checkpoint still says pending
    "after-save-B": 2,           # the result is saved
    "mid-checkpoint-write": 3,   # point A of turn 2 half-written: the .tmp exists, no rename
}
MODES = {"simulated": None, "sigkill": "kill"}
# The label whose crash and resume run in new interpreters (the email sent, no receipt yet: the
# crash the course is about); the rest run in the warm interpreter's children.
FRESH_LABEL = "after-tool-run"
KILLED = {"simulated": EXIT_CODE_KILLED, "sigkill": -signal.SIGKILL}


def run_args(run_dir, *extra, scenario="team-email", store_case=FILES_CASE):
    return ["run", "--scenario", scenario, "--workdir", str(run_dir), *store_case.cli_args(run_dir), *extra]


def run_problems(store_case, run_dir, log):
    with store_case.open(run_dir) as store:
        return final_run_problems(run_dir, log, store=store)


def pids_in(log_path):
    return {request["pid"] for request in logged_requests(log_path)}


def file_snapshot(run_dir):
    return {str(path.relative_to(run_dir)): path.read_bytes() for path in Path(run_dir).rglob("*")
            if path.is_file() and path.name not in ("lease.json", "lease.lock")}


# --- the acceptance matrix: real `python -m harness` processes -------------------------------------

def start_harness_process(label, args, env):
    """``python -m harness ARGS``: a new interpreter at FRESH_LABEL, a warm child elsewhere."""
    if label == FRESH_LABEL:
        return start_harness(args, env)
    return start_python(["-m", "harness", *args], env=env)


def crash_and_resume_in_real_processes(tmp_path, label, store_case=FILES_CASE):
    """Both crash modes of one label side by side (two processes at a time, one per core), then
    two resuming processes: each must complete with one email and agreeing records."""
    spec = f"{label}:{EMAIL_TURN_PASS[label]}"
    cases = {mode: (tmp_path / mode / "run", tmp_path / mode / "requests.jsonl") for mode in MODES}
    # A database store's turn keeps a scratch folder. A TMPDIR for each mode keeps every other
    # process, each of which sweeps what dead ones left, away from the folder this test watches,
    # and what a killed process leaves goes away with this test's folder.
    watch_scratch = store_case.kind != "files" and label == FRESH_LABEL  # killed inside the tool phase
    scratch_roots = {mode: tmp_path / mode / "tmp" for mode in MODES}

    def env(mode, *args):
        scratch_roots[mode].mkdir(parents=True, exist_ok=True)
        return {**harness_env(*args), "TMPDIR": str(scratch_roots[mode])}

    crashing = {mode: start_harness_process(label, run_args(run_dir, store_case=store_case),
                                            env(mode, log, spec, MODES[mode]))
                for mode, (run_dir, log) in cases.items()}
    left_scratch = []
    for mode, process in crashing.items():
        out, err = process.communicate(timeout=120)
        assert process.returncode == KILLED[mode], f"{mode}: {err}"
        run_dir, _ = cases[mode]
        with store_case.open(run_dir) as store:
            assert store.load()["status"] == "running"
        if watch_scratch:
            scratch = sorted(scratch_roots[mode].glob(f"turno-{process.pid}-*"))
            # A simulated crash unwinds through the phase's `finally`; SIGKILL leaves the folder behind.
            assert bool(scratch) == (mode == "sigkill"), f"{mode}: {scratch}"
            left_scratch += scratch

    resuming = {mode: start_harness_process(label, run_args(run_dir, "--resume", store_case=store_case),
                                            env(mode, log))
                for mode, (run_dir, log) in cases.items()}
    for mode, process in resuming.items():
        out, err = process.communicate(timeout=120)
        run_dir, log = cases[mode]
        assert process.returncode == 0, f"{mode}: {err}"
        assert "status=completed" in out
        assert run_problems(store_case, run_dir, log) == [], mode
        assert len(pids_in(log)) == 2, mode  # the crashed and the resumed process both asked the model
    # The resumed processes' first turns swept what the killed ones left, lock files too.
    assert [path for path in left_scratch if os.path.lexists(path) or os.path.lexists(f"{path}.dono")] == []


@pytest.mark.slow
@pytest.mark.parametrize("label", CRASH_LABELS)
def test_subprocess_crash_at_every_label_then_resume(tmp_path, label):
    crash_and_resume_in_real_processes(tmp_path, label)


def test_every_label_is_covered_by_the_subprocess_matrix():
    assert set(EMAIL_TURN_PASS) == set(CRASH_LABELS) and FRESH_LABEL in CRASH_LABELS
    assert all(1 <= EMAIL_TURN_PASS[label] <= TEAM_EMAIL_PASSES[label] for label in CRASH_LABELS)


# --- every pass of every label, in forked children ------------------------------------------------

FULL_MATRIX = [(label, n, mode) for label in CRASH_LABELS for n in range(1, TEAM_EMAIL_PASSES[label] + 1)
               for mode in MODES]


def crash_then_resume_forked(tmp_path, spec, mode, resume_scenario="team-email", store_case=FILES_CASE):
    run_dir, log, out = tmp_path / "run", tmp_path / "requests.jsonl", tmp_path / "output.txt"
    env = {ENDPOINT_LOG_ENV: str(log), "CRASH_AFTER": spec}
    if MODES[mode]:
        env["CRASH_MODE"] = MODES[mode]
    code = run_forked(run_args(run_dir, store_case=store_case), env, out)
    assert code == KILLED[mode], out.read_text()
    code = run_forked(run_args(run_dir, "--resume", scenario=resume_scenario, store_case=store_case),
                      {ENDPOINT_LOG_ENV: str(log)}, out)
    assert code == 0, out.read_text()
    return run_dir, log


@pytest.mark.slow
def test_forked_crash_at_every_pass_of_every_label(tmp_path, store_case):
    failures = {}
    for label, n, mode in FULL_MATRIX:
        case = tmp_path / f"{label}-{n}-{mode}"
        case.mkdir()
        run_dir, log = crash_then_resume_forked(case, f"{label}:{n}", mode, store_case=store_case)
        problems = run_problems(store_case, run_dir, log)
        if problems:
            failures[f"{label}:{n} {mode}"] = problems
    assert failures == {}
    assert len(FULL_MATRIX) == 2 * sum(TEAM_EMAIL_PASSES.values())


@pytest.mark.slow
@pytest.mark.parametrize("label", ["after-tool-run", "mid-checkpoint-write"])
def test_a_database_store_survives_a_crash_of_a_real_process(tmp_path, sql_store_case, label):
    """`python -m harness run --store sqlite|postgresql://...` killed inside the email turn (the
    effect staged, and the transaction of point A open), then resumed by new processes (new
    interpreters at FRESH_LABEL)."""
    crash_and_resume_in_real_processes(tmp_path, label, sql_store_case)


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_a_different_model_response_after_resume_is_still_safe(tmp_path, mode):
    """The article: repeat with a different model response. After the crash the model (script
    team-email-variant) words the email differently, uses other tool_use ids and adds a ticket:
    safety must not depend on the model repeating the crashed process's choices."""
    failures = {}
    for label, n in EMAIL_TURN_PASS.items():
        case = tmp_path / label
        case.mkdir()
        run_dir, log = crash_then_resume_forked(case, f"{label}:{n}", mode, "team-email-variant")
        problems = final_run_problems(run_dir, log)
        tickets = world(run_dir).tickets()
        if len(tickets) != 1:
            problems.append(f"{len(tickets)} tickets, expected 1")
        if problems:
            failures[label] = problems
    assert failures == {}


def test_the_variant_really_answers_differently(tmp_path):
    """Guard for the test above: after a crash before the email was saved, the resumed
    model sends ITS email (another id, another subject), and only that one."""
    run_dir, _ = crash_then_resume_forked(tmp_path, "after-model-response:2", "simulated", "team-email-variant")
    [email] = emails(run_dir)
    assert email["idempotency_key"] == "toolu_02TV2" and email["subject"] == "Resumo da semana"


# --- the article's cases, one named test each -------------------------------------------------------

class Commands:
    """`python -m harness ...` commands on one run folder, each in a forked child process
    (the same `main` as the subprocess, without paying the interpreter start-up again).
    Each process writes its own output file, so what one says never mixes with another."""

    def __init__(self, tmp_path, store_case=FILES_CASE):
        self.store_case = store_case
        self.folder = tmp_path
        self.run_dir = tmp_path / "run"
        self.log = tmp_path / "requests.jsonl"
        self.output = ""
        self._outputs = {}
        self._count = 0

    def _env(self, crash, mode):
        env = {ENDPOINT_LOG_ENV: str(self.log)}
        if crash:
            env["CRASH_AFTER"] = crash
        if mode:
            env["CRASH_MODE"] = mode
        return env

    def start(self, *extra, crash=None, mode=None, command=None):
        self._count += 1
        out = self.folder / f"output-{self._count:02d}.txt"
        args = ([command, "--workdir", str(self.run_dir), *self.store_case.cli_args(self.run_dir), *extra] if command
                else run_args(self.run_dir, *extra, store_case=self.store_case))
        pid = fork_harness(args, self._env(crash, mode) if not command else {}, out)
        self._outputs[pid] = out
        return pid

    def finish(self, pid):
        code = wait_child(pid)
        out = self._outputs.pop(pid)
        self.output = out.read_text(encoding="utf-8") if out.exists() else ""
        return code

    def run(self, *extra, crash=None, mode=None):
        return self.finish(self.start(*extra, crash=crash, mode=mode))

    def command(self, name, *extra):
        return self.finish(self.start(*extra, command=name))

    def state(self):
        return load_run_checkpoint(self.run_dir / CHECKPOINT_FILE)


@pytest.mark.slow
def test_article_before_the_call(tmp_path):
    """Killed with the send_email call saved as pending, before it started: resume sends it once."""
    h = Commands(tmp_path)
    assert h.run(crash="after-save-A:2", mode="kill") == -signal.SIGKILL
    assert [call["name"] for call in h.state()["pending_tool_use"]] == ["send_email"]
    assert load_effects(h.run_dir / EFFECTS_FILE) == {} and emails(h.run_dir) == []
    assert h.run("--resume") == 0, h.output
    [email] = emails(h.run_dir)
    assert email["idempotency_key"] == "toolu_01TE2"
    assert final_run_problems(h.run_dir, h.log) == []


@pytest.mark.slow
def test_article_after_the_receipt(tmp_path):
    """Killed after the receipt was recorded: resume reuses the receipt and sends nothing."""
    h = Commands(tmp_path)
    assert h.run(crash="after-effect-write:1", mode="kill") == -signal.SIGKILL
    receipt = load_effects(h.run_dir / EFFECTS_FILE)["toolu_01TE2"]
    assert receipt["status"] == "committed" and len(emails(h.run_dir)) == 1
    assert h.state()["pending_tool_use"][0]["id"] == "toolu_01TE2"
    outbox_before = world(h.run_dir).outbox_path.read_bytes()
    assert h.run("--resume") == 0, h.output
    answer = h.state()["messages"][4]["content"][0]
    assert answer["content"] == receipt["result"]["content"]  # the recorded result, not a new run
    assert world(h.run_dir).outbox_path.read_bytes() == outbox_before
    assert final_run_problems(h.run_dir, h.log) == []


@pytest.mark.slow
def test_article_between_send_and_receipt(tmp_path):
    """Killed after the email went out, before the receipt: resume asks the outbox first."""
    h = Commands(tmp_path)
    assert h.run(crash="after-tool-run:1", mode="kill") == -signal.SIGKILL
    assert load_effects(h.run_dir / EFFECTS_FILE)["toolu_01TE2"]["status"] == "intent"
    assert len(emails(h.run_dir)) == 1
    assert h.run("--resume") == 0, h.output
    answer = h.state()["messages"][4]["content"][0]
    assert "confirmado no sistema externo" in answer["content"] and answer["is_error"] is False
    assert load_effects(h.run_dir / EFFECTS_FILE)["toolu_01TE2"]["status"] == "committed"
    assert final_run_problems(h.run_dir, h.log) == []


@pytest.mark.slow
def test_article_waiting_for_approval(tmp_path):
    """The request survives restarts and keeps its input; once approved, a kill in the middle
    of the approved send still ends with one email."""
    h = Commands(tmp_path)
    assert h.run("--approval") == EXIT_CODES["waiting_for_approval"], h.output
    pending = h.state()["pending_approval"]
    assert pending["name"] == "send_email" and len(pending["input_hash"]) == 64

    requests_before = len(logged_requests(h.log))
    assert h.run("--resume", crash="after-model-response:1", mode="kill") == EXIT_CODES["waiting_for_approval"]
    assert len(logged_requests(h.log)) == requests_before and emails(h.run_dir) == []
    kept = h.state()["pending_approval"]
    assert {key: kept[key] for key in ("id", "name", "input", "input_hash")} == \
        {key: pending[key] for key in ("id", "name", "input", "input_hash")}

    assert h.command("status") == 0 and "aguarda aprovação: send_email (toolu_01TE2)" in h.output
    assert h.command("approve", "--by", "ana") == 0, h.output
    assert h.run("--resume", crash="after-tool-run:1", mode="kill") == -signal.SIGKILL
    assert len(emails(h.run_dir)) == 1
    assert h.run("--resume") == 0, h.output
    assert final_run_problems(h.run_dir, h.log) == []


@pytest.mark.slow
def test_article_version_change(tmp_path):
    """A v1 checkpoint is migrated explicitly; an unknown version is refused naming both."""
    h = Commands(tmp_path)
    assert h.run(crash="after-save-B:1") == EXIT_CODE_KILLED
    scene = json.loads((h.run_dir / "checkpoints" / "turn-001-B.json").read_text())
    assert scene["version"] == 1
    (h.run_dir / CHECKPOINT_FILE).write_text(json.dumps(scene))  # what a v1 harness left behind

    future = Commands(tmp_path / "future")
    future.run_dir.mkdir(parents=True)
    (future.run_dir / CHECKPOINT_FILE).write_text(json.dumps(dict(scene, version=9)))
    before = (future.run_dir / CHECKPOINT_FILE).read_bytes()
    assert future.run("--resume") == 2
    assert "o arquivo é v9" in future.output and "v1" in future.output and "v2" in future.output
    assert (future.run_dir / CHECKPOINT_FILE).read_bytes() == before

    assert h.run("--resume") == 0, h.output
    assert json.loads((h.run_dir / CHECKPOINT_FILE).read_text())["version"] == 2
    assert h.state()["migrated_from"] == 1
    assert final_run_problems(h.run_dir, h.log) == []


@pytest.mark.slow
def test_article_two_workers_only_one_proceeds(tmp_path):
    """Worker A holds the run (frozen mid-turn); worker B's resume is refused without touching
    anything; A then finishes alone."""
    h = Commands(tmp_path)
    worker_a = h.start(crash="after-save-A:2", mode="stop")
    try:
        wait_child_stopped(worker_a)
        before = file_snapshot(h.run_dir)
        assert h.run("--resume") == EXIT_LEASE_HELD
        assert f":{worker_a}," in h.output and "só um worker por vez" in h.output
        assert file_snapshot(h.run_dir) == before
    finally:
        os.kill(worker_a, signal.SIGCONT)
    assert h.finish(worker_a) == 0, h.output
    assert pids_in(h.log) == {worker_a}
    assert final_run_problems(h.run_dir, h.log) == []


@pytest.mark.slow
def test_article_two_workers_stale_one_cannot_write(tmp_path):
    """Worker A freezes past its lease; B takes over with a higher fencing token and finishes.
    When A wakes up, the fence stops it: not one byte of the run changes."""
    h = Commands(tmp_path)
    worker_a = h.start("--lease-seconds", "0.5", crash="after-save-A:2", mode="stop")
    try:
        wait_child_stopped(worker_a)
        token_a = read_lease(h.run_dir)["token"]
        time.sleep(0.6)  # A's lease expires while it is frozen
        assert h.run("--resume") == 0, h.output
        assert read_lease(h.run_dir)["token"] == token_a + 1
        after_b = file_snapshot(h.run_dir)
    finally:
        os.kill(worker_a, signal.SIGCONT)
    assert h.finish(worker_a) == EXIT_LEASE_LOST, h.output
    assert f"token {token_a}," in h.output and f"token {token_a + 1}" in h.output
    assert file_snapshot(h.run_dir) == after_b
    assert final_run_problems(h.run_dir, h.log) == []


@pytest.mark.slow
def test_article_cancel_while_paused(tmp_path):
    """A paused run is cancelled; resuming it is refused every time and touches nothing."""
    h = Commands(tmp_path)
    assert h.run("--max-turns", "1") == EXIT_CODES["paused"], h.output
    assert h.command("cancel", "--reason", "tarefa desistida") == 0 and "cancelada" in h.output
    before, requests_before = file_snapshot(h.run_dir), len(logged_requests(h.log))
    for _ in range(2):
        assert h.run("--resume") == EXIT_CODES["cancelled"]
        assert "tarefa desistida" in h.output
    assert file_snapshot(h.run_dir) == before and len(logged_requests(h.log)) == requests_before
    assert h.state()["status"] == "cancelled" and emails(h.run_dir) == []


@pytest.mark.slow
def test_cancel_while_a_worker_runs_stops_it_at_the_next_turn(tmp_path):
    h = Commands(tmp_path)
    worker = h.start(crash="after-save-B:1", mode="stop")
    try:
        wait_child_stopped(worker)
        assert h.command("cancel") == 0 and "próxima fronteira de turno" in h.output
    finally:
        os.kill(worker, signal.SIGCONT)
    assert h.finish(worker) == EXIT_CODES["cancelled"], h.output
    state = h.state()
    assert state["status"] == "cancelled" and state["turns"] == 1 and emails(h.run_dir) == []
    assert orphan_problems(h.log) == []


# --- more than one worker, more than one crash ------------------------------------------------------

@pytest.mark.slow
def test_two_workers_racing_to_resume_only_one_talks_to_the_model(tmp_path, store_case):
    for round_number in range(8):
        case = tmp_path / f"round-{round_number}"
        run_dir, log, out = case / "run", case / "requests.jsonl", case / "output.txt"
        case.mkdir()
        env = {ENDPOINT_LOG_ENV: str(log), "CRASH_AFTER": "after-tool-run:1", "CRASH_MODE": "kill"}
        assert run_forked(run_args(run_dir, store_case=store_case), env, out) == -signal.SIGKILL
        crashed_pids = pids_in(log)
        resume = run_args(run_dir, "--resume", store_case=store_case)
        first = fork_harness(resume, {ENDPOINT_LOG_ENV: str(log)}, out)
        second = fork_harness(resume, {ENDPOINT_LOG_ENV: str(log)}, out)
        codes = sorted([wait_child(first), wait_child(second)])
        assert codes in ([0, 0], [0, EXIT_LEASE_HELD]), out.read_text()
        assert len(pids_in(log) - crashed_pids) == 1  # the other one never reached the model
        assert run_problems(store_case, run_dir, log) == []


def database_snapshot(store):
    return store.load(), store.points(), store.effects(), store.approvals(), store.world().emails()


@pytest.mark.slow
def test_a_stale_worker_is_refused_by_the_database_with_its_own_check_disabled(tmp_path, sql_store_case,
                                                                               monkeypatch):
    """Worker A freezes right after its send_email ran (staged, not committed) and its lease
    expires; B takes over and finishes. A's own token checks are switched off before it is
    forked (renewing never looks, the store never compares tokens), so when A wakes nothing in
    the worker stops it: the database's trigger refuses A's write, A stops with exit 5, and not
    one row of the run changes. The team still gets exactly one email."""
    from harness.stores.sql import SqlStore

    monkeypatch.setattr(SqlStore, "renew_lease", lambda self, lease, seconds=None: lease)
    monkeypatch.setattr(SqlStore, "_check_token", lambda self, lease, record: None)
    h = Commands(tmp_path, store_case=sql_store_case)
    worker_a = h.start("--lease-seconds", "0.5", crash="after-tool-run:1", mode="stop")
    try:
        wait_child_stopped(worker_a)
        time.sleep(0.6)  # A's lease expires while it is frozen
        assert h.run("--resume") == 0, h.output
        with sql_store_case.open(h.run_dir) as store:
            after_b = database_snapshot(store)
            token_b = store.read_lease()["token"]
    finally:
        os.kill(worker_a, signal.SIGCONT)
    assert h.finish(worker_a) == EXIT_LEASE_LOST, h.output
    assert "o banco recusou a escrita do token" in h.output and "cerca: token de posse recusado" in h.output
    with sql_store_case.open(h.run_dir) as store:
        assert database_snapshot(store) == after_b
        assert store.read_lease()["token"] == token_b
        assert len(store.world().emails()) == 1
    assert run_problems(sql_store_case, h.run_dir, h.log) == []


@pytest.mark.slow
def test_recovery_attempts_end_a_run_killed_on_every_resume(tmp_path):
    run_dir, log, out = tmp_path / "run", tmp_path / "requests.jsonl", tmp_path / "output.txt"
    poison = {ENDPOINT_LOG_ENV: str(log), "CRASH_AFTER": "after-model-response:1", "CRASH_MODE": "kill"}
    assert run_forked(run_args(run_dir), dict(poison, CRASH_AFTER="after-model-response:2"), out) == -9
    for attempt in range(1, MAX_RECOVERY_ATTEMPTS + 1):
        assert run_forked(run_args(run_dir, "--resume"), poison, out) == -signal.SIGKILL
        assert load_run_checkpoint(run_dir / CHECKPOINT_FILE)["recovery_attempts"] == attempt
    requests_before = len(logged_requests(log))
    assert run_forked(run_args(run_dir, "--resume"), poison, out) == EXIT_CODES["failed"]
    assert run_forked(run_args(run_dir, "--resume"), {ENDPOINT_LOG_ENV: str(log)}, out) == EXIT_CODES["failed"]
    state = load_run_checkpoint(run_dir / CHECKPOINT_FILE)
    assert state["status"] == "failed" and f"limite: {MAX_RECOVERY_ATTEMPTS}" in state["status_reason"]
    assert len(logged_requests(log)) == requests_before and emails(run_dir) == []
    assert orphan_problems(log) == []
