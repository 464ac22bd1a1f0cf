"""Where each level of an exercise is taught: the lesson section named by the manifest.

Exercise N belongs to the lesson ``lessons/0N-*.ipynb``; a level's ``section`` in
manifest.yaml is the text of one of that lesson's markdown headings. The anchor is the one
JupyterLab and nbconvert give a heading: its rendered text with each space turned into "-".
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import quote

_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
_INLINE_MARKUP = re.compile(r"<[^>]*>|[`*]")  # tags (glossary <abbr>), code and bold marks


def heading_anchor(heading: str) -> str:
    """The id JupyterLab's renderer (and nbconvert's) gives a heading of this text."""
    plain = _INLINE_MARKUP.sub("", " ".join(heading.split()))
    return plain.replace(" ", "-")


def lesson_path(exercise: str, root: Path) -> Path | None:
    """``lessons/0N-*.ipynb`` of exercise-N under the course folder ``root``, if there is one."""
    try:
        number = int(exercise.rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return None
    found = sorted((Path(root) / "lessons").glob(f"{number:02d}-*.ipynb"))
    return found[0] if found else None


def lesson_headings(path: Path) -> list[str]:
    """The markdown headings of a lesson notebook, their text as written (markup kept)."""
    try:
        cells = json.loads(Path(path).read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError, AttributeError):
        return []
    headings = []
    for cell in cells if isinstance(cells, list) else []:
        if not isinstance(cell, dict) or cell.get("cell_type") != "markdown":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        headings += [match.group(1) for line in source.splitlines() if (match := _HEADING.match(line))]
    return headings


def section_href(exercise: str, section: str, root: Path | None, base: Path) -> str | None:
    """A link from a page in ``base`` to the section in the lesson, None when the lesson or the
    heading is not in this copy of the course."""
    if not section or root is None:
        return None
    path = lesson_path(exercise, root)
    if path is None or section not in [" ".join(h.split()) for h in lesson_headings(path)]:
        return None
    import os

    relative = os.path.relpath(path.resolve(), Path(base).resolve())
    return quote(Path(relative).as_posix()) + "#" + quote(heading_anchor(section))


def section_problems(manifest, root: Path) -> list[str]:
    """For `course check`: levels whose section is missing or is no heading of their lesson."""
    problems = []
    for exercise in manifest.exercises:
        path = lesson_path(exercise.name, root)
        headings = [" ".join(h.split()) for h in lesson_headings(path)] if path else []
        for level in exercise.levels:
            where = f"manifest.yaml: {exercise.name}.levels[{level.number - 1}].section"
            if not level.section:
                problems.append(f"{where}: falta a seção da lição que o nível {level.number} testa")
            elif path is None:
                problems.append(f"{where}: não achei a lição do {exercise.name} (lessons/{exercise.number:02d}-*.ipynb)")
            elif level.section not in headings:
                problems.append(f"{where}: {path.name} não tem um título {level.section!r}")
    return problems
