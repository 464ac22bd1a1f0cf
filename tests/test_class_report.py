"""The class report of `grade batch`: turma.html says what verificacoes.csv and the gradebook
say, escapes what submissions wrote, needs no network, links each check to the lesson section
its level tests, and its charts render in Chromium."""
from __future__ import annotations

import contextlib
import csv
import io
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote, unquote

import pytest

from grader import cli
from grader.core.lesson_sections import heading_anchor, lesson_headings, lesson_path, section_problems
from grader.core.manifest import load_manifest, parse_manifest
from grader.core.results import CellProblem, CheckResult, GradeReport
from grader.instructor import batch
from grader.reports.class_data import histogram
from grader.reports.class_report import CSV_NAME, PAGE_NAME, write_class_report
from tests.grader_support import ROOT, solution_notebook, with_definition, write
from tests.test_browser import offline

LEVELS = [1, 2]
HOSTILE = '<script>alert("x")</script>&<img src=x onerror=1>'


class Elements(HTMLParser):
    """Every start tag with its attributes, and the text of the page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, {name: value or "" for name, value in attrs}))

    def handle_data(self, data):
        self.text.append(data)

    def having(self, attribute: str) -> list[dict[str, str]]:
        return [attrs for _, attrs in self.tags if attribute in attrs]


def parsed(path: Path) -> Elements:
    elements = Elements()
    elements.feed(path.read_text(encoding="utf-8"))
    return elements


def check(check_id: str, level: int, passed: bool, fixture: str | None = None) -> CheckResult:
    return CheckResult(id=check_id, level=level, fixture=fixture, title=f"título de {check_id}", criterion="",
                       status="pass" if passed else "fail", message="" if passed else "falhou")


def graded_row(name: str, failing: set[str], cell_problems=()) -> batch.Row:
    checks = [check("n1.a[f1]", 1, "n1.a[f1]" not in failing, "f1"), check("n1.a[f2]", 1, "n1.a[f2]" not in failing, "f2"),
              check("n1.b", 1, "n1.b" not in failing), check("n2.c", 2, "n2.c" not in failing)]
    report = GradeReport(exercise="exercise-3", checks=checks, cell_problems=list(cell_problems))
    return batch.row_from_report(batch.Submission(name, Path(f"{name}.ipynb"), label=f"{name}.ipynb"), report, LEVELS)


def class_rows() -> list[batch.Row]:
    syntax = CellProblem(cell=4, first_line="def resume_action(cp)", ename="SyntaxError", evalue="invalid syntax",
                         message="A célula 4 tem um erro de sintaxe.", names=["resume_action"])
    return [
        graded_row("ana", set()),
        graded_row("bruno", {"n1.a[f2]", "n2.c"}),
        graded_row("carla", {"n2.c", "n1.a[f2]"}),
        graded_row(HOSTILE, {"n1.b"}),
        graded_row("davi", {"n1.a[f1]", "n1.a[f2]", "n1.b", "n2.c"}, [syntax]),
        batch.failure_row(batch.Submission("edu", Path("edu.ipynb")), batch.TIMED_OUT, "a correção passou de 60 s", LEVELS),
        batch.failure_row(batch.Submission("fabi", None, "nenhum notebook"), batch.NO_NOTEBOOK, "nenhum notebook", LEVELS),
    ]


def csv_counts(path: Path) -> dict[str, tuple[int, int]]:
    """check id -> (runs, failures), counted from verificacoes.csv: a run passed or failed; a check
    on an unwritten function ("nao_escrita") judged no answer."""
    counts: dict[str, list[int]] = {}
    with path.open(encoding="utf-8", newline="") as stream:
        for line in csv.DictReader(stream):
            runs_failures = counts.setdefault(line["verificacao"], [0, 0])
            runs_failures[0] += line["resultado"] in ("passou", "falhou")
            runs_failures[1] += line["resultado"] == "falhou"
    return {check_id: (runs, failures) for check_id, (runs, failures) in counts.items()}


def csv_submissions(path: Path) -> set[str]:
    with path.open(encoding="utf-8", newline="") as stream:
        return {line["submissao"] for line in csv.DictReader(stream)}


def page_counts(elements: Elements) -> dict[str, tuple[int, int]]:
    return {attrs["data-check"]: (int(attrs["data-runs"]), int(attrs["data-failures"]))
            for attrs in elements.having("data-check")}


def chart_counts(elements: Elements) -> dict[str, list[int]]:
    """chart id -> its bars' counts, in order."""
    charts: dict[str, list[int]] = {}
    current = None
    for tag, attrs in elements.tags:
        if tag == "svg":
            current = charts.setdefault(attrs["data-chart"], [])
        elif tag == "rect" and current is not None:
            current.append(int(attrs["data-count"]))
    return charts


