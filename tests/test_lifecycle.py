"""Run lifecycle: checkpoint v2 and its v1 migration, status, lease with fencing token,
recovery attempts, pause/cancel requests (harness/lifecycle.py) and crash_point (harness/crash.py)."""
from __future__ import annotations

import json
import os
import time

import pytest

from harness import crash
from harness.checkpoint import CheckpointError, save_checkpoint
from harness.lifecycle import (
    CHECKPOINT_FILE,
    CHECKPOINT_VERSION_V2,
    CONTROL_FILE,
    MAX_RECOVERY_ATTEMPTS,
    RUN_STATUSES,
    LeaseHeld,
    LeaseFileError,
    LeaseLost,
    RunNotResumable,
    acquire_lease,
    check_fence,
    check_resumable,
    control_run,
    fenced,
    load_run_checkpoint,
    migrate_v1_to_v2,
    new_run_checkpoint,
    note_progress,
    note_recovery_attempt,
    pending_control,
    process_alive,
    read_lease,
    release_lease,
    renew_lease,
    save_run_checkpoint,
    set_status,
)
from harness.stores.files import FileStore

TASK = "Mande um e-mail para o time."
SEND = {"id": "toolu_S1", "name": "send_email", "input": {"to": "team@example.com", "subject": "Oi"}}


def v1_state(finished=False):
    messages = [{"role": "user", "content": TASK},
                {"role": "assistant", "content": [{"type": "tool_use", **SEND}]}]
    pending = [SEND]
    if finished:
        messages += [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_S1",
                                                     "content": "enviado"}]},
                     {"role": "assistant", "content": [{"type": "text", "text": "Pronto."}]}]
        pending = None
    return {"version": 1, "task": TASK, "turns": len(messages) // 2, "tokens_used": 90,
            "messages": messages, "pending_tool_use": pending}


# --- checkpoint v2 and migration --------------------------------------------------------------

def test_new_checkpoint_round_trips_as_v2(tmp_path):
    state = new_run_checkpoint(TASK)
    path = tmp_path / CHECKPOINT_FILE
    save_run_checkpoint(state, path)
    loaded = load_run_checkpoint(path)
    assert loaded == state
    assert loaded["version"] == CHECKPOINT_VERSION_V2 and loaded["status"] == "running"
    assert loaded["run_id"].startswith("run-") and loaded["recovery_attempts"] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [CHECKPOINT_FILE]


def test_two_new_runs_get_different_ids():
    assert new_run_checkpoint(TASK)["run_id"] != new_run_checkpoint(TASK)["run_id"]


def test_migration_keeps_the_scene_and_adds_explained_fields():
    old = v1_state()
    migrated = migrate_v1_to_v2(old)
    for field in ("task", "turns", "tokens_used", "messages", "pending_tool_use"):
        assert migrated[field] == old[field]
    assert migrated["version"] == 2 and migrated["migrated_from"] == 1
    assert migrated["status"] == "paused"           # mid-run: resumable, not counted as a crash
    assert migrated["pending_approval"] is None and migrated["recovery_attempts"] == 0
    assert old["version"] == 1 and "run_id" not in old  # the input is not mutated
    assert migrate_v1_to_v2(old)["run_id"] == migrated["run_id"]  # deterministic


def test_migration_of_a_finished_v1_run_is_completed():
    assert migrate_v1_to_v2(v1_state(finished=True))["status"] == "completed"


def test_migration_refuses_a_scene_that_is_not_v1():
    with pytest.raises(CheckpointError, match="v2"):
        migrate_v1_to_v2(new_run_checkpoint(TASK))


def test_loading_a_v1_file_migrates_in_memory_and_leaves_the_file_alone(tmp_path):
    path = tmp_path / CHECKPOINT_FILE
    save_checkpoint(v1_state(), path)
    before = path.read_bytes()
    state = load_run_checkpoint(path)
    assert state["version"] == 2 and state["status"] == "paused"
    assert path.read_bytes() == before


