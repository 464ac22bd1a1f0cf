"""Visualizações para as lições: a conversa, o estado de execução e o mundo externo em HTML.

Cada função devolve um objeto que o Jupyter desenha (``IPython.display.HTML``) e que,
fora do Jupyter, imprime como texto simples; o HTML vem de funções puras
(``*_html``) que os testes conferem diretamente.
"""
from __future__ import annotations

import html
import json

STYLE = (
    "<style>.curso-tabela{border-collapse:collapse;font-size:13px;margin:6px 0}"
    ".curso-tabela td,.curso-tabela th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}"
    ".curso-tabela th{background:#f3f3f3}.curso-erro{color:#b00020;font-weight:bold}"
    ".curso-pendente{background:#fff4d6}.curso-ok{color:#1b7f3b}</style>"
)


class Rendered:
    """HTML para o Jupyter, texto para o terminal."""

    def __init__(self, html_text: str, plain: str):
        self.html_text = html_text
        self.plain = plain

    def _repr_html_(self) -> str:
        return STYLE + self.html_text

    def __repr__(self) -> str:
        return self.plain


def _esc(value) -> str:
    return html.escape(str(value))


def _short(text: str, limit: int = 90) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def block_summary(block: dict) -> str:
    """Uma linha por bloco de conteúdo: texto, tool_use ou tool_result."""
    kind = block.get("type")
    if kind == "text":
        return f"texto: {_short(block.get('text', ''))}"
    if kind == "tool_use":
        return f"tool_use {block.get('name')}({_short(json.dumps(block.get('input'), ensure_ascii=False), 60)}) id={block.get('id')}"
    if kind == "tool_result":
        flag = " is_error" if block.get("is_error") else ""
        content = block.get("content", "")
        if isinstance(content, list):
            content = " ".join(part.get("text", "") for part in content if isinstance(part, dict))
        return f"tool_result id={block.get('tool_use_id')}{flag}: {_short(content, 60)}"
    return f"{kind}"


def messages_rows(messages: list[dict]) -> list[tuple[int, str, list[str]]]:
    rows = []
    for index, message in enumerate(messages):
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        rows.append((index, message.get("role", "?"), [block_summary(b) for b in blocks]))
    return rows


def orphan_ids(messages: list[dict]) -> set[str]:
    """Ids de tool_use sem tool_result na mensagem seguinte (as chamadas órfãs)."""
    orphans = set()
    for index, message in enumerate(messages):
        if message.get("role") != "assistant" or isinstance(message.get("content"), str):
            continue
        ids = {b["id"] for b in message["content"] if b.get("type") == "tool_use"}
        following = messages[index + 1] if index + 1 < len(messages) else None
        answered = set()
        if following and not isinstance(following.get("content"), str):
            answered = {b.get("tool_use_id") for b in following["content"] if b.get("type") == "tool_result"}
        orphans |= ids - answered
    return orphans


def messages_html(messages: list[dict], title: str = "messages") -> str:
    orphans = orphan_ids(messages)
    body = []
    for index, role, lines in messages_rows(messages):
        content = messages[index].get("content")
        blocks = [] if isinstance(content, str) else content
        pending = any(b.get("type") == "tool_use" and b.get("id") in orphans for b in blocks)
        error = any(b.get("type") == "tool_result" and b.get("is_error") for b in blocks)
        css = ' class="curso-pendente"' if pending else ""
        cells = "<br>".join(_esc(line) for line in lines)
        if pending:
            cells += '<br><span class="curso-erro">⚠ sem tool_result: chamada órfã</span>'
        if error:
            cells = cells.replace("is_error", '<span class="curso-erro">is_error</span>')
        body.append(f"<tr{css}><td>{index}</td><td>{_esc(role)}</td><td>{cells}</td></tr>")
    return (f'<table class="curso-tabela"><caption>{_esc(title)}</caption>'
            f"<tr><th>#</th><th>role</th><th>conteúdo</th></tr>{''.join(body)}</table>")


def show_messages(messages: list[dict], title: str = "messages") -> Rendered:
    plain = "\n".join(f"{i:>2} {role:<9} " + " | ".join(lines) for i, role, lines in messages_rows(messages))
    return Rendered(messages_html(messages, title), plain)


def state_summary(state: dict) -> dict:
    pending = state.get("pending_tool_use")
    return {
        "task": state.get("task"),
        "turns": state.get("turns"),
        "tokens_used": state.get("tokens_used"),
        "mensagens": len(state.get("messages", [])),
        "pending_tool_use": ", ".join(f"{c['name']} ({c['id']})" for c in pending) if pending else "None",
    }


def show_state(state: dict, title: str = "estado de execução") -> Rendered:
    summary = state_summary(state)
    rows = "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in summary.items())
    plain = "\n".join(f"{k}: {v}" for k, v in summary.items())
    return Rendered(f'<table class="curso-tabela"><caption>{_esc(title)}</caption>{rows}</table>', plain)


def show_outbox(workspace, title: str = "caixa de saída (outbox.jsonl)") -> Rendered:
    emails = workspace.emails()
    rows = "".join(
        f"<tr><td>{i + 1}</td><td>{_esc(e.get('to'))}</td><td>{_esc(e.get('subject'))}</td>"
        f"<td>{_esc(e.get('idempotency_key') or '—')}</td></tr>"
        for i, e in enumerate(emails)
    )
    count = f"{len(emails)} e-mail(s)"
    css = "curso-erro" if len(emails) > 1 else "curso-ok"
    html_text = (f'<table class="curso-tabela"><caption>{_esc(title)}: <span class="{css}">{count}</span></caption>'
                 f"<tr><th>#</th><th>para</th><th>assunto</th><th>chave</th></tr>{rows}</table>")
    plain = f"{title}: {count}\n" + "\n".join(f"{i + 1}. {e.get('to')} — {e.get('subject')}" for i, e in enumerate(emails))
    return Rendered(html_text, plain)
