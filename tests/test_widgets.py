"""The lesson-5 timeline viewer: plain functions tested directly, the widget built headless."""
from __future__ import annotations

import builtins

import pytest

from harness.display.show import Rendered
from harness.display.widgets import (
    frame_html,
    frame_summary,
    show_timeline,
    timeline_strip_html,
    timeline_viewer,
)
from harness.fake_endpoint import make_stub_client
from harness.loop import new_run_state
from harness.scenarios import load_scenario
from harness.timeline import rewind_to, run_timeline, start_timeline, timeline_frames
from harness.tools import use_workspace


@pytest.fixture
def run_dir(tmp_path):
    scenario = load_scenario("team-email")
    use_workspace(scenario.make_workspace(tmp_path / "world"))
    run_dir = tmp_path / "run"
    start_timeline(run_dir, new_run_state(scenario.task))
    run_timeline(make_stub_client(scenario.responses), run_dir)
    return run_dir


def test_frames_follow_the_sequence_with_counters_and_pending_call(run_dir):
    frames = timeline_frames(run_dir)
    assert [(f["turn"], f["point"]) for f in frames] == [(1, "A"), (1, "B"), (2, "A"), (2, "B"), (3, "A")]
    assert [f["message_count"] for f in frames] == [2, 3, 4, 5, 6]
    assert frames[2]["pending"] == ["send_email (toolu_01TE2)"]
    assert frames[2]["orphans"] == ["toolu_01TE2"]  # point A: decided, not yet answered
    assert frames[3]["pending"] == [] and frames[3]["orphans"] == []
    tokens = [f["tokens_used"] for f in frames]
    assert tokens == sorted(tokens) and tokens[-1] == 398 + 41 + 611 + 152 + 790 + 24


def test_an_unreadable_point_becomes_a_frame_with_an_error(run_dir):
    (run_dir / "checkpoints" / "turn-002-A.json").write_text('{"version": 1, "ta')
    frames = timeline_frames(run_dir)
    broken = frames[2]
    assert broken["error"] and "truncado" in broken["error"]
    assert "ilegível" in frame_html(broken)
    assert [f["error"] for i, f in enumerate(frames) if i != 2] == [None] * 4


def test_strip_marks_the_selected_point_and_colours_a_and_b(run_dir):
    frames = timeline_frames(run_dir)
    strip = timeline_strip_html(frames, selected=2)
    assert strip.count("<circle") == 5
    assert strip.count('stroke-width="4"') == 1
    assert "<title>turn-002-A.json</title>" in strip
    assert timeline_strip_html([]) == "<p>(nenhum ponto gravado)</p>"


def test_frame_html_shows_counters_and_the_orphan_warning(run_dir):
    frames = timeline_frames(run_dir)
    at_a = frame_html(frames[2], frames, 2)
    assert "send_email (toolu_01TE2)" in at_a and "chamada órfã" in at_a
    at_b = frame_html(frames[3], frames, 3)
    assert "chamada órfã" not in at_b
    labels = [label for label, _ in frame_summary(frames[0])]
    assert labels == ["arquivo", "turns", "ponto", "tokens_used", "mensagens", "pending_tool_use"]


def test_viewer_builds_headless_and_the_slider_moves_the_view(run_dir):
    viewer = timeline_viewer(run_dir)
    (slider, label), view = viewer.children[0].children, viewer.children[1]
    assert slider.max == 4 and slider.value == 4 and label.value == "turn-003-A.json"
    slider.value = 2
    assert label.value == "turn-002-A.json"
    assert "send_email (toolu_01TE2)" in view.value


def test_viewer_follows_a_rewind(run_dir):
    rewind_to(run_dir, 1)
    viewer = timeline_viewer(run_dir)
    assert viewer.children[0].children[0].max == 1


def test_viewer_without_points_or_without_ipywidgets_degrades_to_static_html(run_dir, tmp_path, monkeypatch):
    empty = timeline_viewer(tmp_path / "nothing")
    assert isinstance(empty, Rendered) and "nenhum ponto" in repr(empty)

    real_import = builtins.__import__

    def no_ipywidgets(name, *args, **kwargs):
        if name == "ipywidgets":
            raise ImportError("no ipywidgets here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ipywidgets)
    static = timeline_viewer(run_dir)
    assert isinstance(static, Rendered)
    assert static._repr_html_().count("<circle") == 5
    assert len(repr(static).splitlines()) == 5


def test_show_timeline_lists_one_row_per_point(run_dir):
    rendered = show_timeline(run_dir)
    assert rendered._repr_html_().count("<tr>") == 6  # header + 5 points
    assert "turn-003-A.json" in repr(rendered)