def test_the_page_says_what_the_csv_says(tmp_path):
    rows = class_rows()
    page_path, csv_path = write_class_report(tmp_path, "exercise-3", rows, LEVELS)
    elements = parsed(page_path)
    assert page_counts(elements) == csv_counts(csv_path) == {
        "n1.a[f1]": (5, 1), "n1.a[f2]": (5, 3), "n1.b": (5, 2), "n2.c": (5, 3)}
    rates = [int(attrs["data-failures"]) / int(attrs["data-runs"]) for attrs in elements.having("data-check")]
    assert rates == sorted(rates, reverse=True)  # the most failed first
    charts = chart_counts(elements)
    graded = [row for row in rows if row.report is not None]
    assert charts["total"] == histogram([row.total for row in graded]) and sum(charts["total"]) == 5
    for level in LEVELS:
        assert charts[f"nivel-{level}"] == histogram([row.level_scores[level] for row in graded])


def test_the_first_table_sums_each_check_over_its_fixtures_and_one_sentence_sums_the_page(tmp_path):
    rows = class_rows()
    page_path, csv_path = write_class_report(tmp_path, "exercise-3", rows, LEVELS)
    elements = parsed(page_path)
    per_check: dict[str, list[int]] = {}
    for check_id, (runs, failures) in csv_counts(csv_path).items():
        total = per_check.setdefault(check_id.split("[")[0], [0, 0])
        total[0] += runs
        total[1] += failures
    shown = {attrs["data-check-total"]: [int(attrs["data-runs"]), int(attrs["data-failures"])]
             for attrs in elements.having("data-check-total")}
    assert shown == {check_id: counts for check_id, counts in per_check.items() if counts[1]} == {
        "n1.a": [10, 4], "n1.b": [5, 2], "n2.c": [5, 3]}
    text = " ".join("".join(elements.text).split())
    # ana's 100%, the three of 5 graded below it; n2.c fails in 3 of 5 runs, the worst rate
    assert "Média 55%; 1 de 5 com nota cheia; a verificação que mais falhou: N2 “título de n2.c” (60% das execuções)" \
        in text, text[:400]
    # edu, fabi, davi's cell: three submissions (a submission with two troubles is counted once)
    assert "(60% das execuções); 3 entregas pararam no meio, não rodaram ou vieram em branco." in text


def never_ran_row(name: str, kind: str, status_error: str) -> batch.Row:
    """A row as the engine gives it for a notebook that never ran: every check failed with the
    notebook's error, none of them having looked at an answer."""
    checks = [CheckResult(id=c.id, level=c.level, fixture=c.fixture, title=c.title, criterion="", status="fail",
                          message=status_error) for c in graded_row("x", set()).report.checks]
    report = GradeReport(exercise="exercise-3", checks=checks, notebook_error=status_error, notebook_error_kind=kind)
    return batch.row_from_report(batch.Submission(name, Path(f"{name}.ipynb"), label=f"{name}.ipynb"), report, LEVELS)


def blank_row(name: str, written: set[str] = frozenset()) -> batch.Row:
    """A notebook that ran with its stubs in place, except the checks in ``written`` (which fail as
    answers do)."""
    row = graded_row(name, {"n1.a[f1]", "n1.a[f2]", "n1.b", "n2.c"})
    for check in row.report.checks:
        if check.id not in written:
            check.unwritten = "resume_action"
    return row


def mixed_class() -> list[batch.Row]:
    return [
        graded_row("ana", set()),
        graded_row("bruno", {"n2.c"}),
        graded_row("carla", {"n2.c"}),
        blank_row("davi"),
        blank_row("eva", written={"n1.b"}),  # wrote one function, wrongly: that failure is a real one
        never_ran_row("fabio", "invalid_notebook", "fabio.ipynb não é um notebook válido"),
        never_ran_row("gil", "kernel_died", "O kernel do Python morreu ao executar a célula 2"),
    ]


