"""Exercise 2's hints are a ladder that leads to the answer: every level has three rungs or more,
the first gives the idea and not the answer, and the last rung names every concrete value the
level's checks require (read, where the checks read them, from the fixtures and the checks' own
constants), so following the last rung literally cannot fail a check."""
from __future__ import annotations

import pytest

from grader.checks.exercise_2.run_probe import SAVE_POINT_FIELD, SAVE_POINTS
from grader.core.fixture_loader import read_fixture_files
from grader.core.manifest import get_exercise


def hints(level: int) -> tuple[str, ...]:
    return get_exercise("exercise-2").levels[level - 1].hints


def fixtures(kind: str) -> list[dict]:
    return [item.data for item in read_fixture_files("exercise-2")
            if item.data is not None and item.data.get("kind") == kind]


def statuses(kind: str) -> set[str]:
    found = {fixture["expect"]["status"] for fixture in fixtures(kind)}
    assert found, kind
    return {f'"{status}"' for status in found}


def save_points() -> set[str]:
    return {SAVE_POINT_FIELD} | {f'"{point}"' for point in SAVE_POINTS}


def load_mentions() -> set[str]:
    """What the level-2 fixtures make an error message say, beyond a field's name or a version
    number (which the hint asks for in words: "o nome do campo", "as duas versões")."""
    from tests.exercise_support import solution_notebook

    source = "\n".join(c.source for c in solution_notebook("exercise-2").cells if c.cell_type == "code")
    mentions = {text for fixture in fixtures("load") for text in fixture["expect"].get("mentions", [])}
    fields = {line.split('"')[1] for line in source.splitlines()
              if line.startswith('    "') and '":' in line}
    assert {"task", "version", SAVE_POINT_FIELD} <= fields
    return {text for text in mentions if not text.isdigit() and text not in fields} | {SAVE_POINT_FIELD, "pending_tool_use"}


def required() -> dict[int, set[str]]:
    return {
        1: {"tempfile.mkstemp", "os.fdopen", "flush()", "os.fsync", "os.replace", "os.open", "os.O_RDONLY",
            "default=str", '"w"', '"a"', ".tmp", "CheckpointError", *save_points()},
        2: {"None", "FileNotFoundError", "OSError", 'decode("utf-8")', "json.JSONDecodeError", "CheckpointError",
            "isinstance(dados, dict)", "CHECKPOINT_VERSION", "REQUIRED_FIELDS", "bool", "SAVE_POINTS",
            "tool_use", "o nome do campo", "as duas versões", *load_mentions(), *save_points()},
        3: {"save_checkpoint(state, checkpoint_path)", "pending_tool_use", "None", "take_response", "pause_turn",
            "max_turns", "tokens_used", *statuses("run"), *save_points()},
        4: {"token_budget", "tokens_used", "max_turns", "<", *statuses("budget")},
    }


@pytest.mark.parametrize("level", [1, 2, 3, 4])
def test_every_level_has_a_ladder_of_three_or_more_rungs(level):
    ladder = hints(level)
    assert len(ladder) >= 3 and len(set(ladder)) == len(ladder), level


@pytest.mark.parametrize("level", [1, 2, 3, 4])
def test_the_last_rung_names_every_value_the_checks_require(level):
    last = hints(level)[-1]
    missing = sorted(term for term in required()[level] if term not in last)
    assert not missing, f"exercise-2 level {level}: the last hint never names {missing}"


@pytest.mark.parametrize("level", [1, 2, 3, 4])
def test_the_ladder_goes_from_the_idea_to_the_answer(level):
    """The first rung names at most a third of the required values; the last names more than it."""
    terms = required()[level]
    named = [sum(term in hint for term in terms) for hint in hints(level)]
    assert named[0] <= len(terms) / 3, (level, named)
    assert named[-1] > named[0], (level, named)


def test_the_new_requirements_reach_the_hints():
    """The save point is what lesson 2 does not show: levels 1 to 3 name it before the last rung
    too, so a learner who stops one rung early still learns what is asked."""
    for level in (1, 2, 3):
        assert any(SAVE_POINT_FIELD in hint or "ponto" in hint for hint in hints(level)[:-1]), level
