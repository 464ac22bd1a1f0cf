"""The per-turn checkpoint sequence, rewind and fork (harness/timeline.py)."""
from __future__ import annotations

import copy
import hashlib
import json
import os
from pathlib import Path

import pytest

from harness.checkpoint import CheckpointError, load_checkpoint
from harness.fake_endpoint import validate_messages
from harness.timeline import (
    CHECKPOINT_FILE,
    EFFECTS_FILE,
    MAIN_TIMELINE_ID,
    TIMELINE_FILE,
    TimelineError,
    fork_from,
    list_points,
    load_timeline,
    parse_point_name,
    pick_latest_point,
    point_filename,
    read_point,
    rewind_to,
    save_point,
    set_aside_points_after,
)

TASK = "Mande um e-mail para o time avisando das conclusões desta semana."


def state_at(turns, messages, pending=None, tokens=0):
    return {"version": 1, "task": TASK, "turns": turns, "tokens_used": tokens,
            "messages": copy.deepcopy(messages), "pending_tool_use": copy.deepcopy(pending)}


READ = {"type": "tool_use", "id": "toolu_R1", "name": "read_file", "input": {"path": "notes/conclusoes.md"}}
SEND = {"type": "tool_use", "id": "toolu_S1", "name": "send_email",
        "input": {"to": "team@example.com", "subject": "Conclusões"}}


def record_team_email_sequence(run_dir):
    """The points the loop writes for read -> send -> end_turn (3 turns)."""
    m = [{"role": "user", "content": TASK}]
    m.append({"role": "assistant", "content": [READ]})
    save_point(run_dir, state_at(1, m, [dict((k, READ[k]) for k in ("id", "name", "input"))], 100), "A")
    m.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_R1", "content": "1. fila"}]})
    save_point(run_dir, state_at(1, m, None, 100), "B")
    m.append({"role": "assistant", "content": [SEND]})
    save_point(run_dir, state_at(2, m, [dict((k, SEND[k]) for k in ("id", "name", "input"))], 250), "A")
    m.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_S1", "content": "enviado"}]})
    save_point(run_dir, state_at(2, m, None, 250), "B")
    m.append({"role": "assistant", "content": [{"type": "text", "text": "Pronto."}]})
    save_point(run_dir, state_at(3, m, None, 300), "A")
    return m


