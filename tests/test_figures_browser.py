"""The lessons' figures load in a real browser: in JupyterLab and on the `course site` pages.

JupyterLab serves a copy of lessons/ (notebooks and figuras/); headless Chromium opens
every lesson and appendix that shows a figure and waits for each one to load, found by its
alt text. An <img> whose file the server cannot find stays at naturalWidth 0, so a broken
path, a figure left out of the site or an SVG the browser cannot decode all fail here.
Screenshots go to test-artifacts/.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from authoring.site import build_site
from tests.glossary_fixtures import REPO
from tests.test_browser import (
    ARTIFACTS,
    lab_serving,
    offline,
    require_chromium,
)
from tests.test_figures import lesson_images

pytestmark = [pytest.mark.browser, pytest.mark.timeout(420)]

LESSONS = [p for p in sorted((REPO / "lessons").glob("*.ipynb")) if lesson_images(p)]
LESSON = next((REPO / "lessons").glob("03-*.ipynb"))
IMAGE_LOADED = "img => img.complete && img.naturalWidth > 0 && img.naturalHeight > 0"


def expected_images(lesson: Path = LESSON) -> list[tuple[str, str]]:
    images = lesson_images(lesson)
    assert images, f"{lesson.name} shows no figure"
    return images


def test_every_lesson_and_appendix_is_checked_here():
    assert [p.name[:2] for p in LESSONS] == ["01", "02", "03", "04", "05", "06", "07", "08"]


@pytest.fixture(scope="module")
def course_copy(tmp_path_factory) -> Path:
    """A copy of the project's lessons/ (with figuras/) and what the site export needs."""
    require_chromium()
    root = tmp_path_factory.mktemp("course")
    shutil.copytree(REPO / "lessons", root / "lessons", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    shutil.copy(REPO / "glossary.yaml", root / "glossary.yaml")
    return root


@pytest.fixture(scope="module")
def lab(course_copy, tmp_path_factory):
    with lab_serving(course_copy / "lessons", tmp_path_factory) as server:
        yield server


@pytest.fixture(scope="module")
def built_site(course_copy, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    build_site(course_copy, out)
    return out


def check_figures_loaded(page, container: str, artifact: str, lesson: Path = LESSON) -> None:
    """Each image of the lesson, found by its alt text, is decoded with a real size."""
    for target, alt in expected_images(lesson):
        assert '"' not in alt and "\\" not in alt, f"{target}: alt text must not need escaping in a selector"
        image = page.locator(f'{container} img[alt="{alt}"]')
        image.first.wait_for(state="attached")
        assert image.count() == 1, f"{target}: expected one <img> with its alt text, found {image.count()}"
        image.first.scroll_into_view_if_needed()
        page.wait_for_function(IMAGE_LOADED, arg=image.first.element_handle(), timeout=60_000)
        assert image.first.get_attribute("alt") == alt
        assert Path(target).name in (image.first.get_attribute("src") or "")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{artifact}.png"))


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.name[:2])
def test_jupyterlab_loads_each_lessons_figures_with_their_alt_text(lab, page, lesson):
    page.goto(lab.lab_url(lesson.name))
    page.locator(".jp-NotebookPanel .jp-RenderedMarkdown").first.wait_for()
    check_figures_loaded(page, ".jp-RenderedMarkdown", f"jupyterlab-{lesson.stem}-figuras", lesson)


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.name[:2])
def test_the_site_page_of_each_lesson_loads_its_figures_offline(built_site, page, lesson):
    offline(page)
    page.goto((built_site / lesson.with_suffix(".html").name).as_uri())
    check_figures_loaded(page, "body", f"html-{lesson.stem}-figuras", lesson)


def test_a_figure_missing_from_the_site_is_caught(course_copy, tmp_path, page):
    out = tmp_path / "site"
    build_site(course_copy, out)
    shutil.rmtree(out / "figuras")
    offline(page)
    page.goto((out / LESSON.with_suffix(".html").name).as_uri())
    target, alt = expected_images()[-1]
    image = page.locator(f'img[alt="{alt}"]').first
    image.wait_for(state="attached")
    image.scroll_into_view_if_needed()
    page.wait_for_function("img => img.complete", arg=image.element_handle())
    assert image.evaluate("img => img.naturalWidth") == 0
