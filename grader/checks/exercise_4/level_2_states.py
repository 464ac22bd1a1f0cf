"""Level 2, the ledger's state machine: ``save_effect`` lets a record move only along the arrows
of lesson 4's figure (none -> intent -> committed / rejected / unknown, unknown asked again, the
approval gate's none -> rejected) and refuses every other move, leaving the file as it was."""
from __future__ import annotations

import copy
import json
from pathlib import Path

from grader.checks.exercise_4.fixtures import EXERCISE
from grader.checks.exercise_4.probes import Raised, capturing, intent, ledger_error_class, read_ledger, receipt_with, world
from grader.checks.framework import NOT_IMPLEMENTED_PREFIX, CheckFailed, Context, StudentProblem, show

CALL = "toolu_b2"
BESIDE = "toolu_a1"

# Every move the figure draws, with why the harness makes it.
ALLOWED = {
    (None, "intent"): "antes de um efeito, a intenção",
    (None, "rejected"): "a válvula de aprovação recusou antes de qualquer execução",
    ("intent", "committed"): "o efeito aconteceu: o recibo",
    ("intent", "rejected"): "o sistema externo (ou a válvula, numa retomada) recusou",
    ("intent", "unknown"): "a retomada perguntou e a consulta falhou",
    ("intent", "intent"): "a retomada não achou o efeito e vai executar de novo com a mesma chave",
    ("unknown", "committed"): "a retomada seguinte achou o efeito",
    ("unknown", "unknown"): "a consulta falhou de novo",
    ("unknown", "intent"): "a retomada seguinte não achou o efeito e vai executar",
    ("unknown", "rejected"): "a válvula recusou o que a consulta não achou",
}

# The moves the machine does not allow, with what accepting each one costs.
SETTLED_COSTS = {
    ("committed", "intent"): "o e-mail já saiu, e uma intenção por cima do recibo faria a retomada perguntar de novo "
                             "e, sem achar, mandar outro",
    ("committed", "unknown"): "um desfecho conhecido viraria \"não sei\"",
    ("committed", "rejected"): "o livro diria que o e-mail enviado foi recusado",
    ("committed", "committed"): "um recibo assentado seria reescrito com outro resultado",
    ("rejected", "intent"): "a recusa se perderia, e a retomada executaria o que alguém recusou",
    ("rejected", "committed"): "o livro diria que aconteceu o que foi recusado",
    ("rejected", "unknown"): "uma recusa conhecida viraria \"não sei\"",
}
UNSTARTED_COSTS = {
    (None, "committed"): "um recibo sem intenção antes quer dizer que o efeito rodou sem que o livro soubesse: uma "
                         "queda no meio não deixaria rastro nenhum, e a retomada o repetiria",
    (None, "unknown"): "unknown é o que sobra de uma consulta sobre algo que começou; sem intenção, nada começou",
}


def record_for(status: str) -> dict:
    if status == "intent":
        return intent(CALL, "ata")
    return receipt_with(CALL, f"ata ({status})", status)


def try_move(ctx: Context, label: str, before: str | None, after: str) -> tuple[object, bytes, bytes]:
    """Saves a record of ``after`` over one of ``before`` (None: no record); returns what save_effect
    gave back (a Raised for EffectsLedgerError), the ledger's bytes before and after."""
    save_effect = ctx.student_function("save_effect")
    with ctx.tools(world(label)) as spy:
        path = Path(spy.workspace.root) / "effects.json"
        ledger = {BESIDE: receipt_with(BESIDE, "outro e-mail", "committed")}
        if before is not None:
            ledger[CALL] = record_for(before)
        path.write_text(json.dumps(ledger, ensure_ascii=False, indent=1), encoding="utf-8")
        start = path.read_bytes()
        returned, problem = ctx.call_or_problem(capturing(save_effect, ledger_error_class()), path, CALL,
                                                copy.deepcopy(record_for(after)))
        end = path.read_bytes() if path.exists() else b""
    return (problem or returned), start, end


def shown_state(status: str | None) -> str:
    return "sem registro" if status is None else status


def require_refused(ctx: Context, before: str | None, after: str, cost: str) -> None:
    observed, start, end = try_move(ctx, f"n2-estado-{shown_state(before)}-{after}", before, after)
    move = f"{shown_state(before)} → {after}"
    if isinstance(observed, StudentProblem):
        if observed.message.startswith(NOT_IMPLEMENTED_PREFIX):
            raise observed
        raise CheckFailed(
            f"Para a troca {move}, save_effect falhou, mas não com LedgerTransitionError: {observed.message} "
            "Recuse a troca com `raise LedgerTransitionError(path, tool_use_id, antes, depois)` (uma "
            "EffectsLedgerError), para a retomada parar com uma mensagem clara.",
            expected="LedgerTransitionError", observed=observed.message,
        )
    if not isinstance(observed, Raised):
        raise CheckFailed(
            f"save_effect aceitou a troca {move}, que a máquina de estados do livro-razão não permite: {cost}. "
            "Antes de gravar, compare o status do registro que já está no livro com o do novo e levante "
            "LedgerTransitionError quando a seta não existe na figura da lição.",
            expected="LedgerTransitionError, livro intacto", observed=f"devolveu {show(observed, 80)}",
        )
    if end != start:
        raise CheckFailed(
            f"save_effect levantou o erro para a troca {move}, mas depois de mexer no livro-razão: confira a "
            "troca antes de gravar, para o livro ficar exatamente como estava.",
            expected="o livro anterior, byte a byte", observed=end[:120].decode("utf-8", "replace"),
        )


