"""Find the parts of a markdown cell where a glossary mark must never go.

Protected: fenced and indented code blocks, math, headings (ATX and setext), HTML
blocks, inline HTML (a tag and everything up to its closing tag), links and images
(text included), autolinks and bare URLs, link reference definitions. Inline code
spans are reported separately: a span whose whole content is a glossary term may be
wrapped as a unit, anything else inside it is left alone.

This is a pragmatic CommonMark reading, deliberately conservative: when unsure,
a region is protected (a missed mark is harmless, a mark inside code is not).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_BLOCK_TAGS = (
    "address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|"
    "details|dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|"
    "h1|h2|h3|h4|h5|h6|head|header|hr|html|iframe|legend|li|link|main|menu|menuitem|nav|"
    "noframes|ol|optgroup|option|p|param|search|section|summary|table|tbody|td|tfoot|th|"
    "thead|title|tr|track|ul"
)
_VOID_TAGS = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
              "source", "track", "wbr"}

BLANK = re.compile(r"^[ \t]*\r?\n?$")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|\r?\n|$)")
# An ATX heading line split into its marks (the level) and its text.
HEADING_TEXT = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
SETEXT_UNDERLINE = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*\r?\n?$")
LINK_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:[ \t]*\S")
LIST_ITEM = re.compile(r"^ {0,3}(?:[-+*]|\d{1,9}[.)])(?:[ \t]|\r?\n|$)")
INDENTED = re.compile(r"^(?: {4}|\t)")
MATH_BLOCK = re.compile(r"^ {0,3}\$\$")
RAW_HTML_BLOCK = re.compile(r"^ {0,3}<(script|pre|style|textarea)(?=[\s>]|$)", re.I)
HTML_COMMENT_BLOCK = re.compile(r"^ {0,3}<!--")
HTML_BLOCK = re.compile(r"^ {0,3}</?(?:%s)(?=[\s/>]|$)" % _BLOCK_TAGS, re.I)
STANDALONE_TAG = re.compile(r"^ {0,3}</?[A-Za-z][\w-]*(?:\s[^<>]*)?/?>[ \t]*\r?\n?$")

BACKTICKS = re.compile(r"`+")
HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
OPEN_TAG = re.compile(r"<([A-Za-z][\w-]*)(?:\s[^<>]*?)?(/?)>")
CLOSE_TAG = re.compile(r"</([A-Za-z][\w-]*)\s*>")
AUTOLINK = re.compile(r"<(?:[A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*|[^\s<>@]+@[^\s<>@]+)>")
BARE_URL = re.compile(r"(?:https?://|ftp://|www\.)[^\s<>]+")
INLINE_MATH = re.compile(r"\$\$.+?\$\$|\$[^$\n]+?\$", re.S)

MASK = "\x00"


@dataclass(frozen=True)
class CodeSpan:
    start: int  # offset of the opening backtick
    end: int  # offset just past the closing backtick
    content: str  # text between the backticks, untouched


@dataclass
class Regions:
    protected: list[tuple[int, int]]
    code_spans: list[CodeSpan]

    def blocked(self, length: int) -> bytearray:
        """One flag per character: 1 where nothing may be marked (code spans included)."""
        flags = bytearray(length)
        for start, end in self.protected:
            flags[start:end] = b"\x01" * (end - start)
        for span in self.code_spans:
            flags[span.start:span.end] = b"\x01" * (span.end - span.start)
        return flags


def find_regions(text: str) -> Regions:
    protected = _block_regions(text)
    masked = _mask(text, protected)
    code_spans = _code_spans(masked, text)
    masked = _mask(masked, [(span.start, span.end) for span in code_spans])
    protected += _inline_regions(masked)
    return Regions(protected=_merge(protected), code_spans=code_spans)


def _mask(text: str, spans: list[tuple[int, int]]) -> str:
    chars = list(text)
    for start, end in spans:
        chars[start:end] = MASK * (end - start)
    return "".join(chars)


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _block_regions(text: str) -> list[tuple[int, int]]:
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    spans: list[tuple[int, int]] = []
    paragraph_start: int | None = None  # line index of the paragraph being read
    paragraph_is_list = False
    in_list = False
    i = 0

    def until(predicate, first: int) -> int:
        """Index of the first line from `first` on that satisfies predicate (or len)."""
        j = first
        while j < len(lines) and not predicate(lines[j]):
            j += 1
        return j

    while i < len(lines):
        line = lines[i]
        if BLANK.match(line):
            paragraph_start = None
            i += 1
            continue
        fence = FENCE.match(line)
        if fence:
            mark = fence.group(1)
            closing = re.compile(r"^ {0,3}%s{%d,}[ \t]*\r?\n?$" % (re.escape(mark[0]), len(mark)))
            j = until(closing.match, i + 1)
            spans.append((offsets[i], offsets[min(j + 1, len(lines))]))
            paragraph_start, i = None, j + 1
            continue
        if MATH_BLOCK.match(line):
            rest = line.strip()[2:]
            j = i if "$$" in rest else until(lambda text: "$$" in text, i + 1)
            spans.append((offsets[i], offsets[min(j + 1, len(lines))]))
            paragraph_start, i = None, j + 1
            continue
        if ATX_HEADING.match(line):
            spans.append((offsets[i], offsets[i + 1]))
            paragraph_start, i = None, i + 1
            continue
        if SETEXT_UNDERLINE.match(line) and paragraph_start is not None and not paragraph_is_list:
            spans.append((offsets[paragraph_start], offsets[i + 1]))
            paragraph_start, i = None, i + 1
            continue
        raw = RAW_HTML_BLOCK.match(line)
        if raw:
            closing = re.compile(r"</%s\s*>" % raw.group(1), re.I)
            j = until(closing.search, i)
            spans.append((offsets[i], offsets[min(j + 1, len(lines))]))
            paragraph_start, i = None, j + 1
            continue
        if HTML_COMMENT_BLOCK.match(line):
            j = until(lambda text: "-->" in text, i)
            spans.append((offsets[i], offsets[min(j + 1, len(lines))]))
            paragraph_start, i = None, j + 1
            continue
        if HTML_BLOCK.match(line) or (paragraph_start is None and STANDALONE_TAG.match(line)):
            j = until(BLANK.match, i + 1)
            spans.append((offsets[i], offsets[j]))
            paragraph_start, i = None, j
            continue
        if INDENTED.match(line) and paragraph_start is None and not in_list:
            j = until(lambda text: not (INDENTED.match(text) or BLANK.match(text)), i + 1)
            spans.append((offsets[i], offsets[j]))
            i = j
            continue
        if LINK_DEFINITION.match(line) and paragraph_start is None:
            spans.append((offsets[i], offsets[i + 1]))
            i += 1
            continue
        # An ordinary paragraph (or list item) line.
        is_item = bool(LIST_ITEM.match(line))
        if is_item:
            in_list = True
        elif paragraph_start is None and not line[:1].isspace():
            in_list = False
        if paragraph_start is None:
            paragraph_start, paragraph_is_list = i, is_item
        i += 1
    return spans


def _code_spans(masked: str, text: str) -> list[CodeSpan]:
    spans: list[CodeSpan] = []
    position = 0
    while True:
        opening = BACKTICKS.search(masked, position)
        if opening is None:
            return spans
        backslashes = len(masked[:opening.start()]) - len(masked[:opening.start()].rstrip("\\"))
        if backslashes % 2 == 1:  # escaped backtick: literal character
            position = opening.start() + 1
            continue
        ticks = opening.group()
        closing = re.compile(r"(?<!`)%s(?!`)" % ticks).search(masked, opening.end())
        if closing is None or re.search(r"\n[ \t]*\n", masked[opening.end():closing.start()]):
            position = opening.end()
            continue
        spans.append(CodeSpan(opening.start(), closing.end(), text[opening.end():closing.start()]))
        position = closing.end()


def _inline_regions(masked: str) -> list[tuple[int, int]]:
    spans = [m.span() for m in HTML_COMMENT.finditer(masked)]
    spans += [m.span() for m in AUTOLINK.finditer(masked)]
    spans += _html_element_spans(masked)
    spans += _link_spans(masked)
    spans += [m.span() for m in BARE_URL.finditer(masked)]
    spans += [m.span() for m in INLINE_MATH.finditer(masked)]
    return spans


def _html_element_spans(masked: str) -> list[tuple[int, int]]:
    """An opening tag protects everything up to its matching closing tag."""
    spans = []
    for opening in OPEN_TAG.finditer(masked):
        name = opening.group(1).lower()
        if opening.group(2) or name in _VOID_TAGS:
            spans.append(opening.span())
            continue
        depth, end = 1, None
        tags = re.compile(r"<(/?)%s(?=[\s/>])[^<>]*>" % re.escape(name), re.I)
        for tag in tags.finditer(masked, opening.end()):
            depth += -1 if tag.group(1) else 1
            if depth == 0:
                end = tag.end()
                break
        spans.append((opening.start(), end if end is not None else opening.end()))
    spans += [m.span() for m in CLOSE_TAG.finditer(masked)]
    return spans


def _matching(masked: str, start: int, open_char: str, close_char: str) -> int | None:
    """Offset just past the bracket that closes the one at `start`, honouring nesting."""
    depth = 0
    i = start
    while i < len(masked):
        ch = masked[i]
        if ch == "\\":
            i += 2
            continue
        if ch == open_char:
            depth += 1
        elif ch == close_char:
            depth -= 1
            if depth == 0:
                return i + 1
        elif ch == "\n" and masked[i + 1:i + 2] == "\n":
            return None  # links never cross a paragraph break
        i += 1
    return None


def _link_spans(masked: str) -> list[tuple[int, int]]:
    spans = []
    position = 0
    while True:
        start = masked.find("[", position)
        if start == -1:
            return spans
        if start > 0 and masked[start - 1] == "\\":
            position = start + 1
            continue
        text_end = _matching(masked, start, "[", "]")
        if text_end is None:
            position = start + 1
            continue
        first = start - 1 if start > 0 and masked[start - 1] == "!" else start
        follower = masked[text_end:text_end + 1]
        if follower == "(":
            end = _matching(masked, text_end, "(", ")")
        elif follower == "[":
            end = _matching(masked, text_end, "[", "]")
        else:
            end = None
        if end is None:
            position = start + 1
            continue
        spans.append((first, end))
        position = end
