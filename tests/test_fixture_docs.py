"""docs/fixtures.md: every field each exercise's fixtures accept is documented, in that
exercise's section, and the worked example is real: it validates, and its broken twin is
reported as the disagreement the page shows."""
from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path

import pytest

from grader import cli
from grader.checks import fixture_shape
from tests.grader_support import ROOT

PAGE = ROOT / "docs" / "fixtures.md"
EXERCISES = range(1, 7)
# Read by the exercise's validator without an allow-list (so the spy below cannot see it).
UNLISTED = {2: {"expect.saves"}}
COMMON = ("workspace.",)  # documented once, in "Campos que se repetem"


def accepted_fields(number: int) -> set[str]:
    """Every key the exercise's validator accepts, seen by spying on its allow-lists while it
    validates the shipped fixtures."""
    module = importlib.import_module(f"grader.checks.exercise_{number}")
    original = fixture_shape.unknown_keys
    seen: set[str] = set()

    def spy(data, allowed, field=""):
        seen.update(f"{field}.{key}" if field else key for key in allowed)
        return original(data, allowed, field)

    # the validator may live in a module of the exercise's package (its fixtures.py)
    parts = [m for name, m in list(sys.modules.items()) if name.startswith(module.__name__ + ".")]
    holders = [m for m in (module, *parts, fixture_shape) if getattr(m, "unknown_keys", None) is original]
    for holder in holders:
        holder.unknown_keys = spy
    try:
        for path in sorted((ROOT / "grader" / "fixtures" / f"exercise-{number}").glob("*.json")):
            module.validate_fixture(json.loads(path.read_text(encoding="utf-8")))
    finally:
        for holder in holders:
            holder.unknown_keys = original
    return seen | UNLISTED.get(number, set())


def section(title: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(f"\n{title}\n")
    following = re.search(r"\n#{2,3} ", text[start + len(title) + 2:])
    return text[start: start + len(title) + 2 + (following.start() if following else len(text))]


@pytest.mark.parametrize("number", EXERCISES)
def test_every_fixture_field_is_documented_in_its_exercise_section(number):
    own = section(f"### exercise-{number}")
    common = section("## Campos que se repetem")
    fields = accepted_fields(number)
    assert "description" in fields and "expect" in fields  # the spy saw the validator at work
    missing = [field for field in sorted(fields)
               if f"`{field}`" not in (common if field.startswith(COMMON) else own)]
    assert missing == [], f"exercise-{number}: fields not in docs/fixtures.md: {missing}"


def blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)


def test_the_guide_is_linked_from_the_instructors_guide():
    assert "(fixtures.md)" in (ROOT / "docs" / "instrutores.md").read_text(encoding="utf-8")


def test_the_worked_example_validates_and_its_broken_twin_shows_the_disagreement(tmp_path, capsys, monkeypatch):
    [example] = blocks("yaml")
    valid_output, broken_output = blocks("text")
    folder = tmp_path / "minhas-fixtures" / "exercise-3"
    folder.mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    solutions = ["--solutions", str(ROOT / "solutions")]

    (folder / "ata-pendente.yaml").write_text(example, encoding="utf-8")
    assert cli.main(["fixtures", "exercise-3", "--fixtures", "minhas-fixtures", *solutions]) == 0
    out = capsys.readouterr().out
    for line in valid_output.strip("\n").splitlines():
        assert line in out, (line, out)

    assert "resume_action: {toolu_EX1: rerun}" in example
    (folder / "ata-pendente.yaml").write_text(
        example.replace("resume_action: {toolu_EX1: rerun}", "resume_action: {toolu_EX1: is_error}"), encoding="utf-8")
    assert cli.main(["fixtures", "exercise-3", "--fixtures", "minhas-fixtures", *solutions]) == 1
    out = capsys.readouterr().out
    for line in broken_output.strip("\n").splitlines():
        assert line in out, (line, out)
    assert "somente leitura" not in out.split("QUEBRADA", 1)[1]  # the fixture's terms, not the student's
