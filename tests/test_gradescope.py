"""`course gradescope`: the autograder zip, and its run_autograder on a simulated /autograder tree."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from authoring import cli as course_cli
from tests.grader_support import ROOT, with_definition, write, write_new_fixtures

EXERCISE = "exercise-3"
VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}
HIDDEN = {"pending-grep", "pending-create-ticket"}


@pytest.fixture(scope="module")
def autograder_zip(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("gradescope")
    hidden = write_new_fixtures(folder / "particulares")
    out = folder / "autograder.zip"
    code = course_cli.main(["--root", str(ROOT), "gradescope", EXERCISE, "--out", str(out),
                            "--hidden-fixtures", str(hidden), "--timeout", "60", "--cell-timeout", "5"])
    assert code == 0
    return out


def run_autograder(zip_path: Path, tree: Path, submission_files: dict[str, Path]) -> tuple[dict, subprocess.CompletedProcess]:
    """Unpack the zip as Gradescope does (/autograder/source), put the submission in
    place and run run_autograder with the paths pointed at ``tree``."""
    source = tree / "source"
    source.mkdir(parents=True)
    with zipfile.ZipFile(zip_path) as archive:
        archive.extractall(source)
    (tree / "submission").mkdir()
    for name, path in submission_files.items():
        (tree / "submission" / name).write_bytes(path.read_bytes())
    env = dict(os.environ, AUTOGRADER_ROOT=str(tree), AUTOGRADER_PYTHON=sys.executable,
               GRADE_STATE_FILE=str(tree / "state.json"))
    env.pop("PYTHONPATH", None)
    done = subprocess.run(["bash", str(source / "run_autograder")], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=240)
    results = json.loads((tree / "results" / "results.json").read_text(encoding="utf-8"))
    return results, done


def assert_valid_results(results: dict) -> None:
    """results.json as Gradescope's specification describes it, field by field."""
    assert isinstance(results["score"], (int, float)) and not isinstance(results["score"], bool)
    assert isinstance(results["output"], str) and results["output"].strip()
    assert results.get("stdout_visibility", "hidden") in VISIBILITIES
    assert isinstance(results["execution_time"], int) and results["execution_time"] >= 0
    assert results["tests"], "every check should be a test"
    for test in results["tests"]:
        assert set(test) >= {"name", "score", "max_score", "output", "visibility"}
        assert isinstance(test["name"], str) and test["name"].strip()
        assert isinstance(test["max_score"], (int, float)) and test["max_score"] > 0
        assert 0 <= test["score"] <= test["max_score"]
        assert test["score"] in (0, test["max_score"])  # a check passes or fails whole
        assert test["status"] == ("passed" if test["score"] == test["max_score"] else "failed")
        assert isinstance(test["output"], str) and test["output"].strip()
        assert test["visibility"] in VISIBILITIES
    assert len({test["name"] for test in results["tests"]}) == len(results["tests"])
    assert results["score"] == pytest.approx(sum(test["score"] for test in results["tests"]))


def test_the_zip_has_gradescopes_two_scripts_at_its_root_and_no_solutions(autograder_zip, tmp_path):
    with zipfile.ZipFile(autograder_zip) as archive:
        names = archive.namelist()
        modes = {info.filename: info.external_attr >> 16 for info in archive.infolist()}
        config = json.loads(archive.read("gradescope.json"))
        setup = archive.read("setup.sh").decode()
    assert {"setup.sh", "run_autograder", "gradescope.json", "curso/pyproject.toml"} <= set(names)
    assert modes["run_autograder"] & stat.S_IXUSR and modes["setup.sh"] & stat.S_IXUSR
    assert not [name for name in names if name.startswith(("curso/solutions", "curso/exercises", "curso/tests"))]
    assert not [name for name in names if "__pycache__" in name]
    assert {f"fixtures/hidden/{name}.json" for name in HIDDEN} <= set(names)
    assert "curso/grader/fixtures/exercise-3/cpA.json" in names
    assert config == {"exercise": EXERCISE,
                      "limits": {"total_seconds": 60.0, "cell_seconds": 5.0, "check_seconds": 10.0, "memory_mb": 1024},
                      "hidden_visibility": "after_due_date", "remove_hidden_fixtures": True}
    (tmp_path / "setup.sh").write_text(setup)
    assert subprocess.run(["bash", "-n", str(tmp_path / "setup.sh")]).returncode == 0
    assert "pip install /autograder/source/curso" in setup


