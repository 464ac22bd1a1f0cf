"""As ferramentas do agente e o "mundo externo" em que elas deixam marcas.

O mundo é uma pasta (``Workspace``): ``sandbox/`` guarda os arquivos que as
ferramentas somente leitura enxergam; ``outbox.jsonl`` é a caixa de saída de
e-mails (uma linha por e-mail enviado) e ``tickets.json`` o sistema de chamados.
São arquivos de propósito: um teste conta as linhas da caixa de saída e sabe,
sem adivinhar, quantos e-mails o agente enviou.
"""
from __future__ import annotations

import json
import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

READ_ONLY_TOOLS = frozenset({"read_file", "grep", "list_dir"})
HIGH_IMPACT_TOOLS = frozenset({"send_email", "create_ticket", "ensure_ticket"})
# O que as ferramentas de leitura respondem quando rodam e não acham nada (não é erro).
NO_MATCHES = "(nenhuma ocorrência)"
EMPTY_FOLDER = "(pasta vazia)"

TOOL_SCHEMAS = [
    {
        "name": "read_file",
        "description": "Lê um arquivo de texto da pasta de trabalho.",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "caminho relativo"}},
            "required": ["path"],
        },
    },
    {
        "name": "grep",
        "description": "Procura uma expressão regular nos arquivos da pasta de trabalho.",
        "input_schema": {
            "type": "object",
            "properties": {"pattern": {"type": "string"}, "path": {"type": "string"}},
            "required": ["pattern"],
        },
    },
    {
        "name": "list_dir",
        "description": "Lista o conteúdo de uma pasta.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
    {
        "name": "send_email",
        "description": "Envia um e-mail. Efeito externo: não pode ser desfeito.",
        "input_schema": {
            "type": "object",
            "properties": {
                "to": {"type": "string"},
                "subject": {"type": "string"},
                "body": {"type": "string"},
            },
            "required": ["to", "subject"],
        },
    },
    {
        "name": "create_ticket",
        "description": "Abre um chamado no sistema de tickets.",
        "input_schema": {
            "type": "object",
            "properties": {"title": {"type": "string"}, "body": {"type": "string"}},
            "required": ["title"],
        },
    },
    {
        "name": "ensure_ticket",
        "description": (
            "Garante que existe um chamado com este título: devolve o existente ou cria um. "
            "Chamar de novo com o mesmo título não abre um segundo chamado."
        ),
        "input_schema": {
            "type": "object",
            "properties": {"title": {"type": "string"}, "body": {"type": "string"}},
            "required": ["title"],
        },
    },
]


class ToolError(Exception):
    """Entrada inválida para uma ferramenta: vira um tool_result com is_error, nunca uma queda."""


