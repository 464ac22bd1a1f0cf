"""`grade batch --feedback DIR`: one self-contained Portuguese HTML page per submission."""
from __future__ import annotations

import re
import shutil
from html.parser import HTMLParser

import nbformat
import pytest

from grader import cli
from grader.core.engine import load_exercise
from grader.core.fixture_loader import load_fixtures
from grader.core.results import GradeReport
from grader.instructor import batch
from grader.reports import feedback
from tests.grader_support import ROOT, solution_notebook, write

HOSTILE = "<script>alert('x')</script>"


class Collector(HTMLParser):
    """Tags and attributes of a page, to prove it loads nothing from elsewhere."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += attrs


def parse(text: str) -> Collector:
    collector = Collector()
    collector.feed(text)
    return collector


@pytest.mark.slow
def test_batch_writes_one_page_per_submission(tmp_path, capsys):
    entregas = tmp_path / "entregas"
    entregas.mkdir()
    shutil.copyfile(ROOT / "solutions" / "exercise-3.ipynb", entregas / "ana.ipynb")
    shutil.copyfile(ROOT / "exercises" / "exercise-3.ipynb", entregas / "bruno.ipynb")
    hostile = solution_notebook()
    hostile.cells.insert(1, nbformat.v4.new_code_cell(f"raise ValueError({HOSTILE!r})"))
    write(hostile, entregas / "carla.ipynb")
    (entregas / "davi").mkdir()
    pages = tmp_path / "retorno"

    code = cli.main(["batch", str(entregas), "exercise-3", "-j", "2", "--csv", str(tmp_path / "notas.csv"),
                     "--feedback", str(pages), "--timeout", "120"])
    assert code == 0
    assert "Páginas de retorno" in capsys.readouterr().out
    assert sorted(path.name for path in pages.iterdir()) == ["ana.html", "bruno.html", "carla.html", "davi.html"]

    checks = len(load_exercise("exercise-3").plan(load_fixtures("exercise-3")))
    ana = (pages / "ana.html").read_text(encoding="utf-8")
    assert '<html lang="pt-BR">' in ana and "Correção de ana" in ana
    assert f"{checks} de {checks} pontos (100%)" in ana and f"{checks} de {checks} verificações passaram" in ana
    assert "falhou" not in re.sub(r"<[^>]+>", " ", ana).split("Nível 1", 1)[1]

    bruno = (pages / "bruno.html").read_text(encoding="utf-8")
    assert f"0 de {checks} pontos (0%)" in bruno and "Situação: incompleto" in bruno
    assert "grade hint exercise-3 --level 1" in bruno
    shown = visible(bruno)  # the short form: one line per unwritten function, one failure in full
    assert "Ainda por escrever" in shown and shown.count("FALHOU") == 1 and "falhou:" not in bruno
    assert "<code>incompleto</code>" not in bruno

    carla = (pages / "carla.html").read_text(encoding="utf-8")
    assert HOSTILE not in carla and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in carla
    assert "Avisos do notebook" in carla

    davi = (pages / "davi.html").read_text(encoding="utf-8")
    assert "Esta entrega não foi corrigida" in davi and "nenhum notebook .ipynb na pasta" in davi

    for path in pages.iterdir():
        found = parse(path.read_text(encoding="utf-8"))
        assert "script" not in found.tags and "link" not in found.tags and "img" not in found.tags
        assert not [value for name, value in found.attributes if name in ("src", "href")]


def test_feedback_into_a_file_is_refused_before_grading(tmp_path, capsys):
    entregas = tmp_path / "entregas"
    entregas.mkdir()
    shutil.copyfile(ROOT / "exercises" / "exercise-3.ipynb", entregas / "ana.ipynb")
    not_a_folder = tmp_path / "retorno.html"
    not_a_folder.write_text("já existe")
    code = cli.main(["batch", str(entregas), "exercise-3", "--csv", str(tmp_path / "n.csv"), "--feedback", str(not_a_folder)])
    assert code == 2
    assert "--feedback espera uma pasta" in capsys.readouterr().err
    assert not (tmp_path / "n.csv").exists()


def test_page_names_are_safe_and_unique():
    taken: set[str] = set()
    assert feedback.file_name("ana", taken) == "ana.html"
    assert feedback.file_name("Ana", taken) == "Ana-2.html"  # case-insensitive file systems
    assert feedback.file_name("../../etc/passwd", taken) == "etc_passwd.html"
    assert feedback.file_name("   ", taken) == "entrega.html"


# ------------------------------------------------- the short form, as the terminal


def visible(page_text: str) -> str:
    """The page's text outside folded <details>, tags dropped."""
    unfolded = re.sub(r"<(details|style)>.*?</\1>", " ", page_text, flags=re.S)
    return " ".join(re.sub(r"<[^>]+>", " ", unfolded).split())


