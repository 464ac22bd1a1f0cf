"""Feedback pages: one self-contained HTML file per graded submission, in Portuguese.

`grade batch ... --feedback DIR` writes them so an instructor can hand each student
their own report. A page needs nothing else: the style is inline, there are no
scripts, links or images, and everything the student's code printed is escaped.
"""
from __future__ import annotations

import html
import os
import re
from pathlib import Path
from typing import Any

from grader.points import shown as shown_points
from grader.results import CheckResult, GradeReport

STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:60em;margin:2em auto;padding:0 1em;color:#1f2328;line-height:1.45}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #d0d7de;padding-bottom:.2em}
.summary{background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;padding:.8em 1em}
.summary b{font-size:1.1em}.check{border-left:4px solid #d0d7de;margin:.8em 0;padding:.2em .8em}
.check.ok{border-color:#1a7f37}.check.no{border-color:#cf222e}.tag{font-weight:bold}
.ok .tag{color:#1a7f37}.no .tag{color:#cf222e}dl{margin:.3em 0}dt{font-weight:600;margin-top:.3em}dd{margin-left:1em}
pre{background:#f6f8fa;padding:.5em;white-space:pre-wrap;word-break:break-word}.muted{color:#59636e;font-size:.9em}
"""


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _check_html(check: CheckResult) -> str:
    state, word = ("ok", "passou") if check.passed else ("no", "falhou")
    where = f" [{_esc(check.fixture)}]" if check.fixture else ""
    parts = [
        f'<div class="check {state}"><p><span class="tag">{word}</span> — {_esc(check.title)}{where} '
        f'<span class="muted">({shown_points(check.points_earned)}/{shown_points(check.points)} pontos)</span></p><dl>',
        f"<dt>Critério</dt><dd>{_esc(check.criterion)}</dd>",
    ]
    if not check.passed:
        for label, text in check.failure_fields(output_limit=2000):
            value = f"<pre>{_esc(text)}</pre>" if label == "Saída do seu código" else _esc(text)
            parts.append(f"<dt>{label}</dt><dd>{value}</dd>")
        if check.hint_ref:
            parts.append(f"<dt>Dica</dt><dd><code>{_esc(check.hint_ref)}</code></dd>")
    parts.append("</dl></div>")
    return "".join(parts)


def page(submission: str, status: str, message: str, report: GradeReport | None) -> str:
    """The whole page for one submission; ``report`` is None when nothing was graded."""
    title = f"Correção de {submission}"
    body = [f"<h1>{_esc(title)}</h1>"]
    if report is not None:
        body.append(f'<p class="muted">{_esc(report.exercise)} — {_esc(report.title)}</p>')
        body.append(
            '<div class="summary">'
            f"<p><b>{shown_points(report.points_earned)} de {shown_points(report.points_possible)} pontos "
            f"({round(report.score * 100)}%)</b> — {report.passed_count} de {len(report.checks)} "
            "verificações passaram.</p>"
            f"<p>Situação: <code>{_esc(status)}</code>. {_esc(message)}</p></div>"
        )
        if report.notebook_error:
            body.append(f"<h2>O notebook não pôde ser corrigido</h2><p>{_esc(report.notebook_error)}</p>")
        if report.cell_problems:
            items = "".join(f"<li>{_esc(problem.message)}</li>" for problem in report.cell_problems)
            body.append(f"<h2>Avisos do notebook (a execução continuou)</h2><ul>{items}</ul>")
        for level, checks in report.levels().items():
            level_title = report.level_titles.get(level, "")
            earned = sum(check.points_earned for check in checks)
            possible = sum(check.points for check in checks)
            body.append(
                f"<h2>Nível {level}{' — ' + _esc(level_title) if level_title else ''} "
                f'<span class="muted">({sum(c.passed for c in checks)}/{len(checks)} verificações, '
                f"{shown_points(earned)}/{shown_points(possible)} pontos)</span></h2>"
            )
            body.extend(_check_html(check) for check in checks)
        hints = sorted({check.hint_ref for check in report.failed() if check.hint_ref})
        if hints:
            body.append("<p>Precisa de uma dica? " + " | ".join(f"<code>{_esc(h)}</code>" for h in hints) + "</p>")
    else:
        body.append(
            '<div class="summary"><p><b>Esta entrega não foi corrigida.</b></p>'
            f"<p>Situação: <code>{_esc(status)}</code>. {_esc(message)}</p></div>"
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


def write_pages(folder: Path, rows: list[Any]) -> list[Path]:
    """One page per row (a batch row with ``report`` set when it was graded)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    taken: set[str] = set()
    written = []
    for row in rows:
        path = folder / file_name(row.submission, taken)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(page(row.submission, row.status, row.message, row.report), encoding="utf-8")
        os.replace(tmp, path)
        written.append(path)
    return written