@pytest.mark.parametrize("version", [7, 0, "2", True, None])
def test_unknown_version_is_refused_naming_both(tmp_path, version):
    path = tmp_path / CHECKPOINT_FILE
    data = new_run_checkpoint(TASK)
    data["version"] = version
    path.write_text(json.dumps(data))
    before = path.read_bytes()
    with pytest.raises(CheckpointError) as error:
        load_run_checkpoint(path)
    message = str(error.value)
    assert f"o arquivo é v{version}" in message
    assert "v1" in message and "v2" in message
    assert path.read_bytes() == before


@pytest.mark.parametrize("change, expected", [
    (lambda d: d.pop("run_id"), "campo obrigatório ausente: run_id"),
    (lambda d: d.update(status="sleeping"), "status desconhecido 'sleeping'"),
    (lambda d: d.update(recovery_attempts="2"), "recovery_attempts"),
    (lambda d: d.update(recovery_attempts=-1), "negativo"),
    (lambda d: d.update(pending_approval=[]), "pending_approval"),
    (lambda d: d.update(turns=True), "turns"),
    (lambda d: d.update(requires_approval="sim"), "requires_approval"),
])
def test_a_broken_v2_checkpoint_names_its_problem(tmp_path, change, expected):
    data = new_run_checkpoint(TASK)
    change(data)
    path = tmp_path / CHECKPOINT_FILE
    path.write_text(json.dumps(data))
    with pytest.raises(CheckpointError, match=expected):
        load_run_checkpoint(path)


def test_missing_empty_and_truncated_files(tmp_path):
    path = tmp_path / CHECKPOINT_FILE
    assert load_run_checkpoint(path) is None
    path.write_text("")
    with pytest.raises(CheckpointError, match="vazio"):
        load_run_checkpoint(path)
    path.write_text(json.dumps(new_run_checkpoint(TASK))[:40])
    with pytest.raises(CheckpointError, match="truncado"):
        load_run_checkpoint(path)
    path.write_bytes(json.dumps({"task": "conclusões"}, ensure_ascii=False).encode("utf-8")[:-5])  # cut inside "õ"
    with pytest.raises(CheckpointError, match="UTF-8"):
        load_run_checkpoint(path)


def test_a_crash_mid_write_leaves_the_old_checkpoint_whole(tmp_path, monkeypatch):
    path = tmp_path / CHECKPOINT_FILE
    old = new_run_checkpoint(TASK)
    save_run_checkpoint(old, path)
    newer = dict(old, turns=5)
    monkeypatch.setenv("CRASH_AFTER", "mid-checkpoint-write:2")
    with pytest.raises(crash.SimulatedCrash):
        save_run_checkpoint(newer, path)
    assert load_run_checkpoint(path)["turns"] == 0           # the old scene, whole
    (temporary,) = tmp_path.glob(CHECKPOINT_FILE + ".*.tmp")  # a temporary of its own name, never a shared one
    assert json.loads(temporary.read_text())["turns"] == 5
    save_run_checkpoint(newer, path, crash_points=False)     # bookkeeping writes have no crash point
    assert load_run_checkpoint(path)["turns"] == 5


# --- status and recovery attempts ---------------------------------------------------------------

def test_resumable_statuses():
    state = new_run_checkpoint(TASK)
    for status in ("running", "paused", "waiting_for_approval"):
        assert check_resumable(set_status(state, status)) is True
    assert check_resumable(set_status(state, "completed")) is False
    for status in ("cancelled", "failed"):
        with pytest.raises(RunNotResumable, match=status) as error:
            check_resumable(set_status(state, status, "motivo x"))
        assert error.value.status == status and "motivo x" in str(error.value)


def test_unknown_status_is_refused():
    with pytest.raises(ValueError, match="sleeping"):
        set_status(new_run_checkpoint(TASK), "sleeping")
    assert RUN_STATUSES == ("running", "paused", "waiting_for_approval", "failed", "cancelled", "completed", "refused")


