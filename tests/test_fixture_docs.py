"""docs/fixtures.md: every field each exercise's fixtures accept is documented, in that
exercise's section, and the worked example is real: it validates, and its broken twin is
reported as the disagreement the page shows."""
from __future__ import annotations

import importlib
import re
import sys

import pytest

from grader import cli
from grader.checks import fixture_shape
from tests.grader_support import ROOT

PAGE = ROOT / "docs" / "fixtures.md"
EXERCISES = range(1, 7)
COMMON = ("workspace.",)  # documented once, in "Campos que se repetem"


def page_text() -> str:
    """The page the agreement tests read (a test plants rows in a copy of it)."""
    return PAGE.read_text(encoding="utf-8")


def schema_fields(schema: dict, prefix: str = "") -> set[str]:
    """Every key a fixture schema names, dotted; a checkpoint's own fields are documented once,
    in "Campos que se repetem" (test_the_checkpoint_and_workspace_tables_match_their_schemas)."""
    fields = set()
    for key, sub in schema.get("properties", {}).items():
        fields.add(prefix + key)
        if sub is not fixture_shape.CHECKPOINT_SCHEMA:
            fields |= schema_fields(sub, f"{prefix}{key}.")
    return fields


def accepted_fields(number: int) -> set[str]:
    """Every key the exercise's fixtures may have: the properties of its FIXTURE_SCHEMAS."""
    module = importlib.import_module(f"grader.checks.exercise_{number}.fixtures")
    return {field for schema in module.FIXTURE_SCHEMAS for field in schema_fields(schema)}


def section(title: str) -> str:
    text = page_text()
    start = text.index(f"\n{title}\n")
    following = re.search(r"\n#{2,3} ", text[start + len(title) + 2:])
    return text[start: start + len(title) + 2 + (following.start() if following else len(text))]


@pytest.mark.parametrize("number", EXERCISES)
def test_every_fixture_field_is_documented_in_its_exercise_section(number):
    own = section(f"### exercise-{number}")
    common = section("## Campos que se repetem")
    fields = accepted_fields(number)
    assert "description" in fields and "expect" in fields
    missing = [field for field in sorted(fields)
               if f"`{field}`" not in (common if field.startswith(COMMON) else own)]
    assert missing == [], f"exercise-{number}: fields not in docs/fixtures.md: {missing}"


def table_fields(text: str) -> set[str]:
    """The fields a section's tables document: the backticked names of each row's first cell."""
    cells = re.findall(r"^\| (`[^|]*`) \|", text, flags=re.M)
    return {name for cell in cells for name in re.findall(r"`([^`]+)`", cell)}


@pytest.mark.parametrize("number", EXERCISES)
def test_every_documented_field_is_one_the_fixtures_accept(number):
    documented = table_fields(section(f"### exercise-{number}"))
    assert documented, number
    unknown = sorted(documented - accepted_fields(number))
    assert unknown == [], f"exercise-{number}: docs/fixtures.md documents fields no fixture accepts: {unknown}"


def test_the_checkpoint_and_workspace_tables_match_their_schemas():
    common = table_fields(section("## Campos que se repetem"))
    checkpoint = set(fixture_shape.CHECKPOINT_SCHEMA["properties"])
    workspace = schema_fields(fixture_shape.WORKSPACE_SCHEMA, "workspace.")
    assert checkpoint == set(fixture_shape.CHECKPOINT_FIELDS)
    assert common == checkpoint | workspace


def test_a_documented_field_no_schema_accepts_fails_the_check(monkeypatch):
    planted = page_text().replace("| `expect.ways` |", "| `expect.caminhos` | um campo que nenhum schema aceita |\n| `expect.ways` |")
    monkeypatch.setattr(sys.modules[__name__], "page_text", lambda: planted)
    with pytest.raises(AssertionError, match=r"documents fields no fixture accepts: \['expect.caminhos'\]"):
        test_every_documented_field_is_one_the_fixtures_accept(4)
    test_every_documented_field_is_one_the_fixtures_accept(3)  # the other sections still agree


def test_a_schema_field_missing_from_the_docs_fails_the_check(monkeypatch):
    row = next(line for line in page_text().splitlines() if line.startswith("| `expect.undo_missing_tool` |"))
    monkeypatch.setattr(sys.modules[__name__], "page_text", lambda: PAGE.read_text(encoding="utf-8").replace(row + "\n", ""))
    with pytest.raises(AssertionError, match=r"fields not in docs/fixtures.md: \['expect.undo_missing_tool'\]"):
        test_every_fixture_field_is_documented_in_its_exercise_section(5)


def blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", page_text(), flags=re.S)


def test_the_guide_is_linked_from_the_instructors_guide():
    assert "(fixtures.md)" in (ROOT / "docs" / "instrutores.md").read_text(encoding="utf-8")


@pytest.mark.slow
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