def tree_digest(root):
    """sha256 of every file's relative path and bytes under root."""
    digest = hashlib.sha256()
    for path in sorted(Path(root).rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


# --- names and ordering -------------------------------------------------------------

def test_point_filename_is_zero_padded_and_names_the_point():
    assert point_filename(14, "A") == "turn-014-A.json"
    assert point_filename(3, "B") == "turn-003-B.json"
    assert parse_point_name("turn-014-A.json") == (14, "A")
    assert parse_point_name("turn-014-A.json.tmp") is None
    assert parse_point_name("checkpoint.json") is None


@pytest.mark.parametrize("turn, point", [(-1, "A"), ("3", "A"), (True, "A"), (2, "C"), (2, "a")])
def test_point_filename_refuses_bad_input_clearly(turn, point):
    with pytest.raises(TimelineError, match="inválido"):
        point_filename(turn, point)


def test_zero_padding_makes_name_order_match_turn_order():
    names = [point_filename(t, p) for t in (1, 2, 9, 10, 11, 40) for p in "AB"]
    assert sorted(names) == names
    unpadded = [f"turn-{t}-{p}.json" for t in (2, 10) for p in "AB"]
    assert sorted(unpadded) != unpadded  # the bug padding avoids: turn-10 before turn-2


def test_save_point_writes_the_state_under_checkpoints(tmp_path):
    state = state_at(14, [{"role": "user", "content": TASK}])
    path = save_point(tmp_path, state, "A")
    assert path == tmp_path / "checkpoints" / "turn-014-A.json"
    assert load_checkpoint(path) == state
    assert not list((tmp_path / "checkpoints").glob("*.tmp"))


def test_list_points_orders_by_turn_then_a_before_b_and_ignores_other_files(tmp_path):
    for turn, point in [(10, "B"), (2, "B"), (10, "A"), (2, "A"), (1000, "A")]:
        save_point(tmp_path, state_at(turn, [{"role": "user", "content": TASK}]), point)
    folder = tmp_path / "checkpoints"
    (folder / "turn-010-B.json.tmp").write_text('{"trunc')  # a crash in the middle of a write
    (folder / "notes.txt").write_text("x")
    (folder / "rewound-001").mkdir()
    (folder / "rewound-001" / "turn-999-B.json").write_text("{}")
    names = [p.name for p in list_points(tmp_path)]
    assert names == ["turn-002-A.json", "turn-002-B.json", "turn-010-A.json", "turn-010-B.json", "turn-1000-A.json"]


def test_list_points_of_a_run_without_sequence_is_empty(tmp_path):
    assert list_points(tmp_path) == []
    assert pick_latest_point(tmp_path) is None


def test_pick_latest_point_of_run_and_of_turn(tmp_path):
    record_team_email_sequence(tmp_path)
    assert pick_latest_point(tmp_path).name == "turn-003-A.json"
    assert pick_latest_point(tmp_path, 2).name == "turn-002-B.json"
    assert pick_latest_point(tmp_path, 3).name == "turn-003-A.json"
    assert pick_latest_point(tmp_path, 7) is None


def test_pick_latest_point_does_not_trust_modification_times(tmp_path):
    record_team_email_sequence(tmp_path)
    older = tmp_path / "checkpoints" / "turn-001-A.json"
    os.utime(older, (4_000_000_000, 4_000_000_000))  # e.g. restored from a backup later
    assert pick_latest_point(tmp_path).name == "turn-003-A.json"
    assert pick_latest_point(tmp_path, 1).name == "turn-001-B.json"


def test_read_point_is_as_loud_as_load_checkpoint(tmp_path):
    path = tmp_path / "checkpoints" / "turn-001-A.json"
    path.parent.mkdir()
    path.write_text('{"version": 1, "task"')
    with pytest.raises(CheckpointError, match="truncado"):
        read_point(path)
    with pytest.raises(TimelineError, match="não existe"):
        read_point(tmp_path / "checkpoints" / "turn-002-A.json")


# --- rewind ---------------------------------------------------------------------------

def test_rewind_to_returns_the_decision_scene_of_that_turn(tmp_path):
    record_team_email_sequence(tmp_path)
    state = rewind_to(tmp_path, 1)
    assert state["turns"] == 1 and state["tokens_used"] == 100
    assert state["pending_tool_use"] is None
    assert len(state["messages"]) == 3 and state["messages"][-1]["role"] == "user"
    assert validate_messages(state["messages"]) is None
    assert load_checkpoint(tmp_path / CHECKPOINT_FILE) == state


def test_rewind_sets_later_points_aside_without_deleting_them(tmp_path):
    record_team_email_sequence(tmp_path)
    before = {p.name: p.read_bytes() for p in list_points(tmp_path)}
    rewind_to(tmp_path, 1)
    assert [p.name for p in list_points(tmp_path)] == ["turn-001-A.json", "turn-001-B.json"]
    aside = tmp_path / "checkpoints" / "rewound-001"
    assert {p.name: p.read_bytes() for p in aside.iterdir()} == {
        name: data for name, data in before.items() if not name.startswith("turn-001")}
    assert pick_latest_point(tmp_path).name == "turn-001-B.json"


def test_a_second_rewind_uses_a_new_folder(tmp_path):
    record_team_email_sequence(tmp_path)
    rewind_to(tmp_path, 2)
    save_point(tmp_path, state_at(3, [{"role": "user", "content": TASK}]), "A")
    rewind_to(tmp_path, 1)
    folders = sorted(p.name for p in (tmp_path / "checkpoints").iterdir() if p.is_dir())
    assert folders == ["rewound-001", "rewound-002"]


def test_set_aside_with_nothing_later_changes_nothing(tmp_path):
    record_team_email_sequence(tmp_path)
    assert set_aside_points_after(tmp_path, 3) is None
    assert len(list_points(tmp_path)) == 5


def test_rewind_to_an_unknown_turn_names_the_turns_available(tmp_path):
    record_team_email_sequence(tmp_path)
    digest = tree_digest(tmp_path)
    with pytest.raises(TimelineError, match="turno 9.*disponíveis: 1, 2, 3"):
        rewind_to(tmp_path, 9)
    assert tree_digest(tmp_path) == digest  # nothing lost, nothing moved


def test_the_naive_rewind_to_point_a_is_what_the_api_refuses(tmp_path):
    record_team_email_sequence(tmp_path)
    naive = read_point(tmp_path / "checkpoints" / "turn-002-A.json")
    assert "tool_use` ids were found without `tool_result`" in validate_messages(naive["messages"])


# --- fork -----------------------------------------------------------------------------

def test_fork_records_a_new_identity_its_parent_and_a_blank_ledger(tmp_path):
    original, fork = tmp_path / "run", tmp_path / "fork"
    record_team_email_sequence(original)
    info = fork_from(original, 1, fork)
    assert info["timeline_id"].startswith("tl-") and info["timeline_id"] != MAIN_TIMELINE_ID
    assert info["parent"] == {"timeline_id": MAIN_TIMELINE_ID, "turn": 1, "point": "B"}
    assert info["dry_run"] is True
    assert load_timeline(fork) == info
    assert json.loads((fork / EFFECTS_FILE).read_text()) == {}
    assert [p.name for p in list_points(fork)] == ["turn-001-B.json"]
    assert read_point(pick_latest_point(fork)) == read_point(original / "checkpoints" / "turn-001-B.json")
    assert load_checkpoint(fork / CHECKPOINT_FILE) == read_point(pick_latest_point(fork))


def test_fork_leaves_the_original_timeline_byte_for_byte_unchanged(tmp_path):
    original = tmp_path / "run"
    record_team_email_sequence(original)
    (original / EFFECTS_FILE).write_text('{"toolu_S1": {"tool": "send_email", "status": "committed", '
                                         '"result": {"content": "enviado", "is_error": false}}}')
    digest = tree_digest(original)
    fork_from(original, 2, tmp_path / "fork")
    assert tree_digest(original) == digest


def test_a_fork_of_a_fork_names_the_fork_as_parent(tmp_path):
    record_team_email_sequence(tmp_path / "run")
    first = fork_from(tmp_path / "run", 2, tmp_path / "fork1")
    second = fork_from(tmp_path / "fork1", 2, tmp_path / "fork2")
    assert second["parent"]["timeline_id"] == first["timeline_id"]
    assert second["timeline_id"] != first["timeline_id"]


def test_fork_refuses_an_occupied_or_identical_folder(tmp_path):
    record_team_email_sequence(tmp_path / "run")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "keep.txt").write_text("mine")
    with pytest.raises(TimelineError, match="não está vazia"):
        fork_from(tmp_path / "run", 1, tmp_path / "busy")
    assert (tmp_path / "busy" / "keep.txt").read_text() == "mine"
    with pytest.raises(TimelineError, match="pasta nova"):
        fork_from(tmp_path / "run", 1, tmp_path / "run")
    with pytest.raises(TimelineError, match="turno 8"):
        fork_from(tmp_path / "run", 8, tmp_path / "fork")
    assert not (tmp_path / "fork").exists()