def test_submissions_that_never_ran_or_came_blank_weigh_on_no_rate_and_no_group(tmp_path):
    """Never-ran and blank submissions fail every check without any check having judged an answer:
    counted in the rates they would make every check look missed by the class."""
    rows = mixed_class()
    assert [row.status for row in rows[-2:]] == [batch.INVALID_NOTEBOOK, batch.KERNEL_DIED]
    page_path, csv_path = write_class_report(tmp_path, "exercise-3", rows, LEVELS)
    elements = parsed(page_path)
    # runs: ana, bruno, carla judged every check; eva only n1.b; davi none
    assert page_counts(elements) == csv_counts(csv_path) == {
        "n1.a[f1]": (3, 0), "n1.a[f2]": (3, 0), "n1.b": (4, 1), "n2.c": (3, 2)}
    unwritten = {attrs["data-check"]: int(attrs["data-unwritten"]) for attrs in elements.having("data-check")}
    assert unwritten == {"n1.a[f1]": 2, "n1.a[f2]": 2, "n1.b": 1, "n2.c": 2}
    assert csv_submissions(csv_path) == {"ana", "bruno", "carla", "davi", "eva"}  # fabio and gil never ran
    groups = {attrs["data-group-size"] for attrs in elements.having("data-group-size")}
    assert groups == {"2", "1"}  # bruno and carla on n2.c; eva on n1.b; davi, fabio and gil in none
    text = " ".join("".join(elements.text).split())
    group_table = text[text.index("Entregas que falham"):text.index("Entregas que pararam")]
    assert "bruno, carla" in group_table and "eva" in group_table
    assert not any(name in group_table for name in ("davi", "fabio", "gil"))
    assert "7 entregas: 5 corrigidas, 2 não rodaram. Das corrigidas, 1 veio em branco" in text
    spaced = " ".join(" ".join(elements.text).split())  # one space between table cells
    problems = spaced[spaced.index("Entregas que pararam"):]
    for expected in ("davi em branco", "fabio o arquivo não é um notebook válido", "gil o kernel morreu"):
        assert expected in problems
    assert sum(chart_counts(elements)["total"]) == 5  # the charts count the five that ran


def test_a_class_where_nothing_ran_says_so_and_has_no_rate(tmp_path):
    rows = [never_ran_row("fabio", "invalid_notebook", "não é um notebook"),
            never_ran_row("gil", "kernel_died", "o kernel morreu")]
    page_path, csv_path = write_class_report(tmp_path, "exercise-3", rows, LEVELS)
    text = " ".join("".join(parsed(page_path).text).split())
    assert "Nenhuma das 2 entregas rodou" in text and "2 entregas: 0 corrigidas, 2 não rodaram." in text
    assert csv_counts(csv_path) == {} and not parsed(page_path).having("data-group-size")


def test_a_check_that_never_failed_is_one_line_not_a_row(tmp_path):
    rows = [graded_row("ana", set()), graded_row("bruno", {"n1.b"})]
    page_path, _ = write_class_report(tmp_path, "exercise-3", rows, LEVELS)
    elements = parsed(page_path)
    assert [attrs["data-check-total"] for attrs in elements.having("data-check-total")] == ["n1.b"]
    assert "2 verificações passaram em todas as entregas corrigidas." in " ".join("".join(elements.text).split())


def test_a_check_some_left_unwritten_is_not_said_to_pass_everywhere(tmp_path):
    """Among the checks nobody failed: one every submission answered passed everywhere; one some
    left unwritten passed only where it was answered; one nobody answered did not pass at all."""
    rows = [graded_row("ana", set()), graded_row("bruno", set())]
    for row in rows:
        for check in row.report.checks:
            if check.id == "n1.b" or (check.id == "n2.c" and row.submission == "bruno"):
                check.status, check.unwritten = "fail", "resume_action"  # the stub, as the engine reports it
    page_path, csv_path = write_class_report(tmp_path, "exercise-3", rows, LEVELS)
    text = " ".join("".join(parsed(page_path).text).split())
    assert "1 verificação passou em todas as entregas corrigidas." in text, text  # n1.a
    assert "1 verificação passou em todas as entregas que a responderam (as outras deixaram a função sem escrever)." in text
    assert "1 verificação não foi respondida por nenhuma entrega corrigida." in text  # n1.b
    assert csv_counts(csv_path)["n2.c"] == (1, 0)  # judged once (ana), never failed


