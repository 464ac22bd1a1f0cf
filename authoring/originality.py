"""`course originality`: word runs a lesson's prose shares with reference texts.

The lessons grew from reference texts that may be learned from but not copied. This
counts, per lesson, the distinct runs of N consecutive words (8 by default) found both
in the lesson's prose and in any reference text given on the command line.

Words are compared after folding case, accents kept, punctuation and markdown dropped.
Titles and citation lines are left aside on purpose, since they are meant to match:
headings; the course title and the lessons' own titles wherever they are quoted (in
a byline or a link to the next lesson they are cut out of the line); runs lying wholly
inside any heading; lines holding a URL; and the "Fontes" section. Code
cells, fenced code and glossary marks' definitions are not prose. Runs never cross a
line or a table cell.
"""
from __future__ import annotations

import argparse
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import nbformat

from authoring.glossary import lesson_paths, read_notebook
from authoring.glossary_marker import strip_marks
from authoring.glossary_page import COURSE_TITLE
from authoring.markdown_regions import FENCE, HEADING_TEXT
from grader.plural import quantity

RUN_LENGTH = 8
SOURCES_HEADING = "fontes"

_WORD = re.compile(r"\w+")
_URL = re.compile(r"https?://|www\.")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_TAG = re.compile(r"</?[A-Za-z][^<>]*>")

Run = tuple[str, ...]


def words(text: str) -> list[str]:
    """Lower-cased words of a text; punctuation, markdown marks and spacing do not count."""
    return _WORD.findall(unicodedata.normalize("NFC", text).casefold().replace("_", " "))


def runs(tokens: Sequence[str], length: int = RUN_LENGTH) -> set[Run]:
    return {tuple(tokens[i:i + length]) for i in range(len(tokens) - length + 1)}


def _plain(line: str) -> str:
    """A markdown line as the reader sees it: link text kept, tags and targets dropped."""
    return _TAG.sub(" ", _LINK.sub(r"\1", line))


@dataclass
class Prose:
    """The parts of one text that are prose, and the headings found in it."""
    blocks: list[list[str]] = field(default_factory=list)
    titles: list[list[str]] = field(default_factory=list)  # every heading
    main_titles: list[list[str]] = field(default_factory=list)  # level-1 headings


def cut_out(block: list[str], phrases: Sequence[Sequence[str]]) -> list[list[str]]:
    """The pieces of a block left when every occurrence of the phrases is removed."""
    pieces, start, i = [], 0, 0
    while i < len(block):
        found = next((p for p in phrases if p and block[i:i + len(p)] == list(p)), None)
        if found is None:
            i += 1
            continue
        pieces.append(block[start:i])
        i = start = i + len(found)
    pieces.append(block[start:])
    return [piece for piece in pieces if piece]


def markdown_prose(sources: Iterable[str]) -> Prose:
    """Prose blocks (one per line or table cell) and heading titles of markdown cells."""
    prose = Prose()
    for source in sources:
        in_fence = False
        sources_level = None  # heading level of a "Fontes" section being skipped
        for line in strip_marks(source).splitlines():
            if FENCE.match(line):
                in_fence = not in_fence
                continue
            if in_fence:
                continue
            heading = HEADING_TEXT.match(line)
            if heading:
                level, title = len(heading.group(1)), _plain(heading.group(2))
                prose.titles.append(words(title))
                if level == 1:
                    prose.main_titles.append(words(title))
                if sources_level is not None and level <= sources_level:
                    sources_level = None
                if " ".join(words(title)) == SOURCES_HEADING:
                    sources_level = level
                continue
            if sources_level is not None or _URL.search(line):
                continue
            for cell in _plain(line).split("|"):
                tokens = words(cell)
                if tokens:
                    prose.blocks.append(tokens)
    return prose


def text_prose(text: str) -> Prose:
    """A plain-text reference: one block per line; lines with a URL are citations."""
    return Prose(blocks=[words(line) for line in text.splitlines() if not _URL.search(line) and words(line)])


def notebook_prose(notebook: nbformat.NotebookNode) -> Prose:
    return markdown_prose(cell.source for cell in notebook.cells if cell.cell_type == "markdown")