def blank_report() -> GradeReport:
    """What a blank exercise gets: every check fails as unwritten, per fixture, same reason."""
    from grader.core.results import CheckResult, GradeReport

    checks = []
    for fixture in ("cpA", "cpB", "cpC", "chamado-pendente"):
        for name, function in (("decide", "resume_action"), ("fecha", "reconcile")):
            checks.append(CheckResult(
                id=f"n1.{name}[{fixture}]", level=1, fixture=fixture, title=f"Título de {name}",
                criterion=f"Critério de {name}.", status="fail", message=f"`{function}` ainda não foi escrita.",
                hint_ref="grade hint exercise-3 --level 1", unwritten=function))
    checks.append(CheckResult(id="n2.causa", level=2, fixture=None, title="A causa raiz", criterion="Critério da causa.",
                              status="fail", message="`ROOT_CAUSE` ainda é None.", unwritten="ROOT_CAUSE",
                              hint_ref="grade hint exercise-3 --level 2"))
    return GradeReport(exercise="exercise-3", title="Retomada", notebook="entregas/bruno.ipynb", checks=checks,
                       level_titles={1: "Decidir", 2: "Entender"})


def test_a_blank_submission_gets_the_short_form_with_the_rest_folded():
    gradebook_line = "falhou: N1 cpA: Título de decide; N1 cpA: Título de fecha (e mais 7)"
    text = feedback.page("bruno", batch.STATUS_WORDS[batch.INCOMPLETE], gradebook_line, blank_report())
    shown = visible(text)
    assert "Ainda por escrever" in shown
    for function in ("resume_action", "reconcile", "ROOT_CAUSE"):
        assert shown.count(f"`{function}`: trava") == 1, shown
    assert "Primeira verificação que falhou (nível 1)" in shown
    assert shown.count("Critério de") == 1  # one failure in full, the others folded away
    assert "Critério de fecha" in text and "Critério da causa" in text  # ...but still on the page, folded
    assert text.count("Critério de decide") == 2  # in full once, and once in the folded list for its 4 fixtures
    assert "falhou: N1" not in text and "N1 cpA" not in text  # the gradebook's line stays in the gradebook
    assert "<code>incompleto</code>" not in text and "Situação: incompleto" in shown
    assert "grade hint exercise-3 --level 1" in shown



def test_the_folded_list_is_titled_with_how_many_checks_it_holds():
    report = blank_report()  # 9 failing checks: one shown in full, all 9 in the folded list
    summaries = re.findall(r"<summary>(.*?)</summary>", feedback.page("bruno", "incompleto", "", report))
    folded = [summary for summary in summaries if "não passaram" in summary]
    assert folded == ["Todas as 9 verificações que não passaram"], summaries


def test_a_crashed_submission_says_why_once_and_lists_no_checks():
    report = blank_report()
    report.notebook_error = "O kernel do Python morreu ao executar a célula 3 (`import os`)."
    for check in report.checks:
        check.message, check.unwritten = report.notebook_error, ""
    text = feedback.page("carla", batch.STATUS_WORDS[batch.KERNEL_DIED], report.notebook_error, report)
    shown = visible(text)
    assert shown.count("O kernel do Python morreu ao executar a célula 3") == 1, shown
    assert "Título de" not in text and "Critério de" not in text
    assert "Situação: o Python parou" in shown
    assert "kernel_morreu" not in text


def test_every_student_text_on_a_page_is_escaped():
    report = blank_report()
    for check in report.checks:
        check.unwritten = ""
        check.message, check.output, check.observed = HOSTILE, HOSTILE, HOSTILE
        check.fixture = check.fixture and HOSTILE
    report.notebook = HOSTILE
    from grader.core.results import CellProblem

    report.cell_problems = [CellProblem(2, HOSTILE, "ValueError", HOSTILE, HOSTILE)]
    text = feedback.page(HOSTILE, HOSTILE, HOSTILE, report)
    assert HOSTILE not in text and "&lt;script&gt;" in text
    found = parse(text)
    assert "script" not in found.tags and not [v for n, v in found.attributes if n in ("src", "href")]


def test_every_batch_status_has_plain_words():
    statuses = [value for name, value in vars(batch).items() if name.isupper() and isinstance(value, str)
                and name in ("PASSED", "INCOMPLETE", "TIMED_OUT", "KERNEL_DIED", "KERNEL_START_FAILED",
                             "INVALID_NOTEBOOK", "NO_NOTEBOOK", "NOTEBOOK_ERROR", "WORKER_FAILED", "NOT_GRADED",
                             "MEMORY_EXHAUSTED")]
    assert len(statuses) == 11
    for status in statuses:
        words = batch.STATUS_WORDS[status]
        assert "_" not in words and words != status
