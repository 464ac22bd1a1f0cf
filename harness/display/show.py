"""Visualizações para as lições: a conversa, o estado de execução e o mundo externo em HTML.

Cada função devolve um objeto que o Jupyter desenha (``IPython.display.HTML``) e que,
fora do Jupyter, imprime como texto simples; o HTML vem de funções puras
(``*_html``) que os testes conferem diretamente.
"""
from __future__ import annotations

import html
import json

from harness.resume import orphan_ids

STYLE = (
    "<style>.curso-tabela{border-collapse:collapse;font-size:13px;margin:6px 0}"
    # !important: o CSS do JupyterLab alinha células de tabela à direita com um seletor mais específico.
    ".curso-tabela td,.curso-tabela th{border:1px solid #ccc;padding:4px 8px;text-align:left!important;"
    "vertical-align:top!important}"
    ".curso-tabela th{background:#f3f3f3}.curso-erro{color:#b00020;font-weight:bold}"
    ".curso-pendente,.curso-pendente td{background:#fff4d6}.curso-ok{color:#1b7f3b}</style>"
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


def show_side_by_side(*panels: Rendered) -> Rendered:
    """Dois ou mais painéis lado a lado, por exemplo messages antes e depois de reconcile."""
    cells = "".join(f'<div style="flex:1 1 360px;min-width:0">{panel.html_text}</div>' for panel in panels)
    html_text = f'<div style="display:flex;gap:18px;align-items:flex-start;flex-wrap:wrap">{cells}</div>'
    return Rendered(html_text, "\n\n".join(panel.plain for panel in panels))


def turn_timeline_steps(turn_tools: list[list[str]], crash: tuple[int, str] | None = None) -> list[list[tuple[str, str]]]:
    """Os passos de cada turno, cada um com seu destino: ``feito``, ``queda`` ou ``nunca``.

    ``turn_tools`` diz que ferramentas o modelo pediu em cada turno (lista vazia = resposta final).
    ``crash = (turno, "antes" | "depois")``: o processo morreu nesse turno, antes ou depois
    de as ferramentas rodarem; tudo o que viria depois nunca acontece.
    """
    rows, dead = [], False
    for number, tools in enumerate(turn_tools, start=1):
        row = [("modelo responde", "nunca" if dead else "feito"), ("ponto A", "nunca" if dead else "feito")]
        if tools:
            dies_here = crash is not None and crash[0] == number and not dead
            if dies_here and crash[1] == "antes":
                row.append(("✕ queda", "queda"))
            row += [(" + ".join(tools), "nunca" if dead or (dies_here and crash[1] == "antes") else "feito")]
            if dies_here and crash[1] == "depois":
                row.append(("✕ queda", "queda"))
            dead = dead or dies_here
            row.append(("ponto B", "nunca" if dead else "feito"))
        rows.append(row)
    return rows


def show_turn_timeline(turn_tools: list[list[str]], crash: tuple[int, str] | None = None,
                       title: str = "linha do tempo da execução") -> Rendered:
    """Os turnos como uma fileira de passos (modelo, ponto A, ferramentas, ponto B), marcando a queda."""
    rows = turn_timeline_steps(turn_tools, crash)
    # O último ponto de gravação que chegou a acontecer é o checkpoint que ficou em disco.
    on_disk = max(((r, c) for r, row in enumerate(rows) for c, (label, fate) in enumerate(row)
                   if label.startswith("ponto") and fate == "feito"), default=None)
    colors = {"feito": ("#e8f1fb", "#2f5f8a", "#1a1a1a"), "queda": ("#fde7e9", "#b00020", "#b00020"),
              "nunca": ("#f5f5f5", "#bbbbbb", "#9a9a9a")}
    box_w, box_h, gap, left, row_h = 128, 30, 16, 70, 44
    width = left + max(len(r) for r in rows) * (box_w + gap)
    height = len(rows) * row_h + 10
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="12">']
    for r, row in enumerate(rows):
        y = 8 + r * row_h
        parts.append(f'<text x="4" y="{y + 20}" fill="#444">turno {r + 1}</text>')
        for c, (label, fate) in enumerate(row):
            x = left + c * (box_w + gap)
            fill, stroke, ink = colors[fate]
            border = ' stroke-dasharray="4 3"' if fate == "nunca" else ""
            if (r, c) == on_disk:
                border, label = ' stroke-width="3"', label + " (em disco)"
            parts.append(f'<rect x="{x}" y="{y}" width="{box_w}" height="{box_h}" rx="5" fill="{fill}" '
                         f'stroke="{stroke}"{border}/>')
            parts.append(f'<text x="{x + box_w / 2}" y="{y + 19}" text-anchor="middle" fill="{ink}">'
                         f'{_esc(_short(label, 20))}</text>')
            if c:
                parts.append(f'<line x1="{x - gap + 2}" y1="{y + box_h / 2}" x2="{x - 3}" y2="{y + box_h / 2}" '
                             f'stroke="#888"/>')
    parts.append("</svg>")
    legend = ('<div style="font-size:12px;color:#555">azul: aconteceu · vermelho: o processo morreu aqui · '
              'tracejado: nunca aconteceu · borda grossa: o checkpoint que ficou em disco</div>')
    html_text = f'<div><div style="font-weight:bold;font-size:13px">{_esc(title)}</div>{"".join(parts)}{legend}</div>'
    marks = {"feito": "", "queda": "", "nunca": " (nunca)"}
    plain = "\n".join(
        f"turno {r + 1}: " + " → ".join(label + marks[fate] + (" (em disco)" if (r, c) == on_disk else "")
                                        for c, (label, fate) in enumerate(row))
        for r, row in enumerate(rows))
    return Rendered(html_text, f"{title}\n{plain}")


def save_point_rows(snapshots: list[dict]) -> list[dict]:
    """Cada checkpoint gravado, descrito: turno, ponto (A ou B), pendências e tamanho da conversa.

    O ponto se lê do próprio estado: se a última mensagem é do assistente, a gravação
    aconteceu logo depois da resposta do modelo (A); se é do usuário, depois dos
    tool_result (B).
    """
    rows = []
    for snapshot in snapshots:
        messages = snapshot.get("messages") or [{}]
        pending = snapshot.get("pending_tool_use")
        rows.append({
            "turn": snapshot.get("turns"),
            "point": "A" if messages[-1].get("role") == "assistant" else "B",
            "pending": [call["name"] for call in pending] if pending else [],
            "messages": len(snapshot.get("messages") or []),
        })
    return rows


def show_save_points(snapshots: list[dict], title: str = "pontos de gravação ao longo da execução") -> Rendered:
    """Uma linha do tempo com cada gravação de checkpoint: A em laranja (pendências), B em verde."""
    rows = save_point_rows(snapshots)
    step, left, top = 104, 24, 34
    width = left * 2 + max(len(rows), 1) * step
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="150" '
             f'font-family="sans-serif" font-size="12">',
             f'<line x1="{left}" y1="{top + 30}" x2="{width - left}" y2="{top + 30}" stroke="#999"/>']
    turn_start = 0
    for index, row in enumerate(rows):
        last_of_turn = index + 1 == len(rows) or rows[index + 1]["turn"] != row["turn"]
        if last_of_turn:
            # Uma faixa por turno, com o número do turno em cima.
            x0, x1 = left + turn_start * step + 4, left + (index + 1) * step - 4
            parts.append(f'<rect x="{x0}" y="{top - 24}" width="{x1 - x0}" height="128" rx="6" '
                         f'fill="#f6f8fb" stroke="#d5dde8"/>')
            parts.append(f'<text x="{(x0 + x1) / 2}" y="{top - 8}" text-anchor="middle" fill="#444">'
                         f'turno {_esc(row["turn"])}</text>')
            turn_start = index + 1
    for index, row in enumerate(rows):
        x = left + index * step + step / 2
        color = "#e08a00" if row["point"] == "A" else "#1b7f3b"
        parts.append(f'<circle cx="{x}" cy="{top + 30}" r="15" fill="{color}"/>')
        parts.append(f'<text x="{x}" y="{top + 35}" text-anchor="middle" fill="white" '
                     f'font-weight="bold">{row["point"]}</text>')
        # "read_file ×2" em vez de repetir o nome: cabe embaixo do círculo.
        names = {name: row["pending"].count(name) for name in row["pending"]}
        pending = ", ".join(name + (f" ×{count}" if count > 1 else "") for name, count in names.items())
        parts.append(f'<text x="{x}" y="{top + 62}" text-anchor="middle" fill="#333">pendente:</text>')
        parts.append(f'<text x="{x}" y="{top + 78}" text-anchor="middle" fill="#333" font-weight="bold">'
                     f'{_esc(_short(pending or "None", 18))}</text>')
        parts.append(f'<text x="{x}" y="{top + 96}" text-anchor="middle" fill="#666">'
                     f'{row["messages"]} mensagens</text>')
    parts.append("</svg>")
    legend = ('<div style="font-size:12px;color:#555">cada círculo é uma gravação de checkpoint.json · '
              'A (laranja): logo depois da resposta do modelo · B (verde): depois dos tool_result</div>')
    html_text = (f'<div><div style="font-weight:bold;font-size:13px">{_esc(title)}</div>'
                 f'{"".join(parts)}{legend}</div>')
    plain = "\n".join(
        f"turno {row['turn']} ponto {row['point']}: pendente={row['pending'] or None}, "
        f"{row['messages']} mensagens"
        for row in rows)
    return Rendered(html_text, f"{title}\n{plain}")
