"""Hover definitions in a real browser: JupyterLab, Notebook 7 and the `course site` export.

Debian's `chromium` (at /usr/bin/chromium) driven by Playwright. JupyterLab serves a
temporary copy of the lessons with the glossary applied; lesson 3 is the real
lessons/03-*.ipynb when it exists, otherwise a lesson-3-like notebook. Screenshots go
to test-artifacts/ (gitignored). Without Chromium the tests skip, except when the
CI environment variable is set, where they fail.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from authoring.glossary import apply_glossary, mark_lesson
from authoring.glossary_marker import Marker
from authoring.glossary_schema import load_glossary
from authoring.site import build_site
from tests.glossary_fixtures import REPO, lesson_three_notebook, write_notebook

pytestmark = [pytest.mark.browser, pytest.mark.timeout(420)]

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
    "--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-sync",
]
ARTIFACTS = REPO / "test-artifacts"
ORPHAN_CALL = re.compile(r"chamadas?\s+órfãs?", re.IGNORECASE)
EXAMPLE_NAME = "exemplo-marcas.ipynb"
STARTUP_SECONDS = 120


def require_chromium() -> None:
    problem = None
    if not (CHROMIUM.exists() and os.access(CHROMIUM, os.X_OK)):
        problem = f"Debian's chromium is not installed at {CHROMIUM} (apt-get install -y chromium)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            problem = "the playwright Python package is not installed"
    if problem is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the browser tests: {problem}")
    pytest.skip(problem)


def definition_of(term: str) -> str:
    return next(t.hover_text for t in load_glossary(REPO / "glossary.yaml") if t.term == term)


@dataclass
class Course:
    root: Path  # a project copy: glossary.yaml + lessons/
    lesson_three: Path  # the marked lesson 3 inside root/lessons
    real_lesson: bool


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Course:
    """A temporary copy of the course with the glossary applied, plus a small example."""
    require_chromium()
    root = tmp_path_factory.mktemp("course")
    shutil.copy(REPO / "glossary.yaml", root / "glossary.yaml")
    lessons = root / "lessons"
    lessons.mkdir()
    real = sorted((REPO / "lessons").glob("03-*.ipynb"))
    if real:
        for path in sorted((REPO / "lessons").glob("[0-9][0-9]-*.ipynb")):
            shutil.copy(path, lessons / path.name)
    else:
        write_notebook(lessons / "03-retomando-de-um-checkpoint.ipynb", lesson_three_notebook())
    apply_glossary(root)
    # Marked the same way, but outside the NN-*.ipynb pattern: a fixed code-in-abbr example.
    example = lesson_three_notebook()
    example.cells.append(nbformat.v4.new_markdown_cell(
        "| campo | o que guarda |\n|---|---|\n| `task` | o pedido original |\n\n"
        "Separe a **memória** do resto.", id="md-tabela"))
    example, _ = mark_lesson(example, Marker(load_glossary(root / "glossary.yaml")))
    write_notebook(lessons / EXAMPLE_NAME, example)
    lesson_three = sorted(lessons.glob("03-*.ipynb"))[0]
    return Course(root=root, lesson_three=lesson_three, real_lesson=bool(real))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def write_lab_settings(settings: Path) -> None:
    """Render every cell (no virtual scrolling) and keep news pop-ups away."""
    tracker = settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True)
    tracker.write_text(json.dumps({"windowingMode": "none"}))
    notification = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    notification.parent.mkdir(parents=True)
    notification.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))


@dataclass
class Server:
    base: str
    token: str
    log: Path | None = None  # the server's own output, shown when a test fails

    def lab_url(self, notebook: str) -> str:
        # "reset" starts from a blank workspace, so tabs opened by earlier tests are not restored.
        return f"{self.base}/lab/tree/{notebook}?token={self.token}&reset"

    def api(self, path: str, method: str = "GET", timeout_s: float = 10):
        request = urllib.request.Request(f"{self.base}{path}?token={self.token}", method=method)
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            body = response.read()
        return json.loads(body) if body else None


def stop_process_group(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


@contextmanager
def lab_serving(lessons: Path, tmp_path_factory):
    """JupyterLab on a free port, serving ``lessons``, with a home of its own (nothing written under HOME)."""
    home = tmp_path_factory.mktemp("home")
    settings = home / "lab-settings"
    write_lab_settings(settings)
    env = dict(os.environ)
    env.update({
        "HOME": str(home),
        "JUPYTER_CONFIG_DIR": str(home / ".jupyter"),
        "JUPYTER_DATA_DIR": str(home / ".local" / "share" / "jupyter"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "IPYTHONDIR": str(home / ".ipython"),
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
    })
    port, token = free_port(), secrets.token_hex(16)
    command = [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
        "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={lessons}", "--allow-root",
        # These pages only render a lesson: a kernel per opened notebook (JupyterLab's and Notebook
        # 7's default) would be 1.5 s of imports each, for nothing the test looks at.
        "--LabServerApp.notebook_starts_kernel=False",
    ]
    with running_lab(command, env, cwd=home, port=port, token=token) as server:
        yield server


@pytest.fixture(scope="module")
def jupyterlab(course, tmp_path_factory):
    with lab_serving(course.root / "lessons", tmp_path_factory) as server:
        yield server


@contextmanager
def running_lab(command: list[str], env: dict, *, cwd: Path, port: int, token: str):
    """Start JupyterLab, wait until it answers, and stop it (kernels and terminals first)."""
    log_path = cwd / "jupyterlab.log"
    server = Server(base=f"http://127.0.0.1:{port}", token=token, log=log_path)
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   cwd=cwd, start_new_session=True)
        try:
            deadline = time.monotonic() + STARTUP_SECONDS
            while True:
                if process.poll() is not None:
                    pytest.fail(f"JupyterLab exited with {process.returncode}:\n{log_path.read_text()[-3000:]}")
                try:
                    server.api("/api/status")
                    break
                except (urllib.error.URLError, ConnectionError, TimeoutError):
                    if time.monotonic() > deadline:
                        pytest.fail(f"JupyterLab did not answer in {STARTUP_SECONDS}s:\n{log_path.read_text()[-3000:]}")
                    time.sleep(0.5)
            yield server
        finally:
            try:  # shut the kernels and terminals down through the server before stopping it
                for session in server.api("/api/sessions") or []:
                    server.api(f"/api/sessions/{session['id']}", method="DELETE")
                for terminal in server.api("/api/terminals") or []:
                    server.api(f"/api/terminals/{terminal['name']}", method="DELETE")
            except Exception:
                pass
            stop_process_group(process)


def hover_and_capture(page, text: re.Pattern, definition: str, artifact: str):
    """Find the mark, check its title, hover it, check :hover, save a screenshot."""
    mark = page.locator(".jp-RenderedMarkdown abbr[title]").filter(has_text=text, visible=True).first
    mark.wait_for(state="visible")
    assert mark.get_attribute("title") == definition
    mark.scroll_into_view_if_needed()
    mark.hover()
    assert mark.evaluate("element => element.matches(':hover')")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{artifact}.png"))
    return mark


def test_jupyterlab_shows_the_definition_of_chamada_orfa_in_lesson_3(jupyterlab, course, page):
    page.goto(jupyterlab.lab_url(course.lesson_three.name))
    hover_and_capture(page, ORPHAN_CALL, definition_of("chamada órfã"), "jupyterlab-licao-3-chamada-orfa")


def test_jupyterlab_renders_marks_around_code_in_tables_and_in_bold(jupyterlab, page):
    page.goto(jupyterlab.lab_url(EXAMPLE_NAME))
    mark = hover_and_capture(page, re.compile(r"^reconcile$"), definition_of("reconcile"),
                             "jupyterlab-codigo-dentro-da-marca")
    assert mark.locator("code").inner_text() == "reconcile"
    in_table = page.locator(".jp-RenderedMarkdown td > abbr[title] > code").filter(has_text="task")
    assert in_table.count() == 1
    assert in_table.locator("xpath=..").get_attribute("title") == definition_of("task")
    in_bold = page.locator(".jp-RenderedMarkdown strong > abbr[title]").filter(has_text="memória")
    assert in_bold.get_attribute("title") == definition_of("memória")


def test_notebook7_shows_the_definition_of_chamada_orfa_in_lesson_3(jupyterlab, course, page):
    page.goto(f"{jupyterlab.base}/notebooks/{course.lesson_three.name}?token={jupyterlab.token}")
    hover_and_capture(page, ORPHAN_CALL, definition_of("chamada órfã"), "notebook7-licao-3-chamada-orfa")


@pytest.fixture(scope="module")
def site(course, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    build_site(course.root, out)
    return out


def offline(page) -> None:
    """The exported page must work without network: refuse everything but local files."""
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:") else route.abort())


def site_term(page, text: re.Pattern):
    """The site's term button whose text matches, and the definition it is described by."""
    button = page.locator(".termo-botao").filter(has_text=text).first
    definition = page.locator(f"#{button.get_attribute('aria-describedby')}")
    return button, definition


