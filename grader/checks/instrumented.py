"""Instrumented tools: a fresh harness Workspace per fixture and a spy on execute_tool.

The spy replaces ``execute_tool`` wherever student code can reach it: every global
of the student's namespace bound to the real function (whatever its name), and the
``execute_tool`` attribute of every loaded ``harness`` module. Each call is recorded
(name, input, idempotency key, result) and then delegated to the real tool, so the
effects land in the workspace's outbox and ticket store, where they can be counted.
"""
from __future__ import annotations

import copy
import json
import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator


@dataclass
class ToolCall:
    name: str
    input: Any
    idempotency_key: str | None
    result: dict


@dataclass
class ToolSpy:
    workspace: Any  # harness.tools.Workspace
    calls: list[ToolCall] = field(default_factory=list)

    def emails(self) -> list[dict]:
        return self.workspace.emails()

    def tickets(self) -> list[dict]:
        return self.workspace.tickets()


def build_workspace(root: Path, spec: dict) -> Any:
    """A harness Workspace holding the fixture's files, outbox and tickets."""
    from harness.tools import Workspace

    workspace = Workspace(root)
    add_files(workspace, dict(spec.get("files") or {}))
    outbox = spec.get("outbox") or []
    if outbox:
        lines = "".join(json.dumps(email, ensure_ascii=False) + "\n" for email in outbox)
        workspace.outbox_path.write_text(lines, encoding="utf-8")
    tickets = spec.get("tickets") or []
    if tickets:
        workspace.tickets_path.write_text(json.dumps(tickets, ensure_ascii=False), encoding="utf-8")
    return workspace


def add_files(workspace: Any, files: dict[str, str]) -> None:
    """``workspace.add_files(files)`` without its two fsyncs a file: a check's world is built for that
    check and removed with the grading folder, so nothing in it has to survive a power cut, and
    those fsyncs were half of a grading's time. Each file is made new (O_EXCL, which never follows a
    link) in folders opened without following links; a name already taken (a link or a file put
    there) or any other trouble goes through the harness's own atomic write, as before."""
    from harness import run_paths

    sandbox = workspace.sandbox.relative_to(workspace.boundary).parts
    for relative, text in files.items():
        try:
            parts = run_paths.relative_parts(relative, "nome de arquivo")
            data = text.encode("utf-8")
            with run_paths.open_folder(workspace.boundary, (*sandbox, *parts[:-1]), create=True) as folder:
                made = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                               0o644, dir_fd=folder)
        except (OSError, ValueError, TypeError, AttributeError, IndexError):
            workspace.add_files({relative: text})  # raises what the harness raises for this file
            continue
        with os.fdopen(made, "wb") as file:
            file.write(data)


def _real_execute_tool() -> Any:
    from harness import tools

    return getattr(tools.execute_tool, "__wrapped_tool__", tools.execute_tool)


def _harness_modules() -> list[Any]:
    """The loaded modules of the harness package. A kernel holds thousands of modules (the SDK
    alone brings most), and a check enters ``instrumented_tools`` many times per grading: one
    pass of ``startswith`` over the names costs a tenth of splitting each one."""
    return [module for name in list(sys.modules)
            if (name == "harness" or name.startswith("harness."))
            and (module := sys.modules.get(name)) is not None]


@contextmanager
def instrumented_tools(root: Path, spec: dict, namespace: dict) -> Iterator[ToolSpy]:
    from harness import tools

    real = _real_execute_tool()
    workspace = build_workspace(root, spec)
    spy = ToolSpy(workspace)

    def execute_tool(name, input, idempotency_key=None):  # same signature as the real one
        recorded = copy.deepcopy(input)
        result = real(name, input, idempotency_key)
        spy.calls.append(ToolCall(name, recorded, idempotency_key, copy.deepcopy(result)))
        return result

    execute_tool.__wrapped_tool__ = real  # type: ignore[attr-defined]
    execute_tool.__doc__ = real.__doc__

    restore: list[tuple[Any, str, Any]] = []
    for key, value in list(namespace.items()):
        if value is real:
            restore.append((namespace, key, value))
            namespace[key] = execute_tool
    for module in _harness_modules():
        if getattr(module, "execute_tool", None) is real:
            restore.append((module, "execute_tool", real))
            module.execute_tool = execute_tool
    try:
        with tools.workspace_in_use(workspace):
            yield spy
    finally:
        for target, key, value in reversed(restore):
            if isinstance(target, dict):
                target[key] = value
            else:
                setattr(target, key, value)


def run_real_tool(root: Path, spec: dict, name: str, input: dict) -> dict:
    """The real tool's result on a fresh copy of the fixture's world (no spy)."""
    from harness import tools

    workspace = build_workspace(root, spec)
    with tools.workspace_in_use(workspace):
        return _real_execute_tool()(name, copy.deepcopy(input))
