"""Mark the first occurrence of each glossary term in a lesson's markdown cells.

A mark is `<abbr class="glossario" title="definition">text as written</abbr>`. The
class tells our own marks apart from any <abbr> an author typed, so marking always
starts by stripping the old marks: running twice changes nothing and a changed
definition updates every mark.

Matching rules:
- longest form first: all occurrences of longer forms claim their text before
  shorter ones look ("ponto de gravação A" wins over "ponto");
- word boundaries, with "." and "-" glued to a neighbouring word counted as part of
  it (so "checkpoint" is not found inside "checkpoint.json");
- prose terms ignore case, except a one-letter capital word ("ponto A"); code names
  (with "_", ".", "()", "-", digits or inner capitals) must match exactly; accents
  must match, in composed or decomposed form;
- never inside code, headings, links or existing HTML (see markdown_regions), nor in
  a "Fontes" section, whose lines are source titles; an inline code span whose whole
  content is a term is wrapped as a unit.
"""
from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass
from typing import Iterable, Sequence

from authoring.glossary_schema import Term
from authoring.markdown_regions import HEADING_TEXT, find_regions

MARK_CLASS = "glossario"
SOURCES_HEADING = "fontes"
MARK = re.compile(r'<abbr class="%s" title="[^"]*">(.*?)</abbr>' % MARK_CLASS, re.S)
LEFT_BOUNDARY = r"(?<![\w-])(?<!\w\.)"
RIGHT_BOUNDARY = r"(?![\w-])(?!\.\w)"
BETWEEN_WORDS = r"(?:[ \t]*\r?\n[ \t]*|[ \t]+)"
# Characters that markdown renderers could still read inside an attribute value:
# "$" starts math in Jupyter, "|" splits table cells, "`" opens code spans.
_EXTRA_ESCAPES = {"`": "&#96;", "$": "&#36;", "|": "&#124;", "\\": "&#92;"}


def strip_marks(text: str) -> str:
    """Remove our marks, keeping the marked text exactly as it was written."""
    return MARK.sub(lambda match: match.group(1), text)


def title_attribute(definition: str) -> str:
    escaped = html.escape(" ".join(definition.split()), quote=True)
    return "".join(_EXTRA_ESCAPES.get(ch, ch) for ch in escaped)


def mark_for(term: Term, text: str) -> str:
    return f'<abbr class="{MARK_CLASS}" title="{title_attribute(term.hover_text)}">{text}</abbr>'


def is_code_name(form: str) -> bool:
    """Identifiers and file names match case-sensitively; prose terms do not."""
    if re.search(r"[_.()\-\d]", form):
        return True
    return any(re.search(r"[A-Z]", word[1:]) for word in form.split())


def sources_spans(text: str) -> list[tuple[int, int]]:
    """Where a "Fontes" section runs: from its heading to the next heading of the same or a higher level."""
    spans, start, level, offset = [], None, 0, 0
    for line in text.splitlines(keepends=True):
        heading = HEADING_TEXT.match(line.rstrip("\r\n"))
        if heading:
            depth = len(heading.group(1))
            if start is not None and depth <= level:
                spans.append((start, offset))
                start = None
            if start is None and heading.group(2).strip().casefold() == SOURCES_HEADING:
                start, level = offset, depth
        offset += len(line)
    if start is not None:
        spans.append((start, offset))
    return spans


def _char_pattern(ch: str) -> str:
    decomposed = unicodedata.normalize("NFD", ch)
    if decomposed == ch:
        return re.escape(ch)
    return f"(?:{re.escape(ch)}|{re.escape(decomposed)})"


def _word_pattern(word: str, ignore_case: bool) -> str:
    exact = "".join(_char_pattern(ch) for ch in word)
    # A one-letter capital ("ponto de gravação A") is a name, not prose: "ponto a" must not match.
    if not ignore_case or (len(word) == 1 and word.isupper()):
        return exact
    return f"(?i:{exact})"


