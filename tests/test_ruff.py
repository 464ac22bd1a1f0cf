"""The code passes `ruff check` with the rules and exceptions of pyproject.toml's [tool.ruff]."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def ruff_command() -> list[str]:
    beside = Path(sys.executable).with_name("ruff")  # the test extra installs it in the environment
    if beside.exists():
        return [str(beside)]
    found = shutil.which("ruff")
    if found is None:
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    return [found]


def test_ruff_check_passes():
    result = subprocess.run([*ruff_command(), "check", "--no-cache", "--output-format", "concise", "."],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_finds_a_planted_problem(tmp_path):
    """The same configuration over a copy with an unused import: the check can fail."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "grader").mkdir()
    (tmp_path / "grader" / "planted.py").write_text("import os\n", encoding="utf-8")
    result = subprocess.run([*ruff_command(), "check", "--no-cache", "--output-format", "concise", "."],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1 and "grader/planted.py:1:8: F401" in result.stdout, result.stdout
