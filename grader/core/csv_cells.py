"""A CSV cell a spreadsheet shows as text.

Excel, LibreOffice and Google Sheets run a cell that starts with = + - @ (or a tab or a carriage
return, which they strip first) as a formula: a student named ``=HYPERLINK(...)`` would put a link,
or worse, in the instructor's gradebook. A leading apostrophe keeps it text (OWASP, "CSV
Injection": https://owasp.org/www-community/attacks/CSV_Injection). Both of the batch's CSVs
write names through here, so one student has the same name in both and they join.
"""
from __future__ import annotations

from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def text_cell(value: Any) -> str:
    text = str(value)
    return "'" + text if text[:1] in FORMULA_STARTS else text