@pytest.mark.slow
def test_solution_scores_everything_and_hidden_fixture_checks_wait_for_the_due_date(autograder_zip, tmp_path):
    results, done = run_autograder(autograder_zip, tmp_path / "autograder",
                                   {"exercise-3.ipynb": ROOT / "solutions" / "exercise-3.ipynb"})
    assert done.returncode == 0, done.stderr
    assert_valid_results(results)
    assert all(test["status"] == "passed" for test in results["tests"])
    assert results["score"] == sum(test["max_score"] for test in results["tests"]) == len(results["tests"])
    hidden = [test for test in results["tests"] if any(f"[{name}]" in test["name"] for name in HIDDEN)]
    assert hidden and all(test["visibility"] == "after_due_date" for test in hidden)
    assert all(test["visibility"] == "visible" for test in results["tests"] if test not in hidden)
    assert not any(name in results["output"] for name in HIDDEN)  # the summary names no hidden fixture
    # The hidden fixtures were loaded, then removed before the student's code ran.
    assert not (tmp_path / "autograder" / "source" / "fixtures" / "hidden").exists()


@pytest.mark.slow
def test_blank_exercise_scores_zero_with_reasons(autograder_zip, tmp_path):
    results, done = run_autograder(autograder_zip, tmp_path / "autograder",
                                   {"exercise-3.ipynb": ROOT / "exercises" / "exercise-3.ipynb"})
    assert done.returncode == 0, done.stderr
    assert_valid_results(results)
    assert results["score"] == 0
    assert all(test["status"] == "failed" for test in results["tests"])
    assert all("Ainda não implementado" in test["output"] for test in results["tests"])


@pytest.mark.slow
def test_looping_submission_is_cut_and_the_rest_still_scores(autograder_zip, tmp_path):
    looping = write(with_definition("reconcile", "while True:\n    pass\n"), tmp_path / "entrega.ipynb")
    results, done = run_autograder(autograder_zip, tmp_path / "autograder", {"minha-entrega.ipynb": looping})
    assert done.returncode == 0, done.stderr
    assert_valid_results(results)
    passed = {test["name"] for test in results["tests"] if test["status"] == "passed"}
    level_1 = {test["name"] for test in results["tests"] if test["name"].startswith("Nível 1")}
    root_cause = {test["name"] for test in results["tests"] if "causa raiz" in test["name"].lower()}
    level_3 = {test["name"] for test in results["tests"] if test["name"].startswith("Nível 3")}  # no reconcile there
    assert len(root_cause) == 1 and passed - level_3 == level_1 | root_cause
    assert level_3 <= passed and results["score"] == len(level_1) + 1 + len(level_3)
    assert "não terminou em 5 s" in results["output"] and "laço infinito" in results["output"]


def test_a_submission_without_the_notebook_gets_zero_and_says_what_to_send(autograder_zip, tmp_path):
    notes = tmp_path / "notas.txt"
    notes.write_text("esqueci o notebook")
    results, done = run_autograder(autograder_zip, tmp_path / "autograder", {"notas.txt": notes})
    assert done.returncode == 0, done.stderr
    assert_valid_results(results)
    assert results["score"] == 0
    assert "Envie o arquivo exercise-3.ipynb" in results["output"]


def test_bad_inputs_stop_the_build_with_a_portuguese_message(tmp_path, capsys):
    out = tmp_path / "a.zip"
    assert course_cli.main(["--root", str(ROOT), "gradescope", EXERCISE, "--out", str(out),
                            "--hidden-fixtures", str(tmp_path / "nao-existe")]) == 2
    assert "a pasta de fixtures" in capsys.readouterr().err and not out.exists()
    broken = tmp_path / "quebradas"
    broken.mkdir()
    (broken / "ruim.json").write_text("{ não é json")
    assert course_cli.main(["--root", str(ROOT), "gradescope", EXERCISE, "--out", str(out),
                            "--hidden-fixtures", str(broken)]) == 2
    assert "JSON inválido" in capsys.readouterr().err and not out.exists()
    assert course_cli.main(["--root", str(ROOT), "gradescope", "exercise-42", "--out", str(out)]) == 2
    assert "exercise-42" in capsys.readouterr().err
