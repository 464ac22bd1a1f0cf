"""Level 2: ``undo_decision`` puts back the scene before a decision, without running anything."""
from __future__ import annotations

from grader.checks.exercise_5.fixtures import EXERCISE, RUN_FOLDER, _point, active_point_name, write_run_dir
from grader.checks.exercise_5.probes import (
    ask_a_missing_decision,
    files_of,
    require_folder_untouched,
    require_timeline_error,
    snapshot,
)
from grader.checks.exercise_5.rewind_probe import (
    TORN_AFTER_CHARACTERS,
    has_later_points,
    has_rewind,
    readable_json,
    returned_scene,
    rewound,
)
from grader.checks.framework import CheckFailed, Context, Fixture, nothing_observed, show
from grader.core.plural import quantity


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=has_rewind,
    title="Volta à cena anterior à decisão",
    criterion=(
        "undo_decision(run_dir, tool_name) devolve a cena gravada no ponto imediatamente anterior ao "
        "primeiro ponto A da sequência ativa em que o modelo pediu tool_name, com turns e tokens_used "
        "daquele ponto e todo o histórico até ali, sem nada a mais."
    ),
)
def scene_of_the_turn(ctx: Context, fixture: Fixture) -> None:
    run = rewound(ctx, fixture)
    scene = returned_scene(run)
    source = run.source
    for key in ("turns", "tokens_used", "task"):
        if scene.get(key) != source[key]:
            hint = ""
            if key == "turns" and isinstance(scene.get(key), int) and scene[key] == run.turn + 1:
                hint = (f" A cena devolvida é do turno da decisão (turns={scene[key]}): voltar ao turno da "
                        "decisão não a desfaz; o destino é o ponto ANTERIOR ao ponto A em que ela aparece.")
            elif key == "turns" and isinstance(scene.get(key), int) and scene[key] != run.turn:
                hint = f" A cena devolvida é de outro turno (turns={scene[key]})."
            raise CheckFailed(
                f"{key} da cena devolvida é {show(scene.get(key), 60)}, mas no ponto anterior à decisão de "
                f"chamar {run.tool} (turn-{run.turn:03d}-{run.point}.json) é {show(source[key], 60)}.{hint}",
                expected=source[key], observed=scene.get(key),
            )
    messages, recorded = scene["messages"], source["messages"]
    if messages[: len(recorded)] != recorded:
        shorter = len(messages) < len(recorded)
        raise CheckFailed(
            f"As mensagens não são as de turn-{run.turn:03d}-{run.point}.json"
            + (": faltam mensagens. Voltou ao ponto A, que é anterior ao B do mesmo turno?" if shorter else "."),
            expected=f"{len(recorded)} mensagens gravadas no ponto", observed=f"{len(messages)} mensagens",
        )
    extra = len(messages) - len(recorded)
    if extra > 0:
        raise CheckFailed(
            f"A cena devolvida tem {quantity(extra, 'mensagem', 'mensagens')} a mais do que o ponto gravado: rebobinar não "
            "acrescenta nada, nem os tool_result das chamadas que ficaram abertas (quem os produz é a "
            "próxima execução, pelo livro-razão e pela válvula).",
            expected=f"{len(recorded)} mensagens", observed=f"{len(messages)} mensagens",
        )


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=has_rewind,
    title="Desfazer a decisão não executa nada",
    criterion=(
        "undo_decision não executa nenhuma ferramenta e não mexe no livro-razão nem no mundo: a cena "
        "volta com o pending_tool_use gravado no ponto de destino e nenhum ponto novo é gravado. O que "
        "a decisão desfeita já fez no mundo fica lá."
    ),
)
def rewind_runs_nothing(ctx: Context, fixture: Fixture) -> None:
    run = rewound(ctx, fixture)
    scene = returned_scene(run)
    if run.calls or run.world_changed:
        names = ", ".join(sorted({c.name for c in run.calls})) or "uma ferramenta"
        world = f" e mudou o mundo ({run.world_changed})" if run.world_changed else ""
        raise CheckFailed(
            f"undo_decision executou {names}{world}. Rebobinar só move estado: nenhuma ferramenta roda, "
            "nem para \"fechar\" ou \"desfazer\" a decisão; o que ela já fez no mundo continua lá, e "
            "consertar o mundo é uma ação nova, decidida como qualquer outra.",
            expected="nenhuma ferramenta executada", observed=run.world_changed or names,
        )
    for name in ("effects.json", "approvals.json"):
        if run.before.get(name) != run.after.get(name):
            raise CheckFailed(
                f"A rebobinagem alterou {name}. Ela não grava intenções, recibos nem decisões: o livro-razão "
                "e as aprovações só mudam quando uma ferramenta passa de fato por eles.",
                expected=f"{name} intacto", observed="alterado" if name in run.after else "apagado ou criado",
            )
    pending = run.source["pending_tool_use"]
    if scene.get("pending_tool_use") != pending:
        closed = pending and not scene.get("pending_tool_use")
        raise CheckFailed(
            ("As chamadas abertas do ponto A foram fechadas na rebobinagem. Deixe-as pendentes: fechar "
             "é decidir o que fazer com cada uma (reaproveitar um recibo, rodar de novo, pedir aprovação), "
             "e isso é trabalho da próxima execução." if closed else
             f"pending_tool_use da cena devolvida não é o do ponto turn-{run.turn:03d}-{run.point}.json."),
            expected=pending, observed=scene.get("pending_tool_use"),
        )
    created = sorted(set(filter(None, map(active_point_name, run.after))) - set(filter(None, map(active_point_name, run.before))))
    if created:
        raise CheckFailed(
            f"A rebobinagem gravou {', '.join(created)} na sequência: um ponto que nenhuma execução "
            "gravou. Rebobinar só escolhe um ponto que já existe.",
            expected="nenhum ponto novo", observed=created,
        )


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=has_later_points,
    title="A decisão e o que veio depois saem da sequência ativa, sem serem apagados",
    criterion=(
        "Depois de desfazer a decisão, nenhum ponto posterior ao destino (o ponto A da decisão incluído) "
        "fica diretamente em checkpoints/ (eles vão para uma subpasta, como rewound-001/, com os mesmos "
        "bytes), e os pontos até o destino continuam lá, intactos."
    ),
)
def later_points_set_aside(ctx: Context, fixture: Fixture) -> None:
    run = rewound(ctx, fixture)
    returned_scene(run)
    later = [n for n in run.active_after if _point(n) > (run.turn, run.point)]
    if later:
        raise CheckFailed(
            f"Depois de voltar para turn-{run.turn:03d}-{run.point}.json, a sequência ativa ainda tem "
            f"{', '.join(later)}. Se eles ficarem, o último ponto da sequência é de uma história abandonada "
            "(e o ponto A da decisão desfeita continua lá). Mova-os para uma subpasta: "
            f"set_aside_points_after(run_dir, {run.turn}, \"{run.point}\") faz isso.",
            expected=f"nenhum ponto depois de turn-{run.turn:03d}-{run.point}.json", observed=later,
        )
    before_points = {k: v for k, v in run.before.items() if active_point_name(k)}
    kept_bytes = list(run.after.values())
    for relative, data in before_points.items():
        if _point(active_point_name(relative)) > (run.turn, run.point):
            if data not in kept_bytes:
                raise CheckFailed(
                    f"{relative} sumiu: a rebobinagem tira os pontos posteriores da sequência ativa, mas "
                    "não apaga a história (guarde-os numa subpasta, como rewound-001/).",
                    expected=f"{relative} guardado numa subpasta", observed="apagado",
                )
        elif run.after.get(relative) != data:
            raise CheckFailed(
                f"{relative} (até o destino) foi apagado ou alterado: os pontos anteriores ficam como estão.",
                expected="intacto", observed="alterado" if relative in run.after else "apagado",
            )


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=has_rewind,
    title="Uma queda no meio da rebobinagem não deixa arquivo pela metade",
    criterion=(
        "Se o processo morre no meio de uma escrita da rebobinagem (o corretor faz a escrita parar depois "
        "de alguns bytes), todo arquivo .json da pasta da execução continua inteiro e legível: o "
        "checkpoint.json e os pontos são gravados com troca atômica."
    ),
)
def rewind_survives_a_torn_write(ctx: Context, fixture: Fixture) -> None:
    from grader.checks.write_spies import observed_writes

    undo_decision = ctx.student_function("undo_decision")
    with ctx.tools(fixture, "rewind-torn") as spy:
        run_dir = write_run_dir(fixture.data, spy.workspace.root / RUN_FOLDER)
        before = files_of(snapshot(run_dir))
        with observed_writes(ctx, crash_after=TORN_AFTER_CHARACTERS) as budget:
            ctx.call_or_problem(undo_decision, run_dir, fixture.expect["undo"]["tool"])
        after = files_of(snapshot(run_dir))
    if not budget["crashed"]:
        raise nothing_observed(
            "undo_decision não escreveu nenhum arquivo por open() (nem pelas funções do harness), então a queda no "
            "meio da escrita não pôde ser simulada", expected="a cena gravada em checkpoint.json")
    torn = sorted(path for path, data in after.items() if path.endswith(".json") and not readable_json(data)
                  and (path not in before or readable_json(before[path])))
    if torn:
        raise CheckFailed(
            f"O processo morreu no meio de uma escrita da rebobinagem e {', '.join(torn)} ficou pela metade: "
            "a próxima retomada não consegue ler a execução. Grave com as funções do harness (save_checkpoint, "
            "save_point), que escrevem num temporário e só então trocam pelo arquivo verdadeiro.",
            expected="todo .json inteiro e legível", observed=f"{', '.join(torn)} pela metade",
        )


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=has_rewind,
    title="A cena vira o checkpoint.json",
    criterion="Depois de rebobinar, checkpoint.json guarda exatamente a cena devolvida: é dali que o loop continua.",
)
def checkpoint_json_is_the_scene(ctx: Context, fixture: Fixture) -> None:
    run = rewound(ctx, fixture)
    scene = returned_scene(run)
    if run.checkpoint_json != scene:
        turns = run.checkpoint_json.get("turns") if isinstance(run.checkpoint_json, dict) else run.checkpoint_json
        raise CheckFailed(
            f"checkpoint.json não é a cena devolvida (lá, turns={show(turns, 40)}): grave a cena com "
            "save_checkpoint(cena, run_dir / CHECKPOINT_FILE), senão a próxima retomada continua da "
            "história abandonada.",
            expected=f"a cena do turno {run.turn}", observed=f"turns={show(turns, 40)}",
        )


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=lambda fixture: "undo_missing_tool" in fixture.expect,
    title="Uma decisão que não está na sequência ativa é um erro claro, e nada muda",
    criterion=(
        "undo_decision para uma ferramenta que o modelo nunca pediu na sequência ativa (ou só pediu numa "
        "história já posta de lado em rewound-NNN/) levanta TimelineError e não mexe em nenhum arquivo."
    ),
)
def unknown_decision_is_refused(ctx: Context, fixture: Fixture) -> None:
    tool, returned, error, changed, _ = ask_a_missing_decision(ctx, fixture, "undo_decision", "rewind-missing")
    aside = any("/rewound-" in path for path in fixture.data["run_dir"])
    abandoned = " (os pontos em rewound-NNN/ são de uma história abandonada: não contam)" if aside else ""
    require_timeline_error(
        returned, error, 80,
        lambda shown: f"undo_decision(run_dir, {tool!r}) devolveu {shown}, mas na sequência ativa o modelo "
                      f"nunca pediu {tool}{abandoned}: levante TimelineError dizendo isso.",
        lambda described: f"undo_decision(run_dir, {tool!r}) levantou {described}. Uma decisão que não existe "
                          "merece um erro que explique isso (TimelineError), não um erro qualquer de Python.",
    )
    require_folder_untouched(changed, "recuse antes de mudar qualquer coisa.")
