"""`course figures`: write the lessons' generated figures (lessons/figuras/) from their templates.

The course map (mapa-licao-N.svg) shows the harness's layers (display -> core -> stores) and
which lesson builds which part of the core, with the current lesson (or appendix) marked.
Every map comes from `course_map_svg`, so the copies in each lesson cannot drift apart.
Two figures are drawn from a run of the harness itself (`authoring.run_figures`): lesson 2's
crash windows and lesson 5's tree of lines. `course check` reports any of these files that
differs from what this module would write.
"""
from __future__ import annotations

import argparse
from collections.abc import Callable
from html import escape
from pathlib import Path

FIGURES_DIR = Path("lessons") / "figuras"
# Every lesson and both appendices (7: the stores, 8: the model's side) open with the map.
MAP_LESSONS = (1, 2, 3, 4, 5, 6, 7, 8)
STORES_APPENDIX, MODEL_APPENDIX = 7, 8

# (lesson, topic, modules it builds): the core's pieces, in course order.
CORE_PIECES = (
    (1, "o loop", "loop, tools"),
    (2, "checkpoint", "checkpoint"),
    (3, "retomada", "resume"),
    (4, "efeitos e aprovação", "effects, approval"),
    (5, "rebobinar e bifurcar", "timeline"),
    (6, "verificação", "crash, runner"),
)
MODEL_MODULES = "model_errors, model_stream, token_budget, resilient_loop"
WIDTH, HEIGHT = 800, 340
BOX_WIDTH, BOX_GAP, LEFT = 120, 8, 20
HERE = ("#1d4e89", "#0b2545", "#ffffff")  # fill, stroke, ink of the marked part (dark: survives greyscale)
ELSEWHERE = ("#ffffff", "#7a8ca3", "#1b1b1b")
BAND = ("#eef2f7", "#7a8ca3", "#1b1b1b")


def map_name(lesson: int) -> str:
    return f"mapa-licao-{lesson}.svg"


def _piece(index: int, lesson: int, topic: str, modules: str, current: int) -> str:
    x = LEFT + index * (BOX_WIDTH + BOX_GAP)
    middle = x + BOX_WIDTH // 2
    here = lesson == current
    fill, stroke, ink = HERE if here else ELSEWHERE
    width = 3 if here else 1
    lines = [
        f'  <rect x="{x}" y="118" width="{BOX_WIDTH}" height="84" rx="6" fill="{fill}" '
        f'stroke="{stroke}" stroke-width="{width}"/>',
        f'  <text x="{middle}" y="138" text-anchor="middle" font-size="13" font-weight="bold" '
        f'fill="{ink}">Lição {lesson}</text>',
        f'  <text x="{middle}" y="158" text-anchor="middle" font-size="12" fill="{ink}">{escape(topic)}</text>',
        f'  <text x="{middle}" y="176" text-anchor="middle" font-size="11" font-family="monospace" '
        f'fill="{ink}">{escape(modules)}</text>',
    ]
    if here:
        lines.append(f'  <text x="{middle}" y="195" text-anchor="middle" font-size="12" font-weight="bold" '
                     f'fill="#ffd166">você está aqui</text>')
    return "\n".join(lines)


def place(current: int) -> str:
    """Where the reader is, as the map's title says it: "na lição 3", "no apêndice dos armazenamentos"."""
    if current == STORES_APPENDIX:
        return "no apêndice dos armazenamentos"
    if current == MODEL_APPENDIX:
        return "no apêndice do lado do modelo"
    return f"na lição {current}"


def map_title(current: int) -> str:
    return f"Mapa do curso: você está {place(current)}"


def _band(y: int, height: int, here: bool, title: str, subtitle: str) -> str:
    fill, stroke, ink = HERE if here else BAND
    subtitle += " — você está aqui" if here else ""
    return (f'  <rect x="{LEFT}" y="{y}" width="{WIDTH - 2 * LEFT}" height="{height}" rx="6" fill="{fill}" '
            f'stroke="{stroke}" stroke-width="{3 if here else 1}"/>\n'
            f'  <text x="{WIDTH // 2}" y="{y + height // 2 - 4}" text-anchor="middle" font-size="14" '
            f'font-weight="bold" fill="{ink}">{escape(title)}</text>\n'
            f'  <text x="{WIDTH // 2}" y="{y + height // 2 + 14}" text-anchor="middle" font-size="12" '
            f'fill="{ink}">{escape(subtitle)}</text>')


