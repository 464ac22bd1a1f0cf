"""Two lesson figures drawn from a run of the harness itself, so they cannot drift from it.

- lesson 2 (`crash_windows_svg`): turn 2 of the e-mail task, run by the lesson's `run_agent`
  with a spy on its saves; each crash window shows the checkpoint that a crash there leaves
  on disk (turns, message count, pending_tool_use), read from the saves themselves;
- lesson 5 (`tree_of_lines_svg`): the same task sent off course, rewound to turn 1 with
  `rewind_to`, run again, then forked at turn 1 with `fork_from`; the file names, the folder
  the rewind set aside, the fork's `parent` and dry-run are read from the folders it left.

Both runs are offline (the scripted endpoint) and take well under a second. Nothing random
reaches the drawing: timeline ids and dates are named, not printed.
"""
from __future__ import annotations

import copy
import json
import tempfile
from html import escape
from pathlib import Path

WIDTH = 800
INK, MUTED, LINE = "#1b1b1b", "#4a5a70", "#7a8ca3"
SCENARIO = "team-email"


def _text(x: float, y: float, content: str, size: int = 12, weight: str = "normal", anchor: str = "start",
          mono: bool = False, fill: str = INK, italic: bool = False) -> str:
    family = ' font-family="monospace"' if mono else ""
    style = ' font-style="italic"' if italic else ""
    bold = ' font-weight="bold"' if weight == "bold" else ""
    return (f'  <text x="{x}" y="{y}" font-size="{size}"{bold}{style}{family} text-anchor="{anchor}" '
            f'fill="{fill}">{escape(content)}</text>')


def _svg(height: int, label: str, title: str, desc: str, body: list[str], defs: str = "") -> str:
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{escape(label)}" font-family="sans-serif">',
        f"  <title>{escape(title)}</title>",
        f"  <desc>{escape(desc)}</desc>",
        "  <defs>",
        '    <marker id="seta" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto">',
        f'      <path d="M0,0 L10,5 L0,10 z" fill="{MUTED}"/>',
        "    </marker>",
        '    <pattern id="hachura" width="8" height="8" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)">',
        '      <rect width="8" height="8" fill="#ffffff"/>',
        f'      <line x1="0" y1="0" x2="0" y2="8" stroke="{MUTED}" stroke-width="3"/>',
        "    </pattern>",
        defs,
        "  </defs>",
        f'  <rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#ffffff"/>',
        *body,
        "</svg>",
        "",
    ])


# ------------------------------------------------------------------ lesson 2: the crash windows

def turn_save_points() -> list[dict]:
    """Every state the lesson's `run_agent` saves on the e-mail task, in order (deep copies)."""
    import harness.checkpointed_loop as checkpointed_loop
    from harness.fake_endpoint import make_stub_client
    from harness.loop import new_run_state
    from harness.scenarios import load_scenario
    from harness.tools import workspace_in_use

    scenario = load_scenario(SCENARIO)
    saved: list[dict] = []
    real_save = checkpointed_loop.save_checkpoint

    def spy(state, path):
        real_save(state, path)
        saved.append(copy.deepcopy(state))

    with tempfile.TemporaryDirectory(prefix="figura-licao-2-") as folder:
        with workspace_in_use(scenario.make_workspace(Path(folder) / "mundo")):
            checkpointed_loop.save_checkpoint = spy
            try:
                checkpointed_loop.run_agent(make_stub_client(scenario.responses), new_run_state(scenario.task),
                                            Path(folder) / "checkpoint.json")
            finally:
                checkpointed_loop.save_checkpoint = real_save
    return saved


def _first_side_effect_turn(saved: list[dict]) -> tuple[dict, dict, dict]:
    """(B of the turn before, A, B) around the first turn whose pending call is not a read."""
    from harness.tools import READ_ONLY_TOOLS

    for index, state in enumerate(saved):
        pending = state["pending_tool_use"] or []
        if any(call["name"] not in READ_ONLY_TOOLS for call in pending):
            return saved[index - 1], state, saved[index + 1]
    raise RuntimeError("o cenário não tem um turno com efeito no mundo")


def _scene_lines(state: dict) -> list[str]:
    pending = state["pending_tool_use"]
    calls = "null" if not pending else "[" + ", ".join(f"{c['name']} {c['id']}" for c in pending) + "]"
    return [f"turns = {state['turns']} · {len(state['messages'])} mensagens", "pending_tool_use =", f"  {calls}"]


