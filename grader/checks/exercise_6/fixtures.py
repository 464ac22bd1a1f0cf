"""Exercise 6 and the shape of its fixtures (parsing, crash_point sequences, harnesses to judge), as ``grade fixtures`` checks them."""
from __future__ import annotations

from grader.checks.fixture_shape import POSITIVE, TEXT, TEXTS, closed, problem, schema_problems
from grader.checks.framework import Exercise, Fixture


EXERCISE = Exercise("exercise-6")


VERDICTS = ("aprovar", "reprovar")


def _labels() -> tuple[str, ...]:
    from harness.crash import CRASH_LABELS

    return CRASH_LABELS


def kind_of(data: dict) -> str | None:
    for key, kind in (("spec", "parse"), ("calls", "sequence"), ("harness", "harness")):
        if key in data:
            return kind
    return None


LABELS_TEXTS = {**TEXTS, "minItems": 1, "x-mensagens": {"*": "deveria ser uma lista não vazia de textos"}}


# Level 1, reading: CRASH_AFTER's text (a plan: points separated by commas) and what
# parse_crash_plan makes of it (one or the other).
PARSE_SCHEMA = closed(["description", "spec", "expect"], {
    "description": TEXT,
    "spec": {"type": "string", "x-mensagens": {"*": "deveria ser o texto de CRASH_AFTER"}},
    "expect": closed([], {
        "parsed": {"type": "array", "minItems": 1,
                   "items": {"type": "array", "minItems": 2, "maxItems": 2,
                             "x-mensagens": {"*": "deveria ser um par [rótulo conhecido, n >= 1]"}},
                   "x-mensagens": {"*": "deveria ser uma lista de [rótulo conhecido, n >= 1]"}},
        "error_mentions": LABELS_TEXTS,
    }, messages={"type": "obrigatório, deveria ser um objeto", "oneOf": "use parsed OU error_mentions"},
        oneOf=[{"required": ["parsed"]}, {"required": ["error_mentions"]}]),
})
# Level 1, crash_point: the labels passed in turn and where the crash (or the refusal) comes.
SEQUENCE_SCHEMA = closed(["description", "calls", "expect"], {
    "description": TEXT,
    "crash_after": {"type": ["string", "null"]},
    "calls": {**LABELS_TEXTS, "x-mensagens": {"*": "deveria ser uma lista não vazia de rótulos"}},
    "expect": closed([], {
        "crashes_at": {"type": "array", "items": POSITIVE, "x-mensagens": {"type": "deveria listar posições (1, 2, ...) de calls"}},
        "error_at": POSITIVE,
        "error_mentions": LABELS_TEXTS,
    }, messages={"type": "obrigatório, deveria ser um objeto",
                 "anyOf": "deveria ter crashes_at, ou error_at com error_mentions",
                 "not": "use crashes_at OU error_at com error_mentions, não os dois"},
        anyOf=[{"required": ["crashes_at"]}, {"required": ["error_at", "error_mentions"]}],
        **{"not": {"required": ["crashes_at"], "anyOf": [{"required": ["error_at"]}, {"required": ["error_mentions"]}]}}),
})
# Level 2: a harness to judge and the verdict verify_resume should reach.
HARNESS_SCHEMA = closed(["description", "harness", "expect"], {
    "description": TEXT,
    "harness": {"type": "string"},
    "expect": closed(["verdict"], {"verdict": {"enum": list(VERDICTS)}},
                     messages={"type": "obrigatório, deveria ser um objeto"}),
})
SCHEMAS = {"parse": PARSE_SCHEMA, "sequence": SEQUENCE_SCHEMA, "harness": HARNESS_SCHEMA}
FIXTURE_SCHEMAS = tuple(SCHEMAS.values())


@EXERCISE.fixture_validator
def validate_fixture(data: dict) -> list[str]:
    """The kind by its key, its shape (SCHEMAS), then what a schema cannot say: known labels,
    positions inside calls, a known harness and its right verdict."""
    kind = kind_of(data)
    if kind is None:
        return [problem("spec | calls | harness", "a fixture precisa de uma destas chaves")]
    problems = schema_problems(SCHEMAS[kind], data)
    if problems:
        return problems
    expect = data["expect"]
    if kind == "parse":
        parsed = expect.get("parsed")
        for index, pair in enumerate(parsed or []):  # [label, n]: positions of different types, which prefixItems would need
            if pair[0] not in _labels():
                problems.append(problem(f"expect.parsed[{index}][0]", f"deveria ser um rótulo conhecido ({', '.join(_labels())}) (é {pair[0]!r})"))
            problems += schema_problems(POSITIVE, pair[1], f"expect.parsed[{index}][1]")
    elif kind == "sequence":
        calls = data["calls"]
        if expect.get("error_at", 0) > len(calls):
            problems.append(problem("expect.error_at", f"deveria ser uma posição (1, 2, ...) de calls, que tem {len(calls)} "
                                                       f"(é {expect['error_at']})"))
        if "crashes_at" in expect:
            if any(i > len(calls) for i in expect["crashes_at"]):
                problems.append(problem("expect.crashes_at", "deveria listar posições (1, 2, ...) de calls"))
            unknown = [c for c in calls if c not in _labels()]
            if unknown:
                problems.append(problem("calls", f"rótulos desconhecidos {unknown} só cabem com error_at"))
    else:
        from grader.buggy_harnesses import REFERENCE, harness_names

        name, verdict = data["harness"], expect["verdict"]
        right = "aprovar" if name == REFERENCE else "reprovar"
        if name not in harness_names():
            problems.append(problem("harness", f"desconhecido {name!r}; conhecidos: {', '.join(harness_names())}"))
        elif verdict != right:
            problems.append(problem("expect.verdict", f"para o harness {name!r} o veredito certo é {right!r}"))
    return problems


def is_parse(fixture: Fixture) -> bool:
    return kind_of(fixture.data) == "parse"


def is_sequence(fixture: Fixture) -> bool:
    return kind_of(fixture.data) == "sequence"


def is_harness(fixture: Fixture) -> bool:
    return kind_of(fixture.data) == "harness"
