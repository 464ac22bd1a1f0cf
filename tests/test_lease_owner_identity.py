"""Who owns a lease is a process, not a pid: the boot it ran in and the moment it started.

A pid is recycled: after the owner dies (or the machine restarts) the same number can belong
to an unrelated live process, and a lease that trusted the pid alone would block the run until
its expiry, which a clock ahead can put a year away. A lease names its owner by boot id, pid and
process start time, so a recycled pid counts as dead; and a lease written by a clock running
ahead of this one (acquired in this clock's future, or expiring further ahead than any lease may
last) is no lease at all.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from harness import cli
from harness.exit_codes import EXIT_LEASE_HELD
from harness.fake_endpoint import make_stub_client
from harness.lifecycle import (
    LEASE_FILE,
    MAX_LEASE_SECONDS,
    LeaseHeld,
    acquire_lease,
    lease_is_free,
    process_identity,
    read_lease,
)
from harness.runner import ask_a_person, run_durable
from harness.scenarios import load_scenario
from tests.stores_support import open_store

TEAM_EMAIL = load_scenario("team-email")
HOUR = 3600.0


def me():
    return process_identity(os.getpid())


def planted(pid, **changes):
    """A lease.json a live owner would have written, on this machine, valid for another hour."""
    record = {"owner": f"{socket.gethostname()}:{pid}", "host": socket.gethostname(), "pid": pid, "token": 7,
              "expires_at": time.time() + HOUR, "acquired_at": time.time() - 5, "released": False,
              **{key: value for key, value in me().items() if key != "host"}}
    record.update(changes)
    return record


def test_this_process_records_its_boot_and_start_time():
    identity = me()
    assert identity["host"] == socket.gethostname()
    if os.path.exists("/proc/sys/kernel/random/boot_id"):
        assert identity["boot_id"] and identity["started"] > 0
        other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        try:
            assert process_identity(other.pid)["started"] >= identity["started"]
        finally:
            other.kill()
            other.wait()


def test_a_live_owner_with_its_own_identity_still_holds_the_lease(tmp_path):
    acquire_lease(tmp_path, owner="a", seconds=HOUR)
    with pytest.raises(LeaseHeld):
        acquire_lease(tmp_path, owner="b")


@pytest.mark.skipif(not os.path.exists("/proc/1/stat"), reason="needs /proc to tell a process's start time")
def test_a_recycled_pid_is_a_dead_owner(tmp_path):
    # pid 1 is alive, but it is not the process that took the lease: that one started later.
    (tmp_path / LEASE_FILE).write_text(json.dumps(planted(1, started=process_identity(1)["started"] + 12345)))
    assert acquire_lease(tmp_path, owner="herdeiro").token == 8


def test_an_owner_from_an_earlier_boot_is_dead(tmp_path):
    (tmp_path / LEASE_FILE).write_text(json.dumps(planted(os.getpid(), boot_id="outro-boot-0000")))
    assert acquire_lease(tmp_path, owner="herdeiro").token == 8


def test_a_lease_acquired_in_this_clocks_future_is_not_a_lease(tmp_path):
    year = 365 * 24 * HOUR
    record = planted(4242, host="outra-maquina", acquired_at=time.time() + year, expires_at=time.time() + year + 30)
    (tmp_path / LEASE_FILE).write_text(json.dumps(record))
    assert acquire_lease(tmp_path, owner="herdeiro").token == 8


def test_a_lease_expiring_beyond_the_longest_lease_is_not_a_lease(tmp_path):
    record = planted(4242, host="outra-maquina", expires_at=time.time() + MAX_LEASE_SECONDS + HOUR)
    (tmp_path / LEASE_FILE).write_text(json.dumps(record))
    assert acquire_lease(tmp_path, owner="herdeiro").token == 8


def test_a_lease_from_another_machine_within_the_rules_still_holds(tmp_path):
    (tmp_path / LEASE_FILE).write_text(json.dumps(planted(4242, host="outra-maquina")))
    with pytest.raises(LeaseHeld):
        acquire_lease(tmp_path, owner="b")


def test_no_lease_longer_than_the_longest_is_granted(tmp_path):
    with pytest.raises(ValueError, match="no máximo"):
        acquire_lease(tmp_path, owner="a", seconds=MAX_LEASE_SECONDS * 2)
    assert read_lease(tmp_path) is None


@pytest.mark.skipif(not os.path.exists("/proc/1/stat"), reason="needs /proc to tell a process's start time")
def test_resume_is_not_blocked_by_a_recycled_pid_with_a_far_expiry(tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert run_durable(make_stub_client(TEAM_EMAIL.responses), run_dir, TEAM_EMAIL,
                       approver=ask_a_person)["status"] == "waiting_for_approval"
    token = read_lease(run_dir)["token"]
    (run_dir / LEASE_FILE).write_text(json.dumps(
        planted(1, token=token, started=process_identity(1)["started"] + 1, expires_at=time.time() + 20 * HOUR)))
    code = cli.main(["run", "--scenario", "team-email", "--workdir", str(run_dir), "--resume"])
    err = capsys.readouterr().err
    assert code != EXIT_LEASE_HELD, err
    assert read_lease(run_dir)["token"] == token + 1


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_database_leases_know_their_owner_process_too(kind, tmp_path, request):
    with open_store(kind, tmp_path, request) as store:
        lease = store.acquire_lease(owner="a", seconds=HOUR)
        record = store.read_lease()
        assert {key: record[key] for key in ("host", "boot_id", "started")} == me()
        with pytest.raises(LeaseHeld):
            store.acquire_lease(owner="b")
        store._x("UPDATE leases SET host = ? WHERE run = ?",   # the same pid, another boot of this machine
                 (f"{socket.gethostname()}|outro-boot-0000|{me()['started']}", store.run))
        assert lease_is_free(store.read_lease(), time.time())
        assert store.acquire_lease(owner="b").token == lease.token + 1


@pytest.mark.parametrize("command", [["run", "--scenario", "team-email"], ["worker", "--store", "postgresql://x@/y"]])
def test_the_command_line_refuses_a_lease_longer_than_the_longest(command, tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        cli.main([*command, "--workdir", str(tmp_path / "run"), "--lease-seconds", str(MAX_LEASE_SECONDS * 2)])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and "--lease-seconds" in err and "24 h" in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()
