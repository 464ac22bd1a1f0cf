"""Points per level and per check: the manifest's weights reach every output format."""
from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET

import pytest
import yaml

from grader import cli
from grader.core import manifest
from grader.core.engine import load_exercise
from grader.core.errors import GraderError
from grader.core.fixture_loader import load_fixtures
from grader.core.manifest import ManifestError, parse_manifest
from grader.core.points import points_for
from grader.instructor import batch
from grader.reports import render
from tests.grader_support import defining_cell, with_definition, write

ONE_LEVEL = """
version: 1
exercises:
  - name: exercise-1
    title: Um
    levels:
      - {level: 1, title: Primeiro, hints: [a]LEVEL_EXTRA}
"""


def manifest_text(level_extra: str) -> str:
    return ONE_LEVEL.replace("LEVEL_EXTRA", level_extra)


@pytest.mark.parametrize(
    "extra, problem",
    [
        (", points: 0", "levels\\[0\\].points: deveria ser um número maior que zero, é 0"),
        (", points: -3", "points: deveria ser um número maior que zero, é -3"),
        (", points: true", "points: deveria ser um número maior que zero, é True"),
        (", points: dez", "points: deveria ser um número maior que zero, é 'dez'"),
        (", check_points: []", "check_points: deveria ser um mapeamento nome_da_verificacao: pontos"),
        (", check_points: {a: -1}", "check_points.a: deveria ser um número maior ou igual a zero"),
        (", pontos: 3", "chave desconhecida 'pontos'"),
    ],
)
def test_bad_points_in_the_manifest_name_the_spot(extra, problem):
    with pytest.raises(ManifestError, match=problem):
        parse_manifest(manifest_text(extra))


def test_points_are_optional_and_read_as_numbers():
    plain = parse_manifest(manifest_text("")).exercise("exercise-1").levels[0]
    assert (plain.points, plain.check_points) == (None, ())
    weighted = parse_manifest(manifest_text(", points: 10, check_points: {b: 2.5}")).exercise("exercise-1").levels[0]
    assert (weighted.points, weighted.check_points) == (10.0, (("b", 2.5),))


# ------------------------------------------------------- the course's exercise-3

@pytest.fixture
def weighted(monkeypatch):
    """Use the course's manifest with points for exercise-3: 10 for level 1, level 2 as the
    test says (YAML mapping text, e.g. "points: 30"), 10 for level 3."""
    def use(level_2: str) -> None:
        data = yaml.safe_load(manifest.MANIFEST_PATH.read_text(encoding="utf-8"))
        levels = next(e for e in data["exercises"] if e["name"] == "exercise-3")["levels"]
        levels[0]["points"] = 10
        levels[1].update(yaml.safe_load("{" + level_2 + "}"))
        levels[2]["points"] = 10
        parsed = parse_manifest(yaml.safe_dump(data, allow_unicode=True))
        monkeypatch.setattr(manifest, "load_manifest", lambda path=None: parsed)
    return use


def exercise_3_plan():
    spec = load_exercise("exercise-3")
    return spec.plan(load_fixtures("exercise-3", (), spec.validate_fixture))


def test_without_points_every_check_is_worth_one():
    plan = exercise_3_plan()
    points = points_for("exercise-3", plan)
    assert set(points.values()) == {1.0} and sorted(points) == sorted(run.id for run in plan)


def test_level_points_are_split_and_a_named_check_keeps_its_own(weighted):
    weighted("points: 30, check_points: {root_cause_identified: 7.5}")
    plan = exercise_3_plan()
    points = points_for("exercise-3", plan)
    level_1 = [run.id for run in plan if run.level == 1]
    level_2 = [run for run in plan if run.level == 2]
    assert len(level_1) > 1 and [points[id_] for id_ in level_1] == [10 / len(level_1)] * len(level_1)
    assert points["n2.root_cause_identified"] == 7.5
    others = [points[run.id] for run in level_2 if run.name != "root_cause_identified"]
    assert len(others) == len(level_2) - 1 and len(set(others)) == 1 and sum(others) == pytest.approx(22.5)
    assert sum(points.values()) == pytest.approx(50)


def test_a_named_per_fixture_check_splits_its_points_between_fixtures(weighted):
    weighted("check_points: {high_impact_not_repeated: 9}")
    plan = exercise_3_plan()
    points = points_for("exercise-3", plan)
    runs = [run.id for run in plan if run.name == "high_impact_not_repeated"]
    assert runs and sum(points[id_] for id_ in runs) == pytest.approx(9)
    # Without level points, the level's other checks keep one point each.
    assert points["n2.root_cause_identified"] == 1.0


@pytest.mark.parametrize(
    "level_2, problem",
    [
        ("check_points: {reconcile_ok: 3}", "check_points cita 'reconcile_ok', que não é uma verificação deste nível"),
        ("points: 5, check_points: {root_cause_identified: 6}", "somam 6 pontos, mas o nível vale 5"),
    ],
)
def test_points_that_do_not_fit_the_level_are_refused_before_grading(weighted, level_2, problem, tmp_path):
    weighted(level_2)
    with pytest.raises(GraderError, match=problem):
        points_for("exercise-3", exercise_3_plan())
    # The CLI says so in one line and runs no kernel for it.
    code = cli.main(["exercise-3", "--notebook", str(tmp_path / "nao-existe.ipynb")])
    assert code == 2


