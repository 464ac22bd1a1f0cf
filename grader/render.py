"""Show a GradeReport: Portuguese text for the terminal, an HTML table for Jupyter,
JSON for tools and JUnit XML for CI and classroom platforms."""
from __future__ import annotations

import html
import json
import textwrap
import xml.etree.ElementTree as ET

from grader.points import shown as shown_points
from grader.results import CheckResult, GradeReport

PASS_WORD, FAIL_WORD = "PASSOU", "FALHOU"


def _percent(value: float) -> str:
    return f"{round(value * 100)}%"


def _level_heading(report: GradeReport, level: int, checks: list[CheckResult]) -> str:
    title = report.level_titles.get(level, "")
    passed = sum(c.passed for c in checks)
    name = f"Nível {level}" + (f" — {title}" if title else "")
    points = f"; {_points_text(checks)}" if _weighted(report) else ""
    return f"{name}  ({passed}/{len(checks)}{points})"


def _weighted(report: GradeReport) -> bool:
    """Whether the manifest gave points; with one point per check, points repeat the counts."""
    return any(check.points != 1 for check in report.checks)


def _points_text(checks: list[CheckResult]) -> str:
    earned = sum(c.points_earned for c in checks)
    return f"{shown_points(earned)}/{shown_points(sum(c.points for c in checks))} pontos"


def _indent(label: str, text: str, depth: int = 6, width: int = 100) -> list[str]:
    prefix = " " * depth + f"{label}: "
    return textwrap.wrap(
        text, width=width, initial_indent=prefix, subsequent_indent=" " * len(prefix),
        break_long_words=False, replace_whitespace=False,
    ) or [prefix.rstrip()]


def _groups(checks: list[CheckResult]) -> list[list[CheckResult]]:
    """Consecutive checks with the same title (one check run on several fixtures)."""
    groups: list[list[CheckResult]] = []
    for check in checks:
        if groups and groups[-1][0].title == check.title and check.fixture is not None:
            groups[-1].append(check)
        else:
            groups.append([check])
    return groups


def _failure_lines(check: CheckResult, depth: int) -> list[str]:
    lines = []
    if check.expected:
        lines += _indent("Esperado", check.expected, depth)
    if check.observed and check.observed != check.message:
        lines += _indent("Obtido", check.observed, depth)
    lines += _indent("Problema", check.message, depth)
    if check.output.strip():
        lines += _indent("Saída do seu código", check.output.strip()[-400:], depth)
    return lines


def _group_lines(group: list[CheckResult], verbose: bool, brief: bool) -> list[str]:
    first = group[0]
    failed = [c for c in group if not c.passed]
    if first.fixture is None:
        lines = [f"  {PASS_WORD if first.passed else FAIL_WORD}  {first.title}"]
        if (failed and not brief) or verbose:
            lines += _indent("Critério", first.criterion, 6)
        if failed and not brief:
            lines += _failure_lines(first, 6)
        return lines
    passed = [c for c in group if c.passed]
    lines = [f"  {first.title}  ({len(passed)}/{len(group)})"]
    if (failed and not brief) or verbose:
        lines += _indent("Critério", first.criterion, 6)
    if passed:
        lines.append(f"    {PASS_WORD}  " + " ".join(f"[{c.fixture}]" for c in passed))
    # Fixtures that fail the same way are listed together, with the explanation once.
    same_failure: dict[tuple[str, str, str], list[CheckResult]] = {}
    for check in failed:
        same_failure.setdefault((check.message, check.expected, check.observed), []).append(check)
    for checks in same_failure.values():
        lines.append(f"    {FAIL_WORD}  " + " ".join(f"[{c.fixture}]" for c in checks))
        if not brief:
            lines += _failure_lines(checks[0], 8)
    return lines


def text_report(report: GradeReport, verbose: bool = False) -> str:
    lines = [f"{report.exercise} — {report.title}" if report.title else report.exercise]
    if report.notebook:
        lines.append(f"Notebook: {report.notebook}")
    if report.notebook_error:
        lines += ["", "O notebook não pôde ser corrigido:"]
        lines += _indent("Motivo", report.notebook_error, 2)
    if report.cell_problems:
        lines += ["", "Avisos do notebook (a execução continuou):"]
        for problem in report.cell_problems:
            lines += textwrap.wrap(problem.message, width=100, initial_indent="  - ", subsequent_indent="    ")
    for level, checks in report.levels().items():
        lines += ["", _level_heading(report, level, checks)]
        for group in _groups(checks):
            # With a notebook-level failure the reason is printed once, above.
            lines += _group_lines(group, verbose, brief=bool(report.notebook_error))
    total = len(report.checks)
    if _weighted(report):
        lines += ["", f"Pontuação: {_points_text(report.checks)} ({_percent(report.score)}); "
                      f"{report.passed_count}/{total} verificações passaram."]
    else:
        lines += ["", f"Pontuação: {report.passed_count}/{total} verificações ({_percent(report.score)})."]
    if report.passed:
        lines.append("Tudo certo: todas as verificações passaram.")
    else:
        hints = sorted({c.hint_ref for c in report.failed() if c.hint_ref})
        if hints:
            lines.append("Precisa de uma pista? " + " | ".join(hints))
    return "\n".join(lines) + "\n"


def html_report(report: GradeReport) -> str:
    esc = html.escape
    style = (
        "<style>.grade-report{border-collapse:collapse;font-size:0.9em;margin:0.5em 0}"
        ".grade-report td,.grade-report th{border:1px solid #ccc;padding:4px 8px;text-align:left;"
        "vertical-align:top}.grade-report .ok{color:#1a7f37;font-weight:bold}"
        ".grade-report .no{color:#cf222e;font-weight:bold}</style>"
    )
    parts = [style, f"<h4>{esc(report.exercise)} — {esc(report.title)}: "
             f"{esc(_points_text(report.checks))} ({_percent(report.score)}), "
             f"{report.passed_count}/{len(report.checks)} verificações</h4>"]
    if report.notebook_error:
        parts.append(f"<p><b>O notebook não pôde ser corrigido:</b> {esc(report.notebook_error)}</p>")
    if report.cell_problems:
        items = "".join(f"<li>{esc(p.message)}</li>" for p in report.cell_problems)
        parts.append(f"<p>Avisos do notebook:</p><ul>{items}</ul>")
    parts.append(
        '<table class="grade-report"><thead><tr><th>Nível</th><th>Fixture</th><th>Verificação</th>'
        "<th>Resultado</th><th>Pontos</th><th>Esperado</th><th>Obtido / problema</th></tr></thead><tbody>"
    )
    for level, checks in report.levels().items():
        for check in checks:
            status = '<span class="ok">passou</span>' if check.passed else '<span class="no">falhou</span>'
            problem = "" if check.passed else check.message
            parts.append(
                f"<tr><td>{level}</td><td>{esc(check.fixture or '—')}</td>"
                f"<td>{esc(check.title)}<br><small>{esc(check.criterion)}</small></td>"
                f"<td>{status}</td><td>{shown_points(check.points_earned)}/{shown_points(check.points)}</td>"
                f"<td>{esc(check.expected if not check.passed else '')}</td>"
                f"<td>{esc(problem)}</td></tr>"
            )
    parts.append("</tbody></table>")
    hints = sorted({c.hint_ref for c in report.failed() if c.hint_ref})
    if hints:
        parts.append("<p>Precisa de uma pista? " + " | ".join(f"<code>{esc(h)}</code>" for h in hints) + "</p>")
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
