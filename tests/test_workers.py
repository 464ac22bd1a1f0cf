"""Many workers on PostgreSQL: `python -m harness submit` queues runs, `python -m harness worker` takes them.

The acceptance test: four worker processes share fifty runs while the test SIGKILLs workers
at random moments and starts new ones in their place. Every run must complete, each with
exactly one email, a ledger that agrees with its scene, and no orphan tool_use ever sent to
the model. A second test shows a run whose worker vanished on another machine coming back
to the queue when its lease expires.
"""
from __future__ import annotations

import os
import random
import signal
import time

import pytest

from harness.cli_endpoint import ENDPOINT_LATENCY_ENV, ENDPOINT_LOG_ENV
from harness.scenarios import load_scenario
from harness.stores.postgres import PostgresStore, connect
from harness.worker import submit_run, work
from tests.durability_checks import final_run_problems, fork_harness, orphan_problems, wait_child

TEAM_EMAIL = load_scenario("team-email")
RUNS = 50
WORKERS = 4
TIME_BUDGET = 300.0   # seconds: the test fails (it does not hang) if the runs are not done by then
# Each model call waits this long, as a real one does for seconds: a worker then spends most of
# its run waiting, so a kill lands inside a run on a fast machine as on a slow one.
MODEL_LATENCY = "0.1"
DEFAULT_SEED = 20261130


def statuses(dsn, prefix):
    with connect(dsn) as connection:
        rows = connection.execute("SELECT run, status FROM runs WHERE run LIKE %s", (prefix + "%",)).fetchall()
    return dict(rows)


def start_worker(dsn, tmp_path, number, log):
    out = tmp_path / f"worker-{number:03d}.txt"
    args = ["worker", "--store", dsn, "--workdir", str(tmp_path / f"w{number:03d}"), "--lease-seconds", "3",
            "--max-recovery-attempts", "50", "--idle-exit", "2"]
    return fork_harness(args, {ENDPOINT_LOG_ENV: str(log), ENDPOINT_LATENCY_ENV: MODEL_LATENCY}, out)


def assert_killed_or_left_idle(pid, output):
    """A worker the test SIGKILLed died of the signal, or had just left on its own (`--idle-exit`,
    exit 0) before the signal landed; any other end is the worker's own failure."""
    code = wait_child(pid)
    if code not in (-signal.SIGKILL, 0):
        shown = output.read_text(encoding="utf-8", errors="replace")[-2000:] if output.exists() else "(no output)"
        raise AssertionError(f"worker {pid} ended with code {code} before it was killed:\n{shown}")


@pytest.mark.parametrize("end, fails", [("kill", False), ("idle", False), ("error", True)])
def test_a_worker_that_failed_on_its_own_is_not_taken_for_a_kill(end, fails, tmp_path):
    pid = os.fork()
    if pid == 0:  # a stand-in worker: waits to be killed, leaves idle, or fails by itself
        if end == "kill":
            time.sleep(60)
        os._exit(0 if end == "idle" else 1)
    if end != "kill":
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # it has ended before the signal, as an idle worker may
    os.kill(pid, signal.SIGKILL)
    if fails:
        with pytest.raises(AssertionError, match="ended with code 1"):
            assert_killed_or_left_idle(pid, tmp_path / "none.txt")
    else:
        assert_killed_or_left_idle(pid, tmp_path / "none.txt")


@pytest.mark.slow
def test_four_workers_killed_at_random_finish_fifty_runs_with_one_email_each(own_postgres_dsn, tmp_path):
    postgres_dsn = own_postgres_dsn
    seed = int(os.environ.get("WORKERS_SEED", DEFAULT_SEED))
    rng = random.Random(seed)
    prefix = f"lote-{os.getpid()}-"
    runs = [submit_run(postgres_dsn, TEAM_EMAIL, run=f"{prefix}{number:03d}") for number in range(RUNS)]
    log = tmp_path / "requests.jsonl"
    started_workers = 0
    workers, numbers = [], []  # the pid in each slot, and the number its output file is named by
    for _ in range(WORKERS):
        workers.append(start_worker(postgres_dsn, tmp_path, started_workers, log))
        numbers.append(started_workers)
        started_workers += 1
    kills, started = 0, time.monotonic()
    try:
        while time.monotonic() - started < TIME_BUDGET:
            pending = [run for run, status in statuses(postgres_dsn, prefix).items() if status != "completed"]
            if not pending:
                break
            time.sleep(rng.uniform(0.02, 0.3))  # often enough to land inside runs, whatever the machine's speed
            slot = rng.randrange(WORKERS)
            os.kill(workers[slot], signal.SIGKILL)
            assert_killed_or_left_idle(workers[slot], tmp_path / f"worker-{numbers[slot]:03d}.txt")
            kills += 1
            workers[slot] = start_worker(postgres_dsn, tmp_path, started_workers, log)
            numbers[slot] = started_workers
            started_workers += 1
    finally:
        for pid in workers:
            os.kill(pid, signal.SIGKILL)
            wait_child(pid)
    elapsed = time.monotonic() - started

    final = statuses(postgres_dsn, prefix)
    lost = sorted(run for run in runs if final.get(run) != "completed")
    problems, duplicates, reclaimed = {}, 0, 0
    for run in runs:
        with PostgresStore(postgres_dsn, run, tmp_path / "check" / run) as store:
            emails = store.world().emails()
            duplicates += max(0, len(emails) - 1)
            found = final_run_problems(tmp_path / "check" / run, store=store)
            if found:
                problems[run] = found
            reclaimed += store.read_lease()["token"] > 2  # submit took token 1; a worker token 2
    print(f"\nworkers seed={seed} runs={RUNS} workers={WORKERS} kills={kills} workers_started={started_workers} "
          f"elapsed={elapsed:.1f}s lost_runs={len(lost)} duplicate_emails={duplicates} runs_taken_over={reclaimed}")
    assert lost == [], f"runs not completed in {TIME_BUDGET:.0f} s: {lost}"
    assert duplicates == 0 and problems == {}, problems
    assert orphan_problems(log) == []
    assert kills >= 10, f"only {kills} kills: the test did not exercise recovery (seed {seed})"
    assert reclaimed >= 3, f"only {reclaimed} runs taken over from a killed worker (seed {seed})"
    assert reclaimed >= 1, "no run was ever taken over from a killed worker"


@pytest.mark.slow
def test_a_run_left_by_a_worker_on_another_machine_returns_when_its_lease_expires(own_postgres_dsn, tmp_path):
    postgres_dsn = own_postgres_dsn
    run = submit_run(postgres_dsn, TEAM_EMAIL, run=f"abandonada-{os.getpid()}")
    with connect(postgres_dsn) as connection:  # a worker elsewhere took it (token 2) and went silent
        connection.execute("UPDATE leases SET token = 2, owner = 'outra-maquina:77', host = 'outra-maquina', "
                           "pid = 77, released = 0, expires_at = %s WHERE run = %s", (time.time() + 1.5, run))
    said = []
    started = time.monotonic()
    handled = work(postgres_dsn, owner="resgate", lease_seconds=5, max_runs=1, idle_exit=10,
                   workdir=tmp_path / "w", say=said.append)
    waited = time.monotonic() - started
    assert handled == 1 and waited >= 1.0, (waited, said)  # it waited for the lease to expire
    with PostgresStore(postgres_dsn, run, tmp_path / "check") as store:
        assert store.load()["status"] == "completed"
        assert store.read_lease()["token"] == 3 and len(store.world().emails()) == 1
    assert any("peguei" in line and run in line for line in said)