def test_exported_html_shows_the_definition_of_chamada_orfa_in_lesson_3_on_hover(site, course, page):
    offline(page)
    page.goto((site / course.lesson_three.with_suffix(".html").name).as_uri())
    button, definition = site_term(page, ORPHAN_CALL)
    assert definition.is_hidden()
    button.scroll_into_view_if_needed()
    button.hover()
    assert definition.is_visible() and definition.inner_text() == definition_of("chamada órfã")
    definition.hover()  # WCAG 1.4.13 "hoverable": the pointer moves onto it and it stays
    assert definition.is_visible()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "html-licao-3-chamada-orfa.png"))
    assert page.locator("a[href='glossario.html']").count() >= 1


def test_on_the_site_tab_reaches_a_term_its_definition_shows_and_esc_hides_it(site, course, page):
    offline(page)
    page.goto((site / course.lesson_three.with_suffix(".html").name).as_uri())
    for _ in range(400):
        page.keyboard.press("Tab")
        focused = page.evaluate("() => document.activeElement.classList.contains('termo-botao')"
                                " ? document.activeElement.innerText : null")
        if focused and ORPHAN_CALL.search(focused):
            break
    else:
        raise AssertionError("Tab never reached the term 'chamada órfã'")
    button, definition = site_term(page, ORPHAN_CALL)
    assert button.evaluate("element => element === document.activeElement")
    assert definition.is_visible() and definition.inner_text() == definition_of("chamada órfã")
    # What a screen reader announces on focus: the button's accessible description.
    assert definition.get_attribute("role") == "tooltip" and button.get_attribute("title") is None
    page.keyboard.press("Escape")
    assert definition.is_hidden() and button.evaluate("element => element === document.activeElement")
    page.keyboard.press("Tab")  # focus leaves: the next term shows its own definition again on focus
    page.keyboard.press("Shift+Tab")
    assert definition.is_visible()


