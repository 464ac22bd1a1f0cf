"""Level 3: ``run_agent`` saves point A after the model's decision and point B after the tools, every turn."""
from __future__ import annotations

from grader.checks.exercise_2.fixtures import EXERCISE, expected_status, has_tool_turns, scripted_turns
from grader.checks.exercise_2.run_probe import (
    SAVE_POINT_FIELD,
    checkpointed_run,
    declared_point,
    expected_points,
    find_save,
    point_by_content,
    point_of,
    undeclared_note,
    tokens_after_each_turn,
    tool_uses_of,
)
from grader.checks.exercise_2.save_probe import read_checkpoint_file
from grader.checks.framework import CheckFailed, Context, Fixture, is_kind, nothing_observed, show
from grader.core.plural import quantity


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=is_kind("run"),
    title="Cada checkpoint diz qual ponto de gravação ele é",
    criterion=(
        "Cada estado gravado traz save_point: \"A\" quando guarda a resposta do modelo antes das ferramentas "
        "(inclusive no turno final e num pause_turn), \"B\" quando guarda os resultados das ferramentas."
    ),
)
def each_save_names_its_point(ctx: Context, fixture: Fixture) -> None:
    run = checkpointed_run(ctx, fixture)
    if not run.saves:
        raise nothing_observed(
            "save_checkpoint nunca foi chamado, então não há checkpoint que diga o seu ponto de gravação",
            expected="uma gravação em cada ponto A e B",
        )
    for number, save in enumerate(run.saves, start=1):
        turn = save.state.get("turns")
        declared, shown = declared_point(save), point_by_content(save)
        value = save.state.get(SAVE_POINT_FIELD, "<ausente>")
        if declared is None:
            raise CheckFailed(
                f"A gravação {number} (turno {turn}) não diz qual ponto de gravação ela é: o campo "
                f"{SAVE_POINT_FIELD} vale {show(value, 40)}. Antes de cada save_checkpoint, registre "
                f"state[\"{SAVE_POINT_FIELD}\"] = \"A\" (a resposta do modelo, antes das ferramentas) ou \"B\" (os "
                "resultados): quem abre o checkpoint depois de uma queda lê ali em que ponto do turno ele foi gravado.",
                expected=f"{SAVE_POINT_FIELD} = {shown!r}", observed=value,
            )
        if declared != shown:
            why = ("a última mensagem é a resposta do modelo, ainda sem resultados: é um ponto A (o turno final "
                   "também; o que o torna final é pending_tool_use None, não o ponto)" if shown == "A" else
                   "a última mensagem já traz os resultados das ferramentas: é um ponto B")
            raise CheckFailed(
                f"A gravação {number} (turno {turn}) diz {SAVE_POINT_FIELD}={declared!r}, mas {why}. Registre o "
                "ponto antes de cada gravação, e não depois dela: o estado gravado leva o valor que o campo tinha "
                "naquele momento.",
                expected=shown, observed=declared,
            )


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=is_kind("run"),
    title="Duas gravações por turno com ferramentas, uma no turno final",
    criterion="save_checkpoint é chamado duas vezes em cada turno com ferramentas (A e B) e uma vez no turno final (A).",
)
def saves_twice_per_tool_turn(ctx: Context, fixture: Fixture) -> None:
    run = checkpointed_run(ctx, fixture)
    wanted = expected_points(fixture)
    observed = [(point_of(save), save.state.get("turns")) for save in run.saves]
    if observed == wanted:
        return
    if not run.saves:
        message = "save_checkpoint nunca foi chamado: o loop precisa gravar o checkpoint nos pontos A e B."
    elif any(point is None for point, _ in observed):
        message = (f"Há gravações que não dizem qual ponto são (o campo {SAVE_POINT_FIELD}): o corretor reconhece "
                   "cada ponto pelo que o próprio checkpoint declara, como faria uma retomada.")
    elif run.saves[0].state.get("turns") == 0:
        message = "A primeira gravação aconteceu antes do primeiro turno: os pontos são A (depois da resposta) e B (depois dos resultados)."
    elif len(observed) < len(wanted) and paused_at(fixture, observed[-1][1]):
        message = (f"O loop parou no turno {observed[-1][1]}, cuja resposta veio com stop_reason \"pause_turn\" e sem "
                   "tool_use: um pause_turn não encerra a tarefa, o modelo só pausou o turno. Grave o ponto A e chame "
                   "o modelo de novo (take_response devolve [] nesse caso, e None só quando a execução parou).")
    elif len(observed) < len(wanted):
        message = (f"Houve {quantity(len(observed), 'gravação', 'gravações')}; um loop com os pontos A e B faz {len(wanted)} nesta "
                   "tarefa (A e B em cada turno com ferramentas, só A no final).")
    else:
        message = f"As gravações não seguem a sequência A, B, A, B, ..., A: houve {len(observed)}, esperava {len(wanted)}."
    raise CheckFailed(message, expected=[f"{p}{t}" for p, t in wanted], observed=[f"{p}{t}" for p, t in observed])


