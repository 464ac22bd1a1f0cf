"""Small notebooks and glossaries for the glossary and browser tests."""
from __future__ import annotations

from pathlib import Path

import nbformat
import yaml

REPO = Path(__file__).resolve().parent.parent
KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}


def notebook(cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    """cells: (kind, source) with kind "md" or "code"; ids are fixed so files are reproducible."""
    built = []
    for index, (kind, source) in enumerate(cells):
        if kind == "md":
            built.append(nbformat.v4.new_markdown_cell(source, id=f"md-{index}"))
        else:
            built.append(nbformat.v4.new_code_cell(source, id=f"code-{index}"))
    nb = nbformat.v4.new_notebook(cells=built)
    nb.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"}}
    return nb


def write_notebook(path: Path, nb: nbformat.NotebookNode) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


def entry(term: str, lesson: int, definition: str | None = None, **extra) -> dict:
    data = {
        "term": term,
        "definition": f"Definição de {term}." if definition is None else definition,
        "source": {"title": "Fonte — Exemplo", "url": "https://example.org/fonte"},
        "lesson": lesson,
    }
    data.update(extra)
    return data


def write_glossary(root: Path, entries: list[dict]) -> Path:
    path = root / "glossary.yaml"
    path.write_text(yaml.safe_dump({"terms": entries}, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


LESSON_THREE_SOURCES = [
    ("md", "# Lição 3: Retomando de um checkpoint\n\n"
           "Nesta lição você aprende a lidar com a chamada órfã que sobra de uma queda."),
    ("md", "## A espinha da retomada\n\n"
           "Ao carregar o checkpoint, a função `reconcile` fecha cada chamada órfã com um "
           "`tool_result`; o `save_checkpoint` grava o estado de novo."),
    ("code", "def reconcile(cp):\n    # uma chamada órfã por vez\n    return cp"),
    ("md", "Durante a retomada, uma ferramenta somente leitura pode rodar de novo sem medo."),
]


def lesson_three_notebook() -> nbformat.NotebookNode:
    """A lesson-3-like notebook with "chamada órfã" and a code name in backticks."""
    return notebook(LESSON_THREE_SOURCES)