def crash_windows_svg() -> str:
    before, point_a, point_b = _first_side_effect_turn(turn_save_points())
    turn = point_a["turns"]
    call = point_a["pending_tool_use"][0]
    recipient = call["input"].get("to", "")
    x_b0, x_a, x_effect, x_b, x_end = 40, 262, 420, 560, 770
    axis, top, panel = 126, 184, 222
    windows = [
        (x_b0, x_a, 1, "queda antes do ponto A", f"o ponto B do turno {turn - 1}", before,
         ["chama o modelo de novo: o turno", f"{turn} recomeça, e nada saiu"], "#eef2f7"),
        (x_a, x_b, 2, "queda entre os pontos A e B", f"o ponto A do turno {turn}", point_a,
         ["o arquivo é o mesmo antes e depois", f"do efeito: {call['name']} pode ter rodado",
          "ou não; a lição 3 reconcilia o pedido"], "#fff1cc"),
        (x_b, x_end, 3, "queda depois do ponto B", f"o ponto B do turno {turn}", point_b,
         ["chama o modelo de novo: o", "resultado já está na conversa"], "#eef2f7"),
    ]
    body = [
        _text(WIDTH // 2, 26, f"O turno {turn}: dois pontos de gravação, três janelas de queda", 15, "bold",
              "middle"),
        _text(WIDTH // 2, 46, "a tarefa do e-mail, gravada pelo run_agent da lição 2: o que o checkpoint.json "
                              "tem quando o processo morre", 12, anchor="middle", fill=MUTED),
        f'  <line x1="{x_b0}" y1="{axis}" x2="{x_end}" y2="{axis}" stroke="{INK}" stroke-width="2" '
        f'marker-end="url(#seta)"/>',
        _text(x_end, axis - 10, "tempo", 12, anchor="end", fill=MUTED),
        _text((x_b0 + x_a) / 2, 82, f"1–2. o modelo pede {call['name']};", 12, anchor="middle"),
        _text((x_b0 + x_a) / 2, 98, "a resposta entra em messages", 12, anchor="middle"),
        _text((x_a + x_b) / 2, 82, f"3. {call['name']} roda: o e-mail sai para {recipient}", 12,
              anchor="middle"),
        _text((x_a + x_b) / 2, 98, "4. o tool_result entra em messages", 12, anchor="middle"),
        _text((x_b + x_end) / 2, 98, f"o turno {turn + 1} chama o modelo", 12, anchor="middle"),
        # the effect in the world, between A and B
        f'  <path d="M{x_effect},{axis - 9} L{x_effect + 9},{axis} L{x_effect},{axis + 9} '
        f'L{x_effect - 9},{axis} z" fill="{INK}"/>',
        _text(x_effect, axis + 30, "◆ o efeito", 12, "bold", "middle"),
    ]
    for x, label in ((x_b0, f"ponto B do turno {turn - 1}"), (x_a, f"ponto A do turno {turn}"),
                     (x_b, f"ponto B do turno {turn}")):
        body += [
            f'  <circle cx="{x}" cy="{axis}" r="13" fill="{INK}"/>',
            _text(x, axis + 5, "A" if x == x_a else "B", 14, "bold", "middle", fill="#ffffff"),
            _text(x - 13 if x == x_b0 else x, axis + 30, label, 12, "bold", "start" if x == x_b0 else "middle"),
        ]
    for left, right, number, heading, scene, state, resume, fill in windows:
        x, w = left + 4, right - left - 8
        inset = 12 if number == 2 else 0  # the hatched edge: window 2 stands out in greyscale too
        body += [
            f'  <path d="M{left + 2},{axis + 40} L{left + 2},{axis + 46} L{right - 2},{axis + 46} '
            f'L{right - 2},{axis + 40}" fill="none" stroke="{MUTED}" stroke-width="1.5"/>',
            f'  <line x1="{(left + right) / 2}" y1="{axis + 46}" x2="{(left + right) / 2}" y2="{top}" '
            f'stroke="{MUTED}" stroke-width="1.5"/>',
            f'  <rect x="{x}" y="{top}" width="{w}" height="{panel}" rx="6" fill="{fill}" stroke="{INK}" '
            f'stroke-width="{2.5 if number == 2 else 1}"/>',
        ]
        if inset:
            body.append(f'  <rect x="{x + 1.5}" y="{top + 1.5}" width="{inset}" height="{panel - 3}" '
                        f'fill="url(#hachura)"/>')
        body += [
            f'  <circle cx="{x + 18 + inset}" cy="{top + 20}" r="11" fill="#ffffff" stroke="{INK}" '
            f'stroke-width="1.5"/>',
            _text(x + 18 + inset, top + 25, str(number), 13, "bold", "middle"),
            _text(x + 36 + inset, top + 25, heading, 13, "bold"),
            _text(x + 10 + inset, top + 52, "no disco:", 12, fill=MUTED),
            _text(x + 10 + inset, top + 69, scene, 12, "bold"),
        ]
        for i, line in enumerate(_scene_lines(state)):
            body.append(_text(x + 10 + inset, top + 90 + 17 * i, line, 12, mono=True))
        body.append(_text(x + 10 + inset, top + 156, "a retomada:", 12, fill=MUTED))
        for i, line in enumerate(resume):
            body.append(_text(x + 10 + inset, top + 173 + 17 * i, line, 12))
    title = "Um turno, dois pontos de gravação, três janelas de queda"
    label = (f"O turno {turn} da tarefa do e-mail com os pontos de gravação A e B, e o que o checkpoint em disco "
             "guarda e o que a retomada faz quando o processo morre antes de A, entre A e B ou depois de B")
    desc = (
        f"Uma linha do tempo do turno {turn}, da esquerda para a direita: o ponto B do turno {turn - 1}; o modelo "
        f"responde com um tool_use de {call['name']} e a resposta entra em messages; o ponto A grava essa decisão; "
        f"{call['name']} roda e o e-mail sai para {recipient}; o tool_result entra em messages; o ponto B grava o "
        "resultado. Embaixo, as três janelas de queda. Janela 1, antes do ponto A: o disco tem o ponto B do turno "
        f"{turn - 1} ({_plain(before)}); a retomada chama o modelo de novo. Janela 2, entre A e B: o disco tem o "
        f"ponto A do turno {turn} ({_plain(point_a)}); o arquivo é o mesmo antes e depois de o e-mail sair, e a "
        "retomada precisa reconciliar o pedido pendente, assunto da lição 3. Janela 3, depois do ponto B: o disco "
        f"tem o ponto B do turno {turn} ({_plain(point_b)}); a retomada chama o modelo de novo."
    )
    return _svg(top + panel + 16, label, title, desc, body)


