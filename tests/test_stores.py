"""The store contract (harness/stores/), the same tests on files, SQLite and PostgreSQL.

What every store must do: keep the latest scene, append save points whose ids sort in time
order and rebuild any of them exactly, keep the ledger and the approvals, and refuse every
write that does not carry the current fencing token. What the SQL stores add: the refusal
comes from the database itself (a trigger, inside the transaction), each save writes only
what changed, and a turn's effects commit in one transaction with its point B.
"""
from __future__ import annotations

import copy
import json
import sqlite3
import time

import pytest

from harness.approval import APPROVED, decision_record
from harness.checkpoint import CheckpointError
from harness.crash import SimulatedCrash
from harness.effects import EffectsLedgerError
from harness.lifecycle import LeaseHeld, LeaseLost, new_run_checkpoint
from harness.scenarios import load_scenario
from harness.tool_runner import run_tool_uses
from tests.stores_support import SQL_KINDS, STORE_KINDS, open_store

SCENARIO = load_scenario("team-email")
EMAIL_CALL = {"id": "toolu_st01", "name": "send_email",
              "input": {"to": "team@example.com", "subject": "Conclusões", "body": "Oi"}}
READ_CALL = {"id": "toolu_st02", "name": "read_file", "input": {"path": "notes/conclusoes.md"}}


@pytest.fixture(params=STORE_KINDS)
def store(request, tmp_path):
    store = open_store(request.param, tmp_path / "run", request)
    yield store
    store.close()


@pytest.fixture(params=SQL_KINDS)
def sql_store(request, tmp_path):
    store = open_store(request.param, tmp_path / "run", request)
    yield store
    store.close()


def reopened(store, request, tmp_path):
    """A second handle on the same run, as another process would open it."""
    return open_store(store_kind(store), tmp_path / "run", request, run=getattr(store, "run", None))


def store_kind(store):
    return {"arquivos": "files", "sqlite": "sqlite", "postgresql": "postgresql"}[store.kind]


def started(store, seconds=None):
    lease = store.acquire_lease(owner="worker-a", seconds=seconds)
    state = new_run_checkpoint(SCENARIO.task)
    store.start(lease, state, SCENARIO)
    return lease, state