def test_the_last_axis_label_ends_inside_its_chart():
    from grader.reports.class_report import score_chart

    svg = score_chart([100.0, 40.0], "Nota total", "total")
    width = float(re.search(r'width="(\d+)"', svg).group(1))
    label = re.search(r'<text x="([\d.]+)" y="[\d.]+" text-anchor="end">100%</text>', svg)
    assert label and float(label.group(1)) <= width


def test_the_page_agrees_with_the_gradebook_of_the_same_rows(tmp_path):
    rows = class_rows()
    batch.write_gradebook(tmp_path / "gradebook.csv", rows, LEVELS)
    page_path, _ = write_class_report(tmp_path, "exercise-3", rows, LEVELS)
    with (tmp_path / "gradebook.csv").open(encoding="utf-8", newline="") as stream:
        totals = [float(line["total"]) for line in csv.DictReader(stream) if line["verificacoes"] != "0/0"]
    assert chart_counts(parsed(page_path))["total"] == histogram(totals)


def test_submissions_failing_the_same_checks_are_one_group_and_troubles_are_listed(tmp_path):
    page_path, _ = write_class_report(tmp_path, "exercise-3", class_rows(), LEVELS)
    elements = parsed(page_path)
    sizes = [int(attrs["data-group-size"]) for attrs in elements.having("data-group-size")]
    assert sizes == [2, 1, 1]  # bruno and carla fail n1.a[f2] and n2.c, in any order
    text = " ".join("".join(elements.text).split())
    assert "bruno, carla" in text
    for expected in ("edu", "tempo esgotado", "fabi", "nenhum notebook na entrega", "davi", "erro de sintaxe"):
        assert expected in text


def test_what_a_submission_wrote_is_escaped_and_nothing_reaches_the_network(tmp_path):
    feedback = batch.write_feedback(tmp_path / "retorno", class_rows())
    page_path, csv_path = write_class_report(tmp_path / "relatorio", "exercise-3", class_rows(), LEVELS, feedback)
    text = page_path.read_text(encoding="utf-8")
    assert "<script" not in text and "<img" not in text and "onerror=1>" not in text
    assert HOSTILE in "".join(parsed(page_path).text)  # shown as text
    elements = parsed(page_path)
    assert not [tag for tag, _ in elements.tags if tag in ("script", "link", "img", "iframe", "object")]
    assert not [attrs for attrs in elements.having("src")]
    hrefs = [attrs["href"] for attrs in elements.having("href")]
    assert hrefs and not [href for href in hrefs if re.match(r"[a-z]+:", href)]
    for name, path in feedback.items():  # every student's page is linked, and the link resolves
        assert any((page_path.parent / unquote(href)).resolve() == path.resolve() for href in hrefs), name
    assert next(csv.reader(io.StringIO(csv_path.read_text(encoding="utf-8").splitlines()[1])))[0] == "ana"


def test_a_name_that_a_spreadsheet_would_run_is_kept_as_text_in_the_csv(tmp_path):
    rows = [graded_row("=HYPERLINK(\"http://x\")", set())]
    _, csv_path = write_class_report(tmp_path, "exercise-3", rows, LEVELS)
    first = next(csv.DictReader(csv_path.open(encoding="utf-8", newline="")))
    assert first["submissao"].startswith("'=")


@pytest.mark.parametrize("name", ['=HYPERLINK("https://x","clique")', "+cmd|calc!A0", "@SUM(1+1)", "-2+3", "\tx"])
def test_the_gradebook_keeps_a_formula_name_as_text_and_the_two_csvs_name_the_student_alike(tmp_path, name):
    rows = [graded_row(name, {"n1.b"})]
    batch.write_gradebook(tmp_path / "gradebook.csv", rows, LEVELS)
    _, csv_path = write_class_report(tmp_path, "exercise-3", rows, LEVELS)
    with (tmp_path / "gradebook.csv").open(encoding="utf-8", newline="") as stream:
        line = next(csv.DictReader(stream))
    assert line["submissao"] == "'" + name and line["notebook"] == "'" + name + ".ipynb"
    assert next(csv.DictReader(csv_path.open(encoding="utf-8", newline="")))["submissao"] == line["submissao"]