def test_on_the_site_a_tap_shows_the_definition(site, course, browser):
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True,
                                  locale="pt-BR")
    try:
        tab = context.new_page()
        offline(tab)
        tab.goto((site / course.lesson_three.with_suffix(".html").name).as_uri())
        button, definition = site_term(tab, ORPHAN_CALL)
        button.scroll_into_view_if_needed()
        button.tap()
        assert definition.is_visible() and definition.inner_text() == definition_of("chamada órfã")
        box = definition.bounding_box()
        width = tab.evaluate("() => document.documentElement.clientWidth")
        assert box["x"] >= 0 and box["x"] + box["width"] <= width + 1, (box, width)  # fits a phone's width
    finally:
        context.close()


def test_exported_glossary_page_lists_the_definition(site, page):
    offline(page)
    page.goto((site / "glossario.html").as_uri())
    body = page.locator("main").inner_text()
    entry = next(t for t in load_glossary(REPO / "glossary.yaml") if t.term == "chamada órfã")
    assert entry.definition in " ".join(body.split())


def test_missing_chromium_skips_outside_ci_and_fails_in_ci(monkeypatch, tmp_path):
    monkeypatch.setitem(globals(), "CHROMIUM", tmp_path / "no-chromium")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="chromium is not installed"):
        require_chromium()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must run the browser tests"):
        require_chromium()


# ------------------------------------------------------------------ the student's first hour

