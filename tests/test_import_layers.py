"""The project's import arrows, read from the source with ast (nothing is imported).

The layers of harness/ (docs/arquitetura.md):
- the core's pieces: every module at the top of harness/ except the drivers;
- the drivers: the core modules that choose a store and run it (runner, worker,
  timeline_commands, cli and the command line's own modules cli_args, cli_run and
  exit_codes, __main__);
- the stores (harness/stores/): they import the pieces' data shapes, never a driver;
  their contract, stores/base.py, imports nothing of the project;
- the display (harness/display/): imports anything of harness, and nothing imports it back.

The layers of grader/, by role:
- the grading core (grader/core/): imports the harness, never the checks (it finds an
  exercise's checks by name) nor anything above;
- the checks it runs (grader/checks/, with the defective harnesses of exercise 6): import
  the core and the harness, nothing above them;
- the reports (grader/reports/): import the core, never a command;
- the student's commands (grader/student/) and the instructor's (grader/instructor/):
  import the core and the reports, never each other;
- the `grade` command (grader/cli.py): dispatches to the commands; nothing in grader imports it;
- the old paths old notebooks import (grader/notebook_api.py, grader/fixture_loader.py): they
  point at the new homes, and nothing in the project imports them.
The grader never imports authoring.

Fails on any import circle in the project, on core -> display, on harness -> grader or
authoring, on stores -> display, on stores -> a driver, on a piece that imports a store
other than the contract, and on a grader arrow against the layers above. Imports inside
functions count: they are arrows too, only taken later.
"""
from __future__ import annotations

import ast
import functools
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROJECT_DIRS = ("harness", "grader", "authoring", "bench", "tests")
PROJECT_FILES = ("bootstrap.py",)
DRIVERS = {"harness.runner", "harness.worker", "harness.timeline_commands", "harness.cli", "harness.cli_args",
           "harness.cli_run", "harness.exit_codes", "harness.__main__"}
STORE_CONTRACT = "harness.stores.base"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_sources(root: Path) -> dict[str, Path]:
    """Every Python module of the project under ``root``, by dotted name."""
    found = {}
    for folder in PROJECT_DIRS:
        for path in sorted((root / folder).rglob("*.py")) if (root / folder).is_dir() else []:
            found[module_name(path, root)] = path
    for name in PROJECT_FILES:
        if (root / name).is_file():
            found[module_name(root / name, root)] = root / name
    return found


def import_targets(tree: ast.AST, module: str, is_package: bool, modules: set[str]) -> set[str]:
    """The project modules an ast imports, anywhere in the file; relative imports resolved.

    ``from pkg import mod`` points at pkg.mod when that is a module, else at pkg itself.
    """
    targets = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                prefix = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
            else:
                prefix = node.module
            for alias in node.names:
                if f"{prefix}.{alias.name}" in modules:
                    targets.add(f"{prefix}.{alias.name}")
                elif prefix in modules:
                    targets.add(prefix)
    targets.discard(module)
    return targets


@functools.lru_cache(maxsize=None)
def parsed(source: str) -> ast.AST:
    """One parse per distinct source text: the planted copies of the project repeat every file but one."""
    return ast.parse(source)


def import_graph(root: Path) -> dict[str, set[str]]:
    """module -> the project modules it imports."""
    sources = project_sources(root)
    return {
        module: import_targets(parsed(path.read_text(encoding="utf-8")), module, path.name == "__init__.py",
                               set(sources))
        for module, path in sources.items()
    }


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of two or more modules (Tarjan), each sorted."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(start):
        # iterative, so a deep chain of imports cannot hit the recursion limit
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def layer(module: str) -> str | None:
    if in_package(module, "harness.display"):
        return "display"
    if in_package(module, "harness.stores"):
        return "contract" if module == STORE_CONTRACT else "stores"
    if module in DRIVERS:
        return "driver"
    if in_package(module, "harness"):
        return "piece"
    return None


GRADER_OLD_PATHS = {"grader.notebook_api", "grader.fixture_loader"}
GRADER_COMMAND = "grader.cli"


def grader_layer(module: str) -> str | None:
    if module in GRADER_OLD_PATHS:
        return "old path"
    if module == GRADER_COMMAND:
        return "command"
    for package, name in (("grader.core", "core"), ("grader.checks", "checks"), ("grader.buggy_harnesses", "checks"),
                          ("grader.reports", "reports"), ("grader.student", "student"),
                          ("grader.instructor", "instructor")):
        if in_package(module, package):
            return name
    return "top" if module == "grader" else None


# grader layer -> the grader layers it must never import
GRADER_FORBIDDEN = {
    # The core finds an exercise's checks by name (importlib), never by an import statement.
    "core": {"checks", "reports", "student", "instructor", "command", "old path"},
    "checks": {"reports", "student", "instructor", "command", "old path"},
    "reports": {"student", "instructor", "command", "old path"},
    "student": {"instructor", "command", "old path"},
    "instructor": {"student", "command", "old path"},
    "top": {"old path"},
}


