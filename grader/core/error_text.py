"""An exception as one short line: what the reports, the kernels and the checks all print."""
from __future__ import annotations

from typing import Any


def error_text(name: Any, detail: Any = "") -> str:
    """"ValueError: quebrou", or just "TimeoutError" when the exception carries no message."""
    detail = str(detail if detail is not None else "").strip()
    if detail.endswith(".") and not detail.endswith(".."):
        detail = detail[:-1]  # callers end the sentence themselves
    return f"{name}: {detail}" if detail else str(name)


def describe_error(error: BaseException) -> str:
    """An exception as "Type: message", without a dangling colon when it has no message."""
    return error_text(type(error).__name__, error)