COURSE_FILES = ("lessons", "exercises", "solutions", "docs", "glossary.yaml", "README.md", "pyproject.toml")
BARE_PATH = "/usr/bin:/bin"  # what a service manager or an IDE hands a process: no venv on it


def copy_course(target: Path) -> Path:
    """The course as a student clones it (a copy: Lab's autosave must never write the repository)."""
    for name in COURSE_FILES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        else:
            shutil.copy(source, target / name)
    return target


@pytest.fixture(scope="module")
def student_lab(tmp_path_factory):
    """JupyterLab started by the very command `python3 bootstrap.py lab` runs, as root, from an
    environment whose PATH has no virtual environment on it."""
    require_chromium()
    import bootstrap

    root = copy_course(tmp_path_factory.mktemp("clone"))
    home = tmp_path_factory.mktemp("student-home")
    env = {
        "HOME": str(home), "PATH": BARE_PATH, "LANG": "C.UTF-8",
        "JUPYTER_CONFIG_DIR": str(home / ".jupyter"),
        "JUPYTER_DATA_DIR": str(home / ".local" / "share" / "jupyter"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "IPYTHONDIR": str(home / ".ipython"),
        "JUPYTERLAB_SETTINGS_DIR": str(home / "user-settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
    }
    # The test reads the terminal through xterm's accessibility tree (its screen is a canvas).
    reader = home / "user-settings" / "@jupyterlab" / "terminal-extension" / "plugin.jupyterlab-settings"
    reader.parent.mkdir(parents=True)
    reader.write_text(json.dumps({"screenReaderMode": True}))
    port, token = free_port(), secrets.token_hex(16)
    command = bootstrap.lab_command(
        ["--no-browser", "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0",
         f"--IdentityProvider.token={token}"],
        python=Path(sys.executable), root=root,
    )
    assert os.geteuid() != 0 or "--allow-root" in command
    with running_lab(command, env, cwd=home, port=port, token=token) as server:
        yield server, root


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"jornada-{name}.png"))


def current_tab(page) -> str:
    return page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel").inner_text()


class Budget:
    """One deadline shared by a test's long waits, kept inside the test's timeout so a hang fails
    at the wait that hung, with its own diagnosis, rather than in pytest-timeout."""

    def __init__(self, seconds: float):
        self.deadline = time.monotonic() + seconds

    def left_s(self, at_most_s: float = float("inf")) -> float:
        return max(0.001, min(at_most_s, self.deadline - time.monotonic()))

    def left_ms(self, at_most_s: float = float("inf")) -> int:
        return max(1, int(self.left_s(at_most_s) * 1000))

    def spent(self) -> bool:
        return time.monotonic() >= self.deadline

    def ms_for(self, what: str) -> int:
        """What is left, in ms, for the wait on ``what``; a failure that says so when nothing is."""
        if self.spent():
            pytest.fail(f"the time for the test's long waits was spent before {what}")
        return self.left_ms()


def kernel_state(server: Server, notebook: str, timeout_s: float = 10) -> str:
    """The execution state the server reports for the kernel of `notebook`'s session, or why none."""
    try:
        sessions = server.api("/api/sessions", timeout_s=timeout_s)
    except (OSError, ValueError) as error:  # a server busy starting the kernel may not answer yet
        return f"no answer ({error})"
    for session in sessions or []:
        if isinstance(session, dict) and session.get("path") == notebook:
            return str((session.get("kernel") or {}).get("execution_state", "no kernel"))
    return "no session"