@EXERCISE.check(
    level=2,
    title="save_effect nunca troca um recibo assentado",
    criterion=(
        "Um recibo committed ou rejected é o fim da máquina de estados: qualquer registro novo para a mesma "
        "chamada (intent, unknown, outro committed ou rejected) levanta LedgerTransitionError e deixa o "
        "livro-razão como estava."
    ),
)
def save_effect_keeps_settled_receipts(ctx: Context) -> None:
    for (before, after), cost in SETTLED_COSTS.items():
        require_refused(ctx, before, after, cost)


@EXERCISE.check(
    level=2,
    title="save_effect recusa um desfecho sem intenção",
    criterion=(
        "Para uma chamada sem registro, só entram a intenção (intent) e a recusa da válvula (rejected): um "
        "recibo committed ou um unknown sem intenção antes levantam LedgerTransitionError e o livro fica "
        "como estava."
    ),
)
def save_effect_wants_an_intent_first(ctx: Context) -> None:
    for (before, after), cost in UNSTARTED_COSTS.items():
        require_refused(ctx, before, after, cost)


@EXERCISE.check(
    level=2,
    title="save_effect deixa passar toda seta da figura",
    criterion=(
        "As trocas que a figura da lição desenha são gravadas: sem registro → intent ou rejected; intent → "
        "committed, rejected, unknown ou intent; unknown → committed, rejected, unknown ou intent. O registro "
        "da outra chamada fica como estava."
    ),
)
def save_effect_allows_every_arrow(ctx: Context) -> None:
    for (before, after), why in ALLOWED.items():
        observed, start, _ = try_move(ctx, f"n2-seta-{shown_state(before)}-{after}", before, after)
        move = f"{shown_state(before)} → {after}"
        if isinstance(observed, StudentProblem):
            if observed.message.startswith(NOT_IMPLEMENTED_PREFIX):
                raise observed
            raise CheckFailed(f"Para a troca {move} ({why}), save_effect falhou: {observed.message}",
                              expected="o registro gravado", observed=observed.message)
        if isinstance(observed, Raised):
            raise CheckFailed(
                f"save_effect recusou a troca {move}, que a figura da lição desenha ({why}): o harness faz essa "
                "troca, e recusá-la pararia uma retomada correta. Só committed e rejected são o fim; intent e "
                "unknown ainda esperam um desfecho.",
                expected="o registro gravado", observed=str(observed.error)[:160],
            )
    # the last move left its record; the other call's receipt must be intact
    with ctx.tools(world("n2-seta-outro")) as spy:
        path = Path(spy.workspace.root) / "effects.json"
        other = receipt_with(BESIDE, "outro e-mail", "committed")
        path.write_text(json.dumps({BESIDE: other}, ensure_ascii=False), encoding="utf-8")
        ctx.call(ctx.student_function("save_effect"), path, CALL, intent(CALL, "ata"))
        on_disk = read_ledger(path) or {}
    if on_disk.get(BESIDE) != other or (on_disk.get(CALL) or {}).get("status") != "intent":
        raise CheckFailed("Gravar a intenção de toolu_b2 deveria deixar o recibo de toolu_a1 como estava e "
                          "acrescentar a intenção.", expected={BESIDE: "committed", CALL: "intent"},
                          observed=show(on_disk, 160))


STATUSES = (None, "intent", "committed", "rejected", "unknown")


@EXERCISE.check(
    level=2,
    title="TRANSITIONS tem exatamente as setas da figura",
    criterion=(
        "TRANSITIONS leva cada status (None = sem registro) aos status que podem vir depois dele, como a figura "
        "dos estados da lição: nenhuma seta a mais, nenhuma a menos; committed e rejected não levam a nada."
    ),
)
def transitions_are_the_figures_arrows(ctx: Context) -> None:
    table = ctx.student_answer("TRANSITIONS")
    if not isinstance(table, dict):
        raise CheckFailed("TRANSITIONS deve ser um dicionário: de cada status, os status que podem vir depois.",
                          expected="um dict", observed=type(table).__name__)
    unknown_keys = [key for key in table if key not in STATUSES]
    if unknown_keys:
        raise CheckFailed(f"TRANSITIONS tem chaves que não são status do livro-razão: {show(unknown_keys, 120)}. "
                          "As chaves são None (sem registro), intent, committed, rejected e unknown.",
                          expected=show(list(STATUSES)), observed=show(list(table), 160))
    arrows = set()
    for before, afters in table.items():
        if isinstance(afters, (str, bytes)) or not hasattr(afters, "__iter__"):
            raise CheckFailed(f"TRANSITIONS[{before!r}] deve ser uma coleção de status (tupla, lista ou conjunto), "
                              f"não {type(afters).__name__}.", expected="uma tupla de status", observed=show(afters, 80))
        arrows.update((before, after) for after in afters)
    missing = sorted(ALLOWED.keys() - arrows, key=str)
    extra = sorted(arrows - ALLOWED.keys(), key=str)
    if missing or extra:
        parts = []
        if missing:
            parts.append("faltam as setas " + ", ".join(f"{shown_state(a)} → {b}" for a, b in missing))
        if extra:
            parts.append("sobram as setas " + ", ".join(f"{shown_state(a)} → {shown_state(b)}" for a, b in extra)
                         + " (a figura não as desenha: um recibo assentado é o fim)")
        raise CheckFailed("TRANSITIONS não é a figura: " + "; ".join(parts) + ".",
                          expected=f"{len(ALLOWED)} setas", observed=f"{len(arrows)} setas")
