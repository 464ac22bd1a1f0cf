"""Level 3: ``fork_at_decision`` starts a new timeline at a decision and leaves the original alone."""
from __future__ import annotations

import json

from grader.checks.exercise_5.fixtures import CHECKPOINTS, EXERCISE
from grader.checks.exercise_5.fork_probe import creation_time_problem, fork_timeline, forked, has_fork
from grader.checks.exercise_5.probes import ask_a_missing_decision, differences, files_of, require_timeline_error
from grader.checks.framework import CheckFailed, Context, Fixture, nothing_observed, show


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=has_fork,
    title="A linha original fica idêntica, byte a byte",
    criterion=(
        "fork_at_decision só lê a pasta original: depois da bifurcação, e depois de a nova linha continuar, "
        "nenhum arquivo da original foi criado, alterado, movido ou apagado."
    ),
)
def original_untouched(ctx: Context, fixture: Fixture) -> None:
    run = forked(ctx, fixture)
    if not files_of(run.fork_files):
        raise nothing_observed(
            "fork_at_decision não gravou nenhum arquivo em new_run_dir, então não houve bifurcação cujo efeito na "
            "pasta original conferir", expected="a nova linha gravada em new_run_dir")
    for moment, after in (("a bifurcação", run.original_after_fork), ("a nova linha continuar", run.original_after_run)):
        changed = differences(run.original_before, after)
        if changed:
            raise CheckFailed(
                f"Depois de {moment}, a pasta original mudou: {changed}. Tudo o que é da nova linha "
                "(timeline.json, pontos, livro-razão, checkpoint.json) vai para new_run_dir.",
                expected="pasta original intacta", observed=changed,
            )


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=has_fork,
    title="Identidade própria, origem registrada, dry-run ligado",
    criterion=(
        "timeline.json da nova linha tem um timeline_id novo, parent = {timeline_id da original, turn, "
        "point do ponto copiado}, dry_run true e created_at (utc_now(), o instante da bifurcação); "
        "fork_at_decision devolve esse mesmo conteúdo."
    ),
)
def identity_and_parent(ctx: Context, fixture: Fixture) -> None:
    run = forked(ctx, fixture)
    info = fork_timeline(run)
    spec = fixture.expect["fork"]
    parent_id = spec["parent_timeline_id"]
    timeline_id = info.get("timeline_id")
    if not isinstance(timeline_id, str) or not timeline_id.strip():
        raise CheckFailed("timeline.json precisa de um timeline_id (texto) novo: use new_timeline_id().",
                          expected="um id novo", observed=timeline_id)
    if timeline_id == parent_id:
        raise CheckFailed(
            f"A nova linha tem o mesmo timeline_id da original ({parent_id}): copiar a pasta copia a "
            "identidade junto, e aí nada distingue uma linha da outra. Gere um id novo.",
            expected=f"um id diferente de {parent_id}", observed=timeline_id,
        )
    expected_parent = {"timeline_id": parent_id, "turn": spec["turn"], "point": spec["point"]}
    if info.get("parent") != expected_parent:
        raise CheckFailed(
            "parent deveria registrar de onde a linha veio: o timeline_id da original (de "
            "load_timeline(run_dir); \"principal\" quando a original não tem timeline.json), o turno e "
            "o ponto copiado.",
            expected=expected_parent, observed=info.get("parent"),
        )
    if info.get("dry_run") is not True:
        raise CheckFailed(
            "dry_run deveria ser true: duas linhas compartilham o mesmo mundo, e sem dry-run a nova "
            "linha repete os efeitos de alto impacto da original.",
            expected=True, observed=info.get("dry_run"),
        )
    created_at_problem = creation_time_problem(info.get("created_at"), run.called_between)
    if created_at_problem:
        raise CheckFailed(created_at_problem, expected="utc_now() no instante da bifurcação",
                          observed=info.get("created_at", "<ausente>"))
    if run.returned != info:
        raise CheckFailed("fork_at_decision deveria devolver o conteúdo de timeline.json da nova linha.",
                          expected=info, observed=show(run.returned, 200))


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=has_fork,
    title="Sequência própria e livro-razão herdado só das chamadas abertas",
    criterion=(
        "A sequência da nova linha começa com um único ponto, a cópia do ponto escolhido, com as "
        "chamadas abertas dele ainda pendentes; checkpoint.json é essa cena; o livro-razão da nova "
        "linha (effects.json) é gravado com os registros que a original tem dessas chamadas abertas, e só "
        "deles (em branco quando não há nenhum); e a bifurcação não executa nenhuma ferramenta."
    ),
)
def own_sequence_and_inherited_ledger(ctx: Context, fixture: Fixture) -> None:
    run = forked(ctx, fixture)
    if run.fork_calls:
        names = ", ".join(sorted({c.name for c in run.fork_calls}))
        raise CheckFailed(
            f"A bifurcação executou {names}. Ela só copia estado: as chamadas abertas do ponto copiado "
            "seguem pendentes, e a nova linha as resolve quando continuar.",
            expected="nenhuma ferramenta executada", observed=names,
        )
    expected_name = f"turn-{run.turn:03d}-{run.point}.json"
    if run.fork_points != [expected_name]:
        copied_all = len(run.fork_points) > 1
        raise CheckFailed(
            f"A sequência da nova linha deveria começar só com {expected_name}"
            + (": parece que a sequência inteira da original foi copiada. A nova linha tem a própria "
               "história, que começa no ponto da bifurcação." if copied_all else "."),
            expected=[expected_name], observed=run.fork_points,
        )
    scene = json.loads(run.fork_files[f"{CHECKPOINTS}/{expected_name}"])
    recorded = run.source["messages"]
    if not isinstance(scene, dict) or scene.get("messages", [])[: len(recorded)] != recorded \
            or scene.get("turns") != run.source["turns"]:
        raise CheckFailed(f"{expected_name} da nova linha não é a cena de turn-{run.turn:03d}-{run.point}.json da original.",
                          expected=f"turns={run.source['turns']}, {len(recorded)} mensagens",
                          observed=f"turns={scene.get('turns')}, {len(scene.get('messages', []))} mensagens")
    if scene.get("pending_tool_use") != run.source["pending_tool_use"] or len(scene["messages"]) != len(recorded):
        raise CheckFailed(
            "As chamadas abertas do ponto copiado deveriam seguir pendentes na nova linha: fechá-las na "
            "bifurcação é decidir por ela. A nova linha as resolve quando continuar.",
            expected=run.source["pending_tool_use"], observed=scene.get("pending_tool_use"),
        )
    raw = run.fork_files.get("checkpoint.json")
    if raw is None or json.loads(raw) != scene:
        raise CheckFailed("checkpoint.json da nova linha deveria ser a cena do ponto copiado: é dali que ela continua.",
                          expected=expected_name, observed="ausente" if raw is None else "outra cena")
    ledger_raw = run.fork_files.get("effects.json")
    if ledger_raw is None:
        raise CheckFailed(
            "new_run_dir não tem effects.json: o livro-razão da nova linha também é gravado, mesmo em "
            "branco. Uma pasta com checkpoint e sem livro-razão parece, para a retomada do harness, uma "
            "execução de antes do livro-razão (lições 2 e 3), e as chamadas abertas seriam fechadas sem ele.",
            expected="effects.json", observed=sorted(files_of(run.fork_files)),
        )
    try:
        ledger = json.loads(ledger_raw)
    except ValueError:
        raise CheckFailed("effects.json da nova linha não é JSON válido.", expected="um objeto JSON",
                          observed=ledger_raw[:80]) from None
    expected = inherited_records(run)
    original_raw = run.original_before.get("effects.json")
    if ledger == expected:
        return
    if ledger_raw == original_raw and isinstance(ledger, dict) and set(ledger) - set(expected):
        raise CheckFailed(
            "O livro-razão da original foi copiado inteiro para a nova linha. Os recibos de chamadas que "
            "não estão abertas no ponto copiado são fatos de decisões que a nova linha ainda não tomou; "
            "ela leva só os das chamadas abertas.",
            expected=sorted(expected), observed=sorted(ledger),
        )
    if ledger == {} and expected:
        names = ", ".join(f"{key} ({record.get('status')})" for key, record in sorted(expected.items()))
        raise CheckFailed(
            f"A nova linha começou com o livro-razão em branco, mas a original já tem registro de {names}, "
            "aberta no ponto copiado. Em branco, a nova linha fecharia essa chamada em dry-run e diria ao "
            "modelo que ela não foi executada, quando o efeito pode já estar no mundo que as duas linhas "
            "compartilham. Leve para a nova linha os registros das chamadas abertas no ponto.",
            expected=sorted(expected), observed={},
        )
    raise CheckFailed(
        "O livro-razão da nova linha deveria ter exatamente os registros que a original tem das chamadas "
        "abertas no ponto copiado, como estão lá.",
        expected=sorted(expected), observed=sorted(ledger) if isinstance(ledger, dict) else ledger,
    )


