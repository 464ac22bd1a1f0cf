"""As ferramentas do agente e o "mundo externo" em que elas deixam marcas.

O mundo é uma pasta (``Workspace``): ``sandbox/`` guarda os arquivos que as
ferramentas somente leitura enxergam; ``outbox.jsonl`` é a caixa de saída de
e-mails (uma linha por e-mail enviado) e ``tickets.json`` o sistema de chamados.
São arquivos de propósito: um teste conta as linhas da caixa de saída e sabe,
sem adivinhar, quantos e-mails o agente enviou.
"""
from __future__ import annotations

import codecs
import json
import os
import stat
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import regex

from harness import run_paths
from harness.state_json import StateFileError, read_state_json, read_state_lines

READ_ONLY_TOOLS = frozenset({"read_file", "grep", "list_dir"})
HIGH_IMPACT_TOOLS = frozenset({"send_email", "create_ticket", "ensure_ticket"})
# O que as ferramentas de leitura respondem quando rodam e não acham nada (não é erro).
NO_MATCHES = "(nenhuma ocorrência)"
EMPTY_FOLDER = "(pasta vazia)"

# Limites das ferramentas: o modelo escolhe a entrada, e nenhuma entrada pode prender a execução
# (e a trava da posse, que fica com o worker enquanto as ferramentas rodam) nem encher o checkpoint.
MAX_READ_BYTES = 1024 * 1024      # o que read_file devolve, e o que grep lê de cada arquivo
MAX_GREP_FILES = 2000             # arquivos que um grep examina
MAX_GREP_HITS = 200               # linhas que um grep devolve
MAX_HIT_CHARS = 500               # caracteres de cada linha devolvida
GREP_SECONDS = 2.0                # o tempo de todas as buscas de um grep juntas

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
    """A pasta que faz o papel do mundo externo: arquivos, caixa de saída, chamados.

    ``boundary`` é a pasta de confiança que contém o mundo (padrão: a própria ``root``; numa
    execução, a pasta dela): tudo o que o mundo lê ou grava fica abaixo dela e é aberto sem
    seguir links (``harness.run_paths``). Um ``world/outbox.jsonl`` plantado como link para
    fora da execução faz o envio falhar, nunca escrever lá.
    """

    def __init__(self, root: str | os.PathLike, boundary: str | os.PathLike | None = None):
        self.root = Path(root)
        self.boundary = Path(boundary) if boundary is not None else self.root
        self.sandbox = self.root / "sandbox"
        self.outbox_path = self.root / "outbox.jsonl"
        self.tickets_path = self.root / "tickets.json"
        self.boundary.mkdir(parents=True, exist_ok=True)  # a pasta de confiança vem do código, não da execução
        with run_paths.open_folder(self.boundary, self._inside(self.sandbox), create=True):
            pass

    def _inside(self, path) -> list[str]:
        """Os componentes de ``path`` abaixo de ``boundary`` (ele é sempre um caminho do próprio mundo)."""
        return [] if Path(path) == self.boundary else list(Path(path).relative_to(self.boundary).parts)

    def add_files(self, files: dict[str, str]) -> None:
        for relative, text in files.items():
            parts = run_paths.relative_parts(relative, "nome de arquivo")
            if not parts:
                raise run_paths.RunPathError(repr(relative), "não nomeia um arquivo")
            target = Path(*self._inside(self.sandbox), *parts)
            with run_paths.open_folder(self.boundary, target.parent.parts, create=True):
                pass
            run_paths.write_atomic(self.boundary, target, text)

    def _read(self, path) -> str | None:
        return run_paths.read_text(self.boundary, Path(*self._inside(path)))

    def emails(self) -> list[dict]:
        # A caixa de saída é estado da execução como qualquer outro: lida com os mesmos limites,
        # e um arquivo estragado para a execução (StateFileError), sem virar resposta ao modelo.
        return read_state_lines(self.outbox_path)

    def tickets(self) -> list[dict]:
        tickets = read_state_json(self.tickets_path)
        if tickets is None:
            return []
        if not isinstance(tickets, list) or not all(isinstance(ticket, dict) for ticket in tickets):
            raise StateFileError(self.tickets_path, "esperava uma lista de chamados (objetos JSON)")
        return tickets

    def add_email(self, email: dict) -> None:
        """Põe um e-mail na caixa de saída: uma linha a mais, levada ao disco antes de seguir."""
        run_paths.append_line(self.boundary, Path(*self._inside(self.outbox_path)),
                              json.dumps(email, ensure_ascii=False) + "\n")

    def add_ticket(self, ticket: dict) -> None:
        """Acrescenta um chamado ao sistema de chamados (o arquivo inteiro é regravado, de forma atômica)."""
        tickets = self.tickets()
        tickets.append(ticket)
        run_paths.write_atomic(self.boundary, Path(*self._inside(self.tickets_path)),
                               json.dumps(tickets, ensure_ascii=False, indent=1))

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

