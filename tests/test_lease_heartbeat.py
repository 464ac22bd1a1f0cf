"""The lease is renewed while a model call or a tool call runs longer than the lease itself.

A worker that waits on a slow model or a slow tool is alive and busy: its lease must not expire
under it, and no second worker may take the run in the middle of the turn. A watcher thread
samples the lease while the long call runs and an intruder keeps trying to take it; both use
stores of their own, as another worker would. Offline: the slow call is a sleep.
"""
from __future__ import annotations

import threading
import time

import pytest

import harness.tools
from harness.fake_endpoint import ScriptedEndpoint
from harness.heartbeat import LeaseHeartbeat
from harness.lifecycle import LeaseHeld, LeaseLost
from harness.runner import run_durable
from harness.scenarios import load_scenario
from tests.stores_support import STORE_KINDS, open_store, unique_run_name

TEAM_EMAIL = load_scenario("team-email")
LEASE = 2.0
LONG_CALL = 3 * LEASE


class Watch:
    """Samples the lease in one thread and tries to take the run in another, each from a store of its
    own, until stopped (on the file store the intruder waits on lease.lock while a tool runs)."""

    def __init__(self, open_other):
        self.open_other = open_other
        self.samples, self.stolen, self.refused = [], [], 0
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._sample, daemon=True),
                        threading.Thread(target=self._intrude, daemon=True)]

    def _loop(self, step):
        store = self.open_other()
        try:
            deadline = time.monotonic() + 120
            while not self.stop.is_set() and time.monotonic() < deadline and step(store):
                time.sleep(0.1)
        finally:
            store.close()

    def _sample(self):
        def step(store):
            record = store.read_lease()
            if record is not None:
                self.samples.append((time.time(), record["token"], record["released"], record["expires_at"]))
            return True
        self._loop(step)

    def _intrude(self):
        def step(store):
            try:
                self.stolen.append(store.acquire_lease(owner="intruso", seconds=LEASE))
                return False  # a second worker started the run: the test has failed, stop here
            except LeaseHeld:
                self.refused += 1
                return True
        self._loop(step)

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc_info):
        self.stop.set()
        for thread in self.threads:
            thread.join(30)


def held_throughout(samples, token):
    """Every sample taken while the run was working shows our token, not released, not expired."""
    return [sample for sample in samples if sample[1] == token and not sample[2] and sample[3] <= sample[0]]


def slow_first_email(monkeypatch, started):
    send_email = harness.tools.send_email

    def slow(*args, **kwargs):
        started.set()
        time.sleep(LONG_CALL)
        return send_email(*args, **kwargs)

    monkeypatch.setattr(harness.tools, "send_email", slow)


def slow_first_model_call(started):
    endpoint = ScriptedEndpoint(TEAM_EMAIL.responses)
    handle, calls = endpoint.handle, []

    def handle_slowly(request):
        calls.append(1)
        if len(calls) == 1:
            started.set()
            time.sleep(LONG_CALL)
        return handle(request)

    endpoint.handle = handle_slowly
    return endpoint.client()


def run_with_watch(kind, tmp_path, request, client):
    run = unique_run_name("batida")
    with open_store(kind, tmp_path / "run", request, run=run) as store:
        lease = store.acquire_lease(owner="dono", seconds=LEASE)
        with Watch(lambda: open_store(kind, tmp_path / "run", request, run=run)) as watch:
            release = store.release_lease

            def release_after_the_watch(lease):
                watch.__exit__()  # the run is over: a lease taken after its release is no steal
                return release(lease)

            store.release_lease = release_after_the_watch
            state = run_durable(client, tmp_path / "run", TEAM_EMAIL, store=store, lease=lease, lease_seconds=LEASE)
        emails = store.world().emails()
    return state, emails, watch, lease


@pytest.mark.slow
@pytest.mark.parametrize("kind", STORE_KINDS)
def test_a_tool_call_three_times_the_lease_keeps_the_lease(kind, tmp_path, request, monkeypatch):
    started = threading.Event()
    slow_first_email(monkeypatch, started)
    state, emails, watch, lease = run_with_watch(kind, tmp_path, request, ScriptedEndpoint(TEAM_EMAIL.responses).client())
    assert started.is_set()
    assert watch.stolen == [], "a second worker took the run in the middle of the tool call"
    assert state["status"] == "completed" and len(emails) == 1
    assert len(watch.samples) >= 10 and held_throughout(watch.samples, lease.token) == []


@pytest.mark.slow
@pytest.mark.parametrize("kind", STORE_KINDS)
def test_a_model_call_three_times_the_lease_keeps_the_lease(kind, tmp_path, request):
    started = threading.Event()
    state, emails, watch, lease = run_with_watch(kind, tmp_path, request, slow_first_model_call(started))
    assert started.is_set()
    assert watch.stolen == [], "a second worker took the run in the middle of the model call"
    assert state["status"] == "completed" and len(emails) == 1
    assert watch.refused >= 10 and len(watch.samples) >= 10 and held_throughout(watch.samples, lease.token) == []


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_a_worker_whose_lease_was_taken_stops_before_its_next_effect(kind, tmp_path, request, monkeypatch):
    """The heartbeat (or the check right before the effect) sees the new owner: no email goes out."""
    run = unique_run_name("tomada")
    sent = []
    send_email = harness.tools.send_email
    with open_store(kind, tmp_path / "run", request, run=run) as store, \
            open_store(kind, tmp_path / "run", request, run=run) as other:
        lease = store.acquire_lease(owner="dono", seconds=LEASE)

        def taken_over_then_send(*args, **kwargs):
            # While this worker was busy, its lease was taken (an operator, a clock jump).
            if kind == "files":
                from harness.lifecycle import _write_lease, Lease
                _write_lease(Lease(str(tmp_path / "run"), "outro", lease.token + 1, time.time() + 60), released=False)
            else:
                other._x("UPDATE leases SET token = token + 1, owner = 'outro' WHERE run = ?", (other.run,))
            sent.append(1)
            return send_email(*args, **kwargs)

        monkeypatch.setattr(harness.tools, "send_email", taken_over_then_send)
        with pytest.raises(LeaseLost):
            run_durable(ScriptedEndpoint(TEAM_EMAIL.responses).client(), tmp_path / "run", TEAM_EMAIL, store=store,
                        lease=lease, lease_seconds=LEASE)
        assert sent == [1]
        assert store.world().emails() == [] if kind == "files" else store.committed_emails() == []


def test_the_heartbeat_reports_a_lost_lease_and_stops(tmp_path):
    from harness.stores.files import FileStore

    store = FileStore(tmp_path)
    lease = store.acquire_lease(owner="a", seconds=0.3)
    with LeaseHeartbeat(store, lease, 0.3) as beat:
        deadline = time.monotonic() + 30
        while beat.lease.expires_at == lease.expires_at and time.monotonic() < deadline:
            time.sleep(0.05)
        assert beat.lease.expires_at > lease.expires_at  # renewed in the background
        beat.check()  # nothing lost yet
        (tmp_path / "lease.json").unlink()
        while beat._lost is None and time.monotonic() < deadline:
            time.sleep(0.05)
        with pytest.raises(LeaseLost):
            beat.check()
