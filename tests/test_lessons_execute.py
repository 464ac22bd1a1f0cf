"""Each lesson runs top to bottom in a fresh kernel, offline, with no unexpected error.

Cells that show an error on purpose carry the `raises-exception` tag, which nbclient
honours; any other error fails the lesson.
"""
from __future__ import annotations

import os
import shutil

import nbformat
import pytest
from nbclient import NotebookClient

from tests.lesson_code import LESSONS_DIR, is_appendix, lesson_paths

EXPECTED_LESSONS = 6


def offline_env() -> dict:
    env = dict(os.environ)
    env.pop("ANTHROPIC_API_KEY", None)  # the lessons must never need the real API
    return env


@pytest.mark.slow  # a fresh kernel runs every cell of a lesson
@pytest.mark.parametrize("path", lesson_paths(), ids=lambda p: p.stem)
def test_lesson_runs_top_to_bottom(path, tmp_path, monkeypatch):
    for name, value in offline_env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    # Run from a scratch copy of the lessons folder so files a lesson writes stay out of the repo.
    workdir = tmp_path / "lessons"
    shutil.copytree(LESSONS_DIR, workdir)
    temporary = tmp_path / "tmp"  # the kernel's system temporary folder, looked at once it ends
    temporary.mkdir()
    monkeypatch.setenv("TMPDIR", str(temporary))
    notebook = nbformat.read(workdir / path.name, as_version=4)
    client = NotebookClient(notebook, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(workdir)}})
    client.execute()
    errors = [
        cell for cell in notebook.cells
        if cell.cell_type == "code"
        and "raises-exception" not in cell.metadata.get("tags", [])
        and any(output.get("output_type") == "error" for output in cell.get("outputs", []))
    ]
    assert not errors
    # The kernel has ended (nbclient shuts it down): a lesson run after run leaves nothing behind.
    assert sorted(p.name for p in temporary.iterdir()) == []


def test_all_six_lessons_exist():
    found = [p.name for p in lesson_paths() if not is_appendix(p)]
    if len(found) < EXPECTED_LESSONS:
        pytest.skip(f"only {len(found)} of {EXPECTED_LESSONS} lessons written so far: {found}")
    assert len(found) == EXPECTED_LESSONS
