"""Widgets interativos das lições (ipywidgets), montados sobre funções puras testáveis.

Cada widget tem duas camadas: funções que só transformam dados em dados ou em HTML
(testadas diretamente) e uma função fina que liga essas peças a controles do
ipywidgets. Sem ipywidgets, ou fora de um navegador, o widget se degrada para uma
visualização estática em HTML: nada quebra quando o notebook roda sem tela.
"""
from __future__ import annotations

import html

from harness.checkpoint import CheckpointError
from harness.show import STYLE, Rendered, messages_html, orphan_ids
from harness.timeline import list_points, parse_point_name, read_point

# --- Lição 5: a linha do tempo da sequência de checkpoints ----------------------------

POINT_COLORS = {"A": "#f0b429", "B": "#2f9e44"}  # A: decisão tomada; B: resultado registrado


def timeline_frames(run_dir):
    """Um quadro por ponto gravado, na ordem da sequência: o que a linha do tempo mostra.

    Um ponto ilegível vira um quadro com ``error`` em vez de derrubar o visualizador.
    """
    frames = []
    for path in list_points(run_dir):
        turn, point = parse_point_name(path.name)
        frame = {"name": path.name, "turn": turn, "point": point, "error": None,
                 "tokens_used": None, "message_count": 0, "pending": [], "orphans": [], "messages": []}
        try:
            state = read_point(path)
        except CheckpointError as error:
            frame["error"] = str(error)
        else:
            messages = state["messages"]
            frame.update(
                tokens_used=state["tokens_used"],
                message_count=len(messages),
                pending=[f"{call['name']} ({call['id']})" for call in state["pending_tool_use"] or []],
                orphans=sorted(orphan_ids(messages)),
                messages=messages,
            )
        frames.append(frame)
    return frames


def timeline_strip_html(frames, selected=None):
    """A faixa de pontos em SVG: um círculo por ponto, o selecionado com contorno grosso."""
    if not frames:
        return "<p>(nenhum ponto gravado)</p>"
    step, radius = 46, 11
    width = step * len(frames) + 20
    parts = [f'<svg width="{width}" height="62" role="img" aria-label="sequência de checkpoints">']
    for index, frame in enumerate(frames):
        x = 20 + index * step
        color = "#b00020" if frame["error"] else POINT_COLORS[frame["point"]]
        stroke = 4 if index == selected else 1
        parts.append(f'<circle cx="{x}" cy="22" r="{radius}" fill="{color}" stroke="#222" stroke-width="{stroke}">'
                     f"<title>{html.escape(frame['name'])}</title></circle>")
        parts.append(f'<text x="{x}" y="27" font-size="11" text-anchor="middle" fill="#fff">{frame["point"]}</text>')
        parts.append(f'<text x="{x}" y="52" font-size="11" text-anchor="middle">t{frame["turn"]}</text>')
    parts.append("</svg>")
    return "".join(parts)


def frame_summary(frame):
    """Os contadores de um ponto, como pares (rótulo, valor)."""
    return [
        ("arquivo", frame["name"]),
        ("turns", frame["turn"]),
        ("ponto", "A (decisão tomada)" if frame["point"] == "A" else "B (resultado registrado)"),
        ("tokens_used", frame["tokens_used"] if frame["tokens_used"] is not None else "—"),
        ("mensagens", frame["message_count"]),
        ("pending_tool_use", ", ".join(frame["pending"]) or "None"),
    ]


def frame_html(frame, frames=None, index=None):
    """O que o visualizador mostra para um ponto: a faixa, os contadores e as mensagens."""
    strip = timeline_strip_html(frames, index) if frames is not None else ""
    rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
                   for k, v in frame_summary(frame))
    table = f'<table class="curso-tabela"><caption>ponto {html.escape(frame["name"])}</caption>{rows}</table>'
    if frame["error"]:
        body = f'<p class="curso-erro">ponto ilegível: {html.escape(frame["error"])}</p>'
    else:
        body = messages_html(frame["messages"], title=f"messages em {frame['name']}")
    return STYLE + strip + table + body


def frame_text(frame):
    return " | ".join(f"{label}: {value}" for label, value in frame_summary(frame))


def show_timeline(run_dir):
    """Versão estática da linha do tempo: a faixa e um resumo por ponto (funciona em qualquer lugar)."""
    frames = timeline_frames(run_dir)
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(value))}</td>" for _, value in frame_summary(frame)) + "</tr>"
        for frame in frames
    )
    header = "".join(f"<th>{label}</th>" for label, _ in frame_summary(frames[0])) if frames else ""
    html_text = (timeline_strip_html(frames) +
                 f'<table class="curso-tabela"><tr>{header}</tr>{rows}</table>')
    plain = "\n".join(frame_text(frame) for frame in frames) or "(nenhum ponto gravado)"
    return Rendered(html_text, plain)


def timeline_viewer(run_dir):
    """Um controle deslizante sobre a sequência: cada posição mostra a cena daquele ponto.

    Começa no ponto mais recente. Sem ipywidgets, devolve a versão estática.
    """
    frames = timeline_frames(run_dir)
    if not frames:
        return Rendered("<p>(nenhum ponto gravado)</p>", "(nenhum ponto gravado)")
    try:
        import ipywidgets as widgets
    except ImportError:
        return show_timeline(run_dir)
    last = len(frames) - 1
    slider = widgets.IntSlider(value=last, min=0, max=last, step=1, description="ponto",
                               continuous_update=True, readout=False,
                               layout=widgets.Layout(width=f"{max(300, 46 * len(frames))}px"))
    label = widgets.Label(value=frames[last]["name"])
    view = widgets.HTML(value=frame_html(frames[last], frames, last))

    def on_change(change):
        index = change["new"]
        label.value = frames[index]["name"]
        view.value = frame_html(frames[index], frames, index)

    slider.observe(on_change, names="value")
    return widgets.VBox([widgets.HBox([slider, label]), view])