def grader_problems(graph: dict[str, set[str]]) -> list[str]:
    problems = []
    for module, targets in sorted(graph.items()):
        source = grader_layer(module)
        for target in sorted(targets):
            destination = grader_layer(target)
            if source is not None and in_package(target, "authoring"):
                problems.append(f"{module} -> {target}: the grader never imports authoring")
            if destination == "old path" and source != "old path":
                problems.append(f"{module} -> {target}: only old notebooks import an old path")
            elif destination in GRADER_FORBIDDEN.get(source, set()):
                problems.append(f"{module} -> {target}: the grader's {source} never imports its {destination}")
    return problems


def layer_problems(graph: dict[str, set[str]]) -> list[str]:
    problems = grader_problems(graph)
    for module, targets in sorted(graph.items()):
        source = layer(module)
        for target in sorted(targets):
            destination = layer(target)
            if source in ("piece", "driver") and destination == "display":
                problems.append(f"{module} -> {target}: the core never imports the display")
            if source is not None and (in_package(target, "grader") or in_package(target, "authoring")):
                problems.append(f"{module} -> {target}: harness never imports grader or authoring")
            if source in ("stores", "contract") and destination == "display":
                problems.append(f"{module} -> {target}: the stores never import the display")
            if source in ("stores", "contract") and destination == "driver":
                problems.append(f"{module} -> {target}: the stores import the core's pieces, never a driver")
            if source == "contract" and destination is not None:
                problems.append(f"{module} -> {target}: the store contract imports nothing of the project")
            if source == "piece" and destination == "stores":
                problems.append(f"{module} -> {target}: a piece of the core talks to stores only through "
                                f"{STORE_CONTRACT}")
    return problems


# ------------------------------------------------------------------------------ the project


@pytest.mark.slow
def test_the_project_has_no_import_cycle():
    assert import_cycles(import_graph(ROOT)) == []


@pytest.mark.slow  # the whole project's import graph: over a second
def test_harness_layers_point_one_way():
    assert layer_problems(import_graph(ROOT)) == []


@pytest.mark.slow
def test_grader_layers_point_one_way():
    assert grader_problems(import_graph(ROOT)) == []


@pytest.mark.slow  # reads every module of the project
def test_the_graph_sees_the_arrows_it_judges():
    # A reader that found no imports would pass every rule: check it sees known arrows.
    graph = import_graph(ROOT)
    assert "harness.timeline" in graph["harness.display.widgets"]
    assert "harness.lifecycle" in graph["harness.stores.files"]
    assert "harness.worker" in graph["harness.cli"]  # imported inside a function
    assert "harness.cli" in graph["harness.display.crash_lab"]  # `from harness import cli`
    assert {"harness.piece", "harness.driver", "harness.stores", "harness.contract", "harness.display"} <= \
        {f"harness.{layer(module)}" for module in graph if layer(module)}
    assert "grader.core.engine" in graph["grader.reports.report_view"] | graph["grader.reports.render"] | \
        graph["grader.student.watch"]  # watch imports the engine inside run()
    assert "grader.student.notebook_api" in graph["grader.notebook_api"]
    assert {"core", "checks", "reports", "student", "instructor", "command", "old path", "top"} == \
        {grader_layer(module) for module in graph if grader_layer(module)}


# ------------------------------------------------------------- planted bad imports in a copy


def copy_of_project(tmp_path: Path) -> Path:
    """The project's Python modules copied under tmp_path: plants go there, never into the real code."""
    for path in project_sources(ROOT).values():
        target = tmp_path / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return tmp_path


