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


def project_files() -> list[str]:
    """What the repository holds (a student's scratch notebook or Copy1 is not project code), or
    "." outside a git checkout."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--", "*.py", "*.ipynb", "*.pyi"], cwd=ROOT,
                                capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ["."]
    files = [name for name in listed.stdout.split("\0") if name and (ROOT / name).exists()]
    return files if listed.returncode == 0 and files else ["."]


def test_ruff_check_passes():
    result = subprocess.run([*ruff_command(), "check", "--no-cache", "--force-exclude", "--output-format", "concise",
                             *project_files()], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_finds_a_planted_problem(tmp_path):
    """The same configuration over a copy with an unused import: the check can fail."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "grader").mkdir()
    (tmp_path / "grader" / "planted.py").write_text("import os\n", encoding="utf-8")
    result = subprocess.run([*ruff_command(), "check", "--no-cache", "--output-format", "concise", "."],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1 and "grader/planted.py:1:8: F401" in result.stdout, result.stdout


def test_an_untracked_scratch_notebook_is_not_linted(tmp_path):
    """A student's rascunho.ipynb or exercise-3-Copy1.ipynb in the checkout is not the project's code."""
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "kept.py").write_text("x = 1\n", encoding="utf-8")
    subprocess.run(["git", "add", "kept.py", "pyproject.toml"], cwd=tmp_path, check=True)
    (tmp_path / "rascunho.py").write_text("import os\n", encoding="utf-8")
    listed = subprocess.run(["git", "ls-files", "-z", "--", "*.py"], cwd=tmp_path, capture_output=True, text=True)
    files = [name for name in listed.stdout.split("\0") if name]
    assert files == ["kept.py"]
    result = subprocess.run([*ruff_command(), "check", "--no-cache", "--force-exclude", *files], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout
