"""`grade batch --feedback DIR`: one self-contained Portuguese HTML page per submission."""
from __future__ import annotations

import re
import shutil
from html.parser import HTMLParser

import nbformat

from grader import cli, feedback
from grader.engine import load_exercise
from grader.fixture_loader import load_fixtures
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
    assert f"0 de {checks} pontos (0%)" in bruno and "<code>incompleto</code>" in bruno
    assert "Ainda não implementado" in bruno and "grade hint exercise-3 --level 1" in bruno

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
