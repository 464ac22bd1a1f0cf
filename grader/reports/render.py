"""Show a GradeReport: Portuguese text for the terminal, an HTML table for Jupyter,
JSON for tools and JUnit XML for CI and classroom platforms."""
from __future__ import annotations

import html
import json
import textwrap
import xml.etree.ElementTree as ET

from grader.core.plural import quantity
from grader.core.points import shown as shown_points
from grader.core.results import GradeReport
from grader.reports.report_view import Failure, LevelView, report_view

PASS_WORD, FAIL_WORD = "PASSOU", "FALHOU"
WIDTH = 100


def _indent(label: str, text: str, depth: int = 6, width: int = WIDTH) -> list[str]:
    prefix = " " * depth + f"{label}: "
    return textwrap.wrap(
        text, width=width, initial_indent=prefix, subsequent_indent=" " * len(prefix),
        break_long_words=False, replace_whitespace=False,
    ) or [prefix.rstrip()]


def _fixtures(names: list[str]) -> str:
    return " ".join(f"[{name}]" for name in names)


def _one_line(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _other_cases(failure: Failure) -> list[str]:
    """One line per other way ``failure`` went wrong: its fixtures, then what happened."""
    return [f"{_fixtures(case.fixtures)}: {case.summary()}" for case in failure.cases[1:]]


def _failure_lines(failure: Failure) -> list[str]:
    first = failure.first
    several = len(failure.cases) > 1
    where = f"  (em {len(failure.fixtures)} fixtures)" if several else (
        f"  {_fixtures(first.fixtures)}" if first.fixtures else "")
    lines = [f"  {FAIL_WORD}  {failure.title}{where}"]
    lines += _indent("Critério", failure.criterion)
    if several:
        lines.append(f"      Em {_fixtures(first.fixtures)}:")
    if first.expected:
        lines += _indent("Esperado", first.expected)
    if first.observed:
        lines += _indent("Obtido", first.observed)
    lines += _indent("Problema", first.message)
    if first.output:
        lines += _indent("Saída do seu código", first.output)
    if several:
        lines.append("      Também falhou em:")
        lines += ["        " + _one_line(line, WIDTH - 8) for line in _other_cases(failure)]
    return lines


def _level_line(level: LevelView) -> str:
    return f"{level.heading}  ({level.count})" + (f"  · dica: {level.hint}" if level.hint else "")


def _more_failures(view) -> str:
    return "e mais " + quantity(view.more_failures, "verificação que não passou", "verificações que não passaram")


def _passes_line(level: LevelView) -> str:
    return f"  ✓ {quantity(len(level.passes), 'verificação passou', 'verificações passaram')}"


def text_report(report: GradeReport, verbose: bool = False) -> str:
    view = report_view(report, verbose=verbose)
    lines = [view.heading]
    if view.notebook:
        lines.append(f"Notebook: {view.notebook}")
    if view.notebook_error:
        lines += ["", "O notebook não pôde ser corrigido:"]
        lines += _indent("Motivo", view.notebook_error, 2)
    if view.warnings:
        lines += ["", "Avisos do notebook (a execução continuou):"]
        for warning in view.warnings:
            lines += textwrap.wrap(warning, width=WIDTH, initial_indent="  - ", subsequent_indent="    ")
    if view.unwritten:
        lines += ["", "Ainda por escrever:"]
        lines += [f"  - {item.describe()}" for item in view.unwritten]
    if view.short:
        lines += ["", f"Primeira verificação que falhou (nível {view.focus.level}):"]
        lines += _failure_lines(view.focus)
        if view.more_failures:
            lines.append(f"  ({_more_failures(view)}; -v mostra todas)")
        lines.append("")
        lines += [f"{level.heading}  ({level.count})" for level in view.levels]
    else:
        for level in view.levels:
            lines += ["", _level_line(level)]
            for failure in level.failures:
                lines += _failure_lines(failure)
            if verbose:
                for check in level.passes:
                    fixture = f"  [{check.fixture}]" if check.fixture else ""
                    lines.append(f"  {PASS_WORD}  {check.title}{fixture}")
                    lines += _indent("Critério", check.criterion)
            elif level.passes:
                lines.append(_passes_line(level))
    lines += ["", view.score]
    if view.passed:
        lines.append("Tudo certo: todas as verificações passaram.")
    elif view.hint:
        lines.append(f"Precisa de uma dica? {view.hint}")
    return "\n".join(lines) + "\n"


_RED, _GREEN, _BOLD, _RESET = "\x1b[31m", "\x1b[32m", "\x1b[1m", "\x1b[0m"


def colored(text: str) -> str:
    """``text_report``'s text with ANSI colours for a terminal: failures red, passes green,
    the score bold (console.wants_color decides whether to use it)."""
    lines = []
    for line in text.split("\n"):
        stripped = line.lstrip()
        if stripped.startswith(f"{FAIL_WORD}  "):
            line = line.replace(FAIL_WORD, f"{_RED}{_BOLD}{FAIL_WORD}{_RESET}", 1)
        elif stripped.startswith((f"{PASS_WORD}  ", "✓ ")) or stripped.startswith("Tudo certo"):
            line = f"{_GREEN}{line}{_RESET}"
        elif stripped.startswith("Pontuação:"):
            line = f"{_BOLD}{line}{_RESET}"
        lines.append(line)
    return "\n".join(lines)


LEFT = 'style="text-align:left;vertical-align:top"'
STYLE = (
    "<style>.grade-report{border-collapse:collapse;font-size:0.9em;margin:0.5em 0}"
    ".grade-report td,.grade-report th{border:1px solid #ccc;padding:4px 8px;text-align:left;"
    "vertical-align:top}.grade-report .ok{color:#1a7f37;font-weight:bold}"
    ".grade-report .no{color:#cf222e;font-weight:bold}.grade-report .nivel{background:#f3f3f3}</style>"
)


def _failure_row(failure: Failure) -> str:
    esc = html.escape
    first = failure.first
    details = "".join(
        f"<br><b>{label}:</b> {esc(text)}" for label, text in (
            ("Esperado", first.expected), ("Obtido", first.observed), ("Saída do seu código", first.output),
        ) if text
    )
    others = _other_cases(failure)
    if others:
        details += "<br><b>Também falhou em:</b><ul>" + "".join(f"<li>{esc(line)}</li>" for line in others) + "</ul>"
    return (
        f'<tr><td {LEFT}><span class="no">{FAIL_WORD}</span></td>'
        f"<td {LEFT}>{esc(failure.title)}<br><small>{esc(failure.criterion)}</small></td>"
        f"<td {LEFT}>{esc(_fixtures(first.fixtures)) or '—'}</td>"
        f"<td {LEFT}>{esc(first.message)}{details}</td></tr>"
    )


def _level_row(level: LevelView, with_hint: bool = True) -> str:
    hint = f" · dica: <code>{html.escape(level.hint)}</code>" if level.hint and with_hint else ""
    return (f'<tr class="nivel"><th colspan="4" {LEFT}>{html.escape(level.heading)} ({level.count})'
            f"{hint}</th></tr>")


def _passes_row(level: LevelView) -> str:
    items = "".join(
        f"<li>{html.escape(c.title)}{html.escape(f' [{c.fixture}]') if c.fixture else ''}</li>" for c in level.passes
    )
    summary = quantity(len(level.passes), "verificação passou", "verificações passaram")
    return (f'<tr><td {LEFT}><span class="ok">✓</span></td><td colspan="3" {LEFT}>'
            f"<details><summary>{summary}</summary><ul>{items}</ul></details></td></tr>")


def _folded_failures(report: GradeReport, summary: str) -> str:
    """Every failing check, grouped as the long form shows them, inside a closed <details>."""
    rows = "".join(
        _level_row(level, with_hint=False) + "".join(_failure_row(failure) for failure in level.failures)
        for level in report_view(report, verbose=True).levels if level.failures
    )
    return (f'<tr><td colspan="4" {LEFT}><details><summary>{html.escape(summary)}</summary>'
            f'<table class="grade-report" {LEFT}><tbody>{rows}</tbody></table></details></td></tr>')


def html_report(report: GradeReport, *, fold_rest: bool = False) -> str:
    """The same content as ``text_report``, as a left-aligned table (inline styles too, since
    Jupyter drops a <style> element from outputs it does not trust). With ``fold_rest`` (a
    page read away from the terminal, where -v is out of reach), the short form keeps the
    failures it leaves out in a closed <details>."""
    esc = html.escape
    view = report_view(report)
    parts = [STYLE, f"<h4>{esc(view.heading)}</h4>"]
    if view.notebook:
        parts.append(f"<p>Notebook: <code>{esc(view.notebook)}</code></p>")
    if view.notebook_error:
        parts.append(f"<p><b>O notebook não pôde ser corrigido:</b> {esc(view.notebook_error)}</p>")
    if view.warnings:
        parts.append("<p>Avisos do notebook (a execução continuou):</p><ul>"
                     + "".join(f"<li>{esc(w)}</li>" for w in view.warnings) + "</ul>")
    if view.unwritten:
        items = "".join(f"<li>{esc(item.describe())}</li>" for item in view.unwritten)
        parts.append(f"<p><b>Ainda por escrever:</b></p><ul>{items}</ul>")
    parts.append(f'<table class="grade-report" {LEFT}><tbody>')
    if view.short:
        parts.append(f'<tr><th colspan="4" {LEFT}>Primeira verificação que falhou (nível {view.focus.level})</th></tr>')
        parts.append(_failure_row(view.focus))
        if view.more_failures and fold_rest:
            # The fold holds every failure, the one shown in full above included.
            parts.append(_folded_failures(report, f"Todas as {len(report.failed())} verificações que não passaram"))
        elif view.more_failures:
            parts.append(f'<tr><td colspan="4" {LEFT}>({_more_failures(view)})</td></tr>')
        parts += [_level_row(level, with_hint=False) for level in view.levels]
    else:
        for level in view.levels:
            parts.append(_level_row(level))
            parts += [_failure_row(failure) for failure in level.failures]
            if level.passes:
                parts.append(_passes_row(level))
    parts.append("</tbody></table>")
    parts.append(f"<p>{esc(view.score)}</p>")
    if view.passed:
        parts.append("<p>Tudo certo: todas as verificações passaram.</p>")
    elif view.hint:
        parts.append(f"<p>Precisa de uma dica? <code>{esc(view.hint)}</code></p>")
    return "".join(parts)


def json_report(report: GradeReport) -> str:
    return json.dumps(report.to_dict(), ensure_ascii=False, indent=2) + "\n"


def _points_properties(element: ET.Element, earned: float, possible: float) -> None:
    """JUnit has no field for points; properties carry them (readers show or ignore them)."""
    properties = ET.SubElement(element, "properties")
    ET.SubElement(properties, "property", name="pontos", value=shown_points(earned))
    ET.SubElement(properties, "property", name="pontos_possiveis", value=shown_points(possible))


def junit_report(report: GradeReport) -> str:
    failures = len(report.failed())
    suites = ET.Element("testsuites", name="grade", tests=str(len(report.checks)), failures=str(failures))
    suite = ET.SubElement(
        suites, "testsuite", name=report.exercise, tests=str(len(report.checks)),
        failures=str(failures), errors="0", skipped="0",
    )
    _points_properties(suite, report.points_earned, report.points_possible)
    if report.notebook_error:
        ET.SubElement(suite, "system-err").text = report.notebook_error
    for check in report.checks:
        case = ET.SubElement(
            suite, "testcase", classname=f"{report.exercise}.nivel-{check.level}", name=check.id,
        )
        _points_properties(case, check.points_earned, check.points)
        if not check.passed:
            failure = ET.SubElement(case, "failure", message=check.message, type="falhou")
            failure.text = "\n".join(
                part for part in (
                    f"Verificação: {check.title}",
                    f"Critério: {check.criterion}",
                    f"Esperado: {check.expected}" if check.expected else "",
                    f"Obtido: {check.observed}" if check.observed else "",
                    f"Dica: {check.hint_ref}" if check.hint_ref else "",
                ) if part
            )
        if check.output:
            ET.SubElement(case, "system-out").text = check.output
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
