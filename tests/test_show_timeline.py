"""The turn timeline and side-by-side panels that lesson 3 draws (harness/display/show.py)."""
from __future__ import annotations

from harness.display.show import Rendered, show_side_by_side, show_turn_timeline, turn_timeline_steps

TEAM_EMAIL = [["read_file"], ["send_email"], []]


def fates(rows):
    return [[fate for _, fate in row] for row in rows]


def test_no_crash_every_step_happens():
    rows = turn_timeline_steps(TEAM_EMAIL)
    assert [[label for label, _ in row] for row in rows] == [
        ["modelo responde", "ponto A", "read_file", "ponto B"],
        ["modelo responde", "ponto A", "send_email", "ponto B"],
        ["modelo responde", "ponto A"],
    ]
    assert all(fate == "feito" for row in fates(rows) for fate in row)


def test_crash_after_the_tool_ran_leaves_point_b_and_later_turns_undone():
    rows = turn_timeline_steps(TEAM_EMAIL, crash=(2, "depois"))
    assert rows[1] == [("modelo responde", "feito"), ("ponto A", "feito"), ("send_email", "feito"),
                       ("✕ queda", "queda"), ("ponto B", "nunca")]
    assert fates(rows)[2] == ["nunca", "nunca"]


def test_crash_before_the_tool_ran_marks_the_tool_as_never_run():
    rows = turn_timeline_steps(TEAM_EMAIL, crash=(2, "antes"))
    assert rows[1] == [("modelo responde", "feito"), ("ponto A", "feito"), ("✕ queda", "queda"),
                       ("send_email", "nunca"), ("ponto B", "nunca")]
    assert fates(rows)[0] == ["feito"] * 4


def test_the_checkpoint_on_disk_is_the_last_save_point_that_happened():
    crashed = show_turn_timeline(TEAM_EMAIL, crash=(2, "depois"))
    lines = crashed.plain.splitlines()
    assert "ponto A (em disco)" in lines[2] and "(em disco)" not in lines[1] + lines[3]
    assert crashed._repr_html_().count("(em disco)") == 1
    finished = show_turn_timeline(TEAM_EMAIL).plain.splitlines()
    assert finished[-1] == "turno 3: modelo responde → ponto A (em disco)"


def test_side_by_side_keeps_every_panel_in_html_and_text():
    left, right = Rendered("<b>antes</b>", "antes"), Rendered("<i>depois</i>", "depois")
    both = show_side_by_side(left, right)
    html = both._repr_html_()
    assert html.index("<b>antes</b>") < html.index("<i>depois</i>") and "display:flex" in html
    assert both.plain == "antes\n\ndepois"
