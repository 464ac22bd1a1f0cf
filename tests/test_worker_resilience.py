"""PostgreSQL workers keep going when the database goes away or a worker freezes mid-transaction.

Two acceptance tests, each on a cluster of its own (the test restarts it):

- the server is restarted (`pg_ctl restart`) while four workers have runs in flight: no worker
  dies, each says one line about the outage, every run completes with exactly one email;
- a worker frozen by SIGSTOP inside its checkpoint transaction (3 s lease) does not keep the
  run: the server ends its idle session, another worker takes over within twice the lease, and
  the frozen worker, woken, writes nothing (its transaction is gone and its token is old).
"""
from __future__ import annotations

import os
import signal
import time

import pytest

from harness.cli_endpoint import ENDPOINT_LATENCY_ENV, ENDPOINT_LOG_ENV
from harness.scenarios import load_scenario
from harness.stores.local_postgres import LocalPostgres, unavailable_reason
from harness.stores.postgres import PostgresStore, connect, connection_lost
from harness.worker import Outage, submit_run
from tests.durability_checks import final_run_problems, fork_harness, orphan_problems, wait_child, wait_child_stopped

TEAM_EMAIL = load_scenario("team-email")
LEASE = 3.0
TIME_BUDGET = 180.0


@pytest.fixture
def own_server():
    reason = unavailable_reason()
    if reason:
        pytest.skip(f"PostgreSQL tests skipped: {reason}")
    with LocalPostgres() as server:
        yield server


def statuses(dsn, prefix):
    """Run -> status; None while the server does not answer (it is restarting)."""
    try:
        with connect(dsn) as connection:
            rows = connection.execute("SELECT run, status FROM runs WHERE run LIKE %s", (prefix + "%",)).fetchall()
    except Exception as error:  # noqa: BLE001
        if connection_lost(error):
            return None
        raise
    return dict(rows)


def lease_token(dsn, run):
    with connect(dsn) as connection:
        return connection.execute("SELECT token FROM leases WHERE run = %s", (run,)).fetchone()[0]


def start_worker(dsn, tmp_path, number, log, env=None, idle_exit="4"):
    out = tmp_path / f"worker-{number}.txt"
    args = ["worker", "--store", dsn, "--workdir", str(tmp_path / f"w{number}"), "--lease-seconds", str(LEASE),
            "--max-recovery-attempts", "50", "--idle-exit", idle_exit]
    return fork_harness(args, {ENDPOINT_LOG_ENV: str(log), ENDPOINT_LATENCY_ENV: "0.2", **(env or {})}, out), out


def check_runs(dsn, runs, tmp_path):
    problems = {}
    (tmp_path / "check").mkdir(exist_ok=True)
    for run in runs:
        with PostgresStore(dsn, run, tmp_path / "check" / run) as store:
            found = final_run_problems(tmp_path / "check" / run, store=store)
            if found:
                problems[run] = found
    return problems


