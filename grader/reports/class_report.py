"""The class report of a batch: one self-contained HTML page and a CSV of every check's result.

`grade batch` writes both beside the gradebook (or in ``--report DIR``). The page needs nothing
else: inline style, charts drawn as inline SVG (each with a Portuguese <title> and aria-label),
no script, no network; every text that came from a submission is escaped. It shows the score
distribution per level and overall, each check's failure rate (most failed first, linked to
the lesson section its level tests), the groups of submissions that fail the same set of
checks, the submissions that stopped short, and a link to each student's feedback page.

The CSV has one row per check of each submission whose notebook ran (``submissao, verificacao,
nivel, fixture, titulo, resultado, pontos, pontos_possiveis``; ``resultado`` is ``passou``,
``falhou``, ``nao_escrita`` (its function was still the stub) or ``nao_definida`` (a failing cell
kept it from being defined; that cell is listed among the troubles)): the page's rates are
its counts, ``falhou`` over ``passou`` plus ``falhou``. Submissions that never ran are left out of
both the rates and the CSV (grader/reports/class_data.py says why) and listed on the page.
"""
from __future__ import annotations

import csv
import html
import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from grader.core.atomic_write import write_atomic
from grader.core.csv_cells import text_cell
from grader.core.plural import quantity
from grader.core.points import shown as shown_points
from grader.reports.class_data import BINS, ClassData, class_data, histogram, ran

PAGE_NAME = "turma.html"
CSV_NAME = "verificacoes.csv"
CSV_COLUMNS = ["submissao", "verificacao", "nivel", "fixture", "titulo", "resultado", "pontos", "pontos_possiveis"]
PASSED_WORD, FAILED_WORD, UNWRITTEN_WORD, UNDEFINED_WORD = "passou", "falhou", "nao_escrita", "nao_definida"

STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:64em;margin:2em auto;padding:0 1em;color:#1f2328;line-height:1.45}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #d0d7de}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.3em .5em;border-bottom:1px solid #eaeef2;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}.charts{display:flex;flex-wrap:wrap;gap:1.5em}
figure{margin:0}figcaption{font-size:.9em;color:#57606a}.bar{fill:#0969da}.axis{stroke:#8c959f}
svg text{font-size:11px;fill:#57606a}.rate{display:inline-block;height:.7em;background:#cf222e;vertical-align:middle}
"""


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "—"


def score_chart(scores: list[float], title: str, chart_id: str) -> str:
    """A histogram of ``scores`` (0-100) as inline SVG: one bar per 10 points, each with its
    count in a <title> a screen reader or a hover shows."""
    counts = histogram(scores)
    width, height, left, bottom = 320, 150, 28, 22
    plot_w, plot_h = width - left - 4, height - bottom - 8
    top = max(counts) or 1
    bar_w = plot_w / BINS
    label = f"{title}: {quantity(len(scores), 'entrega', 'entregas')}"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" aria-labelledby="{chart_id}-t" aria-label="{_esc(label)}" '
        f'data-chart="{chart_id}"><title id="{chart_id}-t">{_esc(label)}</title>',
        f'<line class="axis" x1="{left}" y1="{8 + plot_h}" x2="{left + plot_w}" y2="{8 + plot_h}"/>',
        f'<text x="2" y="14">{top}</text><text x="2" y="{8 + plot_h}">0</text>',
    ]
    for index, count in enumerate(counts):
        low, high = index * 100 // BINS, (index + 1) * 100 // BINS
        bar_h = plot_h * count / top
        x = left + index * bar_w
        range_words = f"de {low}% a {high}%" if index < BINS - 1 else f"de {low}% a 100% (inclusive)"
        parts.append(
            f'<rect class="bar" x="{x + 1:.1f}" y="{8 + plot_h - bar_h:.1f}" width="{bar_w - 2:.1f}" '
            f'height="{bar_h:.1f}" data-count="{count}"><title>{quantity(count, "entrega", "entregas")} '
            f'{range_words}</title></rect>'
        )
        if index % 2 == 0:
            parts.append(f'<text x="{x:.1f}" y="{height - 6}">{low}</text>')
    # Anchored at its end, so the last label ends at the axis's end instead of past the picture.
    parts.append(f'<text x="{left + plot_w}" y="{height - 6}" text-anchor="end">100%</text></svg>')
    return "".join(parts)


def _chart_figure(scores: list[float], title: str, chart_id: str) -> str:
    if scores:
        mean = sum(scores) / len(scores)
        caption = f"{_esc(title)} — média {mean:.0f}%, {quantity(len(scores), 'entrega', 'entregas')}"
    else:
        caption = f"{_esc(title)} — nenhuma entrega corrigida"
    return f"<figure>{score_chart(scores, title, chart_id)}<figcaption>{caption}</figcaption></figure>"


def _section_link(data: ClassData, level: int, root: Path | None, base: Path) -> str:
    from grader.core.lesson_sections import section_href

    section = data.sections.get(level, "")
    if not section:
        return "—"
    href = section_href(data.exercise, section, root, base)
    text = _esc(section.replace("`", ""))
    return f'<a href="{_esc(href)}">{text}</a>' if href else text


def _submission_link(name: str, feedback: dict[str, str]) -> str:
    href = feedback.get(name)
    return f'<a href="{_esc(href)}">{_esc(name)}</a>' if href else _esc(name)


def page(data: ClassData, feedback: dict[str, str], root: Path | None, base: Path) -> str:
    """The whole page. ``feedback`` maps a submission to its feedback page's href (relative to
    ``base``, the report's folder); ``root`` is the course folder holding the lessons, if any."""
    title = f"Relatório da turma — {data.exercise}"
    graded = len(data.overall_scores)
    body = [f"<h1>{_esc(title)}</h1>",
            f'<p id="resumo"><strong>{_esc(summary_line(data))}</strong></p>',
            f'<p id="contagem">{_count_line(data, graded)} Os números desta página são as contagens '
            f"de <code>{CSV_NAME}</code> (uma linha por entrega que rodou e verificação); as entregas que "
            "não rodaram não entram nas taxas nem nos grupos.</p>"]

    body.append('<h2 id="notas">Distribuição das notas</h2><div class="charts">')
    body.append(_chart_figure(data.overall_scores, "Nota total", "total"))
    for level in data.levels:
        name = f"Nível {level}" + (f" — {data.level_titles[level]}" if data.level_titles.get(level) else "")
        body.append(_chart_figure(data.level_scores.get(level, []), name, f"nivel-{level}"))
    body.append("</div>")

    body.append('<h2 id="verificacoes">Verificações, da que mais falhou à que menos falhou</h2>')
    body += _checks_section(data, root, base)

    body.append('<h2 id="grupos">Entregas que falham o mesmo conjunto de verificações</h2>')
    if data.groups:
        body.append("<p>Cada grupo falha exatamente as mesmas verificações: provavelmente o mesmo mal-entendido.</p>"
                    '<table id="tabela-grupos"><thead><tr><th>Entregas</th><th>Verificações que falham</th>'
                    "<th>Quem</th></tr></thead><tbody>")
        for group in data.groups:
            titles = "".join(f"<li>{_esc(_check_words(data, check_id))}</li>" for check_id in group.check_ids)
            who = ", ".join(_submission_link(name, feedback) for name in group.submissions)
            body.append(f'<tr data-group-size="{len(group.submissions)}"><td class="n">{len(group.submissions)}</td>'
                        f"<td><ul>{titles}</ul></td><td>{who}</td></tr>")
        body.append("</tbody></table>")
    else:
        body.append("<p>Nenhuma entrega corrigida falhou alguma verificação.</p>")

    body.append('<h2 id="problemas">Entregas que pararam no meio, não rodaram ou vieram em branco</h2>')
    if data.troubles:
        body.append('<table id="tabela-problemas"><thead><tr><th>Entrega</th><th>O que houve</th><th>Detalhe</th>'
                    "</tr></thead><tbody>")
        body += [f"<tr><td>{_submission_link(t.submission, feedback)}</td><td>{_esc(t.what)}</td>"
                 f"<td>{_esc(t.message)}</td></tr>" for t in data.troubles]
        body.append("</tbody></table>")
    else:
        body.append("<p>Nenhuma: todas as entregas rodaram dentro dos limites de tempo e memória.</p>")

    body.append('<h2 id="retorno">Páginas de retorno</h2>')
    if feedback:
        body.append("<ul>" + "".join(f"<li>{_submission_link(name, feedback)}</li>" for name in data.submissions) + "</ul>")
    else:
        body.append("<p>Sem páginas de retorno neste lote: rode <code>grade batch</code> com "
                    "<code>--feedback PASTA</code> para gravar uma por entrega.</p>")
    return (
        '<!DOCTYPE html>\n<html lang="pt-BR"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_esc(title)}</title><style>{STYLE}</style></head><body>"
        + "".join(body) + "</body></html>\n"
    )


def _count_line(data: ClassData, graded: int) -> str:
    """How many submissions, and of them how many ran, never ran and came blank."""
    words = [quantity(graded, "corrigida", "corrigidas")]
    if data.not_run:
        words.append(quantity(len(data.not_run), "não rodou", "não rodaram"))
    line = f"{quantity(len(data.submissions), 'entrega', 'entregas')}: {', '.join(words)}."
    if data.blank:
        line += f" Das corrigidas, {quantity(len(data.blank), 'veio', 'vieram')} em branco (nenhuma função escrita)."
    return line


@dataclass
class CheckTotals:
    """One check over all its fixtures: what the first table shows, one row per check."""
    id: str
    level: int
    title: str
    runs: int = 0
    failures: int = 0
    unwritten: int = 0
    failing_fixtures: list[str] = field(default_factory=list)

    @property
    def failure_rate(self) -> float:
        return self.failures / self.runs if self.runs else 0.0


def check_totals(data: ClassData) -> list[CheckTotals]:
    """The per-fixture counts summed per check (``n1.a[f1]`` and ``n1.a[f2]`` are ``n1.a``), most
    failed first."""
    totals: dict[str, CheckTotals] = {}
    for stats in data.checks:
        key = stats.id.split("[", 1)[0]
        total = totals.setdefault(key, CheckTotals(key, stats.level, stats.title))
        total.runs += stats.runs
        total.failures += stats.failures
        total.unwritten += stats.unwritten
        if stats.failures and stats.fixture:
            total.failing_fixtures.append(f"{stats.fixture} ({stats.failures} de {stats.runs})")
    return sorted(totals.values(), key=lambda t: (-t.failure_rate, t.level, t.id))


def summary_line(data: ClassData) -> str:
    """The page in one sentence: how the class did and the idea it missed most."""
    scores = data.overall_scores
    if not scores:
        return f"Nenhuma das {quantity(len(data.submissions), 'entrega', 'entregas')} rodou: não há o que somar."
    full = sum(1 for score in scores if score >= 100)
    mean = f"Média {sum(scores) / len(scores):.0f}%"
    if data.blank and len(data.blank) < len(scores):
        # a blank submission's 0 is its grade, but it says nothing of how the others did
        answered = [row_score for name, row_score in zip(data.ran, scores) if name not in data.blank]
        left_out = "a entrega em branco" if len(data.blank) == 1 else f"as {len(data.blank)} entregas em branco"
        mean += f" ({sum(answered) / len(answered):.0f}% sem {left_out})"
    words = [f"{mean}; {full} de {len(scores)} com nota cheia"]
    failed = [total for total in check_totals(data) if total.failures]
    if failed:
        worst = failed[0]
        words.append(f"a verificação que mais falhou: N{worst.level} \u201c{worst.title}\u201d "
                     f"({_percent(worst.failures, worst.runs)} das execuções)")
    troubled = data.troubled_submissions()
    if troubled:
        words.append(quantity(len(troubled), "entrega parou no meio, não rodou ou veio em branco",
                              "entregas pararam no meio, não rodaram ou vieram em branco"))
    return "; ".join(words) + "."


def _checks_section(data: ClassData, root: Path | None, base: Path) -> list[str]:
    """A row per check that failed somewhere (its fixtures summed), one line for those that never
    failed, and the per-fixture counts (the CSV's) folded below."""
    if not data.checks:
        return ["<p>Nenhuma verificação rodou.</p>"]
    totals = check_totals(data)
    failed = [total for total in totals if total.failures]
    parts = []
    if failed:
        parts.append('<table id="tabela-verificacoes"><thead><tr><th>Verificação</th><th>Nível</th>'
                     '<th>Falhas</th><th>Taxa de falha</th><th>Fixtures que falharam</th><th>Seção da lição</th>'
                     '</tr></thead><tbody>')
        for total in failed:
            parts.append(
                f'<tr data-check-total="{_esc(total.id)}" data-runs="{total.runs}" data-failures="{total.failures}">'
                f'<td>{_esc(total.title)}</td><td class="n">{total.level}</td>'
                f'<td class="n">{total.failures} de {total.runs}{_unwritten_words(total.unwritten)}</td>'
                f'<td class="n"><span class="rate" style="width:{4 * total.failure_rate:.2f}em"></span> '
                f'{_percent(total.failures, total.runs)}</td>'
                f"<td>{_esc(', '.join(total.failing_fixtures) or '—')}</td>"
                f"<td>{_section_link(data, total.level, root, base)}</td></tr>")
        parts.append("</tbody></table>")
    parts += _clean_lines([total for total in totals if not total.failures])
    parts.append(f"<details><summary>Cada verificação em cada fixture ({len(data.checks)} linhas, as contagens de "
                 f"<code>{CSV_NAME}</code>)</summary>"
                 '<table id="detalhe-verificacoes"><thead><tr><th>Verificação</th><th>Nível</th><th>Fixture</th>'
                 "<th>Falhas</th><th>Taxa de falha</th></tr></thead><tbody>")
    for stats in data.checks:
        parts.append(
            f'<tr data-check="{_esc(stats.id)}" data-runs="{stats.runs}" data-failures="{stats.failures}" '
            f'data-unwritten="{stats.unwritten}">'
            f"<td>{_esc(stats.title)}</td><td class=\"n\">{stats.level}</td><td>{_esc(stats.fixture or '—')}</td>"
            f'<td class="n">{stats.failures} de {stats.runs}{_unwritten_words(stats.unwritten)}</td>'
            f'<td class="n">{_percent(stats.failures, stats.runs)}</td></tr>')
    parts.append("</tbody></table></details>")
    return parts


def _clean_lines(clean: list) -> list[str]:
    """The checks that never failed, said as they are: passed by every corrected submission, passed
    wherever someone answered (others left the function unwritten), or answered by nobody."""
    everywhere = sum(1 for total in clean if total.runs and not total.unwritten)
    where_answered = [total for total in clean if total.runs and total.unwritten]  # some left it unwritten
    nobody = sum(1 for total in clean if not total.runs)
    lines = []
    if everywhere:
        lines.append(f'<p id="sem-falhas">{quantity(everywhere, "verificação passou", "verificações passaram")} '
                     "em todas as entregas corrigidas.</p>")
    if where_answered:
        one = len(where_answered) == 1
        lines.append(f'<p id="sem-falhas-onde-respondidas">{quantity(len(where_answered), "verificação passou", "verificações passaram")} '
                     f"em todas as entregas que {'a' if one else 'as'} responderam (as outras deixaram a função sem escrever).</p>")
    if nobody:
        lines.append(f'<p id="sem-resposta">{quantity(nobody, "verificação não foi respondida", "verificações não foram respondidas")} '
                     "por nenhuma entrega corrigida.</p>")
    return lines


def _unwritten_words(count: int) -> str:
    return f" (e {quantity(count, 'execução', 'execuções')} sem resposta a julgar)" if count else ""


def _check_words(data: ClassData, check_id: str) -> str:
    stats = data.check(check_id)
    return f"N{stats.level} {stats.title}" + (f" [{stats.fixture}]" if stats.fixture else "")




def checks_csv(rows: list[Any]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in rows:
        for check in (row.report.checks if ran(row) else []):
            result = (PASSED_WORD if check.passed else UNWRITTEN_WORD if check.unwritten
                      else UNDEFINED_WORD if check.undefined else FAILED_WORD)
            writer.writerow([
                text_cell(row.submission), text_cell(check.id), check.level, text_cell(check.fixture or ""), text_cell(check.title),
                result, shown_points(check.points_earned), shown_points(check.points),
            ])
    return buffer.getvalue()


def feedback_links(feedback_pages: dict[str, Path], base: Path) -> dict[str, str]:
    """Submission -> href of its feedback page, relative to the report's folder ``base``."""
    links = {}
    for name, path in feedback_pages.items():
        relative = os.path.relpath(Path(path).resolve(), Path(base).resolve())
        links[name] = quote(Path(relative).as_posix())
    return links


def write_class_report(folder: Path, exercise: str, rows: list[Any], levels: list[int],
                       feedback_pages: dict[str, Path] | None = None) -> tuple[Path, Path]:
    """Write ``turma.html`` and ``verificacoes.csv`` in ``folder``; returns both paths."""
    from grader.core.course_folder import find_project_root
    from grader.core.manifest import get_exercise

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    entry = get_exercise(exercise)
    data = class_data(exercise, rows, levels, {level.number: level.title for level in entry.levels},
                      {level.number: level.section for level in entry.levels})
    page_path, csv_path = folder / PAGE_NAME, folder / CSV_NAME
    write_atomic(csv_path, checks_csv(rows))
    write_atomic(page_path, page(data, feedback_links(feedback_pages or {}, folder), find_project_root(), folder))
    return page_path, csv_path
