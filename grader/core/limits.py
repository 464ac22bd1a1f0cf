"""The four limits of one grading, as one value that travels whole to the kernel.

``Limits`` holds the notebook's total time, each cell's time, each check's time and the
kernel's memory. Each entry point builds one from its own input (``grade``'s and ``grade
watch``'s flags, ``grade batch``'s ``--timeout`` and ``--memory-mb``, ``check()``, the
Gradescope zip's options) and hands it down unchanged: engine, execution, the kernel's
spec. Where it crosses a process boundary (a batch worker's command line, the request to
``check()``'s warm process, the kernel's spec, ``gradescope.json``) it goes as
``to_json()`` and comes back through ``from_json()``, which refuses anything it would not
have written: that side reads what another process, or a file, says.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from grader.core.errors import GraderError

DEFAULT_TOTAL_SECONDS = 300.0  # the notebook's cells together, from the moment its kernel is ready
DEFAULT_CELL_SECONDS = 60.0  # one cell
DEFAULT_CHECK_SECONDS = 10.0  # one check, inside the same kernel
DEFAULT_MEMORY_MB = 1024  # the kernel's data memory (RLIMIT_DATA); None or 0 = no limit
# The bounds the commands' flags already hold to (grader/reports/console.py). Past them a value is
# a mistake, and a huge one would break the kernel's timers and setrlimit instead of limiting.
MAX_SECONDS = 24 * 3600.0
MIN_MEMORY_MB = 512  # below it the kernel does not even start
MAX_MEMORY_MB = 1024 * 1024  # 1 TB

_TIMES = {
    "total_seconds": "o tempo total do notebook",
    "cell_seconds": "o tempo de cada célula",
    "check_seconds": "o tempo de cada verificação",
}
_FIELDS = (*_TIMES, "memory_mb")
_READ_PROBLEM = "Os limites da correção recebidos são inválidos"


class LimitsError(GraderError, ValueError):
    """A limit that cannot be: nan, infinite, negative, huge, not a number (the message is Portuguese)."""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _shown(value: Any) -> str:
    """``value`` as the message shows it: a hostile one may be thousands of characters long."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10 ** 30:
        return "um número grande demais"
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def _problem(values: dict[str, Any]) -> str | None:
    """What is wrong with the four limits in ``values`` (None when nothing is), in Portuguese."""
    for name, label in _TIMES.items():
        value = values[name]
        # 0 < value <= MAX is also false for nan; an int too big for a float fails the bound first
        if not _is_number(value) or not 0 < value <= MAX_SECONDS:
            return f"{label} precisa ser um número de segundos maior que zero e até {MAX_SECONDS:g}, veio {_shown(value)}"
    memory = values["memory_mb"]
    if memory is not None and (not isinstance(memory, int) or isinstance(memory, bool)
                               or not (memory == 0 or MIN_MEMORY_MB <= memory <= MAX_MEMORY_MB)):
        return (f"a memória do kernel precisa ser um número inteiro de {MIN_MEMORY_MB} a {MAX_MEMORY_MB} MB "
                f"(0 para sem limite), veio {_shown(memory)}")
    return None