def wait_for(predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    return None


def test_an_outage_is_one_line_and_the_waits_double_up_to_the_ceiling():
    said, slept = [], []
    outage = Outage("w1", said.append, sleep=slept.append)
    for _ in range(8):
        outage.wait(OSError("server closed the connection unexpectedly\n\tThis probably means..."))
    outage.over()
    outage.wait(OSError("de novo"))
    assert len(said) == 2 and "server closed the connection unexpectedly" in said[0] and "\n" not in said[0]
    assert slept[:6] == [0.2, 0.4, 0.8, 1.6, 3.2, 5.0] and max(slept) == 5.0 and slept[-1] == 0.2


@pytest.mark.slow
def test_four_workers_survive_a_postgres_restart_and_every_run_sends_one_email(own_server, tmp_path):
    dsn, prefix = own_server.dsn, f"reinicio-{os.getpid()}-"
    runs = [submit_run(dsn, TEAM_EMAIL, run=f"{prefix}{number:02d}") for number in range(16)]
    log = tmp_path / "requests.jsonl"
    workers = [start_worker(dsn, tmp_path, number, log) for number in range(4)]
    try:
        # Some runs done, the rest in flight: restart the server under the workers.
        assert wait_for(lambda: sum(s == "completed" for s in (statuses(dsn, prefix) or {}).values()) >= 2, 60)
        in_flight = wait_for(lambda: [r for r, s in statuses(dsn, prefix).items() if s != "completed"], 5)
        assert in_flight, "every run finished before the restart: nothing was in flight"
        own_server.restart()
        done = wait_for(lambda: all(s == "completed" for s in (statuses(dsn, prefix) or {"-": ""}).values()),
                        TIME_BUDGET)
        codes = [wait_child(pid, timeout=60) for pid, _ in workers]
    finally:
        for pid, _ in workers:
            try:
                os.kill(pid, signal.SIGKILL)
                wait_child(pid, timeout=10)
            except (ProcessLookupError, ChildProcessError):
                pass
    outputs = [out.read_text() for _, out in workers]
    assert done, f"runs not completed in {TIME_BUDGET:.0f} s: {statuses(dsn, prefix)}\n" + "\n".join(outputs)
    assert codes == [0, 0, 0, 0], "\n".join(outputs)
    assert not any("Traceback" in text for text in outputs), "\n".join(outputs)
    lines = [line for text in outputs for line in text.splitlines() if "conexão com o PostgreSQL perdida" in line]
    assert 1 <= len(lines) <= 4 * 2, lines  # one line per outage per worker (a run's loss and the wait are one)
    assert check_runs(dsn, runs, tmp_path) == {}
    assert orphan_problems(log) == []


@pytest.mark.slow
def test_a_worker_frozen_inside_its_transaction_loses_the_run_within_twice_the_lease(own_server, tmp_path):
    dsn = own_server.dsn
    run = submit_run(dsn, TEAM_EMAIL, run=f"congelado-{os.getpid()}")
    log = tmp_path / "requests.jsonl"
    # The second checkpoint write of the run is point B of turn 1: the email is inside that transaction.
    frozen, frozen_out = start_worker(dsn, tmp_path, 0, log, {"CRASH_AFTER": "mid-checkpoint-write:2",
                                                              "CRASH_MODE": "stop"}, idle_exit="2")
    rescuer = None
    try:
        wait_child_stopped(frozen, timeout=60)
        stopped_at, frozen_token = time.monotonic(), lease_token(dsn, run)
        rescuer, rescuer_out = start_worker(dsn, tmp_path, 1, log)
        taken = wait_for(lambda: lease_token(dsn, run) > frozen_token, 4 * LEASE)
        taken_after = time.monotonic() - stopped_at
        print(f"\nfrozen worker: run taken over {taken_after:.1f} s after the freeze (lease {LEASE:g} s)")
        assert taken, f"no worker took the run in {4 * LEASE:.0f} s:\n{rescuer_out.read_text()}"
        assert taken_after <= 2 * LEASE, f"taken over only after {taken_after:.1f} s (lease {LEASE} s)"
        assert wait_for(lambda: statuses(dsn, run) == {run: "completed"}, 60), rescuer_out.read_text()
        os.kill(frozen, signal.SIGCONT)
        assert wait_child(frozen, timeout=60) == 0, frozen_out.read_text()
        assert wait_child(rescuer, timeout=60) == 0, rescuer_out.read_text()
    finally:
        for pid in (frozen, rescuer):
            if pid is not None:
                try:
                    os.kill(pid, signal.SIGKILL)
                    wait_child(pid, timeout=10)
                except (ProcessLookupError, ChildProcessError):
                    pass
    woken = frozen_out.read_text()
    assert "Traceback" not in woken, woken
    assert "já é de outro worker" in woken, woken   # its token is old: nothing of it counts
    assert check_runs(dsn, [run], tmp_path) == {}
    assert orphan_problems(log) == []
