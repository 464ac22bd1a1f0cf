"""Level 4, a transfer case: ``run_agent_within_budget`` keeps a token budget that survives a crash.

Exercise 1 keeps a token budget in the run state of one process; lesson 2's loop saves points
A and B. Here a process resumes a run from its checkpoint: the budget (``state["token_budget"]``)
and what was spent of it (``state["tokens_used"]``) come only from there, the loop must stop
before a model call once it is spent, and the checkpoint left must let the next process know
it without calling the model. The grader resumes each fixture's run from a checkpoint holding
``token_budget`` and ``tokens_already_used``, counts the requests the scripted model receives
and reads the checkpoint left behind.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.checks.exercise_2.fixtures import EXERCISE, budget_run
from grader.checks.exercise_2.run_probe import require_run, run_with_saves_spied
from grader.checks.exercise_2.save_probe import CHECKPOINT_NAME, found_described, read_checkpoint_file, summary
from grader.checks.framework import CheckFailed, Context, Fixture, StudentProblem, is_kind, response_tokens
from grader.core.plural import quantity

FUNCTION = "run_agent_within_budget"


@dataclass
class BudgetOutcome:
    calls: int                      # requests the scripted model received
    returned: Any
    path: Path
    problem: StudentProblem | None = None


def budget_outcome(ctx: Context, fixture: Fixture) -> BudgetOutcome:
    """The student's loop resumed from this fixture's checkpoint under its budget (memoized); what
    the student's code raised is raised again here, for each check that reads the run."""

    def compute() -> BudgetOutcome:
        from grader.checks.reference import new_run_state, write_json_atomic
        from harness.fake_endpoint import ScriptedEndpoint

        run = ctx.student_function(FUNCTION)
        path = ctx.fresh_dir(f"budget-{fixture.name}") / CHECKPOINT_NAME
        state = new_run_state(fixture.data["task"])
        state["tokens_used"] = fixture.data.get("tokens_already_used", 0)
        state["token_budget"] = fixture.data["token_budget"]
        write_json_atomic(path, state)  # the checkpoint the run is resumed from
        endpoint = ScriptedEndpoint(fixture.data["responses"])
        _, returned, problem = run_with_saves_spied(ctx, fixture, run, FUNCTION, endpoint.client(), state, path)
        return BudgetOutcome(len(endpoint.requests), returned, path, problem)

    return require_run(ctx.memo(f"budget:{fixture.name}", compute))


def spent_before(fixture: Fixture) -> str:
    already = fixture.data.get("tokens_already_used", 0)
    return f"o checkpoint já tinha gastado {already}" if already else "a execução começou do zero"


@EXERCISE.check(
    level=4,
    per_fixture=True,
    applies=is_kind("budget"),
    title="O modelo só é chamado enquanto sobra orçamento, contando o que o checkpoint já gastou",
    criterion=(
        "Antes de cada chamada ao modelo, run_agent_within_budget compara state[\"tokens_used\"] com "
        "state[\"token_budget\"], os dois vindos do checkpoint (com o que foi gasto antes da queda), e só chama "
        "se ainda não chegou lá."
    ),
)
def calls_the_model_within_the_budget(ctx: Context, fixture: Fixture) -> None:
    outcome = budget_outcome(ctx, fixture)
    wanted = budget_run(fixture.data)
    budget = fixture.data["token_budget"]
    if outcome.calls == wanted.calls:
        return
    expected = f"{quantity(wanted.calls, 'chamada', 'chamadas')} ao modelo"
    observed = f"{quantity(outcome.calls, 'chamada', 'chamadas')}"
    from_zero = budget_run(dict(fixture.data, tokens_already_used=0))
    if fixture.data.get("tokens_already_used") and outcome.calls > wanted.calls and from_zero \
            and outcome.calls == from_zero.calls:
        message = (f"run_agent_within_budget chamou o modelo {quantity(outcome.calls, 'vez', 'vezes')}, mas "
                   f"{spent_before(fixture)} dos {budget} tokens: o orçamento só comportava "
                   f"{quantity(wanted.calls, 'chamada', 'chamadas')}. Ele contou só o que este processo gastou "
                   "(um contador que começa em zero?): depois de uma queda, o que já foi gasto está em "
                   "state[\"tokens_used\"], que veio do checkpoint. Compare state[\"tokens_used\"] com "
                   "state[\"token_budget\"].")
    elif outcome.calls == wanted.calls + 1:
        message = (f"run_agent_within_budget chamou o modelo uma vez além do orçamento: {spent_before(fixture)} "
                   f"e o orçamento é {budget}, mas houve {observed}. Confira o orçamento antes de cada chamada "
                   "(e chame só se state[\"tokens_used\"] < state[\"token_budget\"]), não depois dela: a chamada que "
                   "estoura o orçamento já foi paga.")
    elif outcome.calls < wanted.calls:
        message = (f"run_agent_within_budget parou cedo: houve {observed}, e o roteiro com orçamento de {budget} "
                   f"({spent_before(fixture)}) comporta {expected}. O modelo pode ser chamado enquanto "
                   "state[\"tokens_used\"] < state[\"token_budget\"].")
    else:
        message = (f"run_agent_within_budget chamou o modelo {quantity(outcome.calls, 'vez', 'vezes')}; com "
                   f"orçamento de {budget} ({spent_before(fixture)}), um loop correto faz {expected}.")
    raise CheckFailed(message, expected=expected, observed=observed)