def test_every_check_links_to_the_lesson_section_of_its_level(tmp_path):
    page_path, _ = write_class_report(tmp_path, "exercise-3", class_rows(), LEVELS)
    links = {attrs["href"] for attrs in parsed(page_path).having("href") if ".ipynb#" in attrs["href"]}
    assert len(links) == 2  # one section per level
    manifest = load_manifest().exercise("exercise-3")
    lesson = lesson_path("exercise-3", ROOT)
    for level in (level for level in manifest.levels if level.number in LEVELS):  # the levels the rows have
        assert level.section in lesson_headings(lesson)
        href = next(href for href in links if href.endswith("#" + quote(heading_anchor(level.section))))
        assert (page_path.parent / unquote(href.split("#")[0])).resolve() == lesson.resolve()


def test_every_level_of_the_manifest_names_a_heading_of_its_lesson():
    assert section_problems(load_manifest(), ROOT) == []


def test_a_section_that_is_no_heading_of_the_lesson_is_a_problem():
    text = (ROOT / "grader" / "core" / "manifest.yaml").read_text(encoding="utf-8")
    broken = parse_manifest(text.replace('section: "A matriz de quedas"', 'section: "Uma seção que não existe"'))
    assert section_problems(broken, ROOT) == [
        "manifest.yaml: exercise-6.levels[1].section: 06-aparato-de-verificacao.ipynb não tem um título "
        "'Uma seção que não existe'"]
    missing = parse_manifest(text.replace('        section: "A matriz de quedas"\n', ""))
    assert section_problems(missing, ROOT) == [
        "manifest.yaml: exercise-6.levels[1].section: falta a seção da lição que o nível 2 testa"]


def test_the_anchor_is_the_one_jupyterlab_gives_the_heading():
    assert heading_anchor("6. `reconcile`: decidindo pela natureza da ferramenta") == \
        "6.-reconcile:-decidindo-pela-natureza-da-ferramenta"
    assert heading_anchor("11. `run_tool_uses`: livro-razão") == "11.-run_tool_uses:-livro-razão"


# ------------------------------------------------------------ through grade batch


@pytest.fixture(scope="module")
def batch_run(tmp_path_factory):
    """`grade batch` over the solution and a broken copy, with feedback pages."""
    folder = tmp_path_factory.mktemp("turma")
    submissions = folder / "entregas"
    submissions.mkdir()
    write(solution_notebook(), submissions / "ana.ipynb")
    write(with_definition("reconcile", "def reconcile(cp):\n    return cp"), submissions / "bruno.ipynb")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["batch", str(submissions), "exercise-3", "--csv", str(folder / "notas" / "gradebook.csv"),
                         "--feedback", str(folder / "retorno")])
    assert code == 0, err.getvalue()
    return folder, out.getvalue()


@pytest.mark.slow
def test_grade_batch_writes_the_class_report_beside_the_gradebook(batch_run):
    folder, printed = batch_run
    page_path, csv_path = folder / "notas" / PAGE_NAME, folder / "notas" / CSV_NAME
    assert f"Relatório da turma: {page_path}" in printed
    counts = page_counts(parsed(page_path))
    assert counts == csv_counts(csv_path) and counts
    assert all(runs == 2 for runs, _ in counts.values())
    with (folder / "notas" / "gradebook.csv").open(encoding="utf-8", newline="") as stream:
        gradebook = {line["submissao"]: line for line in csv.DictReader(stream)}
    failures = sum(failed for _, failed in counts.values())
    assert failures == sum(int(line["verificacoes"].split("/")[1]) - int(line["verificacoes"].split("/")[0])
                           for line in gradebook.values())
    assert chart_counts(parsed(page_path))["total"] == histogram([float(line["total"]) for line in gradebook.values()])
    hrefs = [attrs["href"] for attrs in parsed(page_path).having("href")]
    assert "../retorno/ana.html" in hrefs and "../retorno/bruno.html" in hrefs