def test_recovery_attempts_count_crashed_resumes_until_failed():
    state = new_run_checkpoint(TASK)  # status running: as if the process died
    for attempt in range(1, MAX_RECOVERY_ATTEMPTS + 1):
        assert note_recovery_attempt(state) is True
        assert state["recovery_attempts"] == attempt and state["status"] == "running"
    assert note_recovery_attempt(state) is False
    assert state["status"] == "failed" and str(MAX_RECOVERY_ATTEMPTS) in state["status_reason"]


def test_a_paused_run_is_not_a_crash_and_progress_resets_the_count():
    state = set_status(new_run_checkpoint(TASK), "paused")
    assert note_recovery_attempt(state) is True and state["recovery_attempts"] == 0
    set_status(state, "running")
    note_recovery_attempt(state)
    note_recovery_attempt(state)
    note_progress(state)
    assert state["recovery_attempts"] == 0


# --- lease and fencing token ------------------------------------------------------------------

def test_tokens_only_grow(tmp_path):
    first = acquire_lease(tmp_path, owner="a")
    assert first.token == 1 and read_lease(tmp_path)["owner"] == "a"
    assert release_lease(first) is True
    second = acquire_lease(tmp_path, owner="b")
    assert second.token == 2
    release_lease(second)
    assert acquire_lease(tmp_path, owner="c").token == 3


def test_a_live_unexpired_lease_keeps_the_second_worker_out(tmp_path):
    acquire_lease(tmp_path, owner="worker-a")
    with pytest.raises(LeaseHeld, match="worker-a") as error:
        acquire_lease(tmp_path, owner="worker-b")
    assert "token 1" in str(error.value)
    assert read_lease(tmp_path)["owner"] == "worker-a"


def test_an_expired_lease_can_be_taken_over(tmp_path):
    acquire_lease(tmp_path, owner="a", seconds=10, clock=lambda: 1000.0)
    with pytest.raises(LeaseHeld):
        acquire_lease(tmp_path, owner="b", clock=lambda: 1009.0)
    taken = acquire_lease(tmp_path, owner="b", clock=lambda: 1010.0)
    assert taken.token == 2


def _child_takes_lease_and_dies(run_dir):
    pid = os.fork()
    if pid == 0:
        try:
            acquire_lease(run_dir, owner="morre-logo", seconds=3600)
        finally:
            os._exit(0)
    return pid


def test_the_lease_of_a_dead_process_is_free(tmp_path):
    pid = _child_takes_lease_and_dies(tmp_path)
    os.waitpid(pid, 0)
    assert read_lease(tmp_path)["pid"] == pid and not process_alive(pid)
    assert acquire_lease(tmp_path, owner="herdeiro").token == 2


def test_a_zombie_owner_counts_as_dead(tmp_path):
    pid = _child_takes_lease_and_dies(tmp_path)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # exited but not reaped yet: a zombie
        if open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z":
            break
        time.sleep(0.01)
    try:
        assert not process_alive(pid)
        assert acquire_lease(tmp_path, owner="herdeiro").token == 2
    finally:
        os.waitpid(pid, 0)


def test_process_alive_for_a_live_process():
    assert process_alive(os.getpid())


def test_the_fence_stops_a_stale_worker(tmp_path):
    stale = acquire_lease(tmp_path, owner="a", seconds=1, clock=lambda: 100.0)
    check_fence(tmp_path, stale.token)  # still the owner: fine
    fresh = acquire_lease(tmp_path, owner="b", clock=lambda: 200.0)
    with pytest.raises(LeaseLost) as error:
        check_fence(tmp_path, stale.token)
    assert "token 1" in str(error.value) and "token 2" in str(error.value)
    target = tmp_path / "escrita.txt"
    with pytest.raises(LeaseLost):
        with fenced(stale):
            target.write_text("não deveria")
    assert not target.exists()
    with fenced(fresh):
        target.write_text("ok")
    assert target.read_text() == "ok"


def test_renew_after_a_takeover_fails_and_release_does_not_free_the_new_owner(tmp_path):
    stale = acquire_lease(tmp_path, owner="a", seconds=1, clock=lambda: 100.0)
    acquire_lease(tmp_path, owner="b", clock=lambda: 200.0)
    with pytest.raises(LeaseLost):
        renew_lease(stale)
    assert release_lease(stale) is False
    record = read_lease(tmp_path)
    assert record["owner"] == "b" and not record["released"]


