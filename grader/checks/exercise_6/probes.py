"""Calling the student's crash code: the crash environment variable set for one call, and what a simulated crash looks like."""
from __future__ import annotations

import os
from contextlib import contextmanager


@contextmanager
def crash_env(value: str | None):
    """CRASH_AFTER set (or absent) only while the student's code runs; CRASH_MODE always absent,
    so no student code can send a signal to the grading kernel."""
    saved = {key: os.environ.get(key) for key in ("CRASH_AFTER", "CRASH_MODE")}
    os.environ.pop("CRASH_MODE", None)
    os.environ.pop("CRASH_AFTER", None)
    if value is not None:
        os.environ["CRASH_AFTER"] = value
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


def is_simulated_crash(error: BaseException | None) -> bool:
    from harness.crash import SimulatedCrash

    return isinstance(error, SimulatedCrash)


def wrong_crash_class(error: BaseException | None) -> bool:
    return error is not None and type(error).__name__ == "SimulatedCrash" and not is_simulated_crash(error)
