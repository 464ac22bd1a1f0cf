"""Reading the project's hand-edited YAML files: PyYAML's errors as one Portuguese line,
and loaders that refuse a key repeated in one mapping (PyYAML keeps the last silently) and
anchors/aliases (a few nested ones expand to gigabytes).

The manifest, the fixtures and the glossary all read YAML through here.
"""
from __future__ import annotations

import yaml


def yaml_problem(error: yaml.YAMLError, text: str = "") -> str:
    """PyYAML's multi-line report as one line: where (1-based), its short problem, where the
    bad part began; ``text`` (what was parsed) places a character the reader refused."""
    if isinstance(error, yaml.reader.ReaderError) and isinstance(error.character, int):
        before = text[:error.position]
        line, column = before.count("\n") + 1, error.position - (before.rfind("\n") + 1) + 1
        return (f"YAML inválido na linha {line}, coluna {column} (caractere U+{error.character:04X} "
                f"não permitido: {error.reason})")
    mark = getattr(error, "problem_mark", None)
    if mark is None:
        return f"YAML inválido ({' '.join(str(error).split())})"
    detail = getattr(error, "problem", None) or "erro de sintaxe"
    start = getattr(error, "context_mark", None)
    if start is not None and (start.line, start.column) != (mark.line, mark.column):
        detail += f"; o trecho começa na linha {start.line + 1}, coluna {start.column + 1}"
    return f"YAML inválido na linha {mark.line + 1}, coluna {mark.column + 1} ({detail})"


def _construct_mapping(loader, node: yaml.MappingNode, deep: bool = False):
    seen: dict[object, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            repeated = key in seen
        except TypeError:  # an unhashable key: construct_mapping below reports it
            continue
        line = key_node.start_mark.line + 1
        if repeated:
            raise yaml.constructor.ConstructorError(
                None, None,
                f'chave "{_short(key)}" repetida no mesmo bloco (linhas {seen[key]} e {line})',
                key_node.start_mark,
            )
        seen[key] = line
    return loader.construct_mapping(node, deep=deep)


def _short(key: object, limit: int = 60) -> str:
    text = str(key)
    return text if len(text) <= limit else text[:limit - 1] + "…"


class StrictSafeLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key repeated inside one mapping."""


# libyaml's parser when PyYAML has it (its wheels do): only construction is overridden, so the
# parsing stays in C.
class StrictCSafeLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """CSafeLoader (when present) that refuses a key repeated inside one mapping."""


def _refuse_aliases(root: yaml.Node) -> None:
    """An alias (``*name``) makes one node appear twice in the document: refused before anything
    is built, since a few of them nested (a "billion laughs") expand to gigabytes. These files
    are written by hand and need none."""
    seen: set[int] = set()
    pending = [root]
    while pending:
        node = pending.pop()
        if id(node) in seen:
            raise yaml.constructor.ConstructorError(
                None, None, "âncoras e aliases (&nome, *nome) não são aceitos: escreva cada valor por extenso",
                node.start_mark)
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                pending += (key, value)
        elif isinstance(node, yaml.SequenceNode):
            pending += node.value


def _construct_document(loader, node: yaml.Node):
    _refuse_aliases(node)
    return yaml.constructor.BaseConstructor.construct_document(loader, node)


for _loader in (StrictSafeLoader, StrictCSafeLoader):
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
    _loader.construct_document = _construct_document