@EXERCISE.check(
    level=4,
    per_fixture=True,
    applies=is_kind("budget"),
    title="O checkpoint em disco é o estado devolvido, com o orçamento",
    criterion=(
        "No fim, o checkpoint em disco é igual ao estado devolvido e guarda token_budget e tokens_used: um "
        "processo que retome dele sabe, sem chamar o modelo, se ainda há orçamento. Parada pelo orçamento, como "
        "pelo teto, a execução continua com status \"running\" (como no exercício 1)."
    ),
)
def checkpoint_keeps_the_budget(ctx: Context, fixture: Fixture) -> None:
    outcome = budget_outcome(ctx, fixture)
    wanted = budget_run(fixture.data)
    budget = fixture.data["token_budget"]
    returned = outcome.returned
    if not isinstance(returned, dict):
        raise CheckFailed("run_agent_within_budget precisa devolver o estado (um dict).",
                          expected="o estado", observed=summary(returned))
    status = returned.get("status")
    if status != wanted.status:
        if wanted.status == "running" and outcome.calls == wanted.calls:
            message = (f"A execução parou porque o orçamento acabou, e o estado diz status {status!r}. Parada pelo "
                       "orçamento, como pelo teto de turnos, a tarefa não terminou: o status continua \"running\" "
                       "(como no exercício 1), e quem retoma lê em tokens_used e token_budget que não há orçamento.")
        else:
            message = f"A execução devia terminar com status {wanted.status!r}, e o estado diz {status!r}."
        raise CheckFailed(message, expected=f"status {wanted.status!r}", observed=f"status {status!r}")
    if returned.get("token_budget") != budget:
        raise CheckFailed(
            f"O estado devolvido tem token_budget = {returned.get('token_budget')!r}, e o checkpoint de onde a "
            f"execução retomou dizia {budget}: o orçamento é da execução e atravessa a queda só dentro do "
            "checkpoint. Não o apague nem o troque; leia-o de state[\"token_budget\"].",
            expected=f"token_budget = {budget}", observed=f"token_budget = {returned.get('token_budget')!r}",
        )
    on_disk = read_checkpoint_file(outcome.path)
    if on_disk != returned:
        raise CheckFailed(
            f"O checkpoint em disco não é o estado devolvido ({found_described(on_disk)}): um processo que retomasse "
            "dele não veria o que esta execução gastou, e gastaria o orçamento de novo. Grave o checkpoint em cada "
            "ponto A e B, como no nível 3.",
            expected="o checkpoint em disco igual ao estado devolvido", observed=summary(on_disk),
        )


@EXERCISE.check(
    level=4,
    per_fixture=True,
    applies=is_kind("budget"),
    title="tokens_used continua a conta do checkpoint",
    criterion=(
        "No fim, tokens_used é o que o checkpoint já tinha gastado mais input_tokens + output_tokens de cada "
        "resposta desta execução: a conta do orçamento nunca recomeça do zero."
    ),
)
def counts_every_token(ctx: Context, fixture: Fixture) -> None:
    outcome = budget_outcome(ctx, fixture)
    already = fixture.data.get("tokens_already_used", 0)
    # what this run's own calls cost: judged on the calls it made, whether or not they were right
    made = fixture.data["responses"][:outcome.calls]
    wanted = already + sum(response_tokens(response) for response in made)
    tokens = outcome.returned.get("tokens_used") if isinstance(outcome.returned, dict) else None
    if tokens == wanted:
        return
    if already and tokens == wanted - already:
        message = (f"tokens_used terminou em {tokens}: recomeçou do zero e perdeu os {already} tokens que o checkpoint "
                   "já tinha gastado. Some ao state[\"tokens_used\"] que veio do checkpoint, sem zerá-lo.")
    else:
        message = (f"tokens_used terminou em {tokens}; com os {already} do checkpoint e o usage de cada resposta "
                   f"desta execução ({quantity(outcome.calls, 'chamada', 'chamadas')}), seriam {wanted}.")
    raise CheckFailed(message, expected=wanted, observed=tokens)