def test_load_timeline_of_a_plain_run_is_the_main_line(tmp_path):
    assert load_timeline(tmp_path) == {"timeline_id": MAIN_TIMELINE_ID, "parent": None, "dry_run": False}
    (tmp_path / TIMELINE_FILE).write_text('{"timeline_id": 3}')
    with pytest.raises(TimelineError, match="formato"):
        load_timeline(tmp_path)
    (tmp_path / TIMELINE_FILE).write_text('{"timeline_')
    with pytest.raises(TimelineError, match="ilegível"):
        load_timeline(tmp_path)


# --- whole runs over the offline endpoint -------------------------------------------------

from harness.fake_endpoint import make_stub_client  # noqa: E402
from harness.loop import new_run_state  # noqa: E402
from harness.scenarios import load_scenario  # noqa: E402
from harness.timeline import run_timeline, start_timeline  # noqa: E402
from harness.tools import use_workspace  # noqa: E402


def renamed_ids(responses, tag):
    """The same script with fresh tool_use ids, as a new model call would produce."""
    text = json.dumps(responses).replace("toolu_01", f"toolu_{tag}")
    return json.loads(text)


@pytest.fixture
def team_email(tmp_path):
    scenario = load_scenario("team-email")
    workspace = use_workspace(scenario.make_workspace(tmp_path / "world"))
    run_dir = tmp_path / "run"
    start_timeline(run_dir, new_run_state(scenario.task))
    state = run_timeline(make_stub_client(scenario.responses), run_dir)
    return scenario, workspace, run_dir, state