def _plain(state: dict) -> str:
    pending = state["pending_tool_use"]
    calls = "nenhum pedido pendente" if not pending else "pendente: " + ", ".join(
        f"{c['name']} {c['id']}" for c in pending)
    return f"turns {state['turns']}, {len(state['messages'])} mensagens, {calls}"


# ------------------------------------------------------------------ lesson 5: the tree of lines

def _new_attempt(responses: list[dict], tag: str) -> list[dict]:
    """The same script with new tool_use ids, as a new call to the model would bring (lesson 5)."""
    return json.loads(json.dumps(responses).replace("toolu_01", f"toolu_{tag}"))


def _point_note(state: dict, point: str) -> str:
    if point == "A":
        pending = state["pending_tool_use"] or []
        if not pending:
            return "fim da tarefa"
        call = pending[0]
        return f"{call['name']} → {call['input']['to'].split('@')[0]}@" if "to" in call["input"] else call["name"]
    result = state["messages"][-1]["content"][0]
    return "[dry-run]: nada saiu" if str(result.get("content", "")).startswith("[dry-run]") else "resultado gravado"


def rewind_and_fork() -> dict:
    """Run the lesson's story and read back what the folders hold: the three rows of the tree."""
    from harness.fake_endpoint import make_stub_client
    from harness.loop import new_run_state
    from harness.scenarios import load_scenario
    from harness.timeline import (
        checkpoints_dir, fork_from, list_points, load_timeline, parse_point_name, read_point, rewind_to,
        run_timeline, start_timeline,
    )
    from harness.tools import workspace_in_use

    scenario = load_scenario(SCENARIO)
    off_course = copy.deepcopy(scenario.responses)
    off_course[1]["content"][1]["input"]["to"] = "todos@example.com"

    def row(paths: list[Path]) -> list[tuple[str, str]]:
        return [(p.name, _point_note(read_point(p), parse_point_name(p.name)[1])) for p in paths]

    with tempfile.TemporaryDirectory(prefix="figura-licao-5-") as folder:
        base = Path(folder)
        with workspace_in_use(scenario.make_workspace(base / "mundo")) as world:
            main, fork = base / "principal", base / "bifurcacao"
            start_timeline(main, new_run_state(scenario.task))
            run_timeline(make_stub_client(off_course), main)
            rewind_to(main, 1)
            rewound = sorted(p for p in checkpoints_dir(main).iterdir() if p.is_dir())
            run_timeline(make_stub_client(_new_attempt(scenario.responses, "02")), main)
            fork_from(main, 1, fork)
            run_timeline(make_stub_client(_new_attempt(scenario.responses, "04")), fork)
            outbox = [json.loads(line)["to"] for line in world.outbox_path.read_text(encoding="utf-8").splitlines()
                      if line.strip()]
            set_aside = rewound[0]
            return {
                "main": row(list_points(main)),
                "main_timeline": load_timeline(main),
                "rewound_folder": set_aside.name,
                "rewound": row(sorted(set_aside.iterdir(), key=lambda p: parse_point_name(p.name))),
                "fork": row(list_points(fork)),
                "fork_timeline": load_timeline(fork),
                "outbox": outbox,
            }


