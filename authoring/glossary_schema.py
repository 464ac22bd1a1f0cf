"""Load and validate glossary.yaml.

An entry's shape is a JSON Schema (ENTRY_SCHEMA, checked by jsonschema) that carries the
Portuguese words for each field; what a schema cannot say (terms and aliases unique once
case and accents are ignored, reference_term used once) is checked here. Every problem
found is collected and reported at once, naming the entry (its position and term) and
the field, so an author fixes the file in one pass. Nothing is written here.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from grader.core.schema_errors import MISSING, TEXT, all_failures, describe, field_name
from grader.core.yaml_reading import StrictSafeLoader

LESSON_NUMBERS = range(1, 8)  # 1 a 6: as lições; 7: o apêndice
ENTRY_KEYS = ("term", "aliases", "definition", "source", "lesson", "reference_term", "coined")
REQUIRED_KEYS = ("term", "definition", "source", "lesson")
SOURCE_KEYS = ("title", "url")


class GlossaryError(ValueError):
    """glossary.yaml is unreadable or breaks the schema; `problems` lists every issue."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


COINED_NOTE = "(Nome dado por este curso; a fonte citada trata da ideia, não do nome.)"


@dataclass(frozen=True)
class Term:
    term: str
    definition: str
    source_title: str
    source_url: str
    lesson: int
    aliases: tuple[str, ...] = ()
    reference_term: str | None = None
    coined: bool = False  # a name this course gave: the source explains the idea, not the name

    @property
    def hover_text(self) -> str:
        """The definition as the hover shows it: a coined name says so, since its source does not use it."""
        return f"{self.definition} {COINED_NOTE}" if self.coined else self.definition

    @property
    def forms(self) -> tuple[str, ...]:
        """Every surface form a lesson may use for this term."""
        return (self.term, *self.aliases)


def fold(text: str) -> str:
    """Comparison key that ignores case, accents and spacing (for duplicate checks)."""
    decomposed = unicodedata.normalize("NFD", text.casefold())
    without_marks = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return re.sub(r"\s+", " ", without_marks).strip()


def load_glossary(path: Path) -> list[Term]:
    """Read and validate a glossary file; raise GlossaryError listing every problem."""
    path = Path(path)
    name = path.name
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise GlossaryError([f"{name}: arquivo não encontrado ({path})."]) from None
    except UnicodeDecodeError as exc:
        raise GlossaryError([f"{name}: o arquivo não está em UTF-8 ({exc.reason})."]) from None
    try:
        data = yaml.load(text, Loader=StrictSafeLoader)
    except yaml.YAMLError as exc:
        where = ""
        mark = getattr(exc, "problem_mark", None)
        if mark is not None:
            where = f" (linha {mark.line + 1}, coluna {mark.column + 1})"
        detail = getattr(exc, "problem", None) or str(exc)
        raise GlossaryError([f"{name}: YAML inválido{where}: {detail}."]) from None
    return parse_glossary(data, name)


def parse_glossary(data: object, name: str = "glossary.yaml") -> list[Term]:
    """Validate already-parsed YAML data and build the Term list."""
    if not isinstance(data, dict) or "terms" not in data:
        raise GlossaryError([f'{name}: o arquivo deve ter uma chave "terms" com a lista de termos.'])
    extra = sorted(str(key) for key in data if key != "terms")
    problems: list[str] = []
    if extra:
        problems.append(f'{name}: {"chave desconhecida" if len(extra) == 1 else "chaves desconhecidas"} no topo: {", ".join(extra)} (só "terms" é aceita).')
    entries = data["terms"]
    if not isinstance(entries, list) or not entries:
        raise GlossaryError(problems + [f'{name}: "terms" deve ser uma lista não vazia de termos.'])

    located: list[tuple[int, Term]] = []
    for position, entry in enumerate(entries, start=1):
        term, entry_problems = _parse_entry(entry, position, name)
        problems.extend(entry_problems)
        if term is not None:
            located.append((position, term))
    problems.extend(_duplicate_problems(located, name))
    if problems:
        raise GlossaryError(problems)
    return [term for _, term in located]


def _label(entry: object, position: int, name: str) -> str:
    if isinstance(entry, dict) and isinstance(entry.get("term"), str) and entry["term"].strip():
        return f'{name}, entrada {position} ("{entry["term"].strip()}")'
    return f"{name}, entrada {position}"


def _text(value: object) -> str | None:
    """The stripped string, or None when the value is not a non-empty string."""
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