def run_cell(page, server: Server, notebook: str, cell, budget: Budget) -> None:
    """Run a code cell with Shift+Enter once its notebook's kernel is idle, and wait for the answer.

    Lab's own indicator says idle before any kernel exists, so readiness is asked of the server:
    the session of `notebook` (its path from the server's root) with a kernel that is idle. Lab
    drops a run asked for before that, and a key pressed before the editor has focus goes
    nowhere: a prompt still blank is pressed again. Every wait, the server's answers included,
    takes its time from `budget`.
    """
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    prompt = cell.locator(".jp-InputPrompt")

    def give_up(what: str):
        try:
            shown = prompt.inner_text(timeout=2_000)
        except PlaywrightError as error:  # the diagnosis must not hide the failure
            shown = repr(error)
        log = server.log.read_text(errors="replace")[-3000:] if server.log else ""
        pytest.fail(f"{what}; prompt {shown!r}; kernel {kernel_state(server, notebook, timeout_s=2)}\n"
                    f"JupyterLab's log:\n{log}")

    while (state := kernel_state(server, notebook, timeout_s=budget.left_s(10))) != "idle":
        if budget.spent():
            give_up(f"the notebook's kernel never became idle (last seen: {state})")
        page.wait_for_timeout(min(250, budget.left_ms()))
    last_error = None
    while True:
        try:
            cell.locator(".jp-InputArea-editor").click(timeout=budget.left_ms(15))
            page.keyboard.press("Shift+Enter")
            prompt.filter(has_text=re.compile(r"\[(\*|\d+)\]")).wait_for(timeout=budget.left_ms(15))
            break
        except PlaywrightError as error:  # a timeout, or an editor Lab replaced while rendering
            last_error = error
            if budget.spent():
                give_up(f"Shift+Enter never started the cell (last error: {str(last_error).splitlines()[0]})")
            if not isinstance(error, PlaywrightTimeout):
                time.sleep(0.25)  # an error that comes at once (a closed page) must not spin
    try:
        prompt.filter(has_text=re.compile(r"\[\d+\]")).wait_for(timeout=budget.left_ms())
    except PlaywrightTimeout:
        give_up("the kernel never answered the cell")


def scroll_to(page, selector: str):
    """Scroll the open notebook down until `selector` is rendered (Lab renders cells lazily)."""
    page.locator(".jp-NotebookPanel:visible .jp-RenderedMarkdown").first.wait_for()
    target = page.locator(selector).first
    scroller = page.locator(".jp-NotebookPanel:visible .jp-WindowedPanel-outer")
    for _ in range(200):
        if target.count():
            target.scroll_into_view_if_needed()
            return target
        scroller.evaluate("element => element.scrollBy(0, element.clientHeight * 0.8)")
        page.wait_for_timeout(150)
    pytest.fail(f"{selector} never appeared in the notebook")


def terminal_text(page) -> str:
    return page.locator(".jp-Terminal .xterm-accessibility-tree").first.inner_text()


