"""Widgets interativos das lições (ipywidgets), montados sobre funções puras testáveis.

Cada widget tem duas camadas: funções que só transformam dados em dados ou em HTML
(testadas diretamente) e uma função fina que liga essas peças a controles do
ipywidgets. Sem ipywidgets, ou fora de um navegador, o widget se degrada para uma
visualização estática em HTML: nada quebra quando o notebook roda sem tela.
"""
from __future__ import annotations

import html

from harness.display.show import STYLE, Rendered, messages_html
from harness.timeline import timeline_frames

# --- Lição 5: a linha do tempo da sequência de checkpoints ----------------------------

POINT_COLORS = {"A": "#f0b429", "B": "#2f9e44"}  # A: decisão tomada; B: resultado registrado


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


# --- Lição 6: o explorador de quedas ------------------------------------------------------

def outcome_summary(outcome):
    """O retrato de uma pasta de execução como pares (rótulo, valor, ok): ok None = só informação."""
    return [
        # Só os status finais ganham cor: running ou paused depois de uma queda são esperados.
        ("status", outcome.status or "—", {"completed": True, "failed": False, "cancelled": False, "refused": False}.get(outcome.status)),
        ("turns", outcome.turns if outcome.turns is not None else "—", None),
        ("tokens_used", outcome.tokens_used if outcome.tokens_used is not None else "—", None),
        ("pending_tool_use", ", ".join(outcome.pending) or "None", None),
        ("e-mails na caixa de saída", outcome.emails, outcome.emails <= 1),
        ("livro-razão", ", ".join(f"{key}: {status}" for key, status in outcome.ledger.items()) or "vazio", None),
        ("livro-razão e checkpoint concordam",
         "sim" if outcome.agrees else "; ".join(outcome.unreadable + outcome.disagreements), outcome.agrees),
        ("pedidos ao modelo", outcome.requests, None),
        ("pedidos com tool_use órfão", len(outcome.orphans), not outcome.orphans),
    ]


def outcome_html(outcome, title="o que ficou em disco"):
    rows = []
    for label, value, ok in outcome_summary(outcome):
        css = "" if ok is None else (' class="curso-ok"' if ok else ' class="curso-erro"')
        rows.append(f"<tr><th>{html.escape(label)}</th><td{css}>{html.escape(str(value))}</td></tr>")
    return f'<table class="curso-tabela"><caption>{html.escape(title)}</caption>{"".join(rows)}</table>'


def steps_html(steps):
    """Os processos que rodaram a execução, em ordem, com o código de saída e o que ele quer dizer."""
    if not steps:
        return "<p>(nenhum passo ainda)</p>"
    rows = "".join(
        f"<tr><td>{index}</td><td>{html.escape(step.action)}</td><td>{html.escape(step.crash_after or '—')}</td>"
        f"<td>{html.escape(step.mode if step.crash_after else '—')}</td><td>{step.exit_code}</td>"
        f"<td>{html.escape(step.meaning)}</td></tr>"
        for index, step in enumerate(steps, start=1)
    )
    return ('<table class="curso-tabela"><caption>passos</caption><tr><th>#</th><th>ação</th>'
            "<th>CRASH_AFTER</th><th>modo</th><th>saída</th><th>significado</th></tr>" + rows + "</table>")


def matrix_table(rows):
    """A matriz de quedas como (cabeçalho, linhas de texto): uma linha por queda + retomada."""
    header = ["queda em", "modo", "saída da queda", "saída da retomada", "status", "e-mails",
              "livro-razão × checkpoint", "requisições órfãs", "tudo certo"]
    lines = []
    for row in rows:
        o = row.outcome
        agreement = "concordam" if not o["disagreements"] and not o["unreadable"] else \
            "; ".join(o["unreadable"] + o["disagreements"])
        lines.append([f"{row.label}:{row.n}", row.mode, str(row.crash_code), str(row.resume_code),
                      str(o["status"]), str(o["emails"]), agreement, str(len(o["orphans"])),
                      "sim" if row.ok else "não"])
    return header, lines


def show_crash_matrix(rows, title="a matriz de quedas"):
    """A matriz em HTML (Jupyter) e em texto (terminal); a última coluna marca cada linha."""
    header, lines = matrix_table(rows)
    head = "".join(f"<th>{html.escape(cell)}</th>" for cell in header)
    body = []
    for line in lines:
        cells = "".join(f"<td>{html.escape(cell)}</td>" for cell in line[:-1])
        verdict = '<td class="curso-ok">sim</td>' if line[-1] == "sim" else '<td class="curso-erro">não</td>'
        body.append(f"<tr>{cells}{verdict}</tr>")
    html_text = (f'<table class="curso-tabela"><caption>{html.escape(title)}</caption>'
                 f"<tr>{head}</tr>{''.join(body)}</table>")
    plain = "\n".join([title, " | ".join(header)] + [" | ".join(line) for line in lines])
    return Rendered(html_text, plain)


