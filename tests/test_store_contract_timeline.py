"""The timeline, rewind and fork of lesson 5 through the ``RunStore`` contract only, on every store.

The same scenario runs on the files, on SQLite and on PostgreSQL, calling nothing but the
store's methods (``timeline_view``, ``head_scene``, ``find_point``, ``rewound_state``,
``rewind``, ``fork_preview``, ``fork``, and the lease), and must end the same way: the same
points, the same scenes, the same new line. What only one store does (the files set the
rewound points aside in a folder; a database moves its head) shows only where the contract
lets it: the ``set_aside`` list and the place names.
"""
from __future__ import annotations

import pytest

from harness.fake_endpoint import make_stub_client
from harness.lifecycle import LeaseHeld, LeaseLost
from harness.runner import run_durable
from harness.scenarios import load_scenario
from harness.stores.base import ForkPreview, SavePoint, TimelineFrame, TimelineView
from harness.timeline import TimelineError

SEND_ID = "toolu_01TE2"
EVERY_POINT = [(1, "A"), (1, "B"), (2, "A"), (2, "B"), (3, "A")]


def finished_run(case, run_dir):
    """team-email, completed: five points, one email sent in turn 2."""
    scenario = load_scenario("team-email")
    with case.open(run_dir) as store:
        state = run_durable(make_stub_client(scenario.responses), run_dir, scenario, store=store)
    assert state["status"] == "completed"


def moments(points):
    return [(saved.turn, saved.point) for saved in points]


def snapshot(store):
    return store.load(), store.points(), store.effects(), store.approvals(), store.world().emails(), store.read_lease()


def scene_outline(scene):
    """What must be equal on every store (the ids and the run's own fields are the store's)."""
    pending = [call["name"] for call in scene["pending_tool_use"] or []]
    return {"turns": scene["turns"], "tokens_used": scene["tokens_used"], "messages": len(scene["messages"]),
            "pending": pending, "status": scene.get("status")}


def test_timeline_rewind_and_fork_end_the_same_on_every_store(tmp_path, store_case):
    case, run_dir, into = store_case, tmp_path / "run", tmp_path / "ramo"
    finished_run(case, run_dir)
    outcome = {}
    with case.open(run_dir) as store:
        view = store.timeline_view()
        assert isinstance(view, TimelineView) and all(isinstance(frame, TimelineFrame) for frame in view.frames)
        outcome["listed"] = moments(view.frames)
        outcome["line"] = view.timeline
        name, head = store.head_scene()
        outcome["head"] = scene_outline(head)

        assert moments([store.find_point(2), store.find_point(2, "A"), store.find_point(3)]) == [
            (2, "B"), (2, "A"), (3, "A")]
        for impossible in ((9, None), (3, "B"), (0, None)):
            with pytest.raises(TimelineError):
                store.find_point(*impossible)

        before = snapshot(store)
        target = store.find_point(2, "A")
        assert isinstance(target, SavePoint)
        outcome["rewound_state"] = scene_outline(store.rewound_state(target.id))
        assert snapshot(store) == before  # only read: not even the lease moved

        stale = store.acquire_lease(owner="antigo", seconds=60)
        store.release_lease(stale)
        with pytest.raises(LeaseLost):  # a rewind under a lease that is no longer the run's writes nothing
            store.rewind(stale, target.id, store.rewound_state(target.id))
        assert snapshot(store)[:5] == before[:5]

        lease = store.acquire_lease(owner="rebobinar", seconds=60)
        try:
            written = store.rewind(lease, target.id, store.rewound_state(target.id))
        finally:
            store.release_lease(lease)
        outcome["written"] = scene_outline(written)
        outcome["after_rewind"] = moments(store.points())
        outcome["loaded"] = scene_outline(store.load())
        assert store.load()["run_id"] == before[0]["run_id"]  # the same run, moved back
        assert store.effects() == before[2] and store.world().emails() == before[4]  # rewinding ran nothing
        after = store.timeline_view()
        outcome["listed_after"] = moments(after.frames)
        assert sum(count for _where, count in after.set_aside) in (0, 2)  # kept aside (files) or off the chain

        preview = store.fork_preview(store.find_point(1))
        assert isinstance(preview, ForkPreview)
        outcome["preview"] = (moments([preview.point]), scene_outline(preview.scene))
        assert not into.exists() or not any(into.iterdir())

        kept = snapshot(store)[:5]
        with case.open(into) as new_store:
            info = store.fork(store.find_point(2, "A"), new_store, say=pytest.fail)
            outcome["fork"] = {"dry_run": info["dry_run"], "parent": info["parent"]}
            forked = new_store.load()
            outcome["forked"] = scene_outline(forked)
            outcome["forked_points"] = moments(new_store.points())
            outcome["forked_line"] = {key: new_store.timeline()[key] for key in ("parent", "dry_run")}
            assert forked["run_id"] != kept[0]["run_id"] and forked["scenario"] == "team-email"
            assert new_store.effects() == {SEND_ID: kept[2][SEND_ID]}  # the receipt of the pending call, no other
            with pytest.raises(TimelineError):  # never over a run that exists
                store.fork(store.find_point(1), new_store)
        assert snapshot(store)[:5] == kept  # the original is only read

    assert outcome == {
        "listed": EVERY_POINT,
        "line": {"timeline_id": "principal", "parent": None, "dry_run": False},
        "head": {"turns": 3, "tokens_used": 2016, "messages": 6, "pending": [], "status": "completed"},
        "rewound_state": {"turns": 2, "tokens_used": 1202, "messages": 4, "pending": ["send_email"],
                          "status": "paused"},
        "written": {"turns": 2, "tokens_used": 1202, "messages": 4, "pending": ["send_email"], "status": "paused"},
        "after_rewind": [(1, "A"), (1, "B"), (2, "A")],
        "loaded": {"turns": 2, "tokens_used": 1202, "messages": 4, "pending": ["send_email"], "status": "paused"},
        "listed_after": [(1, "A"), (1, "B"), (2, "A")],
        "preview": ([(1, "B")], {"turns": 1, "tokens_used": 439, "messages": 3, "pending": [], "status": None}),
        "fork": {"dry_run": True, "parent": {"timeline_id": "principal", "turn": 2, "point": "A"}},
        "forked": {"turns": 2, "tokens_used": 1202, "messages": 4, "pending": ["send_email"], "status": "paused"},
        "forked_points": [(2, "A")],
        "forked_line": {"parent": {"timeline_id": "principal", "turn": 2, "point": "A"}, "dry_run": True},
    }, case.kind


