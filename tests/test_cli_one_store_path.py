"""`timeline`, `rewind` and `fork` in harness/cli.py take one path for every store.

The command handlers (and the cli functions only they use) talk to the run through the
``RunStore`` contract: ``rewind_in_store``, ``fork_in_store`` and the store's timeline. A
branch on the store kind there (``args.store == "files"``, ``isinstance(store, FileStore)``,
``store.kind``) or a call into the files-only machinery would be a second path, and the
two paths drift apart. Read with ast from the source, nothing is run.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from harness import cli
from harness.stores.base import RunStore

CLI_SOURCE = Path(cli.__file__)
LESSON_COMMANDS = {"timeline": [], "rewind": ["--to", "1"], "fork": ["--to", "1", "--into", "x"]}
OTHER_COMMANDS = {"run": [], "status": [], "approve": [], "reject": ["--reason", "x"], "pause": [], "cancel": [],
                  "submit": ["--scenario", "team-email"], "worker": []}
# What a store-kind branch, or a way around the contract, looks like from inside cli.py.
STORE_KIND_WORDS = {"files", "arquivos", "sqlite"}
FORBIDDEN_NAMES = {"FileStore", "SqliteStore", "PostgresStore", "SqlStore", "is_postgres", "rewind_run", "fork_run",
                   "fork_preview", "finish_rewind", "point_in_store", "lesson_files_workdir", "require_run_dir",
                   "list_points", "load_timeline", "timeline_frames", "latest_point_or_error", "rewind_to",
                   "fork_from", "CHECKPOINT_FILE", "CHECKPOINTS_DIR", "REWIND_JOURNAL"}
CONTRACT = {name for name in dir(RunStore) if not name.startswith("_")}  # store.fork_preview(...) is the way


def handler(command, extra):
    return cli.build_parser().parse_args([command, *extra]).func.__name__


def module_functions(tree):
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


def called_here(function, functions):
    """The cli functions ``function`` calls or passes along, by name."""
    return {node.id for node in ast.walk(function) if isinstance(node, ast.Name) and node.id in functions}


def reachable(starts, functions):
    """The cli functions reachable from ``starts``; the parser is not followed (it names every handler)."""
    seen, todo = set(), list(starts)
    while todo:
        name = todo.pop()
        if name not in seen and name != "build_parser":
            seen.add(name)
            todo += called_here(functions[name], functions) - seen
    return seen


def store_path_problems(function):
    """Every place in ``function`` that branches on the store kind or goes around the contract."""
    problems = []
    for node in ast.walk(function):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in STORE_KIND_WORDS:
            problems.append(f"line {node.lineno}: the store kind {node.value!r}")
        elif isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
            problems.append(f"line {node.lineno}: {node.id}")
        elif isinstance(node, ast.Attribute) and (node.attr in FORBIDDEN_NAMES - CONTRACT or node.attr == "kind"):
            problems.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance":
            problems.append(f"line {node.lineno}: isinstance")
    return problems


def lesson_command_functions(source):
    """The handlers of timeline, rewind and fork, and the cli functions no other command uses."""
    functions = module_functions(ast.parse(source))
    ours = reachable({handler(name, extra) for name, extra in LESSON_COMMANDS.items()}, functions)
    shared = reachable({handler(name, extra) for name, extra in OTHER_COMMANDS.items()} | {"main"}, functions)
    return {name: functions[name] for name in ours - shared}, functions


def test_timeline_rewind_and_fork_have_no_store_kind_branch():
    checked, _functions = lesson_command_functions(CLI_SOURCE.read_text(encoding="utf-8"))
    assert {handler(name, extra) for name, extra in LESSON_COMMANDS.items()} <= set(checked)
    problems = {name: store_path_problems(function) for name, function in checked.items()}
    assert {name: found for name, found in problems.items() if found} == {}


@pytest.mark.parametrize("command, through", [("timeline", "timeline_view"), ("rewind", "rewind_in_store"),
                                               ("fork", "fork_in_store")])
def test_each_command_goes_through_the_store_contract(command, through):
    checked, _functions = lesson_command_functions(CLI_SOURCE.read_text(encoding="utf-8"))
    names = {node.attr if isinstance(node, ast.Attribute) else node.id
             for node in ast.walk(checked[handler(command, LESSON_COMMANDS[command])])
             if isinstance(node, (ast.Name, ast.Attribute))}
    assert through in names


@pytest.mark.parametrize("planted", [
    'if args.store == "files":\n        return 2\n',
    "if isinstance(store, object):\n        return 2\n",
    'if store.kind != "arquivos":\n        return 2\n',
    "rewind_run(args.workdir, 1)\n",
])
def test_the_check_sees_a_planted_branch(planted):
    """The check itself can fail: each planted line in the rewind handler is found."""
    source = CLI_SOURCE.read_text(encoding="utf-8")
    marker = "def rewind(args: argparse.Namespace) -> int:\n"
    assert marker in source
    source = source.replace(marker, marker + "    " + planted, 1)
    checked, _functions = lesson_command_functions(source)
    assert store_path_problems(checked["rewind"])
