"""pyproject.toml declares what the code imports, and nothing it does not use.

Read with ast: every third-party module imported anywhere in a folder (inside functions too)
must come from a distribution declared for that folder: the product (harness, grader,
authoring) from `dependencies`, the tests from those plus the `test` extra, the benches plus
the `bench` extra. A declared distribution nobody imports must say why it is there.
"""
from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = None

import pytest

ROOT = Path(__file__).resolve().parent.parent
OWN = {"harness", "grader", "authoring", "tests", "bench", "bootstrap"}
# Declared but not imported: each is used another way.
USED_WITHOUT_IMPORT = {
    "jupyter": "named by the course; brings Notebook 7 (tests/test_browser.py opens a lesson in it)",
    "jupyterlab": "`bootstrap.py lab` runs `python -m jupyterlab`",
    "pytest-timeout": "a pytest plugin (the --timeout option)",
    "pytest-xdist": "a pytest plugin (the -n option: `bootstrap.py test` runs the whole suite with `-n 2`)",
    "ruff": "tests/test_ruff.py runs `ruff check`",
    "langgraph-checkpoint-sqlite": "bench/stores.py imports it as langgraph.checkpoint.sqlite",
}
# Import names whose distribution is named otherwise and may be absent here (the bench extra).
DISTRIBUTION_OF = {"yaml": "pyyaml", "IPython": "ipython", "ipykernel_launcher": "ipykernel"}


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> dict[str, set[str]]:
    if tomllib is None:
        pytest.skip("tomllib needs Python 3.11")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]

    def names(requirements):
        return {normalized(re.match(r"[A-Za-z0-9._-]+", requirement).group(0)) for requirement in requirements}

    extras = project["optional-dependencies"]
    return {"dependencies": names(project["dependencies"]), "test": names(extras["test"]),
            "bench": names(extras["bench"])}


def imported_modules(folders: tuple[str, ...]) -> dict[str, str]:
    """top-level module -> the first file that imports it, third-party modules only."""
    found = {}
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    top = module.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in OWN:
                        found.setdefault(top, str(path.relative_to(ROOT)))
    return found


@functools.lru_cache(maxsize=None)
def installed_distributions() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()  # reads every installed package's file list: slow


def distributions(module: str) -> set[str]:
    """Every installed distribution that provides `module` (a namespace package such as
    `langgraph` is shared by several); the expected name when none is installed."""
    installed = installed_distributions().get(module)
    return {normalized(name) for name in installed} if installed else {normalized(DISTRIBUTION_OF.get(module, module))}


@pytest.mark.slow
@pytest.mark.parametrize("folders, allowed", [
    pytest.param(("harness", "grader", "authoring"), ("dependencies",), id="product"),
    pytest.param(("tests",), ("dependencies", "test"), id="tests"),
    pytest.param(("bench",), ("dependencies", "test", "bench"), id="bench"),
])
def test_every_import_is_declared(folders, allowed):
    groups = declared()
    allowed_names = set().union(*(groups[group] for group in allowed))
    missing = {module: where for module, where in imported_modules(folders).items()
               if not distributions(module) & allowed_names}
    assert missing == {}, f"imported but not declared in {' or '.join(allowed)}: {missing}"


@pytest.mark.slow  # reads every module of the project
def test_every_declared_distribution_is_used():
    groups = declared()
    imported = set().union(*(distributions(module) for module in imported_modules(("harness", "grader", "authoring", "tests", "bench"))))
    unused = set().union(*groups.values()) - imported - {normalized(name) for name in USED_WITHOUT_IMPORT}
    assert unused == set(), f"declared but never imported: {sorted(unused)} (remove them, or say why in USED_WITHOUT_IMPORT)"
