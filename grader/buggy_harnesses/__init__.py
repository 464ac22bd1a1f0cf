"""Seeded defective harnesses for exercise-6 level 2, and the driver a verification uses.

Each defect lives in its own module with ``NAME``, ``COMPLETES`` (True when every run still
ends ``completed`` despite the defect, so only a verification that looks past completion
can catch it), a Portuguese ``DESCRIPTION`` and ``SYMPTOM``, and ``patches()``: the module
attributes to swap while the harness runs. ``REFERENCE`` is the harness as shipped.

A fixture of exercise-6 names one of these by ``NAME`` (``grader/fixtures/exercise-6/``).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

from grader.buggy_harnesses.driver import DEFAULT_SCENARIO, HarnessUnderTest

REFERENCE = "reference"

DEFECT_MODULES = (
    "reruns_pending_calls",
    "receipt_before_execution",
    "counters_reset_on_resume",
    "checkpoint_written_in_place",
    "corrupt_ledger_read_as_empty",
    "cancelled_run_resumes",
    "clean_start_keeps_ledger",
    "tokens_reset_on_resume",
    "pending_answered_without_ledger",
    "receipts_downgraded_on_resume",
    "crash_exits_with_the_wrong_code",
    "settled_receipt_answered_as_unknown",
    "cached_response_not_counted",
    "model_asked_before_closing_pending",
)


@dataclass(frozen=True)
class Defect:
    name: str
    completes: bool
    description: str
    symptom: str
    module: str

    def patches(self) -> dict:
        return importlib.import_module(self.module).patches()


def defects() -> dict[str, Defect]:
    found = {}
    for short in DEFECT_MODULES:
        module = importlib.import_module(f"grader.buggy_harnesses.{short}")
        found[module.NAME] = Defect(module.NAME, module.COMPLETES, module.DESCRIPTION, module.SYMPTOM,
                                    module.__name__)
    return found


def harness_names() -> list[str]:
    return [REFERENCE, *defects()]


def make_harness(name: str, root=None, shown_as: str | None = None) -> HarnessUnderTest:
    """The reference harness, or one with a seeded defect. ``shown_as`` hides the real name."""
    if name == REFERENCE:
        return HarnessUnderTest(shown_as or name, {}, root)
    known = defects()
    if name not in known:
        raise KeyError(f"harness desconhecido {name!r}; conhecidos: {', '.join(harness_names())}")
    return HarnessUnderTest(shown_as or name, known[name].patches(), root)


__all__ = ["DEFAULT_SCENARIO", "REFERENCE", "Defect", "HarnessUnderTest", "defects", "harness_names", "make_harness"]