def test_an_expired_lease_nobody_took_can_be_renewed(tmp_path):
    lease = acquire_lease(tmp_path, owner="a", seconds=1, clock=lambda: 100.0)
    renewed = renew_lease(lease, seconds=30, clock=lambda: 500.0)
    assert renewed.token == lease.token and renewed.expires_at == 530.0
    check_fence(tmp_path, renewed.token)


def test_writing_after_release_is_refused(tmp_path):
    lease = acquire_lease(tmp_path, owner="a")
    release_lease(lease)
    with pytest.raises(LeaseLost, match="liberada"):
        check_fence(tmp_path, lease.token)


def test_a_corrupt_lease_file_stops_everyone(tmp_path):
    (tmp_path / "lease.json").write_text("{meio")
    with pytest.raises(LeaseFileError, match="JSON inválido"):
        acquire_lease(tmp_path, owner="a")


# --- pause and cancel requests -----------------------------------------------------------------

def make_run_dir(tmp_path, status="paused"):
    state = set_status(new_run_checkpoint(TASK), status)
    save_run_checkpoint(state, tmp_path / CHECKPOINT_FILE)
    return state


def test_cancel_with_nobody_running_is_applied_at_once(tmp_path):
    make_run_dir(tmp_path)
    assert control_run(FileStore(tmp_path), "cancel", reason="mudou o plano") == "applied"
    state = load_run_checkpoint(tmp_path / CHECKPOINT_FILE)
    assert state["status"] == "cancelled" and state["status_reason"] == "mudou o plano"
    assert read_lease(tmp_path)["released"] is True
    with pytest.raises(RunNotResumable):
        check_resumable(state)


def test_cancel_while_a_worker_holds_the_lease_leaves_a_request(tmp_path):
    make_run_dir(tmp_path, "running")
    acquire_lease(tmp_path, owner="worker-vivo")
    before = (tmp_path / CHECKPOINT_FILE).read_bytes()
    assert control_run(FileStore(tmp_path), "cancel") == "requested"
    assert (tmp_path / CHECKPOINT_FILE).read_bytes() == before
    assert pending_control(tmp_path)["action"] == "cancel"


def test_a_finished_run_cannot_be_cancelled(tmp_path):
    make_run_dir(tmp_path, "completed")
    with pytest.raises(RunNotResumable, match="completed"):
        control_run(FileStore(tmp_path), "cancel")


def test_an_unreadable_control_request_is_refused_never_read_as_a_cancel(tmp_path):
    """Read as a cancel, a spoiled control.json made the run cancelled for good (the resume saved it)."""
    from harness.state_json import StateFileError

    for text in ("??", "", json.dumps({"action": "explode"}), "[]"):
        (tmp_path / CONTROL_FILE).write_text(text)
        with pytest.raises(StateFileError, match=CONTROL_FILE):
            pending_control(tmp_path)
    with pytest.raises(ValueError, match="explode"):
        control_run(FileStore(tmp_path), "explode")


# --- crash_point --------------------------------------------------------------------------------

def test_crash_point_counts_every_pass_and_crashes_on_the_asked_one(monkeypatch):
    crash.crash_point("after-save-A")
    assert crash.crash_counts()["after-save-A"] == 1
    monkeypatch.setenv("CRASH_AFTER", "after-save-A:3")
    crash.crash_point("after-save-A")
    crash.crash_point("after-save-B")
    with pytest.raises(crash.SimulatedCrash, match="after-save-A"):
        crash.crash_point("after-save-A")


def test_crash_point_refuses_unknown_labels_and_modes(monkeypatch):
    with pytest.raises(ValueError, match="rótulo desconhecido"):
        crash.crash_point("after-lunch")
    monkeypatch.setenv("CRASH_AFTER", "after-save-A:1")
    monkeypatch.setenv("CRASH_MODE", "explode")
    with pytest.raises(ValueError, match="CRASH_MODE"):
        crash.crash_point("after-save-A")