def paused_at(fixture: Fixture, turn: object) -> bool:
    turns = scripted_turns(fixture.data)
    return isinstance(turn, int) and 1 <= turn <= len(turns) and turns[turn - 1].get("stop_reason") == "pause_turn"


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=is_kind("run"),
    title="Ponto A: a decisão do modelo, com pending_tool_use preenchido",
    criterion=(
        "Em cada ponto A, a última mensagem gravada é a do assistente com seus tool_use, e "
        "pending_tool_use lista exatamente esses pedidos como {id, name, input} (None no turno final)."
    ),
)
def point_a_records_the_decision(ctx: Context, fixture: Fixture) -> None:
    run = checkpointed_run(ctx, fixture)
    for turn, response in enumerate(scripted_turns(fixture.data), start=1):
        save = find_save(run, "A", turn)
        if save is None:
            raise CheckFailed(
                f"Não há ponto A no turno {turn}: logo depois de acrescentar a resposta do modelo a messages "
                "(antes de executar qualquer ferramenta), grave o checkpoint." + undeclared_note(run),
                expected=f"uma gravação com turns={turn} terminando na mensagem do assistente", observed="nenhuma",
            )
        last = save.state["messages"][-1]
        used = [b.get("id") for b in last.get("content", []) if isinstance(b, dict) and b.get("type") == "tool_use"]
        wanted_calls = tool_uses_of(response)
        if used != [c["id"] for c in wanted_calls]:
            raise CheckFailed(
                f"No ponto A do turno {turn}, a última mensagem não traz os tool_use da resposta do modelo.",
                expected=[c["id"] for c in wanted_calls], observed=used,
            )
        pending = save.state.get("pending_tool_use")
        wanted = wanted_calls or None
        if pending != wanted:
            if wanted and isinstance(pending, list) and len(pending) == len(wanted) and all(
                    isinstance(p, dict) and "type" in p for p in pending):
                detail = "guarde só {id, name, input} de cada pedido (tool_uses_in faz isso), não o bloco inteiro."
            elif wanted and isinstance(pending, list) and len(pending) < len(wanted):
                detail = f"o modelo pediu {len(wanted)} ferramentas neste turno; todas ficam pendentes."
            elif wanted is None:
                detail = "no turno final não há pedido nenhum: pending_tool_use é None."
            else:
                detail = "ele lista os tool_use da resposta que ainda não têm resultado."
            raise CheckFailed(
                f"No ponto A do turno {turn}, pending_tool_use está errado: {detail}",
                expected=wanted, observed=pending,
            )


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=is_kind("run"),
    title="Ponto A é gravado antes de qualquer ferramenta rodar",
    criterion="Quando o ponto A de um turno é gravado, nenhuma ferramenta desse turno foi executada ainda.",
)
def point_a_comes_before_the_tools(ctx: Context, fixture: Fixture) -> None:
    run = checkpointed_run(ctx, fixture)
    executed_before = 0
    for turn, response in enumerate(scripted_turns(fixture.data), start=1):
        save = find_save(run, "A", turn)
        if save is None:
            raise nothing_observed(
                f"não há ponto A gravado no turno {turn}, então não dá para saber se ele veio antes das "
                "ferramentas (grave o checkpoint logo depois de acrescentar a resposta do modelo)" + undeclared_note(run, True),
                expected=f"o ponto A do turno {turn}",
            )
        if save.tools_run != executed_before:
            raise CheckFailed(
                f"O ponto A do turno {turn} foi gravado quando "
                f"{quantity(save.tools_run - executed_before, 'ferramenta do turno já tinha rodado', 'ferramentas do turno já tinham rodado')}: "
                "se o processo morresse enquanto elas rodavam, o disco não saberia que o modelo as pediu. "
                "Grave A antes de executar.",
                expected=f"{executed_before} ferramentas executadas até o ponto A", observed=save.tools_run,
            )
        executed_before += len(tool_uses_of(response))


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=is_kind("run"),
    title="tokens_used soma o usage de cada resposta",
    criterion=(
        "Em cada ponto A, tokens_used já soma input_tokens + output_tokens de todas as respostas do "
        "modelo até a desse turno, inclusive (como no loop da lição 1)."
    ),
)
def tokens_used_adds_every_response(ctx: Context, fixture: Fixture) -> None:
    run = checkpointed_run(ctx, fixture)
    before = 0
    for turn, wanted in enumerate(tokens_after_each_turn(fixture), start=1):
        save = find_save(run, "A", turn)
        if save is None:
            raise nothing_observed(
                f"não há ponto A gravado no turno {turn}, então não dá para ver o tokens_used desse turno"
                + undeclared_note(run, True),
                expected=f"o ponto A do turno {turn} com tokens_used={wanted}",
            )
        used = save.state.get("tokens_used")
        if used != wanted:
            detail = ("a resposta deste turno não foi somada" if used == before else
                      "some input_tokens + output_tokens de cada resposta ao que já havia")
            raise CheckFailed(
                f"No ponto A do turno {turn}, tokens_used vale {show(used, 40)}, mas deveria ser {wanted}: {detail} "
                "(take_response faz essa soma). Um checkpoint com tokens_used errado esconde o custo real da "
                "tarefa de quem a retoma.",
                expected=wanted, observed=used,
            )
        before = wanted


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=has_tool_turns,
    title="Ponto B: os resultados registrados, pending_tool_use de volta a None",
    criterion=(
        "Em cada ponto B, a última mensagem gravada é a do usuário com um tool_result por pedido do "
        "turno, e pending_tool_use é None."
    ),
)
def point_b_records_the_results(ctx: Context, fixture: Fixture) -> None:
    run = checkpointed_run(ctx, fixture)
    turns = scripted_turns(fixture.data)
    for turn, response in enumerate(turns, start=1):
        calls = tool_uses_of(response) if response.get("stop_reason") == "tool_use" else []
        if not calls:
            continue
        save = find_save(run, "B", turn)
        if save is None:
            raise CheckFailed(
                f"Não há ponto B no turno {turn}: depois de acrescentar os tool_result a messages, grave o checkpoint de novo." + undeclared_note(run),
                expected=f"uma gravação com turns={turn} terminando nos tool_result", observed="nenhuma",
            )
        last = save.state["messages"][-1]
        answered = [b.get("tool_use_id") for b in last.get("content", []) if isinstance(b, dict) and b.get("type") == "tool_result"]
        if answered != [c["id"] for c in calls]:
            raise CheckFailed(
                f"No ponto B do turno {turn}, a última mensagem deveria trazer os tool_result de todos os pedidos.",
                expected=[c["id"] for c in calls], observed=answered,
            )
        if save.state.get("pending_tool_use") is not None:
            raise CheckFailed(
                f"No ponto B do turno {turn}, pending_tool_use continua {show(save.state.get('pending_tool_use'), 120)}: "
                "com os resultados registrados nada está pendente; volte-o a None antes de gravar. Senão, "
                "uma retomada reconciliaria de novo chamadas que já têm resultado.",
                expected="None", observed=save.state.get("pending_tool_use"),
            )
        if save.tools_run < sum(len(tool_uses_of(r)) for r in turns[:turn]):
            raise CheckFailed(
                f"O ponto B do turno {turn} foi gravado antes de as ferramentas do turno terminarem.",
                expected="B depois das ferramentas", observed=f"{save.tools_run} execuções até B",
            )


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=is_kind("run"),
    title="O checkpoint final em disco é o estado devolvido",
    criterion="Ao terminar, checkpoint.json (a última gravação) é igual ao estado que run_agent devolve.",
)
def final_checkpoint_is_the_returned_state(ctx: Context, fixture: Fixture) -> None:
    run = checkpointed_run(ctx, fixture)
    if not isinstance(run.state, dict):
        raise CheckFailed(
            f"run_agent deveria devolver o estado, mas devolveu {show(run.state, 120)}.",
            expected="o estado de execução", observed=run.state,
        )
    on_disk = read_checkpoint_file(run.path)
    if on_disk != run.state:
        raise CheckFailed(
            "O último checkpoint gravado não é igual ao estado devolvido: alguma mudança no estado "
            "aconteceu depois da última gravação (ou a última gravação não aconteceu).",
            expected=f"turns={run.state.get('turns')}, {len(run.state.get('messages', []))} mensagens",
            observed=on_disk if isinstance(on_disk, str) else
            f"turns={on_disk.get('turns')}, {len(on_disk.get('messages', []))} mensagens",
        )


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=is_kind("run"),
    title="O status da execução fica registrado no estado e no checkpoint final",
    criterion=(
        "Ao terminar, o estado devolvido e o último checkpoint gravado trazem status: completed quando o "
        "modelo encerra, running quando o teto de turnos interrompe (como take_response registra)."
    ),
)
def records_the_status(ctx: Context, fixture: Fixture) -> None:
    run = checkpointed_run(ctx, fixture)
    wanted = expected_status(fixture.data)
    returned = run.state.get("status") if isinstance(run.state, dict) else None
    on_disk = read_checkpoint_file(run.path)
    saved = on_disk.get("status") if isinstance(on_disk, dict) else None
    if returned != wanted or saved != wanted:
        where = "no estado devolvido" if returned != wanted else "no último checkpoint gravado"
        found = returned if returned != wanted else saved
        why = ("o modelo encerrou, mas o status continua \"running\": quem retoma este checkpoint não sabe que a "
               "tarefa acabou e chamaria o modelo de novo" if wanted == "completed" and found == "running" else
               "o teto de turnos interrompeu a execução, que não terminou" if wanted == "running" else
               "o status diz se a execução terminou e por quê")
        raise CheckFailed(
            f"Ao terminar, {where} status vale {show(found, 40)}, e deveria ser {wanted!r}: {why}. Registre o "
            "status quando a execução para (take_response faz isso) e grave o checkpoint depois.",
            expected=wanted, observed=found,
        )