def test_run_timeline_writes_a_and_b_for_every_turn(team_email):
    _, workspace, run_dir, state = team_email
    names = [p.name for p in list_points(run_dir)]
    assert names == ["turn-001-A.json", "turn-001-B.json", "turn-002-A.json", "turn-002-B.json", "turn-003-A.json"]
    assert read_point(pick_latest_point(run_dir)) == state == load_checkpoint(run_dir / CHECKPOINT_FILE)
    assert len(workspace.emails()) == 1
    ledger = json.loads((run_dir / EFFECTS_FILE).read_text())
    assert ledger["toolu_01TE2"]["status"] == "committed"


def test_rewind_does_not_unsend_the_email(team_email):
    _, workspace, run_dir, _ = team_email
    outbox = workspace.outbox_path.read_bytes()
    state = rewind_to(run_dir, 1)
    assert state["turns"] == 1
    assert workspace.outbox_path.read_bytes() == outbox  # the world does not rewind


def test_rewind_to_a_turn_that_stopped_at_point_a_keeps_the_call_pending(team_email):
    scenario, workspace, run_dir, _ = team_email
    (run_dir / "checkpoints" / "turn-002-B.json").unlink()  # the run died after the effect was recorded
    outbox, ledger = workspace.outbox_path.read_bytes(), (run_dir / EFFECTS_FILE).read_bytes()
    state = rewind_to(run_dir, 2)
    assert [call["id"] for call in state["pending_tool_use"]] == ["toolu_01TE2"]  # still pending
    assert state["messages"][-1]["role"] == "assistant"
    assert workspace.outbox_path.read_bytes() == outbox and (run_dir / EFFECTS_FILE).read_bytes() == ledger
    assert [p.name for p in list_points(run_dir)][-1] == "turn-002-A.json"  # no point B invented
    # The next run settles it through the ledger: the receipt is reused, nothing is sent again.
    resumed = run_timeline(make_stub_client(scenario.responses), run_dir)
    assert resumed["status"] == "completed" and validate_messages(resumed["messages"]) is None
    result = resumed["messages"][4]["content"][0]
    assert result["tool_use_id"] == "toolu_01TE2" and result["is_error"] is False
    assert workspace.outbox_path.read_bytes() == outbox


def test_rewind_never_runs_a_tool_even_one_that_never_started(team_email, monkeypatch):
    """No ledger record at all for the pending send_email: the rewind still sends nothing, and
    needs no workspace; the next run is what sends it, once."""
    from harness import tools

    scenario, workspace, run_dir, _ = team_email
    (run_dir / "checkpoints" / "turn-002-B.json").unlink()
    (run_dir / "checkpoints" / "turn-003-A.json").unlink()
    (run_dir / EFFECTS_FILE).write_text("{}")  # the call never started
    workspace.outbox_path.unlink()
    monkeypatch.setattr(tools, "_current", None)  # no world at all: a tool call would raise
    rewind_to(run_dir, 2)
    assert json.loads((run_dir / EFFECTS_FILE).read_text()) == {} and not workspace.outbox_path.exists()
    use_workspace(workspace)
    run_timeline(make_stub_client(scenario.responses), run_dir)
    assert len(workspace.emails()) == 1