def plant(root: Path, relative: str, source: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as file:
        file.write("\n" + source)


def test_a_clean_copy_passes(tmp_path):
    root = copy_of_project(tmp_path)
    graph = import_graph(root)
    assert import_cycles(graph) == [] and layer_problems(graph) == []


def test_a_planted_circle_is_found(tmp_path):
    root = copy_of_project(tmp_path)
    # runner imports tools; tools importing runner back (even lazily) closes a circle
    plant(root, "harness/tools.py", "def _later():\n    import harness.runner\n")
    cycles = import_cycles(import_graph(root))
    assert any({"harness.tools", "harness.runner"} <= set(group) for group in cycles), cycles


@pytest.mark.slow
def test_a_planted_circle_between_two_new_modules_is_found(tmp_path):
    root = copy_of_project(tmp_path)
    plant(root, "grader/planted_a.py", "from grader import planted_b\n")
    plant(root, "grader/planted_b.py", "from grader.planted_a import x\n")
    assert ["grader.planted_a", "grader.planted_b"] in import_cycles(import_graph(root))


@pytest.mark.slow
@pytest.mark.parametrize("plants, arrows", [
    # the harness's layers
    pytest.param({"harness/checkpoint.py": "def _table():\n    from harness.display.show import Rendered\n",
                  "harness/cli.py": "from harness.display import widgets\n"},
                 ["harness.checkpoint -> harness.display.show", "harness.cli -> harness.display.widgets"],
                 id="core-to-display"),
    pytest.param({"harness/loop.py": "import grader.core.engine\n",
                  "harness/display/show.py": "from authoring import site\n"},
                 ["harness.loop -> grader.core.engine", "harness.display.show -> authoring.site"],
                 id="harness-to-grader-or-authoring"),
    pytest.param({"harness/stores/planted.py": "from ..display.show import Rendered\nfrom harness import runner\n"},
                 ["harness.stores.planted -> harness.display.show", "harness.stores.planted -> harness.runner"],
                 id="stores-to-display-or-a-command"),
    pytest.param({"harness/stores/base.py": "from harness.checkpoint import CHECKPOINT_VERSION\n"},
                 ["harness.stores.base -> harness.checkpoint"],
                 id="contract-imports-the-project"),
    # the grader's layers
    pytest.param({"grader/core/engine.py": "def _later():\n    from grader.reports import render\n",
                  "grader/checks/framework.py": "from grader.student.progress import record\n"},
                 ["grader.core.engine -> grader.reports.render", "grader.checks.framework -> grader.student.progress"],
                 id="core-to-reports-or-a-student-command"),
    pytest.param({"grader/core/warm.py": "from grader.instructor import batch\n",
                  "grader/buggy_harnesses/driver.py": "import grader.cli\n"},
                 ["grader.core.warm -> grader.instructor.batch", "grader.buggy_harnesses.driver -> grader.cli"],
                 id="core-to-an-instructor-command-or-the-grade-command"),
    pytest.param({"grader/reports/feedback.py": "from grader.instructor.batch import notebook_in_folder\n",
                  "grader/reports/render.py": "from grader.student import progress\n"},
                 ["grader.reports.feedback -> grader.instructor.batch", "grader.reports.render -> grader.student.progress"],
                 id="reports-to-a-command"),
    pytest.param({"grader/student/watch.py": "def _later():\n    from grader.cli import main\n",
                  "grader/student/hints.py": "from grader.instructor import fixture_command\n",
                  "grader/instructor/gradescope.py": "from grader.student.notebook_api import check\n"},
                 ["grader.student.watch -> grader.cli", "grader.student.hints -> grader.instructor.fixture_command",
                  "grader.instructor.gradescope -> grader.student.notebook_api"],
                 id="between-commands-or-up-to-the-grade-command"),
    pytest.param({"grader/cli.py": "from grader.notebook_api import check\n",
                  "grader/core/engine.py": "from authoring import site\n"},
                 ["grader.cli -> grader.notebook_api", "grader.core.engine -> authoring.site"],
                 id="an-old-path-or-authoring"),
    pytest.param({"grader/core/engine.py": "from grader.checks.runner import MEMORY\n",
                  "grader/core/points.py": "def _later():\n    import grader.checks.framework\n"},
                 ["grader.core.engine -> grader.checks.runner", "grader.core.points -> grader.checks.framework"],
                 id="core-to-the-checks"),
])
def test_a_planted_arrow_against_the_layers_is_refused(tmp_path, plants, arrows):
    root = copy_of_project(tmp_path)
    for relative, source in plants.items():
        plant(root, relative, source)
    problems = layer_problems(import_graph(root))
    for arrow in arrows:
        assert any(p.startswith(arrow + ":") for p in problems), (arrow, problems)


@pytest.mark.slow
def test_the_grader_arrows_down_the_layers_are_allowed(tmp_path):
    root = copy_of_project(tmp_path)
    plant(root, "grader/student/hints.py", "from grader.reports import render\nfrom grader.core import engine\n")
    plant(root, "grader/instructor/batch.py", "from grader.reports.report_view import report_view\n")
    plant(root, "grader/cli.py", "from grader.instructor import batch\nfrom grader.student import hints\n")
    plant(root, "grader/checks/framework.py", "from grader.core.plural import quantity\n")
    assert grader_problems(import_graph(root)) == []


@pytest.mark.slow
def test_a_piece_reaching_a_concrete_store_is_refused_but_the_contract_is_allowed(tmp_path):
    root = copy_of_project(tmp_path)
    plant(root, "harness/lifecycle.py", "def _store(run):\n    from harness.stores.files import FileStore\n")
    plant(root, "harness/timeline.py", "from harness.stores.base import RunStore\n")
    problems = layer_problems(import_graph(root))
    assert [p for p in problems if p.startswith("harness.lifecycle")] == \
        [f"harness.lifecycle -> harness.stores.files: a piece of the core talks to stores only through "
         f"{STORE_CONTRACT}"]
    assert not [p for p in problems if p.startswith("harness.timeline")]