def play_turn(store, lease, state, turn, call=None):
    """One turn of the runner's shape: the model answers (point A), the result is recorded (point B)."""
    call = call or dict(READ_CALL, id=f"toolu_t{turn:04d}")
    state["turns"] = turn
    state["tokens_used"] += 100
    state["messages"].append({"role": "assistant", "content": [{"type": "text", "text": f"turno {turn}"},
                                                               {"type": "tool_use", **call}]})
    state["pending_tool_use"] = [call]
    store.save(lease, state, "A", crash_points=False)
    state["messages"].append({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": call["id"], "content": f"resultado {turn}"}]})
    state["pending_tool_use"] = None
    store.save(lease, state, "B", crash_points=False)


# --- the scene and the sequence -------------------------------------------------------------------

def test_the_latest_scene_round_trips(store):
    lease, state = started(store)
    play_turn(store, lease, state, 1)
    loaded = store.load()
    for field in ("task", "turns", "tokens_used", "messages", "pending_tool_use", "run_id", "status"):
        assert loaded[field] == state[field], field
    assert loaded["version"] == 2


def test_every_save_point_is_rebuilt_exactly(store):
    lease, state = started(store)
    snapshots = []
    for turn in range(1, 6):
        play_turn(store, lease, state, turn)
    points = store.points()
    assert [(p.turn, p.point) for p in points] == [(t, letter) for t in range(1, 6) for letter in "AB"]
    assert [p.id for p in points] == sorted(p.id for p in points) or store.kind == "arquivos"
    # Rebuild the expected scenes independently: point A of turn t has 1 + 2t - 1 messages.
    for point in points:
        scene = store.read_point(point.id)
        count = 1 + 2 * point.turn - (1 if point.point == "A" else 0)
        assert scene["messages"] == state["messages"][:count], point.id
        assert scene["turns"] == point.turn and scene["tokens_used"] == 100 * point.turn
        assert (scene["pending_tool_use"] is None) == (point.point == "B")
        snapshots.append(scene)
    assert snapshots[-1]["messages"] == store.load()["messages"]


def test_a_status_change_is_saved_without_a_new_point(store):
    lease, state = started(store)
    play_turn(store, lease, state, 1)
    state["status"], state["status_reason"] = "paused", "teto de turnos"
    store.save(lease, state)
    assert len(store.points()) == 2
    loaded = store.load()
    assert loaded["status"] == "paused" and loaded["status_reason"] == "teto de turnos"


def test_nothing_is_stored_before_a_start(store):
    assert not store.exists() and store.load() is None and store.points() == []
    assert store.effects() == {} and store.approvals() == {} and store.pending_control() is None


# --- the lease and the fencing token -----------------------------------------------------------------

def test_one_owner_at_a_time_and_the_token_only_grows(store, request, tmp_path):
    lease, state = started(store)
    other = reopened(store, request, tmp_path)
    with pytest.raises(LeaseHeld, match="só um worker por vez"):
        other.acquire_lease(owner="worker-b")
    assert store.release_lease(lease)
    second = other.acquire_lease(owner="worker-b")
    assert second.token == lease.token + 1
    assert not store.release_lease(lease)  # no longer this token's: nothing to give back
    other.start(second, new_run_checkpoint(SCENARIO.task), SCENARIO)  # a clean start keeps the token growing
    other.release_lease(second)
    assert store.acquire_lease(owner="worker-c").token == second.token + 1
    other.close()


def test_a_stale_writer_is_refused_and_nothing_changes(store, request, tmp_path):
    lease, state = started(store, seconds=0.05)
    play_turn(store, lease, state, 1)
    time.sleep(0.06)  # worker A's lease expires while it is "frozen"
    other = reopened(store, request, tmp_path)
    fresh = other.acquire_lease(owner="worker-b")
    before = (other.load(), other.points(), other.effects(), other.approvals())
    stale_state = copy.deepcopy(state)
    stale_state["turns"], stale_state["status"] = 2, "paused"
    with pytest.raises(LeaseLost, match=f"token {lease.token}"):
        store.save(lease, stale_state, "A", crash_points=False)
    with pytest.raises(LeaseLost):
        store.save_approval(lease, EMAIL_CALL["id"], decision_record(EMAIL_CALL, APPROVED, time.time()))
    with pytest.raises(LeaseLost):
        store.renew_lease(lease)
    assert (other.load(), other.points(), other.effects(), other.approvals()) == before
    assert other.read_lease()["token"] == fresh.token
    other.close()


def test_the_worker_check_costs_no_write_while_the_lease_is_fresh(sql_store):
    lease, state = started(sql_store, seconds=30)
    assert sql_store.renew_lease(lease, 30) is lease  # more than half left: a read, nothing written
    near_the_end = type(lease)(lease.run_dir, lease.owner, lease.token, time.time() + 5)
    renewed = sql_store.renew_lease(near_the_end, 30)
    assert renewed.expires_at > time.time() + 25
    assert sql_store.read_lease()["expires_at"] == pytest.approx(renewed.expires_at)


# --- the database refuses, whatever the worker does ---------------------------------------------------

def raw_connection(store):
    if store.kind == "sqlite":
        return sqlite3.connect(store.path, isolation_level=None)
    import psycopg

    return psycopg.connect(store.dsn, autocommit=True)


def raw(connection, sql, params=()):
    if isinstance(connection, sqlite3.Connection):
        return connection.execute(sql, params)
    return connection.execute(sql.replace("?", "%s"), params)


def refusal_errors():
    errors = [sqlite3.IntegrityError]
    try:
        import psycopg

        errors.append(psycopg.Error)
    except ImportError:
        pass
    return tuple(errors)


@pytest.mark.parametrize("statement", [
    "INSERT INTO saves (run, seq, parent_seq, point, turn, tokens_used, message_count, new_messages, "
    "pending_tool_use, token, saved_at) VALUES (?, 99, 1, 'A', 9, 9, 1, '[]', NULL, ?, 0)",
    "UPDATE runs SET status = 'completed', token = ? WHERE run = ?",
    "INSERT INTO effects (run, tool_use_id, record, token) VALUES (?, 'toolu_x', '{}', ?)",
    "INSERT INTO approvals (run, tool_use_id, record, token) VALUES (?, 'toolu_x', '{}', ?)",
    "INSERT INTO outbox (run, seq, idempotency_key, email, token) VALUES (?, 1, 'k', '{}', ?)",
    "INSERT INTO tickets (run, number, idempotency_key, ticket, token) VALUES (?, 1, 'k', '{}', ?)",
], ids=["saves", "runs", "effects", "approvals", "outbox", "tickets"])
def test_the_database_refuses_a_stale_token_in_every_table(sql_store, statement):
    """No store code involved: a plain SQL statement with yesterday's token is refused by the
    database, and one with the current token goes through (so the trigger is not refusing everything)."""
    lease, state = started(sql_store)
    stale = lease.token - 1
    params = (stale, sql_store.run) if statement.startswith("UPDATE") else (sql_store.run, stale)
    connection = raw_connection(sql_store)
    with pytest.raises(refusal_errors(), match="cerca: token de posse recusado"):
        raw(connection, statement, params)
    current = (lease.token, sql_store.run) if statement.startswith("UPDATE") else (sql_store.run, lease.token)
    raw(connection, statement, current)
    sql_store.release_lease(lease)
    with pytest.raises(refusal_errors(), match="cerca"):  # a released lease writes nothing either
        raw(connection, statement, current)
    connection.close()


# --- append-only save points ------------------------------------------------------------------------

def save_rows(store):
    connection = raw_connection(store)
    rows = raw(connection, "SELECT seq, length(new_messages) + coalesce(length(pending_tool_use), 0) "
                           "FROM saves WHERE run = ? ORDER BY seq", (store.run,)).fetchall()
    connection.close()
    return rows


@pytest.mark.slow
def test_each_save_writes_only_what_changed(sql_store):
    lease, state = started(sql_store)
    for turn in range(1, 301):
        play_turn(sql_store, lease, state, turn)
    sizes = [size for _seq, size in save_rows(sql_store)[1:]]  # the root holds the task
    turn_10, turn_300 = sizes[2 * 9: 2 * 10], sizes[2 * 299: 2 * 300]
    # Same-sized turns cost the same bytes, whatever came before (a few digits more in the ids).
    assert abs(sum(turn_300) - sum(turn_10)) <= 8, (turn_10, turn_300)
    assert sql_store.load()["messages"] == state["messages"]


def test_rewinding_is_moving_the_head_and_the_later_points_leave_the_active_sequence(sql_store):
    lease, state = started(sql_store)
    for turn in range(1, 4):
        play_turn(sql_store, lease, state, turn)
    target = [p for p in sql_store.points() if (p.turn, p.point) == (1, "B")][0]
    scene = sql_store.read_point(target.id)
    sql_store.rewind(lease, target.id, {**state, **scene, "status": "paused"})
    assert [(p.turn, p.point) for p in sql_store.points()] == [(1, "A"), (1, "B")]
    state = sql_store.load()
    assert state["messages"] == scene["messages"] and state["status"] == "paused"
    play_turn(sql_store, lease, state, 2, call=dict(READ_CALL, id="toolu_branch"))
    assert [(p.turn, p.point) for p in sql_store.points()] == [(1, "A"), (1, "B"), (2, "A"), (2, "B")]
    assert sql_store.load()["messages"][-1]["content"][0]["tool_use_id"] == "toolu_branch"


# --- the turn as one transaction: the outbox in the same database -------------------------------------

def test_effects_wait_for_point_b_and_commit_with_it(sql_store):
    lease, state = started(sql_store)
    with sql_store.tool_phase(lease, [EMAIL_CALL]) as ctx:
        results = run_tool_uses([EMAIL_CALL], ctx)
        assert sql_store.committed_emails() == []  # staged, not sent
        assert len(sql_store.world().emails()) == 1   # the tools see their own turn
    assert sql_store.committed_emails() == [] and sql_store.effects() == {}
    state["messages"].append({"role": "assistant", "content": [{"type": "tool_use", **EMAIL_CALL}]})
    state["messages"].append({"role": "user", "content": results})
    state["turns"] = 1
    sql_store.save(lease, state, "B", crash_points=False)
    [email] = sql_store.committed_emails()
    assert email["idempotency_key"] == EMAIL_CALL["id"]
    assert sql_store.effects()[EMAIL_CALL["id"]]["status"] == "committed"


def test_a_crash_before_the_commit_leaves_neither_the_email_nor_the_receipt(sql_store, monkeypatch):
    lease, state = started(sql_store)
    with sql_store.tool_phase(lease, [EMAIL_CALL]) as ctx:
        results = run_tool_uses([EMAIL_CALL], ctx)
    state["messages"].append({"role": "assistant", "content": [{"type": "tool_use", **EMAIL_CALL}]})
    state["messages"].append({"role": "user", "content": results})
    state["turns"] = 1
    monkeypatch.setenv("CRASH_AFTER", "mid-checkpoint-write:1")
    from harness.crash import reset_crash_counts

    reset_crash_counts()
    with pytest.raises(SimulatedCrash):
        sql_store.save(lease, state, "B")
    assert sql_store.committed_emails() == [] and sql_store.effects() == {}
    assert sql_store.load()["turns"] == 0


def test_a_tool_phase_holds_no_lock(sql_store, request, tmp_path):
    """While a tool runs, another process can still write to the run's database (a pause request)."""
    lease, state = started(sql_store)
    other = reopened(sql_store, request, tmp_path)
    with sql_store.tool_phase(lease, [READ_CALL]):
        started_at = time.monotonic()
        other.request_control("pause", "pedido durante a ferramenta")
        assert time.monotonic() - started_at < 1.0
    assert sql_store.pending_control()["action"] == "pause"
    other.close()


def test_the_outbox_refuses_a_second_email_with_the_same_key(sql_store):
    lease, state = started(sql_store)
    connection = raw_connection(sql_store)
    insert = "INSERT INTO outbox (run, seq, idempotency_key, email, token) VALUES (?, ?, 'toolu_k', '{}', ?)"
    raw(connection, insert, (sql_store.run, 1, lease.token))
    with pytest.raises(refusal_errors()):
        raw(connection, insert, (sql_store.run, 2, lease.token))
    connection.close()


# --- unreadable data fails closed ----------------------------------------------------------------------

def test_a_corrupt_ledger_record_fails_closed(sql_store):
    lease, state = started(sql_store)
    connection = raw_connection(sql_store)
    raw(connection, "INSERT INTO effects (run, tool_use_id, record, token) VALUES (?, 'toolu_bad', ?, ?)",
        (sql_store.run, json.dumps({"status": "talvez"}), lease.token))
    connection.close()
    with pytest.raises(EffectsLedgerError, match="toolu_bad"):
        sql_store.effects()


def test_a_broken_save_chain_is_a_loud_error(sql_store):
    lease, state = started(sql_store)
    play_turn(sql_store, lease, state, 1)
    connection = raw_connection(sql_store)
    raw(connection, "UPDATE saves SET message_count = 7, token = ? WHERE run = ? AND seq = 2",
        (lease.token, sql_store.run))
    connection.close()
    with pytest.raises(CheckpointError, match="diz 7 mensagens"):
        sql_store.load()


# --- PostgreSQL: workers take runs that need work ------------------------------------------------------

def submitted(dsn, tmp_path, status="running"):
    from harness.stores.postgres import PostgresStore
    from tests.stores_support import unique_run_name

    store = PostgresStore(dsn, unique_run_name("fila"), tmp_path / "world")
    lease = store.acquire_lease(owner="submit")
    state = new_run_checkpoint(SCENARIO.task)
    state["status"] = status
    store.start(lease, state, SCENARIO)
    store.release_lease(lease)
    store.close()
    return store.run


def mark_lease(dsn, run, **columns):
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as connection:
        for column, value in columns.items():
            connection.execute(f"UPDATE leases SET {column} = %s WHERE run = %s", (value, run))


def park_other_runs(dsn):
    """Only this test's runs in the queue: every other run gets a live owner on another machine
    (a plain UPDATE of runs would be refused by the fence, as it should)."""
    from harness.stores.postgres import connect

    with connect(dsn) as connection:
        connection.execute("UPDATE leases SET released = 0, host = 'outra-maquina', expires_at = %s",
                           (time.time() + 3600,))


def test_claim_takes_free_running_runs_and_never_the_same_one_twice(postgres_dsn, tmp_path):
    from harness.stores.postgres import claim_run

    park_other_runs(postgres_dsn)
    free = [submitted(postgres_dsn, tmp_path) for _ in range(3)]
    paused = submitted(postgres_dsn, tmp_path, status="paused")
    held = submitted(postgres_dsn, tmp_path)
    mark_lease(postgres_dsn, held, released=0, host="outra-maquina", expires_at=time.time() + 60, token=5)
    expired = submitted(postgres_dsn, tmp_path)
    mark_lease(postgres_dsn, expired, released=0, host="outra-maquina", expires_at=time.time() - 1, token=7)

    claims = [claim_run(postgres_dsn, owner=f"w{n}") for n in range(5)]
    taken = [claim for claim in claims if claim is not None]
    assert sorted(run for run, _lease in taken) == sorted(free + [expired])
    assert dict(taken)[expired].token == 8  # the expired owner's token is left behind
    assert claims[-1] is None  # nothing left: the held and the paused runs are not for taking
    assert paused not in dict(taken) and held not in dict(taken)


def test_skip_locked_lets_two_claims_run_at_once(postgres_dsn, tmp_path):
    """A claim holding its row lock does not make the next claim wait: it takes another run."""
    import psycopg

    from harness.stores.postgres import CLAIMABLE, claim_run

    park_other_runs(postgres_dsn)
    first, second = submitted(postgres_dsn, tmp_path), submitted(postgres_dsn, tmp_path)
    with psycopg.connect(postgres_dsn) as holding:  # a transaction that has locked the first candidate
        import socket

        locked = holding.execute(CLAIMABLE.replace("LIMIT 8", "LIMIT 1"),
                                 (time.time(), socket.gethostname())).fetchone()[0]
        started_at = time.monotonic()
        claimed = claim_run(postgres_dsn, owner="w-outro")
        assert time.monotonic() - started_at < 2.0
        assert claimed is not None and claimed[0] == ({first, second} - {locked}).pop()
        holding.rollback()
