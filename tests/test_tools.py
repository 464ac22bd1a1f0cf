"""Tools act on a Workspace; bad input becomes an is_error result, never an exception."""
from __future__ import annotations

import pytest

from harness.tools import HIGH_IMPACT_TOOLS, READ_ONLY_TOOLS, TOOL_SCHEMAS, Workspace, execute_tool, use_workspace


@pytest.fixture
def workspace(tmp_path):
    ws = Workspace(tmp_path / "mundo")
    ws.add_files({"notes/a.md": "linha um\nprazo: sexta\n", "notes/b.md": "nada aqui\n"})
    (tmp_path / "segredo.txt").write_text("não leia")
    use_workspace(ws)
    return ws


def test_read_only_tools(workspace):
    assert execute_tool("read_file", {"path": "notes/a.md"}) == {"content": "linha um\nprazo: sexta\n", "is_error": False}
    assert execute_tool("list_dir", {"path": "notes"})["content"] == "a.md\nb.md"
    assert execute_tool("grep", {"pattern": "prazo"})["content"] == "notes/a.md:2: prazo: sexta"


@pytest.mark.parametrize("path", ["../segredo.txt", "/etc/passwd", "notes/../../segredo.txt"])
def test_paths_outside_the_sandbox_are_refused(workspace, path):
    result = execute_tool("read_file", {"path": path})
    assert result["is_error"] and "fora da pasta de trabalho" in result["content"]


@pytest.mark.parametrize(
    "name, input_, fragment",
    [
        ("delete_everything", {}, "ferramenta desconhecida"),
        ("read_file", {}, "'path' é obrigatório"),
        ("read_file", {"path": "nao-existe.md"}, "arquivo não encontrado"),
        ("grep", {"pattern": "("}, "expressão regular inválida"),
        ("grep", {"pattern": "prazo", "path": "logs"}, "pasta não encontrada: logs"),
        ("list_dir", {"path": "logs"}, "pasta não encontrada: logs"),
        ("send_email", {"to": "x@example.com"}, "'subject' é obrigatório"),
        ("read_file", "não é dict", "precisa ser um objeto JSON"),
    ],
)
def test_bad_input_is_a_tool_error(workspace, name, input_, fragment):
    result = execute_tool(name, input_)
    assert result["is_error"] is True
    assert fragment in result["content"]


def test_a_search_that_finds_nothing_is_not_an_error(workspace):
    assert execute_tool("grep", {"pattern": "timeout", "path": "notes"}) == {"content": "(nenhuma ocorrência)",
                                                                           "is_error": False}
    assert execute_tool("grep", {"pattern": "prazo", "path": "notes/a.md"})["content"] == "notes/a.md:2: prazo: sexta"


def test_send_email_appends_to_the_outbox(workspace):
    email = {"to": "team@example.com", "subject": "Oi", "body": "corpo"}
    execute_tool("send_email", email)
    execute_tool("send_email", email)
    assert [e["subject"] for e in workspace.emails()] == ["Oi", "Oi"]  # append: not idempotent


def test_idempotency_key_is_honoured_by_the_external_system(workspace):
    email = {"to": "team@example.com", "subject": "Oi"}
    first = execute_tool("send_email", email, idempotency_key="toolu_01")
    second = execute_tool("send_email", email, idempotency_key="toolu_01")
    assert not first["is_error"] and not second["is_error"]
    assert len(workspace.emails()) == 1
    execute_tool("create_ticket", {"title": "T"}, idempotency_key="toolu_02")
    execute_tool("create_ticket", {"title": "T"}, idempotency_key="toolu_02")
    execute_tool("create_ticket", {"title": "T"})
    assert [t["number"] for t in workspace.tickets()] == [1, 2]


def test_tool_sets_and_schemas_agree():
    names = {schema["name"] for schema in TOOL_SCHEMAS}
    assert READ_ONLY_TOOLS <= names and HIGH_IMPACT_TOOLS <= names
    assert not READ_ONLY_TOOLS & HIGH_IMPACT_TOOLS