def test_a_rewind_waits_for_the_run_s_owner_on_every_store(tmp_path, store_case):
    case, run_dir = store_case, tmp_path / "run"
    finished_run(case, run_dir)
    from harness.timeline_commands import rewind_in_store

    with case.open(run_dir) as store, case.open(run_dir) as worker:
        held = worker.acquire_lease(owner="outro-worker", seconds=600)
        before = snapshot(store)
        with pytest.raises(LeaseHeld):
            rewind_in_store(store, 1)
        assert snapshot(store) == before
        worker.release_lease(held)
        scene = rewind_in_store(store, 1)
        assert scene_outline(scene)["turns"] == 1 and moments(store.points()) == [(1, "A"), (1, "B")]


def test_an_empty_place_has_no_timeline_on_every_store(tmp_path, store_case):
    """No run: the files say what is missing; a database answers None (the command says it)."""
    case = store_case
    missing, empty = tmp_path / "nada", tmp_path / "vazia"
    empty.mkdir()
    for place in (missing, empty):
        with case.open(place) as store:
            try:
                view = store.timeline_view()
            except TimelineError as error:
                assert case.kind == "files" and str(place) in str(error)
            else:
                assert view is None and case.kind != "files"
            with pytest.raises(TimelineError):
                store.find_point(1)


def test_two_forks_racing_into_one_new_run_leave_exactly_one_winner(tmp_path, sql_store_case):
    """Both forks find the target empty before either writes (the window held open by a barrier), and
    the second takes the lease only after the first is done: creating the run must still refuse it."""
    import threading

    case, run_dir, into = sql_store_case, tmp_path / "run", tmp_path / "ramo"
    finished_run(case, run_dir)
    both_looked, first_done = threading.Barrier(2, timeout=30), threading.Event()
    outcomes = {}

    def fork(name):
        try:
            with case.open(run_dir) as store, case.open(into) as new_store:
                looked = new_store.exists

                def exists():
                    found = looked()
                    both_looked.wait()
                    return found

                new_store.exists = exists
                if name == "second":
                    taken = new_store.acquire_lease
                    new_store.acquire_lease = lambda **kwargs: (first_done.wait(30), taken(**kwargs))[1]
                outcomes[name] = store.fork(store.find_point(2, "A"), new_store)
        except Exception as error:  # noqa: BLE001 - the outcome is what the test compares
            outcomes[name] = error
        finally:
            if name == "first":
                first_done.set()

    threads = [threading.Thread(target=fork, args=(name,)) for name in ("first", "second")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert isinstance(outcomes["first"], dict), outcomes
    assert isinstance(outcomes["second"], TimelineError) and "já existe" in str(outcomes["second"]), outcomes
    with case.open(into) as new_store:
        assert new_store.timeline()["timeline_id"] == outcomes["first"]["timeline_id"]
        assert moments(new_store.points()) == [(2, "A")]