def course_map_svg(current: int) -> str:
    """The course map with lesson `current` marked (1 to 6; 7 and 8 mark the two appendices)."""
    if current not in MAP_LESSONS:
        raise ValueError(f"não existe a lição {current}: o curso vai da 1 à 6, mais os apêndices 7 e 8")
    title = map_title(current)
    piece = {STORES_APPENDIX: "os armazenamentos", MODEL_APPENDIX: "o lado do modelo"}.get(current) or next(
        topic for lesson, topic, _ in CORE_PIECES if lesson == current)
    desc = (
        "As três camadas do harness, de cima para baixo: a exibição (harness/display), que só existe para "
        "mostrar as coisas nas lições; o núcleo, que uma execução durável importa, com a peça que cada lição "
        "de 1 a 6 constrói e, embaixo delas, a do apêndice do lado do modelo (erros da API, streaming, "
        "orçamento de tokens); e os armazenamentos (harness/stores), vistos no apêndice do arquivo ao banco. "
        f"As setas indicam quem importa quem. Em destaque, {place(current).split(' ', 1)[1]}: {piece}."
    )
    pieces = "\n".join(_piece(i, *piece_row, current) for i, piece_row in enumerate(CORE_PIECES))
    model = _band(210, 40, current == MODEL_APPENDIX, "Apêndice: o lado do modelo",
                  f"{MODEL_MODULES.replace(', ', ' · ')}")
    stores = _band(278, 50, current == STORES_APPENDIX, "Armazenamentos (harness/stores)",
                   "arquivos, SQLite e PostgreSQL: o apêndice do arquivo ao banco")
    return f"""<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}" font-family="sans-serif">
  <title>{escape(title)}</title>
  <desc>{escape(desc)}</desc>
  <defs>
    <marker id="seta" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto">
      <path d="M0,0 L10,5 L0,10 z" fill="#4a5a70"/>
    </marker>
  </defs>
  <rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>
  <rect x="{LEFT}" y="14" width="{WIDTH - 2 * LEFT}" height="50" rx="6" fill="#eef2f7" stroke="#7a8ca3"/>
  <text x="{WIDTH // 2}" y="35" text-anchor="middle" font-size="14" font-weight="bold" fill="#1b1b1b">Exibição (harness/display)</text>
  <text x="{WIDTH // 2}" y="53" text-anchor="middle" font-size="12" fill="#1b1b1b">tabelas, linha do tempo e quedas de propósito: só para as lições</text>
  <line x1="{WIDTH // 2}" y1="64" x2="{WIDTH // 2}" y2="86" stroke="#4a5a70" stroke-width="2" marker-end="url(#seta)"/>
  <text x="{WIDTH // 2 + 8}" y="80" font-size="12" fill="#4a5a70">importa</text>
  <rect x="{LEFT - 8}" y="88" width="{WIDTH - 2 * LEFT + 16}" height="168" rx="8" fill="none" stroke="#7a8ca3" stroke-dasharray="5 4"/>
  <text x="{LEFT}" y="108" font-size="13" font-weight="bold" fill="#1b1b1b">Núcleo: o que uma execução durável importa (uma peça por lição)</text>
{pieces}
{model}
  <line x1="{WIDTH // 2}" y1="256" x2="{WIDTH // 2}" y2="276" stroke="#4a5a70" stroke-width="2" marker-end="url(#seta)"/>
  <text x="{WIDTH // 2 + 8}" y="271" font-size="12" fill="#4a5a70">importa</text>
{stores}
</svg>
"""


def expected_maps(root: Path) -> dict[Path, str]:
    return {Path(root) / FIGURES_DIR / map_name(n): course_map_svg(n) for n in MAP_LESSONS}


def run_figures() -> dict[str, Callable[[], str]]:
    from authoring.run_figures import RUN_FIGURES

    return RUN_FIGURES


def expected_figures(root: Path) -> dict[Path, str]:
    """Every generated figure: the maps, and the figures drawn from a run of the harness."""
    figures = expected_maps(root)
    figures.update({Path(root) / FIGURES_DIR / name: draw() for name, draw in run_figures().items()})
    return figures


def check_problems(root: Path) -> list[str]:
    """A generated figure missing or different from what its template draws: run `course figures`."""
    problems = []
    for path, text in expected_figures(root).items():
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            problems.append(f"{path.relative_to(root)} está fora de sincronia com o modelo; rode `course figures`")
    return problems


def add_arguments(parser: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int:
    written = 0
    figures = expected_figures(Path(args.root))
    for path, text in figures.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written += 1
    print(f"course figures: {written} de {len(figures)} figuras geradas regravadas em {FIGURES_DIR}")
    return 0