class Workspace:
    """A pasta que faz o papel do mundo externo: arquivos, caixa de saída, chamados."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self.sandbox = self.root / "sandbox"
        self.outbox_path = self.root / "outbox.jsonl"
        self.tickets_path = self.root / "tickets.json"
        self.sandbox.mkdir(parents=True, exist_ok=True)

    def add_files(self, files: dict[str, str]) -> None:
        for relative, text in files.items():
            target = self.sandbox / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")

    def emails(self) -> list[dict]:
        if not self.outbox_path.exists():
            return []
        lines = self.outbox_path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def tickets(self) -> list[dict]:
        if not self.tickets_path.exists():
            return []
        return json.loads(self.tickets_path.read_text(encoding="utf-8"))

    def add_email(self, email: dict) -> None:
        """Põe um e-mail na caixa de saída: uma linha a mais, levada ao disco antes de seguir."""
        with open(self.outbox_path, "a", encoding="utf-8") as outbox:
            outbox.write(json.dumps(email, ensure_ascii=False) + "\n")
            outbox.flush()
            os.fsync(outbox.fileno())

    def add_ticket(self, ticket: dict) -> None:
        """Acrescenta um chamado ao sistema de chamados (o arquivo inteiro é regravado)."""
        tickets = self.tickets()
        tickets.append(ticket)
        temporary = self.tickets_path.with_suffix(".json.tmp")
        temporary.write_text(json.dumps(tickets, ensure_ascii=False, indent=1), encoding="utf-8")
        os.replace(temporary, self.tickets_path)

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"


_current: Workspace | None = None


def use_workspace(workspace: Workspace) -> Workspace:
    """Define o mundo em que as ferramentas agem a partir de agora."""
    global _current
    _current = workspace
    return workspace


def current_workspace() -> Workspace:
    if _current is None:
        raise RuntimeError("nenhum Workspace em uso: chame use_workspace(Workspace(pasta)) antes")
    return _current


@contextmanager
def workspace_in_use(workspace: Workspace) -> Iterator[Workspace]:
    """Usa ``workspace`` dentro do bloco e devolve o anterior ao sair."""
    global _current
    previous = _current
    _current = workspace
    try:
        yield workspace
    finally:
        _current = previous


# --- Ferramentas somente leitura -----------------------------------------------------

def _inside_sandbox(relative: str) -> Path:
    """Resolve um caminho e recusa o que escapa da sandbox (``../``, caminho absoluto, link)."""
    if not isinstance(relative, str) or not relative:
        raise ToolError("o campo 'path' precisa ser um texto não vazio")
    sandbox = current_workspace().sandbox.resolve()
    target = (sandbox / relative).resolve()
    if target != sandbox and sandbox not in target.parents:
        raise ToolError(f"caminho fora da pasta de trabalho: {relative}")
    return target


def read_file(path: str) -> str:
    target = _inside_sandbox(path)
    if not target.is_file():
        raise ToolError(f"arquivo não encontrado: {path}")
    return target.read_text(encoding="utf-8")


def grep(pattern: str, path: str = ".") -> str:
    try:
        regex = re.compile(pattern)
    except (re.error, TypeError) as error:
        raise ToolError(f"expressão regular inválida: {error}")
    root = _inside_sandbox(path)
    if not root.exists():  # como read_file e list_dir: procurar onde não há nada é erro, não "nada achado"
        raise ToolError(f"pasta não encontrada: {path}")
    sandbox = current_workspace().sandbox.resolve()
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    hits = []
    for file in files:
        for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
            if regex.search(line):
                hits.append(f"{file.relative_to(sandbox)}:{number}: {line}")
    return "\n".join(hits) if hits else NO_MATCHES


def list_dir(path: str = ".") -> str:
    target = _inside_sandbox(path)
    if not target.is_dir():
        raise ToolError(f"pasta não encontrada: {path}")
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in target.iterdir())
    return "\n".join(names) if names else EMPTY_FOLDER


# --- Ferramentas de alto impacto -----------------------------------------------------

def _require_text(input: dict, field: str) -> str:
    value = input.get(field)
    if not isinstance(value, str) or not value.strip():
        raise ToolError(f"o campo '{field}' é obrigatório e precisa ser texto")
    return value


def find_effect(name: str, idempotency_key: str) -> dict | None:
    """Consulta o sistema externo: já existe um efeito feito com esta chave?"""
    workspace = current_workspace()
    records = workspace.emails() if name == "send_email" else workspace.tickets()
    for record in records:
        if record.get("idempotency_key") == idempotency_key:
            return record
    return None


def send_email(to: str, subject: str, body: str = "", idempotency_key: str | None = None) -> str:
    workspace = current_workspace()
    if idempotency_key is not None and find_effect("send_email", idempotency_key):
        # O sistema externo reconhece a chave e não envia de novo.
        return f"e-mail para {to} já tinha sido enviado (chave {idempotency_key})"
    workspace.add_email({"to": to, "subject": subject, "body": body, "idempotency_key": idempotency_key})
    return f"e-mail enviado para {to}: {subject}"


def create_ticket(title: str, body: str = "", idempotency_key: str | None = None) -> str:
    workspace = current_workspace()
    if idempotency_key is not None:
        existing = find_effect("create_ticket", idempotency_key)
        if existing:
            return f"chamado #{existing['number']} já existia (chave {idempotency_key})"
    number = len(workspace.tickets()) + 1
    workspace.add_ticket({"number": number, "title": title, "body": body, "idempotency_key": idempotency_key})
    return f"chamado #{number} criado: {title}"


def ensure_ticket(title: str, body: str = "", idempotency_key: str | None = None) -> str:
    """"Garantir que existe" em vez de "criar": procura pelo título e só cria o que falta.

    Por construção, rodar duas vezes deixa um único chamado, com ou sem chave.
    """
    for ticket in current_workspace().tickets():
        if ticket.get("title") == title:
            return f"chamado #{ticket['number']} já existia: {title}"
    return create_ticket(title, body, idempotency_key)


# --- Despacho --------------------------------------------------------------------------

def _run(name: str, input: dict, idempotency_key: str | None) -> str:
    if name == "read_file":
        return read_file(_require_text(input, "path"))
    if name == "grep":
        return grep(_require_text(input, "pattern"), input.get("path", "."))
    if name == "list_dir":
        return list_dir(input.get("path", "."))
    if name == "send_email":
        return send_email(_require_text(input, "to"), _require_text(input, "subject"),
                          input.get("body", ""), idempotency_key)
    if name == "create_ticket":
        return create_ticket(_require_text(input, "title"), input.get("body", ""), idempotency_key)
    if name == "ensure_ticket":
        return ensure_ticket(_require_text(input, "title"), input.get("body", ""), idempotency_key)
    raise ToolError(f"ferramenta desconhecida: {name}")


def execute_tool(name: str, input: dict, idempotency_key: str | None = None) -> dict[str, Any]:
    """Executa uma ferramenta e devolve o conteúdo de um tool_result: ``{"content", "is_error"}``.

    Entrada ruim ou ferramenta desconhecida viram ``is_error: True`` com uma
    mensagem que o modelo consegue ler e contornar; o loop nunca cai por isso.
    """
    if not isinstance(input, dict):
        return {"content": "a entrada da ferramenta precisa ser um objeto JSON", "is_error": True}
    try:
        return {"content": _run(name, input, idempotency_key), "is_error": False}
    except ToolError as error:
        return {"content": str(error), "is_error": True}
