"""The real-SIGKILL demonstrations the first two lessons rely on."""
from __future__ import annotations

import random

import pytest

from harness.checkpoint import load_checkpoint
from harness.display.demos import MEETINGS, kill_agent_midway, kill_writer, long_task_responses


def test_the_long_task_script_reads_the_notes_then_one_meeting_per_turn():
    responses = long_task_responses()
    assert len(responses) == MEETINGS + 2
    assert [r["stop_reason"] for r in responses[:-1]] == ["tool_use"] * (MEETINGS + 1)
    assert responses[-1]["stop_reason"] == "end_turn"


@pytest.mark.slow
def test_a_killed_in_memory_loop_leaves_nothing_of_its_run_state(tmp_path):
    killed = kill_agent_midway(tmp_path, kill_at_turn=3)
    assert killed.killed_by_sigkill
    assert killed.lines[-1].startswith("turno 3:")
    assert "checkpoint.json" not in killed.files
    assert set(killed.files) == {"mundo/sandbox/NOTES.md"} | {
        f"mundo/sandbox/atas/reuniao-{n:02d}.md" for n in range(1, MEETINGS + 1)}


@pytest.mark.slow
def test_a_killed_checkpointed_loop_leaves_the_last_completed_turn(tmp_path):
    killed = kill_agent_midway(tmp_path, kill_at_turn=4, checkpoint=True)
    assert killed.killed_by_sigkill
    state = load_checkpoint(tmp_path / "checkpoint.json")
    assert state["turns"] == 3 and state["pending_tool_use"] is None
    assert len(state["messages"]) == 7


@pytest.mark.slow
def test_kill_writer_tears_in_place_writes_and_never_atomic_ones(tmp_path):
    rng = random.Random(7)
    in_place = []
    for number in range(6):
        folder = tmp_path / f"in-place-{number}"
        folder.mkdir()
        in_place.append(kill_writer(folder / "checkpoint.json", "in-place", rng))
    atomic_folder = tmp_path / "atomic"
    atomic_folder.mkdir()
    atomic = [kill_writer(atomic_folder / "checkpoint.json", "atomic", rng) for _ in range(6)]
    assert any(kill.error for kill in in_place)
    assert all(kill.error is None and kill.loaded_turns >= 1 for kill in atomic)


def test_kill_writer_refuses_an_unknown_mode(tmp_path):
    with pytest.raises(ValueError, match="modo desconhecido"):
        kill_writer(tmp_path / "checkpoint.json", "no-lugar")