@dataclass(frozen=True)
class Passage:
    """Consecutive shared runs of one block, merged into the words they cover."""
    text: str
    runs: int


@dataclass
class Report:
    name: str
    shared: set[Run]
    passages: list[Passage]

    @property
    def count(self) -> int:
        return len(self.shared)


def compare(name: str, prose: Prose, reference_runs: set[Run], title_runs: set[Run],
            length: int = RUN_LENGTH) -> Report:
    shared: set[Run] = set()
    passages: list[Passage] = []
    for block in prose.blocks:
        hits = [i for i in range(len(block) - length + 1)
                if (run := tuple(block[i:i + length])) in reference_runs and run not in title_runs]
        shared.update(tuple(block[i:i + length]) for i in hits)
        start = None
        for position, i in enumerate(hits):
            if start is None:
                start, count = i, 0
            count += 1
            following = hits[position + 1] if position + 1 < len(hits) else None
            if following != i + 1:
                passages.append(Passage(" ".join(block[start:i + length]), count))
                start = None
    return Report(name, shared, passages)


def compare_lessons(lessons: Sequence[Path], references: Sequence[Path],
                    length: int = RUN_LENGTH, course_lessons: Sequence[Path] = ()) -> list[Report]:
    """One report per lesson: the runs its prose shares with any of the references.

    The titles set aside are the course title and the main title of every lesson
    given, plus those of `course_lessons` (so a link to a lesson not examined is still
    recognised as a title).
    """
    reference_runs: set[Run] = set()
    for path in references:
        for block in text_prose(Path(path).read_text(encoding="utf-8")).blocks:
            reference_runs |= runs(block, length)
    proses = {Path(path): notebook_prose(read_notebook(Path(path))) for path in lessons}
    others = [notebook_prose(read_notebook(Path(path))) for path in course_lessons if Path(path) not in proses]
    main_titles = [words(COURSE_TITLE)] + [title for prose in [*proses.values(), *others]
                                           for title in prose.main_titles]
    main_titles.sort(key=len, reverse=True)  # the longest title claims its words first
    title_runs: set[Run] = set()
    for prose in proses.values():
        for title in prose.titles:
            title_runs |= runs(title, length)
        prose.blocks = [piece for block in prose.blocks for piece in cut_out(block, main_titles)]
    return [compare(path.name, prose, reference_runs, title_runs, length) for path, prose in proses.items()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("references", nargs="+", type=Path, metavar="REFERENCIA",
                        help="textos de referência (arquivos de texto) a comparar com as lições")
    parser.add_argument("--lessons", nargs="+", type=Path, default=None, metavar="LICAO",
                        help="notebooks a examinar (padrão: as lições do curso)")
    parser.add_argument("--words", type=int, default=RUN_LENGTH,
                        help=f"tamanho da sequência de palavras (padrão: {RUN_LENGTH})")
    parser.add_argument("--quiet", action="store_true", help="só a contagem por lição, sem os trechos")


def run(args: argparse.Namespace) -> int:
    if args.words < 2:
        print(f"course originality: --words precisa ser pelo menos 2 (recebi {args.words}).")
        return 2
    lessons = args.lessons or lesson_paths(args.root)
    missing = [str(path) for path in [*args.references, *lessons] if not Path(path).is_file()]
    if missing:
        print(f"course originality: arquivo não encontrado: {', '.join(missing)}.")
        return 2
    try:
        reports = compare_lessons(lessons, args.references, args.words, lesson_paths(args.root))
    except (UnicodeDecodeError, ValueError) as exc:
        print(f"course originality: não consegui ler os arquivos: {exc}")
        return 2
    print(f"sequências de {args.words} palavras em comum com {quantity(len(args.references), 'texto', 'textos')} de referência:")
    for report in reports:
        print(f"  {report.name}: {report.count}")
        if not args.quiet:
            for passage in report.passages:
                print(f"      “{passage.text}” ({passage.runs})")
    total = sum(report.count for report in reports)
    print(f"total: {total}")
    return 1 if total else 0
