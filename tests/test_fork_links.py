"""A fork copies the run's world without following links planted in it."""
from __future__ import annotations

import os

import pytest
from tests.warm_python import run_python

pytestmark = pytest.mark.timeout(300)


def harness(cwd, *args, env=None):
    return run_python(["-m", "harness", *args], cwd=cwd, timeout=120, env={**os.environ, **(env or {})})


@pytest.fixture
def finished_run(tmp_path):
    run = tmp_path / "run"
    done = harness(tmp_path, "run", "--scenario", "team-email", "--workdir", str(run))
    assert done.returncode == 0, done.stderr
    return run


@pytest.mark.slow
def test_a_linked_file_in_the_world_stays_a_link_in_the_fork(tmp_path, finished_run):
    secret = tmp_path / "secret.txt"
    secret.write_text("SEGREDO de fora da execução", encoding="utf-8")
    planted = finished_run / "world" / "sandbox" / "notes" / "plantado.md"
    planted.symlink_to(secret)
    done = harness(tmp_path, "fork", "--workdir", str(finished_run), "--to", "1", "--into", str(tmp_path / "ramo"))
    assert done.returncode == 0, done.stderr
    copied = tmp_path / "ramo" / "world" / "sandbox" / "notes" / "plantado.md"
    assert copied.is_symlink()  # still a link, which the tools refuse to follow
    assert "SEGREDO" not in "".join(p.read_text(encoding="utf-8", errors="replace")
                                    for p in (tmp_path / "ramo").rglob("*") if p.is_file() and not p.is_symlink())


@pytest.mark.slow
def test_a_linked_folder_in_the_world_is_not_walked(tmp_path, finished_run):
    outside = tmp_path / "fora"
    (outside / "fundo").mkdir(parents=True)
    (outside / "fundo" / "grande.txt").write_text("x" * 1000, encoding="utf-8")
    (finished_run / "world" / "sandbox" / "pasta").symlink_to(tmp_path)  # a loop through the fork's own parent
    done = harness(tmp_path, "fork", "--workdir", str(finished_run), "--to", "1", "--into", str(tmp_path / "ramo"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "ramo" / "world" / "sandbox" / "pasta").is_symlink()


@pytest.mark.slow
def test_a_world_folder_that_is_a_link_is_refused(tmp_path, finished_run):
    world = finished_run / "world"
    world.rename(tmp_path / "mundo-de-fora")
    world.symlink_to(tmp_path / "mundo-de-fora")
    done = harness(tmp_path, "fork", "--workdir", str(finished_run), "--to", "1", "--into", str(tmp_path / "ramo"))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "world" in done.stderr
    assert not (tmp_path / "ramo").exists()