def test_rewind_to_point_a_of_a_finished_turn_sets_its_b_aside_and_reuses_the_receipt(team_email):
    scenario, workspace, run_dir, _ = team_email
    outbox = workspace.outbox_path.read_bytes()
    state = rewind_to(run_dir, 2, "A")
    assert state["pending_tool_use"] and [p.name for p in list_points(run_dir)][-1] == "turn-002-A.json"
    assert sorted(p.name for p in (run_dir / "checkpoints" / "rewound-001").iterdir()) == [
        "turn-002-B.json", "turn-003-A.json"]
    run_timeline(make_stub_client(scenario.responses), run_dir)
    assert workspace.outbox_path.read_bytes() == outbox  # the ledger had the receipt


def test_a_rewind_that_fails_changes_nothing_on_disk(team_email):
    _, _, run_dir, _ = team_email
    (run_dir / "checkpoints" / "turn-002-B.json").unlink()
    ledger = (run_dir / EFFECTS_FILE).read_bytes()
    cases = {
        "missing point B": lambda: rewind_to(run_dir, 2, "B"),
        "unknown turn": lambda: rewind_to(run_dir, 9),
    }
    (run_dir / "checkpoints" / "turn-001-B.json").write_text('{"version": 1, "task"')  # torn point
    cases["torn point"] = lambda: rewind_to(run_dir, 1)
    for label, attempt in cases.items():
        digest = tree_digest(run_dir)
        with pytest.raises((TimelineError, CheckpointError)):
            attempt()
        assert tree_digest(run_dir) == digest, label
        assert (run_dir / EFFECTS_FILE).read_bytes() == ledger, label


def test_a_rewind_refuses_an_unreadable_checkpoint_json_without_touching_anything(team_email):
    _, _, run_dir, _ = team_email
    (run_dir / CHECKPOINT_FILE).write_text('{"version": 2, "run_id"')
    digest = tree_digest(run_dir)
    with pytest.raises(TimelineError, match="nada foi alterado"):
        rewind_to(run_dir, 1)
    assert tree_digest(run_dir) == digest


def test_continuing_after_a_rewind_takes_the_new_route(team_email):
    scenario, workspace, run_dir, _ = team_email
    rewind_to(run_dir, 1)
    new_route = renamed_ids(scenario.responses, "02")
    new_route[1]["content"][1]["input"]["subject"] = "Conclusões (corrigido)"
    state = run_timeline(make_stub_client(new_route), run_dir)
    assert state["turns"] == 3
    subjects = [email["subject"] for email in workspace.emails()]
    assert subjects == ["Conclusões desta semana", "Conclusões (corrigido)"]  # both are in the world
    assert [p.name for p in (run_dir / "checkpoints" / "rewound-001").iterdir()]


def test_a_dry_run_fork_leaves_outbox_and_original_byte_for_byte_unchanged(team_email):
    scenario, workspace, run_dir, _ = team_email
    world, original = tree_digest(workspace.root), tree_digest(run_dir)
    fork = run_dir.parent / "fork"
    fork_from(run_dir, 1, fork)
    state = run_timeline(make_stub_client(renamed_ids(scenario.responses, "03")), fork)
    assert state["turns"] == 3
    sent = state["messages"][-2]["content"][0]
    assert sent["tool_use_id"] == "toolu_03TE2" and sent["content"].startswith("[dry-run]")
    assert tree_digest(workspace.root) == world
    assert tree_digest(run_dir) == original
    assert [p.name for p in list_points(fork)] == ["turn-001-B.json", "turn-002-A.json", "turn-002-B.json",
                                                   "turn-003-A.json"]


