"""Tool calls and a small world shared by the effects-ledger, approval and tool-runner tests."""
from __future__ import annotations

from pathlib import Path

from harness.tools import Workspace, use_workspace

EMAIL = {"id": "toolu_mail1", "name": "send_email",
         "input": {"to": "team@example.com", "subject": "Conclusões", "body": "oi"}}
READ = {"id": "toolu_read1", "name": "read_file", "input": {"path": "notes.md"}}
TICKET = {"id": "toolu_tick1", "name": "create_ticket", "input": {"title": "Migrar job"}}


def notes_world(tmp_path: Path, notes: str) -> Workspace:
    """A fresh world whose notes.md (the file READ reads) holds ``notes``, made the current one."""
    workspace = use_workspace(Workspace(tmp_path / "world"))
    workspace.add_files({"notes.md": notes})
    return workspace
