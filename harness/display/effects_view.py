"""Lição 4 em imagens: o livro-razão como tabela e a janela entre executar e registrar.

Como em ``harness.display.show``, cada função devolve um ``Rendered`` (HTML no Jupyter, texto
no terminal) montado a partir de funções puras que os testes conferem.
"""
from __future__ import annotations

from harness.display.show import Rendered, _esc, _short

STATUS_COLORS = {"intent": "#e08a00", "committed": "#1b7f3b", "rejected": "#b00020", "unknown": "#6a3d9a"}


def effects_rows(effects: dict) -> list[dict]:
    """Uma linha por registro do livro-razão, na ordem em que aparecem no arquivo."""
    rows = []
    for tool_use_id, record in effects.items():
        result = record.get("result") or {}
        rows.append({
            "tool_use_id": tool_use_id,
            "tool": record.get("tool"),
            "status": record.get("status"),
            "result": ("is_error: " if result.get("is_error") else "") + _short(result.get("content", "—"), 70),
        })
    return rows


def show_effects(effects: dict, title: str = "livro-razão de efeitos (effects.json)") -> Rendered:
    rows = effects_rows(effects)
    body = "".join(
        f"<tr><td>{_esc(r['tool_use_id'])}</td><td>{_esc(r['tool'])}</td>"
        f'<td style="color:{STATUS_COLORS.get(r["status"], "#333")};font-weight:bold">{_esc(r["status"])}</td>'
        f"<td>{_esc(r['result'])}</td></tr>"
        for r in rows
    )
    count = f"{len(rows)} registro(s)" if rows else "vazio"
    html_text = (f'<table class="curso-tabela"><caption>{_esc(title)}: {count}</caption>'
                 f"<tr><th>tool_use_id</th><th>ferramenta</th><th>status</th><th>resultado</th></tr>{body}</table>")
    plain = f"{title}: {count}\n" + "\n".join(
        f"{r['tool_use_id']}  {r['tool']}  {r['status']}  {r['result']}" for r in rows)
    return Rendered(html_text, plain)


def effect_window_rows(with_intent: bool) -> list[dict]:
    """Duas quedas no mesmo turno: antes e depois de o e-mail sair. O que sobra em disco em cada uma?

    Sem registro de intenção, o disco fica igual nos dois casos (a retomada não sabe
    qual aconteceu). Com ele, a intenção aparece nos dois, e quem desempata é o sistema
    externo, consultado pela chave de idempotência.
    """
    first = [("ponto A", "feito")] + ([("gravar intenção", "feito")] if with_intent else [])
    before = first + [("✕ queda", "queda"), ("enviar e-mail", "nunca"), ("gravar recibo", "nunca")]
    after = first + [("enviar e-mail", "feito"), ("✕ queda", "queda"), ("gravar recibo", "nunca")]
    ledger = "intent" if with_intent else "vazio"
    return [
        {"label": "queda antes do envio", "steps": before, "ledger": ledger,
         "world": "nenhum e-mail com a chave" if with_intent else "nenhum e-mail"},
        {"label": "queda depois do envio", "steps": after, "ledger": ledger,
         "world": "1 e-mail com a chave" if with_intent else "1 e-mail"},
    ]


def show_effect_window(with_intent: bool, title: str | None = None) -> Rendered:
    """Desenha as duas quedas lado a lado com o que a retomada encontra no livro-razão e no mundo."""
    rows = effect_window_rows(with_intent)
    title = title or ("com registro de intenção" if with_intent else "sem registro de intenção")
    colors = {"feito": ("#e8f1fb", "#2f5f8a", "#1a1a1a"), "queda": ("#fde7e9", "#b00020", "#b00020"),
              "nunca": ("#f5f5f5", "#bbbbbb", "#9a9a9a")}
    box_w, box_h, gap, left, row_h = 112, 30, 12, 150, 48
    steps = max(len(r["steps"]) for r in rows)
    notes_x = left + steps * (box_w + gap) + 6
    width = notes_x + 260
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{len(rows) * row_h + 30}" '
             f'font-family="sans-serif" font-size="12">',
             f'<text x="{notes_x}" y="14" fill="#444" font-weight="bold">o que a retomada encontra</text>']
    for r, row in enumerate(rows):
        y = 24 + r * row_h
        parts.append(f'<text x="4" y="{y + 20}" fill="#444">{_esc(row["label"])}</text>')
        for c, (label, fate) in enumerate(row["steps"]):
            x = left + c * (box_w + gap)
            fill, stroke, ink = colors[fate]
            dash = ' stroke-dasharray="4 3"' if fate == "nunca" else ""
            parts.append(f'<rect x="{x}" y="{y}" width="{box_w}" height="{box_h}" rx="5" fill="{fill}" '
                         f'stroke="{stroke}"{dash}/>')
            parts.append(f'<text x="{x + box_w / 2}" y="{y + 19}" text-anchor="middle" fill="{ink}">'
                         f'{_esc(label)}</text>')
        parts.append(f'<text x="{notes_x}" y="{y + 12}" fill="#333">livro-razão: {_esc(row["ledger"])}</text>')
        parts.append(f'<text x="{notes_x}" y="{y + 28}" fill="#333">mundo: {_esc(row["world"])}</text>')
    parts.append("</svg>")
    html_text = f'<div><div style="font-weight:bold;font-size:13px">{_esc(title)}</div>{"".join(parts)}</div>'
    plain = f"{title}\n" + "\n".join(
        f"{row['label']}: " + " → ".join(label for label, _ in row["steps"])
        + f" | livro-razão: {row['ledger']} | mundo: {row['world']}" for row in rows)
    return Rendered(html_text, plain)