def inherited_records(run) -> dict:
    """The original's ledger records of the calls still open at the copied point."""
    raw = run.original_before.get("effects.json")
    try:
        ledger = json.loads(raw) if raw is not None else {}
    except ValueError:
        ledger = {}
    pending = {call.get("id") for call in run.source.get("pending_tool_use") or [] if isinstance(call, dict)}
    return {key: record for key, record in ledger.items() if key in pending} if isinstance(ledger, dict) else {}


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=has_fork,
    title="Em dry-run, a nova linha não toca o mundo",
    criterion=(
        "Quando a nova linha continua e decide mandar um e-mail, a caixa de saída e os chamados "
        "ficam idênticos, byte a byte: o dry-run simula as ferramentas de alto impacto."
    ),
)
def dry_run_keeps_the_world(ctx: Context, fixture: Fixture) -> None:
    run = forked(ctx, fixture)
    if run.world_changed_by_fork:
        raise CheckFailed(f"A própria bifurcação mudou o mundo ({run.world_changed_by_fork}).",
                          expected="mundo intacto", observed=run.world_changed_by_fork)
    if run.continuation_problem:
        raise CheckFailed(
            "Não deu para continuar a nova linha com o loop da lição (run_timeline): "
            f"{run.continuation_problem}. Ela precisa de checkpoint.json e timeline.json em new_run_dir.",
            expected="a nova linha continua", observed=run.continuation_problem,
        )
    if not run.continuation_sent and not run.world_changed_by_run:
        raise nothing_observed(
            "a nova linha continuou, mas não chegou a responder à decisão de mandar o e-mail, então não deu "
            "para ver o dry-run em ação (o checkpoint.json da nova linha é a cena do ponto copiado?)",
            expected="o send_email da nova linha respondido em dry-run")
    if run.world_changed_by_run:
        raise CheckFailed(
            f"A nova linha continuou, decidiu mandar um e-mail, e o mundo mudou ({run.world_changed_by_run}). "
            "Sem dry-run, as duas linhas dobram o efeito: grave dry_run true em timeline.json.",
            expected="caixa de saída intacta", observed=run.world_changed_by_run,
        )


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=lambda fixture: "undo_missing_tool" in fixture.expect,
    title="Sem a decisão na sequência ativa, não há bifurcação",
    criterion=(
        "fork_at_decision para uma ferramenta que o modelo nunca pediu na sequência ativa levanta "
        "TimelineError, sem criar nada em new_run_dir e sem mexer na original."
    ),
)
def fork_without_decision_is_refused(ctx: Context, fixture: Fixture) -> None:
    tool, returned, error, changed, created = ask_a_missing_decision(ctx, fixture, "fork_at_decision",
                                                                     "fork-missing", fork=True)
    require_timeline_error(
        returned, error, 80,
        lambda shown: f"fork_at_decision(run_dir, {tool!r}, ...) devolveu {shown}, mas o modelo nunca pediu "
                      f"{tool} na sequência ativa: não há ponto A de onde bifurcar. Levante TimelineError.",
        lambda described: f"fork_at_decision levantou {described}; uma decisão que não existe merece "
                          "um TimelineError que diga isso.",
    )
    if changed or any(not path.endswith("/") for path in created):
        raise CheckFailed(
            "O pedido impossível deixou rastro (" + (changed or "criou " + ", ".join(sorted(created))) + "): "
            "procure a decisão antes de criar qualquer coisa.",
            expected="nada criado nem alterado", observed=changed or sorted(created))
