"""JSON Schema failures as the project's Portuguese problems, one per field.

Two engines validate the project's data files, each where it costs nothing extra:
jsonschema reports every failure of a document (fixtures, glossary; the grading path has
already imported it through nbformat), fastjsonschema the first one only (the manifest,
read by ``grade list``, where importing jsonschema would cost more than the command).
Both land here as ``Failure`` records, and ``describe`` words a failure in Portuguese: the
words a schema carries in ``x-mensagens`` for that keyword ("*" for any keyword; {value} is
the value found) or, without them, what the field should be, read off its schema.

Both engines are held to what the project means by a number: "integer" is a Python int
(not True, not 1.0) and "number" is finite (YAML's .nan/.inf and Python's json.loads
NaN/Infinity are no JSON numbers; NaN fails every comparison and inf passes a minimum).
A value shown in a message is cut short (``shown``): a document may hold a huge or
alias-nested value, and its message stays one line.
"""
from __future__ import annotations

import json
import math
import reprlib
from dataclasses import dataclass
from typing import Any, Iterable

MISSING = object()  # the value of a required field that is absent
NON_BLANK = r"\S"  # the pattern of a text that must not be empty or only spaces
TEXT = {"type": "string", "pattern": NON_BLANK}  # a text with something in it

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
    for step in path:  # a key may be a huge text: shown cut short
        text += f"[{step}]" if isinstance(step, int) else (f".{shown_text(step)}" if text else shown_text(step))
    return text


def _brief_repr() -> reprlib.Repr:
    brief = reprlib.Repr()  # never walks more of a value than it shows: cheap for an alias bomb
    brief.maxlevel, brief.maxstring, brief.maxother, brief.maxlong = 2, 60, 60, 40
    brief.maxlist = brief.maxtuple = brief.maxdict = brief.maxset = brief.maxfrozenset = 4
    return brief


_BRIEF = _brief_repr()
MAX_TEXT = 60  # characters of a text shown as it is ({value})


def shown(value: Any) -> str:
    """``repr(value)`` cut short: a few items, levels and characters."""
    return _BRIEF.repr(value)


def shown_text(value: Any) -> str:
    """``str(value)`` cut short (a text as it is; anything else as ``shown``)."""
    if not isinstance(value, str):
        return shown(value)
    return value if len(value) <= MAX_TEXT else value[:MAX_TEXT - 1] + "…"


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else repr(value)


def is_number(value: Any) -> bool:
    """A JSON number: an int or a finite float (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return isinstance(value, int) or math.isfinite(value)


def is_integer(value: Any) -> bool:
    """A JSON Schema "integer" as the project reads it: a Python int, neither True nor 1.0."""
    return isinstance(value, int) and not isinstance(value, bool)


def _non_finite(failure: Failure) -> bool:
    kinds = failure.schema.get("type", [])
    return (isinstance(failure.value, float) and not math.isfinite(failure.value)
            and "number" in ([kinds] if isinstance(kinds, str) else kinds))


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
    if _non_finite(failure):
        return "deveria ser um número finito" + found.replace("{value!r}", shown(failure.value))
    messages = failure.schema.get("x-mensagens", {})
    text = messages.get(failure.keyword, None if failure.keyword == "required" else messages.get("*"))
    if text is not None:  # only {value} and {value!r} are filled: other braces are the message's own
        return text.replace("{value!r}", shown(failure.value)).replace("{value}", shown_text(failure.value))
    if failure.keyword == "required":
        return messages.get("required", "obrigatório")
    if failure.keyword == "additionalProperties":
        return f"chave desconhecida (aceitas: {', '.join(failure.expected)})"
    return "deveria ser " + expectation(failure.schema) + found.replace("{value!r}", shown(failure.value))


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
    else (neither a bool, True is an int in Python, nor 1.0, as the hand-written checks
    before it refused both) and whose "number" is finite."""
    from jsonschema import Draft202012Validator, validators

    checker = Draft202012Validator.TYPE_CHECKER.redefine_many({
        "integer": lambda _checker, value: is_integer(value),
        "number": lambda _checker, value: is_number(value),
    })
    strict = validators.extend(Draft202012Validator, type_checker=checker)
    return strict(schema)  # the tests check each schema against the Draft 2020-12 metaschema