def test_the_same_fork_without_dry_run_sends_the_email_twice(team_email):
    scenario, workspace, run_dir, _ = team_email
    fork = run_dir.parent / "fork"
    info = fork_from(run_dir, 1, fork)
    (fork / TIMELINE_FILE).write_text(json.dumps({**info, "dry_run": False}))
    run_timeline(make_stub_client(renamed_ids(scenario.responses, "03")), fork)
    assert len(workspace.emails()) == 2  # the doubled effect dry-run exists to prevent


def test_fork_from_point_a_keeps_the_call_pending_and_the_fork_settles_it_from_the_inherited_receipt(team_email):
    scenario, workspace, run_dir, _ = team_email
    (run_dir / "checkpoints" / "turn-002-B.json").unlink()
    world, original = tree_digest(workspace.root), tree_digest(run_dir)
    fork = run_dir.parent / "fork"
    info = fork_from(run_dir, 2, fork)
    assert info["parent"]["point"] == "A"
    assert [p.name for p in list_points(fork)] == ["turn-002-A.json"]
    copied = read_point(fork / CHECKPOINT_FILE)
    assert [call["id"] for call in copied["pending_tool_use"]] == ["toolu_01TE2"]
    assert tree_digest(workspace.root) == world and tree_digest(run_dir) == original
    state = run_timeline(make_stub_client(scenario.responses), fork)
    # The original sent the email after 2-A: the fork answers with that receipt, not "[dry-run]".
    receipt = json.loads((run_dir / EFFECTS_FILE).read_text())["toolu_01TE2"]
    assert state["messages"][4]["content"][0]["content"] == receipt["result"]["content"]
    assert validate_messages(state["messages"]) is None
    assert tree_digest(workspace.root) == world and tree_digest(run_dir) == original


def test_run_timeline_settles_an_open_call_before_calling_the_model(tmp_path):
    from harness.tools import Workspace

    workspace = use_workspace(load_scenario("team-email").make_workspace(tmp_path / "world"))
    record_team_email_sequence(tmp_path / "run")
    run_dir = tmp_path / "run"
    (run_dir / CHECKPOINT_FILE).write_bytes((run_dir / "checkpoints" / "turn-002-A.json").read_bytes())
    done = {"content": [{"type": "text", "text": "Pronto."}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 1, "output_tokens": 1}}
    client = make_stub_client([done, done, done])
    state = run_timeline(client, run_dir)
    first_request = client.stub_endpoint.requests[0]["messages"]
    assert first_request[-1]["content"][0]["tool_use_id"] == "toolu_S1"  # answered before the model saw it
    assert state["status"] == "completed" and len(workspace.emails()) == 1
    assert isinstance(workspace, Workspace)


def test_run_timeline_with_an_approver_waits_and_sends_nothing_until_approved(team_email):
    import time

    from harness.approval import APPROVALS_FILE, PENDING, approve, record_decision

    scenario, workspace, run_dir, _ = team_email
    (run_dir / "checkpoints" / "turn-002-B.json").unlink()
    (run_dir / "checkpoints" / "turn-003-A.json").unlink()
    (run_dir / EFFECTS_FILE).write_text("{}")
    workspace.outbox_path.unlink()
    rewind_to(run_dir, 2)
    state = run_timeline(make_stub_client(scenario.responses), run_dir, approver=lambda call: PENDING)
    assert state["status"] == "waiting_for_approval" and state["pending_approval"]["name"] == "send_email"
    assert workspace.emails() == []
    assert read_point(run_dir / CHECKPOINT_FILE)["status"] == "waiting_for_approval"
    call = {key: state["pending_approval"][key] for key in ("id", "name", "input")}
    record_decision(run_dir / APPROVALS_FILE, call, approve(), time.time())
    state = run_timeline(make_stub_client(scenario.responses), run_dir, approver=lambda call: PENDING)
    assert state["status"] == "completed" and len(workspace.emails()) == 1


# --- runs written by the durable runner (checkpoint version 2) ----------------------------