# The timeout counts the test's own steps: the server's start (the fixture) has its own bound.
@pytest.mark.timeout(420, func_only=True)
def test_student_journey_from_bootstrap_lab_to_a_graded_exercise(student_lab, page):
    server, root = student_lab
    # The long waits (a kernel, a grade in the terminal, a check in the notebook) share 300 s of
    # the test's 420; every other wait (a click, a tab) gets 30 s of what is left.
    budget = Budget(300)
    page.set_default_timeout(30_000)
    # 1. The address `bootstrap.py lab` opens: lesson 1, served from the project root, no news prompt.
    page.goto(f"{server.base}/?token={server.token}&reset")
    page.locator(".jp-NotebookPanel .jp-RenderedMarkdown").first.wait_for()
    assert "/lab/tree/lessons/01-memoria-e-estado-de-execucao.ipynb" in page.url
    assert current_tab(page) == "01-memoria-e-estado-de-execucao.ipynb"
    assert page.get_by_text(re.compile("Jupyter news", re.I)).count() == 0
    shot(page, "1-licao-1")

    # 2. Lesson 2, then its link to the exercise.
    page.goto(server.lab_url("lessons/02-checkpoint.ipynb"))
    # Lab rewrites a relative link to the file it resolves to, from the notebook's folder.
    link = scroll_to(page, ".jp-RenderedMarkdown a[href*='/files/exercises/exercise-2.ipynb']")
    link.click()
    page.wait_for_function("() => location.pathname.endsWith('/lab/tree/exercises/exercise-2.ipynb')")
    panel = page.locator(".jp-NotebookPanel:visible")
    panel.locator(".jp-RenderedMarkdown").first.wait_for()
    assert current_tab(page) == "exercise-2.ipynb"
    assert page.get_by_text("Could not find path").count() == 0
    shot(page, "2-exercicio-2")

    # 3. Run the exercise's first code cell (its imports) in a real kernel.
    first_code = panel.locator(".jp-CodeCell").first
    run_cell(page, server, "exercises/exercise-2.ipynb", first_code, budget)
    assert first_code.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").count() == 0

    # 4. A Lab terminal: `grade` is on its PATH although the server's PATH had no venv.
    page.locator(".lm-MenuBar-itemLabel", has_text="File").click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^New$")).hover()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Terminal$")).click()
    page.locator(".jp-Terminal .xterm").wait_for()
    page.locator(".jp-Terminal .xterm").click()
    page.keyboard.type("grade exercise-2; echo fim-$?\n")
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(
            "() => [...document.querySelectorAll('.jp-Terminal .xterm-accessibility-tree')]"
            ".some(e => /fim-\\d/.test(e.innerText))", timeout=budget.ms_for("the terminal's grade"))
    except PlaywrightTimeout:
        pytest.fail(f"the terminal's grade never ended; the terminal shows:\n{terminal_text(page)[-2000:]}")
    report = terminal_text(page)
    shot(page, "3-terminal-grade")
    assert "command not found" not in report
    assert "exercise-2 — " in report and "Ainda por escrever:" in report and "fim-1" in report
    assert "`save_checkpoint`: trava o nível" in report

    # 5. check("exercise-2") in the notebook: the table, left-aligned, same content.
    page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text="exercise-2.ipynb").click()
    first_code.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")  # a new cell below, in command mode
    page.keyboard.press("Enter")
    page.keyboard.type('check("exercise-2")')
    page.keyboard.press("Shift+Enter")
    table = panel.locator("table.grade-report")
    table.wait_for(timeout=budget.ms_for("the notebook's check"))
    table.scroll_into_view_if_needed()
    shot(page, "4-check-tabela")
    text = " ".join(panel.locator(".jp-OutputArea-output:has(table.grade-report)").inner_text().split())
    assert "Ainda por escrever:" in text and "`save_checkpoint`: trava o nível 1" in text
    assert "Primeira verificação que falhou (nível 1)" in text and "Pontuação: 0/" in text
    alignments = table.locator("td, th").evaluate_all("cells => cells.map(c => getComputedStyle(c).textAlign)")
    assert alignments and set(alignments) <= {"left", "start"}
    assert (root / ".grade-state.json").exists()  # the terminal's grade of the student's own file counted


def test_an_untouched_lesson_saved_by_lab_stays_byte_for_byte_as_shipped(student_lab, page):
    """Lab fills the kernel's metadata in (its Python patch version too) and autosaves; the save
    hook of `bootstrap.py lab` keeps the file's own, so git sees no change."""
    server, root = student_lab
    lesson = "lessons/04-efeitos-colaterais-e-idempotencia.ipynb"
    shipped = (REPO / lesson).read_bytes()
    assert (root / lesson).read_bytes() == shipped
    page.goto(server.lab_url(lesson))
    page.locator(".jp-NotebookPanel:visible .jp-RenderedMarkdown").first.wait_for()
    page.wait_for_selector(".jp-NotebookPanel:visible .jp-Notebook-ExecutionIndicator[data-status='idle']",
                           timeout=240_000)
    before = (root / lesson).stat().st_mtime_ns
    page.locator(".jp-NotebookPanel:visible .jp-RenderedMarkdown").first.click()
    page.keyboard.press("Control+s")
    page.wait_for_function("() => !document.querySelector('.lm-TabBar-tab.lm-mod-current.jp-mod-dirty')")
    # The request reaches the server a moment after the tab turns clean. Jupyter writes the
    # file in place, with the old bytes kept in `.~NAME` until the write is whole, so the
    # file is read only once that copy is gone.
    saved, backup = root / lesson, (root / lesson).with_name(".~" + Path(lesson).name)
    for _ in range(100):
        if saved.stat().st_mtime_ns != before and not backup.exists():
            break
        page.wait_for_timeout(100)
    assert saved.stat().st_mtime_ns != before, "Lab never saved the lesson"
    assert not backup.exists(), "Lab's save never finished"
    assert (root / lesson).read_bytes() == shipped
