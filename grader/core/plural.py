"""Numbers with words that agree with them, for every message the course prints."""
from __future__ import annotations


def quantity(count: int, singular: str, plural: str) -> str:
    """'1 gravação', '0 gravações', '3 gravações' (in Portuguese, zero takes the plural)."""
    return f"{count} {singular if count == 1 else plural}"