def durable_team_email(run_dir):
    from harness.runner import WORLD_DIR, run_durable

    scenario = load_scenario("team-email")
    state = run_durable(make_stub_client(scenario.responses), run_dir, scenario)
    return scenario, Workspace(run_dir / WORLD_DIR), state


from harness.tools import Workspace  # noqa: E402


def test_the_runners_points_are_scenes_that_read_point_reads(tmp_path):
    _, _, state = durable_team_email(tmp_path / "run")
    point = read_point(pick_latest_point(tmp_path / "run"))
    assert point["messages"] == state["messages"] and point["turns"] == state["turns"]
    assert read_point(tmp_path / "run" / CHECKPOINT_FILE)["version"] == 2  # the run itself is v2


def test_rewinding_a_durable_run_keeps_its_identity_pauses_it_and_resume_takes_the_new_route(tmp_path):
    from harness.runner import run_durable

    run_dir = tmp_path / "run"
    scenario, world, finished = durable_team_email(run_dir)
    state = rewind_to(run_dir, 1)
    assert state["version"] == 2 and state["run_id"] == finished["run_id"]
    assert state["status"] == "paused" and state["turns"] == 1 and state["pending_tool_use"] is None
    assert read_point(run_dir / CHECKPOINT_FILE) == state
    resumed = run_durable(make_stub_client(renamed_ids(scenario.responses, "02")), run_dir, resume=True)
    assert resumed["status"] == "completed" and resumed["turns"] == 3
    assert resumed["run_id"] == finished["run_id"]
    assert len(world.emails()) == 2  # the rewind did not unsend the first one


def test_a_rewind_keeps_the_approval_rule_of_a_durable_run(tmp_path):
    run_dir = tmp_path / "run"
    durable_team_email(run_dir)
    run = json.loads((run_dir / CHECKPOINT_FILE).read_text())
    run["requires_approval"] = True
    (run_dir / CHECKPOINT_FILE).write_text(json.dumps(run))
    assert rewind_to(run_dir, 1)["requires_approval"] is True


def test_rewinding_a_durable_run_to_an_open_call_leaves_it_pending_for_the_gate(tmp_path):
    run_dir = tmp_path / "run"
    durable_team_email(run_dir)
    run = json.loads((run_dir / CHECKPOINT_FILE).read_text())
    run["requires_approval"] = True
    (run_dir / CHECKPOINT_FILE).write_text(json.dumps(run))
    (run_dir / "checkpoints" / "turn-002-B.json").unlink()
    ledger = (run_dir / EFFECTS_FILE).read_bytes()
    state = rewind_to(run_dir, 2)
    assert state["status"] == "paused" and state["requires_approval"] is True
    assert [call["name"] for call in state["pending_tool_use"]] == ["send_email"]
    assert (run_dir / EFFECTS_FILE).read_bytes() == ledger


def test_forking_a_durable_run_copies_only_the_scene(tmp_path):
    run_dir = tmp_path / "run"
    durable_team_email(run_dir)
    digest = tree_digest(run_dir)
    fork_from(run_dir, 2, tmp_path / "fork")
    scene = read_point(tmp_path / "fork" / CHECKPOINT_FILE)
    assert set(scene) == {"version", "task", "turns", "tokens_used", "messages", "pending_tool_use"}
    assert scene["version"] == 1 and scene["turns"] == 2
    assert tree_digest(run_dir) == digest


def test_a_version_2_point_is_read_and_forked_as_a_plain_scene(tmp_path):
    run_dir = tmp_path / "run"
    durable_team_email(run_dir)
    (run_dir / "checkpoints" / "turn-003-A.json").write_bytes((run_dir / CHECKPOINT_FILE).read_bytes())
    assert read_point(run_dir / "checkpoints" / "turn-003-A.json")["status"] == "completed"
    fork_from(run_dir, 3, tmp_path / "fork")
    assert "status" not in read_point(tmp_path / "fork" / CHECKPOINT_FILE)