# jsonschema words each failure with the whole value (f"{instance!r} is not of type ..."),
# which for a YAML alias bomb is exponential: it is given the document with its lists and
# objects as these, whose repr is cut short. Their type names are "list" and "dict", so
# reprlib walks them as it walks those.
_BriefList = type("list", (list,), {"__repr__": shown, "__slots__": ()})
_BriefDict = type("dict", (dict,), {"__repr__": shown, "__slots__": ()})


def _briefly_shown(data: Any, done: dict[int, Any]) -> Any:
    """``data`` with every list and dict as _BriefList and _BriefDict; a value shared through
    YAML aliases (or holding itself) is converted once and stays shared."""
    if not isinstance(data, (list, dict)):
        return data
    if id(data) in done:
        return done[id(data)]
    if isinstance(data, list):
        copy = done[id(data)] = _BriefList()
        copy.extend(_briefly_shown(item, done) for item in data)
    else:
        copy = done[id(data)] = _BriefDict()
        copy.update((key, _briefly_shown(value, done)) for key, value in data.items())
    return copy


def all_failures(schema: dict, data: Any) -> list[Failure]:
    """Every failure of ``data`` against ``schema`` (jsonschema), in document order."""
    held = _validators.get(id(schema))
    if held is None or held[0] is not schema:
        held = _validators[id(schema)] = (schema, _strict_validator(schema))
    failures: list[Failure] = []
    placed: set[tuple] = set()  # jsonschema reports "required" once per missing key, each naming all of them
    for error in held[1].iter_errors(_briefly_shown(data, {})):
        path = tuple(error.absolute_path)
        if error.validator in ("required", "additionalProperties"):
            for failure in _object_failures(path, error.validator, error.validator_value, error.instance, error.schema):
                if (failure.path, failure.keyword) not in placed:
                    placed.add((failure.path, failure.keyword))
                    failures.append(failure)
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
    """The first failure of ``data`` against ``schema`` (fastjsonschema, then the project's
    integers and finite numbers, which fastjsonschema does not know), None when it is valid.
    An object with an unknown key and a missing one reports the unknown key first: it is
    usually the missing one misspelt."""
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
    return _strict_number_failure(schema, data)


def _strict_number_failure(schema: dict, data: Any, path: tuple = ()) -> Failure | None:
    """After fastjsonschema passed ``data``: the first place where its schema wants an integer
    (type or const) and finds a float, or a number and finds NaN or an infinity. Follows
    properties, items and additionalProperties, the keywords the fastjsonschema-checked
    schemas use; walks no more than fastjsonschema already walked."""
    kinds = schema.get("type", [])
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if isinstance(data, float):
        if "integer" in kinds and "number" not in kinds:
            return Failure(path, "type", "integer", data, schema)
        if "const" in schema and is_integer(schema["const"]):
            return Failure(path, "const", schema["const"], data, schema)
        if not math.isfinite(data) and "number" in kinds:
            return Failure(path, "type", "number", data, schema)
        return None
    inner: Iterable[tuple[Any, Any, Any]] = ()
    if isinstance(data, dict):
        properties, others = schema.get("properties", {}), schema.get("additionalProperties")
        inner = ((key, value, properties.get(key, others)) for key, value in data.items())
    elif isinstance(data, list) and isinstance(schema.get("items"), dict):
        inner = ((index, value, schema["items"]) for index, value in enumerate(data))
    for step, value, part in inner:
        failure = _strict_number_failure(part, value, (*path, step)) if isinstance(part, dict) else None
        if failure is not None:
            return failure
    return None