class CrashCase:
    """Um caso do explorador: uma pasta de execução, os passos que a rodaram e o retrato dela.

    Tudo o que os botões do explorador fazem passa por estes métodos, que os testes chamam
    diretamente.
    """

    def __init__(self, base_dir, scenario="team-email"):
        from pathlib import Path

        self.base_dir = Path(base_dir)
        self.scenario = scenario
        self.number = 0
        self.run_dir = None
        self.steps = []

    def crash(self, label, n=1, mode="simulada"):
        """Começo limpo numa pasta nova, derrubado em ``label:n``."""
        from harness.display.crash_lab import crash_run

        self.number += 1
        self.run_dir = self.base_dir / f"caso-{self.number:02d}"
        self.steps = [crash_run(self.run_dir, label, n, mode, self.scenario)]
        return self.steps[-1]

    def resume(self, scenario=None):
        """``--resume`` na pasta atual (opcionalmente com outro roteiro do modelo)."""
        from harness.display.crash_lab import resume_run

        if self.run_dir is None:
            raise ValueError("nada para retomar: rode primeiro até uma queda")
        self.steps.append(resume_run(self.run_dir, scenario or self.scenario))
        return self.steps[-1]

    def outcome(self):
        from harness.display.crash_lab import run_outcome

        return run_outcome(self.run_dir) if self.run_dir is not None else None

    def report_html(self):
        """Passos, retrato, caixa de saída, livro-razão e a sequência de checkpoints do caso."""
        if self.run_dir is None:
            return "<p>Escolha o ponto de queda e clique em <b>Rodar até a queda</b>.</p>"
        from harness.display.crash_lab import world_of
        from harness.display.effects_view import show_effects
        from harness.display.show import show_outbox
        from harness.effects import EFFECTS_FILE, EffectsLedgerError, load_effects

        outcome = self.outcome()
        try:
            ledger = show_effects(load_effects(self.run_dir / EFFECTS_FILE)).html_text
        except EffectsLedgerError as error:
            ledger = f'<p class="curso-erro">{html.escape(str(error))}</p>'
        world = world_of(self.run_dir)
        outbox = show_outbox(world).html_text if world.outbox_path.exists() else "<p>(sem caixa de saída)</p>"
        strip = timeline_strip_html(timeline_frames(self.run_dir))
        return (STYLE + f"<p><b>{html.escape(self.run_dir.name)}</b></p>" + steps_html(self.steps)
                + '<div style="display:flex;gap:18px;flex-wrap:wrap;align-items:flex-start">'
                + f"<div>{outcome_html(outcome)}</div><div>{outbox}{ledger}</div></div>"
                + "<p><b>sequência de checkpoints</b> (A: decisão tomada, B: resultado registrado)</p>" + strip)


def crash_explorer(base_dir, scenario="team-email"):
    """Escolha o ponto de queda, a passagem e o modo; rode, retome e veja o que ficou em disco.

    Sem ipywidgets, devolve um texto explicando como usar ``CrashCase`` diretamente.
    """
    case = CrashCase(base_dir, scenario)
    try:
        import ipywidgets as widgets
    except ImportError:
        return Rendered("<p>ipywidgets não está instalado: use <code>CrashCase</code> diretamente.</p>",
                        "ipywidgets não está instalado: use CrashCase diretamente.")
    from harness.crash import CRASH_LABELS

    wide = {"description_width": "initial"}
    label = widgets.Dropdown(options=list(CRASH_LABELS), value="after-tool-run", description="rótulo", style=wide)
    n = widgets.BoundedIntText(value=1, min=1, max=9, description="passagem n", style=wide,
                               layout=widgets.Layout(width="150px"))
    mode = widgets.ToggleButtons(options=[("simulada", "simulada"), ("SIGKILL de verdade", "sigkill")],
                                 tooltips=["SimulatedCrash neste processo (main() sai com 137)",
                                           "um processo filho de verdade, morto com SIGKILL"],
                                 value="simulada", description="modo", style={**wide, "button_width": "170px"})
    script = widgets.Dropdown(options=[("o mesmo roteiro", scenario), ("outro roteiro (team-email-variant)",
                                                                        "team-email-variant")],
                              value=scenario, description="retomar com", style=wide,
                              layout=widgets.Layout(width="360px"))
    auto = widgets.Layout(width="auto")
    crash_button = widgets.Button(description="1. Rodar até a queda", button_style="danger", layout=auto)
    resume_button = widgets.Button(description="2. Retomar (--resume)", button_style="success", disabled=True,
                                   layout=auto)
    view = widgets.HTML(value=case.report_html())

    def on_crash(_button):
        crash_button.disabled = resume_button.disabled = True
        try:
            case.crash(label.value, n.value, mode.value)
        except Exception as error:  # noqa: BLE001 - o explorador mostra o erro em vez de sumir
            view.value = f'<p class="curso-erro">{html.escape(type(error).__name__)}: {html.escape(str(error))}</p>'
        else:
            view.value = case.report_html()
            resume_button.disabled = False
        finally:
            crash_button.disabled = False

    def on_resume(_button):
        try:
            case.resume(script.value)
        except Exception as error:  # noqa: BLE001
            view.value = f'<p class="curso-erro">{html.escape(type(error).__name__)}: {html.escape(str(error))}</p>'
        else:
            view.value = case.report_html()

    crash_button.on_click(on_crash)
    resume_button.on_click(on_resume)
    box = widgets.VBox([widgets.HBox([label, n]), mode, widgets.HBox([crash_button, script, resume_button]), view])
    box.case = case  # para inspecionar (e testar) o caso por trás dos botões
    return box