def tree_of_lines_svg() -> str:
    data = rewind_and_fork()
    parent, fork_info = data["fork_timeline"]["parent"], data["fork_timeline"]
    box_w, gap, left = 128, 22, 30
    column = {f"turn-{t:03d}-{p}.json": i for i, (t, p) in enumerate([(1, "A"), (1, "B"), (2, "A"), (2, "B"),
                                                                       (3, "A")])}

    def x_of(name: str) -> int:
        return left + column[name] * (box_w + gap)

    def boxes(points: list[tuple[str, str]], y: int, style: str) -> list[str]:
        fill, stroke, dash, ink = {
            "main": ("#ffffff", INK, "", INK),
            "rewound": ("#e9ecef", "#6c757d", ' stroke-dasharray="6 4"', "#495057"),
            "fork": ("#e3ecf9", INK, ' stroke-dasharray="2 3"', INK),
        }[style]
        out = []
        for i, (name, note) in enumerate(points):
            x = x_of(name)
            out += [f'  <rect x="{x}" y="{y}" width="{box_w}" height="46" rx="5" fill="{fill}" stroke="{stroke}" '
                    f'stroke-width="{1.5 if style == "rewound" else 2}"{dash}/>',
                    _text(x + box_w / 2, y + 19, name, 12, "bold", "middle", mono=True, fill=ink),
                    _text(x + box_w / 2, y + 37, note, 12, anchor="middle", fill=ink, italic=style == "rewound")]
            if i:
                previous = x_of(points[i - 1][0]) + box_w
                out.append(f'  <line x1="{previous}" y1="{y + 23}" x2="{x - 2}" y2="{y + 23}" stroke="{stroke}" '
                           f'stroke-width="1.5" marker-end="url(#seta)"/>')
        return out

    rewound_y, main_y, fork_y = 96, 190, 306
    copied = f"turn-{parent['turn']:03d}-{parent['point']}.json"
    rewind_from = x_of(f"turn-{parent['turn']:03d}-B.json")  # the rewind in the lesson goes back to turn 1 too
    fork_at = x_of(copied)
    first_set_aside = x_of(data["rewound"][0][0])
    parent_text = (f'parent = {{"timeline_id": <o da principal>, "turn": {parent["turn"]}, '
                   f'"point": "{parent["point"]}"}}')
    body = [
        _text(WIDTH // 2, 26, "Uma rebobinagem e uma bifurcação: a árvore de linhas do tempo", 15, "bold", "middle"),
        _text(WIDTH // 2, 46, "a tarefa do e-mail, desviada para todos@ no turno 2, rebobinada para o turno 1 "
                              "e bifurcada no turno 1", 12, anchor="middle", fill=MUTED),
        # the points the rewind set aside, with their story in the empty corner to their left
        _text(left, rewound_y + 12, f"principal/checkpoints/{data['rewound_folder']}/", 12, "bold", mono=True),
        _text(left, rewound_y + 30, "os pontos que a rebobinagem tirou", 12),
        _text(left, rewound_y + 46, "da sequência ativa, nunca apagados", 12),
        _text(left, rewound_y + 62, "(a rota do e-mail para todos@)", 12, fill=MUTED),
        *boxes(data["rewound"], rewound_y, "rewound"),
        f'  <path d="M{rewind_from + box_w - 16},{main_y} C{rewind_from + box_w - 16},{rewound_y + 40} '
        f'{first_set_aside - 30},{rewound_y + 23} {first_set_aside - 3},{rewound_y + 23}" fill="none" '
        f'stroke="#6c757d" stroke-width="1.5" stroke-dasharray="6 4" marker-end="url(#seta)"/>',
        _text(left, main_y - 12, f"rewind_to(principal, {parent['turn']})", 12, "bold", mono=True),
        # the main line, which goes on by the new route
        *boxes(data["main"], main_y, "main"),
        _text(fork_at + 36, main_y + 66, "linha principal (principal/): timeline.json com", 12, "bold"),
        _text(fork_at + 36, main_y + 82, f"parent = {json.dumps(data['main_timeline']['parent'])}, "
                                         f"dry_run = {json.dumps(data['main_timeline']['dry_run'])}", 12, mono=True),
        _text(fork_at + 36, main_y + 102, f"fork_from(principal, {parent['turn']}, bifurcacao) copia {copied}",
              12, "bold"),
        f'  <line x1="{fork_at + 24}" y1="{main_y + 46}" x2="{fork_at + 24}" y2="{fork_y - 2}" stroke="{INK}" '
        f'stroke-width="2" marker-end="url(#seta)"/>',
        # the fork's new line
        _text(left, fork_y + 20, "bifurcacao/", 12, "bold", mono=True),
        _text(left, fork_y + 37, "a linha nova", 12),
        *boxes(data["fork"], fork_y, "fork"),
        _text(left, fork_y + 70, "bifurcacao/timeline.json: timeline_id novo, sequência e livro-razão próprios, "
                                 f"dry_run = {json.dumps(fork_info['dry_run'])}", 12, "bold"),
        _text(left, fork_y + 87, parent_text, 12, mono=True),
    ]
    sent = ", ".join(data["outbox"])
    box_y = fork_y + 102
    body += [
        f'  <rect x="{left}" y="{box_y}" width="{WIDTH - 2 * left}" height="30" rx="5" fill="#ffffff" '
        f'stroke="{MUTED}"/>',
        _text(WIDTH // 2, box_y + 20, f"O mundo é um só. Na caixa de saída: {sent}. A bifurcação não mandou nenhum.",
              12, "bold", "middle"),
    ]
    title = "A árvore de linhas do tempo depois de uma rebobinagem e de uma bifurcação"
    label = (f"A linha principal com os pontos turn-NNN-A e turn-NNN-B, os pontos que rewind_to tirou para "
             f"{data['rewound_folder']} e a linha nova de fork_from, com o parent (linha, turno {parent['turn']}, "
             f"ponto {parent['point']}) e o dry-run")
    names = lambda points: ", ".join(name for name, _ in points)  # noqa: E731
    desc = (
        f"Três fileiras de pontos de gravação, da esquerda para a direita. No meio, a linha principal (pasta "
        f"principal): {names(data['main'])}, com parent nulo e sem dry-run. Em cima, em tracejado, os pontos que a "
        f"rebobinagem rewind_to(principal, {parent['turn']}) tirou da sequência ativa e guardou em "
        f"checkpoints/{data['rewound_folder']}: {names(data['rewound'])}, a rota em que o send_email foi para "
        f"todos@example.com; nada foi apagado, e a linha principal seguiu por uma nova rota, para team@example.com. "
        f"Embaixo, a linha nova de fork_from(principal, {parent['turn']}, bifurcacao): {names(data['fork'])}, "
        f"começando pela cópia do ponto {parent['point']} do turno {parent['turn']}; o timeline.json dela tem um "
        f"timeline_id novo, parent com o timeline_id da principal, turn {parent['turn']} e point "
        f"{parent['point']}, e dry_run verdadeiro, então o send_email dela devolve [dry-run] e não manda nada. "
        f"Na caixa de saída, que as linhas compartilham: {sent}."
    )
    return _svg(box_y + 44, label, title, desc, body)


# ------------------------------------------------------------------ what `course figures` writes

RUN_FIGURES = {
    "licao-2-janelas-de-queda.svg": crash_windows_svg,
    "licao-5-arvore-de-linhas.svg": tree_of_lines_svg,
}
