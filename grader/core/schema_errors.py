"""JSON Schema failures as the project's Portuguese problems, one per field.

Two engines validate the project's data files, each where it costs nothing extra:
jsonschema reports every failure of a document (fixtures, glossary; the grading path has
already imported it through nbformat), fastjsonschema the first one only (the manifest,
read by ``grade list``, where importing jsonschema would cost more than the command).
Both land here as ``Failure`` records, and ``describe`` words a failure in Portuguese: the
words a schema carries in ``x-mensagens`` for that keyword ("*" for any keyword; {value} is
the value found) or, without them, what the field should be, read off its schema.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable

MISSING = object()  # the value of a required field that is absent
NON_BLANK = r"\S"  # the pattern of a text that must not be empty or only spaces

_TYPE_NAMES = {"object": "um objeto", "array": "uma lista", "string": "um texto", "integer": "um inteiro",
               "number": "um número", "boolean": "true ou false", "null": "null"}


@dataclass(frozen=True)
class Failure:
    """One field that breaks its schema."""

    path: tuple  # keys and list positions from the top of the document
    keyword: str  # the schema keyword that failed: "required", "type", "minimum", ...
    expected: Any  # that keyword's value in the schema
    value: Any  # what the document holds there (MISSING for an absent required field)
    schema: dict  # the schema of the field at ``path``


def field_name(path: Iterable) -> str:
    """``checkpoint.messages[0].role``: keys joined by dots, list positions in brackets."""
    text = ""
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else str(step))
    return text


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else repr(value)


def expectation(schema: dict) -> str:
    """What a value of ``schema`` is, in Portuguese: "um inteiro >= 0", "\"A\" ou \"B\"", ..."""
    if "const" in schema:
        return _shown(schema["const"])
    if "enum" in schema:
        return " ou ".join(map(_shown, schema["enum"]))
    kinds = schema.get("type", [])
    kinds = [kinds] if isinstance(kinds, str) else list(kinds)
    names = []
    for kind in kinds:
        name = _TYPE_NAMES[kind]
        if kind in ("integer", "number"):
            if "minimum" in schema:
                name += f" >= {schema['minimum']:g}" if kind == "integer" else (
                    " maior ou igual a zero" if schema["minimum"] == 0 else f" >= {schema['minimum']:g}")
            elif "exclusiveMinimum" in schema:
                name = name + (" maior que zero" if schema["exclusiveMinimum"] == 0 else f" > {schema['exclusiveMinimum']:g}")
        if kind == "string" and (schema.get("pattern") == NON_BLANK or schema.get("minLength")):
            name += " não vazio"
        if kind == "array" and schema.get("minItems"):
            name = "uma lista não vazia"
        names.append(name)
    return " ou ".join(names) or "outro valor"


def describe(failure: Failure, found: str = " (é {value!r})") -> str:
    """The Portuguese words for ``failure`` (without the field's name): the schema's own
    ``x-mensagens`` when it has them, else the default for the keyword; ``found`` is how a
    default shows the value found."""
    messages = failure.schema.get("x-mensagens", {})
    text = messages.get(failure.keyword, None if failure.keyword == "required" else messages.get("*"))
    if text is not None:  # only {value} and {value!r} are filled: other braces are the message's own
        return text.replace("{value!r}", repr(failure.value)).replace("{value}", str(failure.value))
    if failure.keyword == "required":
        return messages.get("required", "obrigatório")
    if failure.keyword == "additionalProperties":
        return f"chave desconhecida (aceitas: {', '.join(failure.expected)})"
    return "deveria ser " + expectation(failure.schema) + found.replace("{value!r}", repr(failure.value))


def _allowed(schema: dict) -> list[str]:
    return list(schema.get("properties", {}))


def _unknown_keys(schema: dict, value: Any) -> list[str]:
    if schema.get("additionalProperties") is not False or not isinstance(value, dict):
        return []
    return [str(key) for key in value if key not in schema.get("properties", {})]


def _object_failures(path: tuple, keyword: str, expected: Any, value: Any, schema: dict) -> list[Failure]:
    """A failed ``required`` or ``additionalProperties`` as one failure per key concerned,
    each placed at that key."""
    if keyword == "required":
        return [Failure((*path, key), "required", expected, MISSING, schema.get("properties", {}).get(key, {}))
                for key in expected if key not in value]
    return [Failure((*path, key), "additionalProperties", _allowed(schema), value[key], schema)
            for key in _unknown_keys(schema, value)]


# ---------------------------------------------------------------- jsonschema: every failure

_validators: dict[int, tuple[dict, Any]] = {}


def _strict_validator(schema: dict):
    """A Draft 2020-12 validator for ``schema`` whose "integer" is a Python int and nothing
    else: neither a bool (True is an int in Python) nor 1.0, as the hand-written checks
    before it refused both."""
    from jsonschema import Draft202012Validator, validators

    checker = Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool))
    strict = validators.extend(Draft202012Validator, type_checker=checker)
    return strict(schema)  # the tests check each schema against the Draft 2020-12 metaschema


def all_failures(schema: dict, data: Any) -> list[Failure]:
    """Every failure of ``data`` against ``schema`` (jsonschema), in document order."""
    held = _validators.get(id(schema))
    if held is None or held[0] is not schema:
        held = _validators[id(schema)] = (schema, _strict_validator(schema))
    failures: list[Failure] = []
    for error in held[1].iter_errors(data):
        path = tuple(error.absolute_path)
        if error.validator in ("required", "additionalProperties"):
            failures += _object_failures(path, error.validator, error.validator_value, error.instance, error.schema)
        else:
            failures.append(Failure(path, error.validator, error.validator_value, error.instance, error.schema))
    return failures


# ------------------------------------------------------ fastjsonschema: the first failure

def _steps(data: Any, names: list[str]) -> tuple:
    """fastjsonschema names list positions as texts ("0"); walk ``data`` to tell them from keys."""
    steps = []
    for name in names:
        step = int(name) if isinstance(data, list) else name
        steps.append(step)
        data = data[step] if isinstance(data, (list, dict)) and (isinstance(data, list) or step in data) else None
    return tuple(steps)


_compiled: dict[int, tuple[dict, Any]] = {}


def first_failure(schema: dict, data: Any) -> Failure | None:
    """The first failure of ``data`` against ``schema`` (fastjsonschema), None when it is
    valid. An object with an unknown key and a missing one reports the unknown key first:
    it is usually the missing one misspelt."""
    import fastjsonschema

    held = _compiled.get(id(schema))
    if held is None or held[0] is not schema:
        held = _compiled[id(schema)] = (schema, fastjsonschema.compile(schema))
    try:
        held[1](data)
    except fastjsonschema.JsonSchemaValueException as error:
        path, rule, value, definition = _steps(data, error.path[1:]), error.rule, error.value, error.definition
        if rule == "required" and _unknown_keys(definition, value):
            rule = "additionalProperties"
        if rule in ("required", "additionalProperties"):
            return _object_failures(path, rule, error.rule_definition, value, definition)[0]
        return Failure(path, rule, error.rule_definition, value, definition)
    return None
