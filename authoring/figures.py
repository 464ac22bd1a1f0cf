"""`course figures`: write the course map (lessons/figuras/mapa-licao-N.svg) from one template.

The map shows the harness's layers (display -> core -> stores) and which lesson builds
which part of the core, with the current lesson marked. Every map comes from
`course_map_svg`, so the copies in each lesson cannot drift apart; `course check` reports
a map that differs from what this module would write.
"""
from __future__ import annotations

import argparse
from html import escape
from pathlib import Path

FIGURES_DIR = Path("lessons") / "figuras"
MAP_LESSONS = (1, 3, 4)  # the lessons whose first cell shows the map

# (lesson, topic, modules it builds): the core's pieces, in course order.
CORE_PIECES = (
    (1, "o loop", "loop, tools"),
    (2, "checkpoint", "checkpoint"),
    (3, "retomada", "resume"),
    (4, "efeitos e aprovação", "effects, approval"),
    (5, "rebobinar e bifurcar", "timeline"),
    (6, "verificação", "crash, runner"),
)
WIDTH, HEIGHT = 800, 300
BOX_WIDTH, BOX_GAP, LEFT = 120, 8, 20


def map_name(lesson: int) -> str:
    return f"mapa-licao-{lesson}.svg"


def _piece(index: int, lesson: int, topic: str, modules: str, current: int) -> str:
    x = LEFT + index * (BOX_WIDTH + BOX_GAP)
    middle = x + BOX_WIDTH // 2
    here = lesson == current
    fill, stroke, ink = ("#1d4e89", "#0b2545", "#ffffff") if here else ("#ffffff", "#7a8ca3", "#1b1b1b")
    width = 3 if here else 1
    lines = [
        f'  <rect x="{x}" y="118" width="{BOX_WIDTH}" height="84" rx="6" fill="{fill}" '
        f'stroke="{stroke}" stroke-width="{width}"/>',
        f'  <text x="{middle}" y="138" text-anchor="middle" font-size="13" font-weight="bold" '
        f'fill="{ink}">Lição {lesson}</text>',
        f'  <text x="{middle}" y="158" text-anchor="middle" font-size="11" fill="{ink}">{escape(topic)}</text>',
        f'  <text x="{middle}" y="176" text-anchor="middle" font-size="10" font-family="monospace" '
        f'fill="{ink}">{escape(modules)}</text>',
    ]
    if here:
        lines.append(f'  <text x="{middle}" y="195" text-anchor="middle" font-size="11" font-weight="bold" '
                     f'fill="#ffd166">você está aqui</text>')
    return "\n".join(lines)


def course_map_svg(current: int) -> str:
    """The course map with lesson `current` marked (1 to 7; 7 marks the stores' band)."""
    if not 1 <= current <= 7:
        raise ValueError(f"não existe a lição {current}: o curso vai da 1 à 7")
    title = f"Mapa do curso: você está na lição {current}"
    piece = next((topic for lesson, topic, _ in CORE_PIECES if lesson == current), "os armazenamentos")
    desc = (
        "As três camadas do harness, de cima para baixo: a exibição (harness/display), que só existe para "
        "mostrar as coisas nas lições; o núcleo, que uma execução durável importa, com a peça que cada lição "
        "de 1 a 6 constrói; e os armazenamentos (harness/stores), vistos no apêndice, a lição 7. As setas "
        f"indicam quem importa quem. Em destaque, a lição {current}: {piece}."
    )
    stores_here = current == 7
    stores_fill, stores_stroke = ("#1d4e89", "#0b2545") if stores_here else ("#eef2f7", "#7a8ca3")
    stores_ink = "#ffffff" if stores_here else "#1b1b1b"
    pieces = "\n".join(_piece(i, *piece_row, current) for i, piece_row in enumerate(CORE_PIECES))
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
  <text x="{WIDTH // 2 + 8}" y="80" font-size="11" fill="#4a5a70">importa</text>
  <rect x="{LEFT - 8}" y="88" width="{WIDTH - 2 * LEFT + 16}" height="124" rx="8" fill="none" stroke="#7a8ca3" stroke-dasharray="5 4"/>
  <text x="{LEFT}" y="108" font-size="13" font-weight="bold" fill="#1b1b1b">Núcleo: o que uma execução durável importa (uma peça por lição)</text>
{pieces}
  <line x1="{WIDTH // 2}" y1="212" x2="{WIDTH // 2}" y2="234" stroke="#4a5a70" stroke-width="2" marker-end="url(#seta)"/>
  <text x="{WIDTH // 2 + 8}" y="228" font-size="11" fill="#4a5a70">importa</text>
  <rect x="{LEFT}" y="236" width="{WIDTH - 2 * LEFT}" height="50" rx="6" fill="{stores_fill}" stroke="{stores_stroke}" stroke-width="{3 if stores_here else 1}"/>
  <text x="{WIDTH // 2}" y="257" text-anchor="middle" font-size="14" font-weight="bold" fill="{stores_ink}">Armazenamentos (harness/stores)</text>
  <text x="{WIDTH // 2}" y="275" text-anchor="middle" font-size="12" fill="{stores_ink}">arquivos, SQLite e PostgreSQL: o apêndice (lição 7){" — você está aqui" if stores_here else ""}</text>
</svg>
"""


def expected_maps(root: Path) -> dict[Path, str]:
    return {Path(root) / FIGURES_DIR / map_name(n): course_map_svg(n) for n in MAP_LESSONS}


def check_problems(root: Path) -> list[str]:
    """A map missing or different from the template: run `course figures`."""
    problems = []
    for path, text in expected_maps(root).items():
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            problems.append(f"{path.relative_to(root)} está fora de sincronia com o modelo; rode `course figures`")
    return problems


def add_arguments(parser: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int:
    written = 0
    for path, text in expected_maps(Path(args.root)).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written += 1
    print(f"course figures: {written} de {len(MAP_LESSONS)} mapas do curso regravados em {FIGURES_DIR}")
    return 0