# The shape of one entry, as JSON Schema (checked by jsonschema through
# grader/core/schema_errors.py). "x-mensagens" gives, per schema keyword that can fail, the
# Portuguese words an author reads after 'campo "X"': "blank" for an empty or missing text,
# "*" for any other failure; {value} is the value found. Missing and unknown fields have
# messages of their own (schema_messages).
URL_PATTERN = r"^https?://[^\s/]+\.[^\s]+$"
ENTRY_SCHEMA = {
    "type": "object",
    "required": list(REQUIRED_KEYS),
    "additionalProperties": False,
    "properties": {
        "term": {**TEXT, "x-mensagens": {
            "*": 'deve ser um texto não vazio (números vão entre aspas, ex.: "137").'}},
        "aliases": {"type": "array", "items": {**TEXT, "x-mensagens": {"*": "deve ser um texto não vazio."}},
                    "x-mensagens": {"*": "deve ser uma lista de textos."}},
        "definition": {**TEXT, "x-mensagens": {"*": "deve ser um texto.", "blank": "está vazio."}},
        "source": {
            "type": "object",
            "required": list(SOURCE_KEYS),
            "additionalProperties": False,
            "properties": {
                "title": {**TEXT, "x-mensagens": {"*": "falta ou está vazio."}},
                "url": {"type": "string", "pattern": URL_PATTERN, "x-mensagens": {
                    "*": "falta ou está vazio.", "pattern": "não é um endereço http(s) válido: {value}"}},
            },
            "x-mensagens": {"*": 'deve ter "title" e "url".'},
        },
        "lesson": {"type": "integer", "minimum": min(LESSON_NUMBERS), "maximum": max(LESSON_NUMBERS),
                   "x-mensagens": {"*": "deve ser um número de 1 a 7 (7 é o apêndice), não {value!r}."}},
        "reference_term": {**TEXT, "x-mensagens": {"*": "deve ser um texto não vazio."}},
        "coined": {"type": "boolean", "x-mensagens": {"*": "deve ser true ou false, não {value!r}."}},
    },
}
# The order an author reads the problems of one entry in.
_FIELD_ORDER = {key: rank for rank, key in enumerate(("term", "definition", "aliases", "source", "lesson", "reference_term",
                                                    "coined"))}


def _field_name(path: tuple) -> str:
    named = ".".join(step for step in path if isinstance(step, str))
    items = [step for step in path if isinstance(step, int)]
    return f'"{named}", item {items[0] + 1},' if items else f'"{named}"'


def schema_messages(entry: dict) -> list[str]:
    """One Portuguese message per field of ``entry`` that breaks ENTRY_SCHEMA: unknown fields,
    then missing ones, then each field's first failure, in _FIELD_ORDER."""
    found: dict[tuple, str] = {}
    for failure in all_failures(ENTRY_SCHEMA, entry):
        path, parent = failure.path, failure.path[:-1]
        if failure.keyword == "additionalProperties":
            rank = (0,) if not parent else (2, _FIELD_ORDER[parent[0]], "")
            found[(*rank, path[-1])] = (f'campo desconhecido "{field_name(path)}" '
                                        f'(aceitos: {", ".join(failure.expected)}).')
        elif failure.keyword == "required" and not parent:
            found[(1, _FIELD_ORDER[path[0]])] = f'falta o campo obrigatório "{path[0]}".'
        else:
            # A missing sub-field reads like an empty one.
            blank = failure.value is MISSING or (isinstance(failure.value, str) and not failure.value.strip())
            text = describe(replace(failure, keyword="blank") if blank else failure)
            rank = (2, _FIELD_ORDER[path[0]], *(f"{step:05d}" if isinstance(step, int) else step for step in path[1:]))
            found.setdefault(rank, f"campo {_field_name(path)} {text}")
    return [found[key] for key in sorted(found)]


def _parse_entry(entry: object, position: int, name: str) -> tuple[Term | None, list[str]]:
    where = _label(entry, position, name)
    if not isinstance(entry, dict):
        return None, [f"{where}: cada termo deve ser um bloco com os campos {', '.join(REQUIRED_KEYS)}."]
    problems = [f"{where}: {message}" for message in schema_messages(entry)]
    if problems:
        return None, problems
    return Term(
        term=entry["term"].strip(),
        definition=" ".join(entry["definition"].split()),
        source_title=entry["source"]["title"].strip(),
        source_url=entry["source"]["url"].strip(),
        lesson=entry["lesson"],
        aliases=tuple(alias.strip() for alias in entry.get("aliases", [])),
        reference_term=_text(entry.get("reference_term")),
        coined=entry.get("coined", False),
    ), []


def _duplicate_problems(located: list[tuple[int, Term]], name: str) -> list[str]:
    """Terms and aliases must be unique once case, accents and spacing are ignored."""
    problems: list[str] = []
    owner: dict[str, tuple[str, str]] = {}
    references: dict[str, str] = {}
    for position, term in located:
        where = f'{name}, entrada {position} ("{term.term}")'
        for field, form in [("term", term.term)] + [("aliases", alias) for alias in term.aliases]:
            key = fold(form)
            if key in owner:
                other_term, other_form = owner[key]
                problems.append(
                    f'{where}: campo "{field}" repete "{form}", que já aparece como "{other_form}" '
                    f'no termo "{other_term}" (maiúsculas e acentos não diferenciam).'
                )
            else:
                owner[key] = (term.term, form)
        if term.reference_term is not None:
            if term.reference_term in references:
                problems.append(
                    f'{where}: campo "reference_term" repete "{term.reference_term}", '
                    f'já usado no termo "{references[term.reference_term]}".'
                )
            else:
                references[term.reference_term] = term.term
    return problems