BROKEN_RECONCILE = "def reconcile(cp):\n    raise ValueError('quebrado de propósito')\n"
BROKEN_RECONCILE_MCP = "def reconcile_mcp(cp, server):\n    raise ValueError('quebrado de propósito')\n"


@pytest.mark.slow
def test_points_reach_the_terminal_json_junit_and_csv(weighted, tmp_path, capsys, monkeypatch):
    """A real grading: level 1 passes (10 points), the root-cause answer passes (7.5) and
    every reconcile and reconcile_mcp check fails, so 17.5 of 50 points, in every format."""
    monkeypatch.setenv("GRADE_STATE_FILE", str(tmp_path / "state.json"))
    weighted("points: 30, check_points: {root_cause_identified: 7.5}")
    broken = with_definition("reconcile", BROKEN_RECONCILE)
    defining_cell(broken, "reconcile_mcp").source = BROKEN_RECONCILE_MCP
    notebook = write(broken, tmp_path / "ana.ipynb")
    junit = tmp_path / "junit.xml"

    assert cli.main(["exercise-3", "--notebook", str(notebook), "--json", "--junit", str(junit)]) == 1
    data = json.loads(capsys.readouterr().out)
    assert (data["points"], data["max_points"]) == (pytest.approx(17.5), pytest.approx(50))
    assert data["score"] == pytest.approx(17.5 / 50)
    assert (data["levels"]["1"]["points"], data["levels"]["1"]["max_points"]) == (pytest.approx(10), pytest.approx(10))
    assert (data["levels"]["2"]["points"], data["levels"]["2"]["max_points"]) == (pytest.approx(7.5), pytest.approx(30))
    by_id = {check["id"]: check for check in data["checks"]}
    assert by_id["n2.root_cause_identified"]["points"] == 7.5
    assert by_id["n2.root_cause_identified"]["status"] == "pass"

    suite = ET.parse(junit).getroot().find("testsuite")
    properties = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert properties == {"pontos": "17.5", "pontos_possiveis": "50"}
    case = next(c for c in suite.findall("testcase") if c.get("name") == "n2.root_cause_identified")
    assert {p.get("name"): p.get("value") for p in case.find("properties")} == {"pontos": "7.5", "pontos_possiveis": "7.5"}
    failed_case = next(c for c in suite.findall("testcase") if c.find("failure") is not None)
    assert {p.get("name"): p.get("value") for p in failed_case.find("properties")}["pontos"] == "0"

    report = render_report_from(data)
    text = render.text_report(report)
    level_1, level_2, level_3 = (len(report.levels()[level]) for level in (1, 2, 3))
    passed, total = level_1 + 1, level_1 + level_2 + level_3
    assert data["passed_count"] == passed and data["total"] == total
    assert f"Pontuação: 17.5/50 pontos (35%); {passed}/{total} verificações passaram." in text
    assert f"Nível 1 — Uma ação de retomada para cada checkpoint (cpA, cpB, cpC)  ({level_1}/{level_1}; 10/10 pontos)" in text
    assert f"(1/{level_2}; 7.5/30 pontos)" in text

    row = batch.row_from_report(batch.Submission("ana", notebook, label="ana.ipynb"), report, [1, 2])
    rows = list(csv.DictReader(io.StringIO(batch.gradebook_text([row], [1, 2]))))
    assert rows[0]["pontos"] == "17.5" and rows[0]["pontos_possiveis"] == "50"
    assert rows[0]["total"] == "35" and rows[0]["nivel_1"] == "100" and rows[0]["nivel_2"] == "25"
    assert rows[0]["verificacoes"] == f"{passed}/{total}"


def render_report_from(data: dict):
    from grader.core.results import GradeReport

    return GradeReport.from_dict(data)


def test_default_weights_keep_the_percentage_of_checks():
    from grader.core.results import FAIL, PASS, CheckResult, GradeReport

    checks = [CheckResult(f"c{i}", 1 + i % 2, None, "t", "c", PASS if i < 3 else FAIL) for i in range(4)]
    report = GradeReport("exercise-3", checks)
    assert (report.points_earned, report.points_possible, report.score) == (3, 4, 0.75)
    row = batch.row_from_report(batch.Submission("bia", None, label="bia.ipynb"), report, [1, 2])
    assert (row.total, row.points, row.max_points, row.level_scores) == (75.0, 3, 4, {1: 100.0, 2: 50.0})


def test_a_row_that_graded_nothing_shows_the_points_the_exercise_is_worth():
    missing = batch.failure_row(batch.Submission("davi", None, "sem notebook", "davi/"), batch.NO_NOTEBOOK, "sem notebook", [1, 2])
    rows = list(csv.DictReader(io.StringIO(batch.gradebook_text([missing], [1, 2], max_points=40))))
    assert (rows[0]["pontos"], rows[0]["pontos_possiveis"], rows[0]["total"]) == ("0", "40", "0")