def test_no_report_and_a_report_folder_that_is_a_file(tmp_path, capsys):
    (tmp_path / "entregas").mkdir()
    write(solution_notebook(), tmp_path / "entregas" / "ana.ipynb")
    (tmp_path / "arquivo").write_text("x")
    assert cli.main(["batch", str(tmp_path / "entregas"), "exercise-3", "--csv", str(tmp_path / "g.csv"),
                     "--report", str(tmp_path / "arquivo")]) == 2
    assert "--report espera uma pasta" in capsys.readouterr().err


@pytest.mark.browser
def test_the_class_report_renders_its_charts_in_chromium(batch_run, page):  # noqa: F811 - the fixture
    folder, _ = batch_run
    offline(page)
    page.goto((folder / "notas" / PAGE_NAME).as_uri())
    charts = page.locator("svg[role=img]")
    assert charts.count() == 1 + 3  # overall and one per level of exercise-3
    for index in range(charts.count()):
        chart = charts.nth(index)
        assert chart.is_visible()
        box = chart.bounding_box()
        assert box and box["width"] > 100 and box["height"] > 50
        title = chart.locator("title").first.text_content()
        assert title.startswith(("Nota total", "Nível")) and "2 entregas" in title
        assert chart.get_attribute("aria-label") == title
    bars = page.locator("svg[data-chart=total] rect.bar")
    assert bars.count() == 10
    tall = [bars.nth(i) for i in range(10) if float(bars.nth(i).get_attribute("height")) > 0]
    assert tall and all(bar.is_visible() for bar in tall)
    assert page.locator("#tabela-verificacoes tbody tr").count() > 0
    page.screenshot(path=str(folder / "turma.png"), full_page=True)


def test_a_cell_error_that_kept_a_function_undefined_and_checks_that_stopped_short_judge_nothing(tmp_path):
    """A cell that raised before its `def` leaves the function undefined: the checks that need it
    judged no answer (nao_definida), and the cell is listed. A kernel that died during the checks
    (killed by anything) leaves the row out of the rates: which checks it cut short is unknown."""
    broke = graded_row("hugo", {"n1.a[f1]", "n1.a[f2]"},
                       [CellProblem(cell=3, first_line="1/0", ename="ZeroDivisionError", evalue="division by zero",
                                    message="A célula 3 levantou ZeroDivisionError.", names=["resume_action"])])
    for check in broke.report.checks:
        if check.id.startswith("n1.a"):
            check.undefined = "resume_action"
    stopped = graded_row("iris", {"n2.c"})
    stopped.report.notebook_error_kind = "kernel_died"
    rows = [graded_row("ana", set()), broke, stopped]
    page_path, csv_path = write_class_report(tmp_path, "exercise-3", rows, LEVELS)
    elements = parsed(page_path)
    assert page_counts(elements) == csv_counts(csv_path) == {
        "n1.a[f1]": (1, 0), "n1.a[f2]": (1, 0), "n1.b": (2, 0), "n2.c": (2, 0)}
    with csv_path.open(encoding="utf-8", newline="") as stream:
        results = {(line["submissao"], line["verificacao"]): line["resultado"] for line in csv.DictReader(stream)}
    assert results[("hugo", "n1.a[f1]")] == "nao_definida" and ("iris", "n2.c") not in results
    assert not elements.having("data-group-size")  # nobody failed an answer
    spaced = " ".join(" ".join(elements.text).split())
    problems = spaced[spaced.index("Entregas que pararam"):]
    assert "hugo erro numa célula A célula 3 levantou ZeroDivisionError." in problems
    assert "iris" in problems  # its status (kernel_morreu) is its trouble


def test_the_headline_mean_also_says_it_without_the_blank_submissions(tmp_path):
    rows = [graded_row("ana", set()), graded_row("bruno", {"n2.c"}), blank_row("davi")]
    page_path, _ = write_class_report(tmp_path, "exercise-3", rows, LEVELS)
    text = " ".join("".join(parsed(page_path).text).split())
    assert text.count("Média ") >= 1
    mean = text[text.index("Média "):text.index("com nota cheia")]
    assert "sem a entrega em branco)" in mean, mean
