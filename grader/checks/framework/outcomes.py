"""How a check ends and what it says: CheckFailed, StudentProblem, the time limit, and how errors and values are shown."""
from __future__ import annotations

import json
from typing import Any

from grader.core.error_text import describe_error, error_text  # noqa: F401  (re-exported for the checks)


NOT_IMPLEMENTED_PREFIX = "Ainda não implementado"


class CheckFailed(Exception):
    """The student's answer is wrong. ``message`` names the mistake in Portuguese."""

    def __init__(self, message: str, *, expected: Any = "", observed: Any = ""):
        super().__init__(message)
        self.message = message
        self.expected = expected if isinstance(expected, str) else show(expected)
        self.observed = observed if isinstance(observed, str) else show(observed)


NOTHING_OBSERVED_PREFIX = "Nada observado"


def nothing_observed(what: str, expected: Any = "") -> "CheckFailed":
    """The failure of a check whose subject never happened (no write, no save point, no call):
    a check never passes on nothing. ``what`` says, in Portuguese, what was not seen."""
    return CheckFailed(
        f"{NOTHING_OBSERVED_PREFIX}: {what}. Esta verificação só passa quando vê acontecer o que ela confere.",
        expected=expected, observed="nada observado",
    )


class StudentProblem(Exception):
    """The student's code could not be used: missing, not implemented, raised, looped, exited.
    ``kind`` is "memory" when it ran out of memory (reported as memory exhaustion), "timeout"
    when it did not finish in time, "exit" when it tried to end the process (the two ways of
    never returning, which no check that accepts a raised exception may accept) and "refused"
    when it is not called again because it did one of those in an earlier check.
    ``unwritten`` names the function or answer the student has not written yet, when that is
    the reason (the report then lists it once instead of repeating the failure per check);
    ``undefined`` names the one a failing cell kept from being defined (written, perhaps, but
    never run): in both cases the check judged no answer."""

    def __init__(self, message: str, observed: str = "", kind: str = "", *, unwritten: str = "", undefined: str = ""):
        super().__init__(message)
        self.message = message
        self.observed = observed or message
        self.kind = kind
        self.unwritten = unwritten
        self.undefined = undefined


class CheckTimeout(BaseException):
    """Raised by the per-check alarm. A BaseException so `except Exception` in student code
    does not swallow it."""


def show(value: Any, limit: int = 600) -> str:
    """A compact, readable rendering of a value for 'esperado' / 'obtido'. None, True and False
    are spelled as the student writes them in Python (JSON's null would puzzle them)."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, (dict, list, str, int, float)):
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            text = repr(value)
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