@dataclass(frozen=True)
class Limits:
    """How long a grading's notebook, cells and checks may run, and how much memory its kernel has."""

    total_seconds: float = DEFAULT_TOTAL_SECONDS
    cell_seconds: float = DEFAULT_CELL_SECONDS
    check_seconds: float = DEFAULT_CHECK_SECONDS
    memory_mb: int | None = DEFAULT_MEMORY_MB

    def __post_init__(self) -> None:
        problem = _problem({name: getattr(self, name) for name in _FIELDS})
        if problem:
            raise LimitsError(f"Limite de correção inválido: {problem}.")
        for name in _TIMES:
            object.__setattr__(self, name, float(getattr(self, name)))
        object.__setattr__(self, "memory_mb", self.memory_mb or None)  # 0 is "no limit", as --memory-mb 0 says

    # --- the rules some entry points derive one limit from another by

    @classmethod
    def from_budget(cls, total_seconds: float, *, memory_mb: int | None = DEFAULT_MEMORY_MB,
                    check_seconds: float = DEFAULT_CHECK_SECONDS) -> Limits:
        """``grade batch --timeout S``: the notebook gets S, one cell min(default, S/2). Half the
        budget at most: a cell that ignores its interrupt is killed at its own limit, and the
        notebook still has time to run again without it and be graded."""
        if not _is_number(total_seconds):
            cls(total_seconds=total_seconds)  # refuses it, with the usual message
        return cls(total_seconds=total_seconds, cell_seconds=min(DEFAULT_CELL_SECONDS, total_seconds / 2),
                   check_seconds=check_seconds, memory_mb=memory_mb)

    @classmethod
    def with_cell_capped(cls, *, total_seconds: float, cell_seconds: float,
                         memory_mb: int | None = DEFAULT_MEMORY_MB) -> Limits:
        """``course gradescope --timeout S --cell-timeout C``: a cell never gets more than the whole notebook."""
        if not (_is_number(total_seconds) and _is_number(cell_seconds)):
            cls(total_seconds=total_seconds, cell_seconds=cell_seconds)  # refuses them
        return cls(total_seconds=total_seconds, cell_seconds=min(cell_seconds, total_seconds), memory_mb=memory_mb)

    # --- the flags of `grade exercise-N` and `grade watch`

    @classmethod
    def from_grade_flags(cls, args: Any) -> Limits:
        """The defaults, changed by whichever of --total-timeout, --cell-timeout, --check-timeout and
        --memory-mb the command has and was given (no rule between them, as before)."""
        given = {name: getattr(args, flag, None) for name, flag in _GRADE_FLAGS.items()}
        return cls(**{name: value for name, value in given.items() if value is not None})

    def grade_flags(self) -> list[str]:
        """The same limits as ``grade exercise-N``'s flags (``from_grade_flags`` reads them back)."""
        return ["--total-timeout", repr(self.total_seconds), "--cell-timeout", repr(self.cell_seconds),
                "--check-timeout", repr(self.check_seconds), "--memory-mb", str(self.memory_mb or 0)]

    # --- across a process boundary

    def to_json(self) -> dict[str, Any]:
        """A JSON object's value (only finite numbers and null): ``from_json`` reads it back."""
        return {name: getattr(self, name) for name in _FIELDS}

    @classmethod
    def from_json(cls, data: Any) -> Limits:
        """The limits ``to_json`` wrote, given decoded or as JSON text; anything else raises LimitsError."""
        if isinstance(data, (str, bytes)):
            try:
                data = json.loads(data)
            except ValueError:
                raise LimitsError(f"{_READ_PROBLEM}: não são JSON.") from None
        if not isinstance(data, dict):
            raise LimitsError(f"{_READ_PROBLEM}: esperava um objeto JSON com {', '.join(_FIELDS)}, "
                              f"veio {type(data).__name__}.")
        missing = [name for name in _FIELDS if name not in data]
        if missing:
            raise LimitsError(f"{_READ_PROBLEM}: falta {missing[0]!r}.")
        unknown = sorted(str(name) for name in data if name not in _FIELDS)
        if unknown:
            raise LimitsError(f"{_READ_PROBLEM}: chave desconhecida {unknown[0]!r}.")
        problem = _problem(data)
        if problem:
            raise LimitsError(f"{_READ_PROBLEM}: {problem}.")
        return cls(**{name: data[name] for name in _FIELDS})


_GRADE_FLAGS = {"total_seconds": "total_timeout", "cell_seconds": "cell_timeout",
                "check_seconds": "check_timeout", "memory_mb": "memory_mb"}

DEFAULT_LIMITS = Limits()  # what every grading gets unless its entry point says otherwise
