"""`course originality`: word runs a lesson shares with reference texts.

The lessons grew from reference texts that may be learned from but not copied. This
counts, per lesson, the distinct runs of N consecutive words (8 by default) found both
in the lesson and in any reference text given on the command line.

Words are compared after folding case, accents kept, punctuation and markdown dropped.
A run may cross a line break: a paragraph (or list item) is read as one block however
it is wrapped, so a sentence split over lines is still found; runs never cross a blank
line, a heading, a list item or a table cell. Reference texts are read the same way,
one block per paragraph.

What a student reads counts, code included: markdown prose, fenced code, and the
string literals and comments of code cells (a message copied into a `raise` is
copied all the same). A URL is dropped from its line, the rest of the line counts.
Titles and citations are left aside on purpose, since they are meant to match:
headings; the titles listed under "Fontes" (the section itself is not prose); the
course title and the lessons' own titles wherever they are quoted (in a byline or a
link to the next lesson they are cut out of the line); and glossary marks'
definitions.
"""
from __future__ import annotations

import argparse
import ast
import io
import re
import tokenize
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import nbformat

from authoring.glossary import lesson_paths, read_notebook
from authoring.glossary_marker import strip_marks
from authoring.glossary_page import COURSE_TITLE
from authoring.markdown_regions import BLANK, FENCE, HEADING_TEXT, LIST_ITEM
from grader.core.plural import quantity
from grader.reports import console

RUN_LENGTH = 8
SOURCES_HEADING = "fontes"

_WORD = re.compile(r"\w+")
_URL = re.compile(r"<?(?:https?://|www\.)[^\s<>)\]]*>?")
_TABLE_ROW = re.compile(r"^\s*\|")
_SOURCE_NUMBER = re.compile(r"^\s*\d+\.\s+")
# Cell magics whose body is Python; any other (%%bash, %%html...) is read word by word.
_PYTHON_CELL_MAGICS = ("%%writefile", "%%time", "%%timeit", "%%capture", "%%prun")
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


def _without_urls(line: str) -> str:
    return _URL.sub(" ", _plain(line))


def markdown_prose(sources: Iterable[str]) -> Prose:
    """Prose blocks (one per paragraph, list item, table cell or fence) and the titles of markdown cells."""
    prose = Prose()
    for source in sources:
        paragraph: list[str] = []
        fence: list[str] | None = None  # lines of an open fenced block
        sources_level = None  # heading level of a "Fontes" section being read as titles

        def close_paragraph() -> None:
            if paragraph:
                prose.blocks.append(list(paragraph))
                paragraph.clear()

        for line in strip_marks(source).splitlines():
            if FENCE.match(line):
                close_paragraph()
                if fence is None:
                    fence = []
                else:
                    prose.blocks.append(words(" ".join(fence)))
                    fence = None
                continue
            if fence is not None:
                fence.append(line)
                continue
            heading = HEADING_TEXT.match(line)
            if heading:
                close_paragraph()
                level, title = len(heading.group(1)), _plain(heading.group(2))
                prose.titles.append(words(title))
                if level == 1:
                    prose.main_titles.append(words(title))
                if sources_level is not None and level <= sources_level:
                    sources_level = None
                if " ".join(words(title)) == SOURCES_HEADING:
                    sources_level = level
                continue
            if sources_level is not None:
                # A source line: its title may be quoted in the prose, which is citing it.
                prose.titles.append(words(_without_urls(_SOURCE_NUMBER.sub("", line))))
                continue
            if BLANK.match(line):
                close_paragraph()
            elif _TABLE_ROW.match(line):
                close_paragraph()
                for cell in _without_urls(line).split("|"):
                    if words(cell):
                        prose.blocks.append(words(cell))
            else:
                if LIST_ITEM.match(line):
                    close_paragraph()
                paragraph.extend(words(_without_urls(line)))
        close_paragraph()
        if fence:
            prose.blocks.append(words(" ".join(fence)))
    prose.blocks = [block for block in prose.blocks if block]
    return prose


def text_prose(text: str) -> Prose:
    """A plain-text reference: one block per paragraph (lines up to a blank line), URLs dropped."""
    prose = Prose()
    for paragraph in re.split(r"\n[ \t]*\n", text):
        tokens = words(_URL.sub(" ", paragraph))
        if tokens:
            prose.blocks.append(tokens)
    return prose


def _python_of_cell(source: str) -> str | None:
    """The Python a code cell holds (magic and shell lines blanked), or None if it holds none."""
    first, _, rest = source.lstrip().partition("\n")
    if first.startswith("%%"):
        if not first.startswith(_PYTHON_CELL_MAGICS):
            return None
        source = rest
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def code_prose(source: str) -> list[list[str]]:
    """The words a student reads in a code cell: string literals and comments, one block each.

    Identifiers are not prose. A cell that does not parse as Python is read word by word.
    """
    python = _python_of_cell(source)
    try:
        tree = ast.parse(python) if python is not None else None
    except SyntaxError:
        tree = None
    if tree is None:
        return [words(source)]
    blocks = []
    inside_fstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = [part.value for part in node.values if isinstance(part, ast.Constant)]
            inside_fstrings.update(id(part) for part in node.values)
            blocks.append(words(" ".join(parts)))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in inside_fstrings:
            blocks.append(words(node.value))
    comment: list[str] = []  # consecutive comment lines are one block
    last_row = None
    for token in tokenize.generate_tokens(io.StringIO(python).readline):
        if token.type != tokenize.COMMENT:
            continue
        if last_row is None or token.start[0] != last_row + 1:
            blocks.append(comment)
            comment = []
        comment.extend(words(token.string))
        last_row = token.start[0]
    blocks.append(comment)
    return [block for block in blocks if block]


def notebook_prose(notebook: nbformat.NotebookNode) -> Prose:
    prose = markdown_prose(cell.source for cell in notebook.cells if cell.cell_type == "markdown")
    for cell in notebook.cells:
        if cell.cell_type == "code":
            prose.blocks += code_prose(cell.source)
    return prose


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
    parser.add_argument("--words", type=console.whole_number(1), default=RUN_LENGTH, metavar="N",
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
