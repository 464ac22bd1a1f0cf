"""docs/arquitetura.md names every module of harness/, grader/ and authoring/, so a newcomer
reading it finds each file the tree holds (a module added without a word there fails here).
The exercises' own check modules and the defects of exercise 6 are families the page describes
by their pattern (`level_K.py`, `*_probe.py`, one defect per file), not one by one."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "arquitetura.md"
PACKAGES = ("harness", "grader", "authoring")
FAMILIES = ("grader/checks/exercise_", "grader/buggy_harnesses/")


def modules(root: Path) -> set[str]:
    """Every module's own name (the file's stem) under the packages, packages' __init__ aside."""
    found = set()
    for package in PACKAGES:
        for path in (root / package).rglob("*.py"):
            relative = path.relative_to(root).as_posix()
            if path.stem in {"__init__", "__main__"} or "__pycache__" in path.parts or relative.startswith(FAMILIES):
                continue
            found.add(path.stem)
    return found


def named_on_the_page(text: str) -> set[str]:
    """The names the page writes as code (`name`, `name.py`, `a/b/name.py`) or in its diagram."""
    blocks = re.findall(r"```(.*?)```", text, re.S)
    diagram = {word for block in blocks for word in re.findall(r"\w+", block)}
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    inline = {part for span in re.findall(r"`([^`]+)`", prose) for part in re.split(r"[/.\s,()]+", span)}
    return inline | diagram


def unnamed(root: Path, text: str) -> list[str]:
    return sorted(modules(root) - named_on_the_page(text))


def test_the_architecture_page_names_every_module():
    assert unnamed(ROOT, PAGE.read_text(encoding="utf-8")) == []


def test_a_module_the_page_does_not_name_is_found(tmp_path):
    for package in PACKAGES:
        (tmp_path / package).mkdir()
    (tmp_path / "harness" / "checkpoint.py").write_text("")
    (tmp_path / "grader" / "novo_modulo.py").write_text("")
    (tmp_path / "grader" / "checks" / "exercise_7").mkdir(parents=True)
    (tmp_path / "grader" / "checks" / "exercise_7" / "level_1.py").write_text("")  # a family member
    text = "```\nauthoring/ ──► harness/\n```\nO `checkpoint` grava a cena; `novo_modulo_antigo` não é o mesmo nome."
    assert unnamed(tmp_path, text) == ["novo_modulo"]
