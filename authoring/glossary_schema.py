"""Load and validate glossary.yaml.

Every problem found is collected and reported at once, in Portuguese, naming the
entry (its position and term) and the field, so an author fixes the file in one
pass. Nothing is written here.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import yaml

LESSON_NUMBERS = range(1, 8)  # 1 a 6: as lições; 7: o apêndice
ENTRY_KEYS = ("term", "aliases", "definition", "source", "lesson", "reference_term")
REQUIRED_KEYS = ("term", "definition", "source", "lesson")
SOURCE_KEYS = ("title", "url")


class GlossaryError(ValueError):
    """glossary.yaml is unreadable or breaks the schema; `problems` lists every issue."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True)
class Term:
    term: str
    definition: str
    source_title: str
    source_url: str
    lesson: int
    aliases: tuple[str, ...] = ()
    reference_term: str | None = None

    @property
    def forms(self) -> tuple[str, ...]:
        """Every surface form a lesson may use for this term."""
        return (self.term, *self.aliases)


def fold(text: str) -> str:
    """Comparison key that ignores case, accents and spacing (for duplicate checks)."""
    decomposed = unicodedata.normalize("NFD", text.casefold())
    without_marks = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return re.sub(r"\s+", " ", without_marks).strip()


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key repeated inside one mapping (PyYAML keeps the last)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False):
    seen: dict[object, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        line = key_node.start_mark.line + 1
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None,
                f'chave "{key}" repetida no mesmo bloco (linhas {seen[key]} e {line})',
                key_node.start_mark,
            )
        seen[key] = line
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


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
        data = yaml.load(text, Loader=_StrictLoader)
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


def _parse_entry(entry: object, position: int, name: str) -> tuple[Term | None, list[str]]:
    where = _label(entry, position, name)
    if not isinstance(entry, dict):
        return None, [f"{where}: cada termo deve ser um bloco com os campos {', '.join(REQUIRED_KEYS)}."]
    problems: list[str] = []
    unknown = [str(key) for key in entry if key not in ENTRY_KEYS]
    for key in unknown:
        problems.append(f'{where}: campo desconhecido "{key}" (aceitos: {", ".join(ENTRY_KEYS)}).')
    for key in REQUIRED_KEYS:
        if key not in entry:
            problems.append(f'{where}: falta o campo obrigatório "{key}".')

    term = _text(entry.get("term"))
    if "term" in entry and term is None:
        problems.append(f'{where}: campo "term" deve ser um texto não vazio (números vão entre aspas, ex.: "137").')

    definition = entry.get("definition")
    clean_definition = None
    if "definition" in entry:
        if not isinstance(definition, str):
            problems.append(f'{where}: campo "definition" deve ser um texto.')
        elif not definition.strip():
            problems.append(f'{where}: campo "definition" está vazio.')
        else:
            clean_definition = " ".join(definition.split())

    aliases: list[str] = []
    raw_aliases = entry.get("aliases", [])
    if raw_aliases is None or not isinstance(raw_aliases, list):
        problems.append(f'{where}: campo "aliases" deve ser uma lista de textos.')
    else:
        for index, alias in enumerate(raw_aliases, start=1):
            clean = _text(alias)
            if clean is None:
                problems.append(f'{where}: campo "aliases", item {index}, deve ser um texto não vazio.')
            else:
                aliases.append(clean)

    title = url = None
    if "source" in entry:
        source = entry["source"]
        if not isinstance(source, dict):
            problems.append(f'{where}: campo "source" deve ter "title" e "url".')
        else:
            for key in source:
                if key not in SOURCE_KEYS:
                    problems.append(f'{where}: campo desconhecido "source.{key}" (aceitos: title, url).')
            title = _text(source.get("title"))
            url = _text(source.get("url"))
            if title is None:
                problems.append(f'{where}: campo "source.title" falta ou está vazio.')
            if url is None:
                problems.append(f'{where}: campo "source.url" falta ou está vazio.')
            elif not re.match(r"https?://[^\s/]+\.[^\s]+$", url):
                problems.append(f'{where}: campo "source.url" não é um endereço http(s) válido: {url}')

    lesson = entry.get("lesson")
    if "lesson" in entry and (isinstance(lesson, bool) or lesson not in LESSON_NUMBERS):
        problems.append(f'{where}: campo "lesson" deve ser um número de 1 a 7 (7 é o apêndice), não {lesson!r}.')

    reference = entry.get("reference_term")
    if "reference_term" in entry and _text(reference) is None:
        problems.append(f'{where}: campo "reference_term" deve ser um texto não vazio.')

    if problems:
        return None, problems
    return Term(
        term=term,
        definition=clean_definition,
        source_title=title,
        source_url=url,
        lesson=lesson,
        aliases=tuple(aliases),
        reference_term=_text(reference),
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
