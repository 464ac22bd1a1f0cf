"""Feedback pages: one self-contained HTML file per graded submission, in Portuguese.

`grade batch ... --feedback DIR` writes them so an instructor can hand each student
their own report. A page needs nothing else: the style is inline, there are no
scripts, links or images, and everything the student's code printed is escaped.
"""
from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

from grader.core.atomic_write import write_atomic
from grader.core.points import shown as shown_points
from grader.core.results import GradeReport
from grader.reports.render import html_report

STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:60em;margin:2em auto;padding:0 1em;color:#1f2328;line-height:1.45}
h1{font-size:1.5em;margin-bottom:.2em}
.summary{background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;padding:.8em 1em}
.summary b{font-size:1.1em}summary{cursor:pointer}
"""


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def page(submission: str, situation: str, message: str, report: GradeReport | None) -> str:
    """The whole page for one submission; ``report`` is None when nothing was graded.

    A graded submission gets what `grade exercise-N` prints (the short form when functions
    are still unwritten, the rest folded); ``message`` is the gradebook's one-line summary
    and only explains a submission that was not graded. ``situation`` is the row's status
    in words (batch.STATUS_WORDS), never the gradebook's id.
    """
    title = f"Correção de {submission}"
    body = [f"<h1>{_esc(title)}</h1>"]
    if report is not None:
        body.append(
            '<div class="summary">'
            f"<p><b>{shown_points(report.points_earned)} de {shown_points(report.points_possible)} pontos "
            f"({round(report.score * 100)}%)</b> — {report.passed_count} de {len(report.checks)} "
            "verificações passaram.</p>"
            f"<p>Situação: {_esc(situation)}.</p></div>"
        )
        body.append(html_report(report, fold_rest=True))
    else:
        body.append(
            '<div class="summary"><p><b>Esta entrega não foi corrigida.</b></p>'
            f"<p>Situação: {_esc(situation)}. {_esc(message)}</p></div>"
        )
    return (
        '<!DOCTYPE html>\n<html lang="pt-BR"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_esc(title)}</title><style>{STYLE}</style></head><body>"
        + "".join(body)
        + "</body></html>\n"
    )


def file_name(submission: str, taken: set[str]) -> str:
    """A safe, unique file name for a submission's page (``ana.html``, ``ana-2.html``)."""
    stem = re.sub(r"[^\w.-]+", "_", submission).strip("._") or "entrega"
    name, number = f"{stem}.html", 2
    while name.lower() in taken:
        name, number = f"{stem}-{number}.html", number + 1
    taken.add(name.lower())
    return name


def write_pages(folder: Path, rows: list[Any], status_words: dict[str, str]) -> list[Path]:
    """One page per row (a batch row with ``report`` set when it was graded); ``status_words``
    says each row status in words."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    taken: set[str] = set()
    written = []
    for row in rows:
        path = folder / file_name(row.submission, taken)
        write_atomic(path, page(row.submission, status_words.get(row.status, row.status), row.message, row.report))
        written.append(path)
    return written