def _inside_sandbox(relative: str) -> list[str]:
    """A única conferência de caminho das três ferramentas de leitura: os componentes de
    ``relative`` dentro da sandbox (``../``, caminho absoluto e byte nulo são recusados; links,
    na hora de abrir, por ``run_paths``: nenhuma ferramenta segue um link)."""
    if not isinstance(relative, str) or not relative:
        raise ToolError("o campo 'path' precisa ser um texto não vazio")
    try:
        return run_paths.relative_parts(relative)
    except run_paths.RunPathError as error:
        raise ToolError(f"caminho fora da pasta de trabalho: {error.filename} ({error.problem})") from None


@contextmanager
def _opened(relative: str, parts: list[str], want: str) -> Iterator[int]:
    """O descritor do arquivo (``want="file"``) ou da pasta (``"folder"``) em ``parts``, sem seguir links."""
    workspace = current_workspace()
    base = workspace._inside(workspace.sandbox)
    try:
        if want == "folder":
            with run_paths.open_folder(workspace.boundary, [*base, *parts]) as fd:
                yield fd
            return
        fd = run_paths.open_file(workspace.boundary, Path(*base, *parts), os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise ToolError(f"{'pasta' if want == 'folder' else 'arquivo'} não encontrad{'a' if want == 'folder' else 'o'}: "
                        f"{relative}") from None
    except run_paths.RunPathError as error:
        raise ToolError(f"{relative}: {error.problem}") from None
    except NotADirectoryError:
        raise ToolError(f"pasta não encontrada: {relative}") from None
    try:
        yield fd
    finally:
        os.close(fd)


def _read_bounded(fd: int, limit: int = MAX_READ_BYTES) -> tuple[bytes, bool]:
    """No máximo ``limit`` bytes do descritor, e se o arquivo tinha mais que isso."""
    chunks, size = [], 0
    while size <= limit:
        chunk = os.read(fd, min(1024 * 1024, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    data = b"".join(chunks)
    return data[:limit], len(data) > limit


def _text_of(data: bytes, cut: bool) -> str:
    """O texto UTF-8 de ``data``; num arquivo cortado, um caractere partido no fim não conta como erro."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    return decoder.decode(data, final=not cut)


def read_file(path: str) -> str:
    parts = _inside_sandbox(path)
    if not parts:
        raise ToolError(f"arquivo não encontrado: {path}")
    with _opened(path, parts, "file") as fd:
        data, cut = _read_bounded(fd)
        size = os.fstat(fd).st_size
    try:
        text = _text_of(data, cut)
    except UnicodeDecodeError:
        raise ToolError(f"{path} não é texto UTF-8 (um arquivo binário?): read_file só lê texto") from None
    if cut:
        text += (f"\n[arquivo cortado: mostrados os primeiros {MAX_READ_BYTES} bytes de {size}; "
                 f"use grep para achar o trecho que interessa]")
    return text


def _files_under(parts: list[str], relative: str) -> tuple[list[list[str]], int]:
    """Os arquivos comuns em ``parts`` (um arquivo ou uma pasta, sem descer por links) e quantos links pulou."""
    workspace = current_workspace()
    base = workspace._inside(workspace.sandbox)
    try:
        with run_paths.open_folder(workspace.boundary, [*base, *parts[:-1]]) as fd:
            info = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False) if parts else None
    except (FileNotFoundError, NotADirectoryError):
        raise ToolError(f"pasta não encontrada: {relative}") from None
    except run_paths.RunPathError as error:
        raise ToolError(f"{relative}: {error.problem}") from None
    if info is not None and stat.S_ISLNK(info.st_mode):
        raise ToolError(f"{relative}: é um link simbólico, e as ferramentas não seguem links")
    if info is not None and stat.S_ISREG(info.st_mode):
        return [parts], 0
    found, links, pending = [], 0, [parts]
    while pending and len(found) < MAX_GREP_FILES:
        folder = pending.pop()
        with _opened(relative, folder, "folder") as fd:
            names = sorted(os.listdir(fd))
            kinds = {name: os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode for name in names}
        for name in reversed(names):
            if stat.S_ISLNK(kinds[name]):
                links += 1
            elif stat.S_ISDIR(kinds[name]):
                pending.append([*folder, name])
            elif stat.S_ISREG(kinds[name]):
                found.append([*folder, name])
    return sorted(found)[:MAX_GREP_FILES], links


def grep(pattern: str, path: str = ".") -> str:
    try:
        compiled = regex.compile(pattern)
    except (regex.error, TypeError, ValueError, OverflowError, RecursionError) as error:
        raise ToolError(f"expressão regular inválida: {error}") from None  # the model reads one line
    parts = _inside_sandbox(path)
    files, links = _files_under(parts, path)
    deadline = time.monotonic() + GREP_SECONDS
    hits, notes = [], []
    for file_parts in files:
        with _opened(path, file_parts, "file") as fd:
            data, cut = _read_bounded(fd)
        if cut:
            notes.append(f"{'/'.join(file_parts)}: só os primeiros {MAX_READ_BYTES} bytes foram lidos")
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
            remaining = deadline - time.monotonic()
            try:
                if remaining <= 0:
                    raise TimeoutError
                found = compiled.search(line, timeout=remaining)
            except TimeoutError:
                raise ToolError(f"a busca por {pattern!r} passou do limite de tempo ({GREP_SECONDS:.0f} s) e foi "
                                f"interrompida: a expressão provavelmente tem repetições aninhadas, como (a+)+; "
                                f"simplifique-a") from None
            if found:
                shown = line if len(line) <= MAX_HIT_CHARS else line[:MAX_HIT_CHARS] + " [linha cortada]"
                hits.append(f"{'/'.join(file_parts)}:{number}: {shown}")
                if len(hits) >= MAX_GREP_HITS:
                    notes.append(f"parei nas primeiras {MAX_GREP_HITS} ocorrências")
                    break
        if len(hits) >= MAX_GREP_HITS:
            break
    if links:
        notes.append(f"{links} link(s) simbólico(s) ignorado(s): as ferramentas não seguem links")
    if len(files) >= MAX_GREP_FILES:
        notes.append(f"só os primeiros {MAX_GREP_FILES} arquivos foram examinados")
    text = "\n".join(hits) if hits else NO_MATCHES
    return text + "".join(f"\n[{note}]" for note in notes)


def list_dir(path: str = ".") -> str:
    parts = _inside_sandbox(path)
    with _opened(path, parts, "folder") as fd:
        names = sorted(os.listdir(fd))
        kinds = {name: os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode for name in names}
    shown = sorted(name + ("/" if stat.S_ISDIR(kinds[name]) else "") for name in names)
    return "\n".join(shown) if shown else EMPTY_FOLDER


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