def form_pattern(form: str) -> re.Pattern[str]:
    words = unicodedata.normalize("NFC", form).split()
    ignore_case = not is_code_name(form)
    body = BETWEEN_WORDS.join(_word_pattern(word, ignore_case) for word in words)
    return re.compile(LEFT_BOUNDARY + body + RIGHT_BOUNDARY)


def _code_key(text: str, exact: bool) -> str:
    """What an inline code span and a form are compared by: the NFC text, casefolded unless
    the form is a code name (``turns`` and ``Turns`` are different names)."""
    text = unicodedata.normalize("NFC", text)
    return text if exact else text.casefold()


@dataclass(frozen=True)
class Occurrence:
    cell: int
    start: int
    end: int
    term: Term


@dataclass
class MarkingResult:
    sources: list[str]
    marked: dict[str, int]  # term -> index (in the given list) of the cell holding its mark


class Marker:
    """Compiled matchers for one glossary; reusable across lessons."""

    def __init__(self, terms: Sequence[Term]):
        self.terms = list(terms)
        forms = [(form, term) for term in self.terms for form in term.forms]
        forms.sort(key=lambda pair: -len(pair[0]))
        self._forms = [(form, term, form_pattern(form), is_code_name(form)) for form, term in forms]

    def occurrences(self, cell: int, text: str) -> list[Occurrence]:
        """Every place in one (unmarked) cell where a term may be marked."""
        regions = find_regions(text)
        blocked = regions.blocked(len(text))
        sources = sources_spans(text)
        for start, end in sources:
            blocked[start:end] = b"\x01" * (end - start)
        # The cell's code spans by what a form is compared with, looked up once per form (a
        # lesson has hundreds of spans and the glossary hundreds of forms).
        spans: dict[tuple[bool, str], list] = {}
        for span in regions.code_spans:
            if not any(a <= span.start < b for a, b in sources):
                for exact in (True, False):
                    spans.setdefault((exact, _code_key(span.content.strip(), exact)), []).append(span)
        found: list[Occurrence] = []
        for form, term, pattern, code_name in self._forms:
            for match in pattern.finditer(text):
                if not any(blocked[match.start():match.end()]):
                    found.append(Occurrence(cell, match.start(), match.end(), term))
            for span in spans.get((code_name, _code_key(form, code_name)), []):
                found.append(Occurrence(cell, span.start, span.end, term))
        return found

    def mark_cells(self, sources: Iterable[str]) -> MarkingResult:
        """Strip old marks from the markdown sources, then mark each term's first use."""
        clean = [strip_marks(source) for source in sources]
        candidates = [occ for index, text in enumerate(clean) for occ in self.occurrences(index, text)]
        # Longest first: a longer form claims its characters before a shorter one looks.
        candidates.sort(key=lambda occ: (-(occ.end - occ.start), occ.cell, occ.start))
        taken = [bytearray(len(text)) for text in clean]
        first: dict[str, Occurrence] = {}
        for occ in candidates:
            claimed = taken[occ.cell]
            if any(claimed[occ.start:occ.end]):
                continue
            claimed[occ.start:occ.end] = b"\x01" * (occ.end - occ.start)
            current = first.get(occ.term.term)
            if current is None or (occ.cell, occ.start) < (current.cell, current.start):
                first[occ.term.term] = occ
        return MarkingResult(
            sources=_apply(clean, first.values()),
            marked={name: occ.cell for name, occ in first.items()},
        )


def _apply(clean: list[str], chosen: Iterable[Occurrence]) -> list[str]:
    result = list(clean)
    for occ in sorted(chosen, key=lambda o: (o.cell, o.start), reverse=True):
        text = result[occ.cell]
        result[occ.cell] = text[:occ.start] + mark_for(occ.term, text[occ.start:occ.end]) + text[occ.end:]
    return result
