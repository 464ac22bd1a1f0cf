"""Exercise 6 and the shape of its fixtures (parsing, crash_point sequences, harnesses to judge), as ``grade fixtures`` checks them."""
from __future__ import annotations

from typing import Any

from grader.checks.fixture_shape import problem, required_text, unknown_keys
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


def _positive_ints(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value)


def _texts(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, str) and v for v in value)


FIXTURE_SCHEMAS: tuple[dict, ...] = ()  # its own fields are checked by hand below; the shared ones by schema


@EXERCISE.fixture_validator
def validate_fixture(data: dict) -> list[str]:
    problems = required_text(data, "description", "description")
    kind = kind_of(data)
    if kind is None:
        return problems + [problem("spec | calls | harness", "a fixture precisa de uma destas chaves")]
    expect = data.get("expect")
    if not isinstance(expect, dict):
        return problems + [problem("expect", "obrigatório, deveria ser um objeto")]
    if kind == "parse":
        problems += unknown_keys(data, {"description", "spec", "expect"})
        if not isinstance(data["spec"], str):
            problems.append(problem("spec", "deveria ser o texto de CRASH_AFTER"))
        problems += unknown_keys(expect, {"parsed", "error_mentions"}, "expect")
        parsed = expect.get("parsed")
        if ("parsed" in expect) == ("error_mentions" in expect):
            problems.append(problem("expect", "use parsed OU error_mentions"))
        elif "parsed" in expect and not (isinstance(parsed, list) and len(parsed) == 2 and parsed[0] in _labels()
                                         and _positive_ints(parsed[1:])):
            problems.append(problem("expect.parsed", "deveria ser [rótulo conhecido, n >= 1]"))
        elif "error_mentions" in expect and not _texts(expect["error_mentions"]):
            problems.append(problem("expect.error_mentions", "deveria ser uma lista de textos"))
    elif kind == "sequence":
        problems += unknown_keys(data, {"description", "crash_after", "calls", "expect"})
        calls = data["calls"]
        if not _texts(calls):
            problems.append(problem("calls", "deveria ser uma lista não vazia de rótulos"))
            calls = []
        if data.get("crash_after") is not None and not isinstance(data.get("crash_after"), str):
            problems.append(problem("crash_after", "deveria ser um texto ou null"))
        problems += unknown_keys(expect, {"crashes_at", "error_at", "error_mentions"}, "expect")
        if "crashes_at" in expect:
            if not _positive_ints(expect["crashes_at"]) or any(i > len(calls) for i in expect["crashes_at"]):
                problems.append(problem("expect.crashes_at", "deveria listar posições (1, 2, ...) de calls"))
            unknown = [c for c in calls if c not in _labels()]
            if unknown:
                problems.append(problem("calls", f"rótulos desconhecidos {unknown} só cabem com error_at"))
        elif not (_positive_ints([expect.get("error_at")]) and _texts(expect.get("error_mentions"))):
            problems.append(problem("expect", "deveria ter crashes_at, ou error_at com error_mentions"))
    else:
        from grader.buggy_harnesses import REFERENCE, harness_names

        problems += unknown_keys(data, {"description", "harness", "expect"})
        problems += unknown_keys(expect, {"verdict"}, "expect")
        name = data["harness"]
        if name not in harness_names():
            problems.append(problem("harness", f"desconhecido {name!r}; conhecidos: {', '.join(harness_names())}"))
        verdict = expect.get("verdict")
        right = "aprovar" if name == REFERENCE else "reprovar"
        if verdict not in VERDICTS:
            problems.append(problem("expect.verdict", f"deveria ser \"aprovar\" ou \"reprovar\" (é {verdict!r})"))
        elif verdict != right:
            problems.append(problem("expect.verdict", f"para o harness {name!r} o veredito certo é {right!r}"))
    return problems


def is_parse(fixture: Fixture) -> bool:
    return kind_of(fixture.data) == "parse"


def is_sequence(fixture: Fixture) -> bool:
    return kind_of(fixture.data) == "sequence"


def is_harness(fixture: Fixture) -> bool:
    return kind_of(fixture.data) == "harness"
