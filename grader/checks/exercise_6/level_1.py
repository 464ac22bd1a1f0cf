"""Level 1: ``parse_crash_plan`` and ``crash_point`` crash exactly where a plan of one or more crash points says, or refuse it loudly."""
from __future__ import annotations

from collections import Counter

from grader.checks.exercise_6.fixtures import EXERCISE, is_parse, is_sequence
from grader.checks.exercise_6.probes import crash_env, is_simulated_crash, wrong_crash_class
from grader.checks.framework import CheckFailed, Context, Fixture, describe_error, show


@EXERCISE.check(
    level=1,
    per_fixture=True,
    applies=is_parse,
    title="parse_crash_plan lê o plano de quedas e recusa valores malformados",
    criterion=(
        "\"rótulo:n,rótulo:n\" vira a lista [(rótulo, n), ...], na ordem do texto; sem \":n\", n = 1; espaços em "
        "volta de cada ponto não contam. Um ponto com rótulo desconhecido, contagem que não é número ou menor "
        "que 1, ou repetido, faz o plano inteiro levantar ValueError com uma mensagem que cita CRASH_AFTER e o "
        "pedaço ruim."
    ),
)
def parse_crash_plan_reads_the_plan(ctx: Context, fixture: Fixture) -> None:
    parse = ctx.student_function("parse_crash_plan")
    spec, expect = fixture.data["spec"], fixture.expect
    value, error = ctx.call_catching(parse, spec, label="parse_crash_plan")
    if "parsed" in expect:
        wanted = [tuple(pair) for pair in expect["parsed"]]
        if error is not None:
            raise CheckFailed(
                f"parse_crash_plan({spec!r}) levantou {describe_error(error)}, mas o plano é válido"
                + (" (sem \":n\", a contagem é 1)." if ":" not in spec else
                   " (os pontos vêm separados por vírgula; espaços em volta de cada um não contam)." if "," in spec else "."),
                expected=[list(pair) for pair in wanted], observed=f"{describe_error(error)}",
            )
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
            raise CheckFailed(
                f"parse_crash_plan({spec!r}) devolveu um par só, {show(value, 80)}: o plano é uma LISTA de pontos "
                "(rótulo, n), mesmo quando tem um só.",
                expected=[list(pair) for pair in wanted], observed=show(value, 80),
            )
        if isinstance(value, list):
            value = [tuple(pair) if isinstance(pair, (list, tuple)) else pair for pair in value]
        if value != wanted:
            hint = ""
            if isinstance(value, list) and any(isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[1], str)
                                               for pair in value):
                hint = " A contagem precisa ser um int, não o texto."
            elif isinstance(value, list) and sorted(map(repr, value)) == sorted(map(repr, wanted)):
                hint = " Os pontos estão certos, mas fora da ordem do texto."
            elif isinstance(value, list) and any(isinstance(pair, tuple) and pair and isinstance(pair[0], str)
                                                 and pair[0] != pair[0].strip() for pair in value):
                hint = " Um rótulo ficou com o espaço em volta: tire os espaços de cada ponto (strip)."
            raise CheckFailed(
                f"parse_crash_plan({spec!r}) devolveu {show(value, 80)}; esperado a lista [(rótulo, n), ...].{hint}",
                expected=[list(pair) for pair in wanted], observed=show(value, 80),
            )
        return
    mentions = expect["error_mentions"]
    if error is None:
        raise CheckFailed(
            f"parse_crash_plan({spec!r}) aceitou um valor malformado e devolveu {show(value, 80)}. Um "
            "CRASH_AFTER errado que passa em silêncio faz o teste rodar sem nunca cair: ele passaria sem "
            "verificar nada. Levante ValueError.",
            expected="ValueError", observed=show(value, 80),
        )
    if not isinstance(error, ValueError):
        raise CheckFailed(
            f"parse_crash_plan({spec!r}) levantou {type(error).__name__}; use ValueError para um valor malformado.",
            expected="ValueError", observed=f"{describe_error(error)}",
        )
    text = str(error)
    missing = [m for m in ["CRASH_AFTER", *mentions] if m not in text]
    if missing:
        raise CheckFailed(
            f"A mensagem do erro para {spec!r} não diz {', '.join(repr(m) for m in missing)}. Quem lê "
            "precisa saber que o problema está em CRASH_AFTER e qual parte do valor está ruim.",
            expected=f"uma mensagem com {', '.join(['CRASH_AFTER', *mentions])}", observed=text,
        )


def run_sequence(ctx: Context, fixture: Fixture) -> dict:
    """Reset the student's counter, then call crash_point for every label of the fixture,
    carrying on after a crash; what happened at each call, and the counts at the end."""
    reset = ctx.student_function("reset_crash_counts")
    counts = ctx.student_function("crash_counts")
    crash_point = ctx.student_function("crash_point")
    ctx.call(reset)
    outcomes = []
    with crash_env(fixture.data.get("crash_after")):
        for label in fixture.data["calls"]:
            _, error = ctx.call_catching(crash_point, label)
            outcomes.append(error)
    return {"outcomes": outcomes, "counts": ctx.call(counts)}


@EXERCISE.check(
    level=1,
    per_fixture=True,
    applies=is_sequence,
    title="crash_point conta por rótulo e cai só nas passagens do plano",
    criterion=(
        "Cada chamada soma 1 ao rótulo (com ou sem CRASH_AFTER). SimulatedCrash sai em cada ponto do plano "
        "(a n-ésima passagem daquele rótulo) e só neles; a contagem continua depois de uma queda; sem "
        "CRASH_AFTER nada cai; um rótulo desconhecido, no CRASH_AFTER ou no próprio crash_point, é um ValueError."
    ),
)
def crash_point_counts_per_label(ctx: Context, fixture: Fixture) -> None:
    calls, expect, spec = fixture.data["calls"], fixture.expect, fixture.data.get("crash_after")
    seen = run_sequence(ctx, fixture)
    outcomes = seen["outcomes"]
    if "error_at" in expect:
        check_loud_error(calls, spec, expect, outcomes)
        return
    for error in outcomes:
        if wrong_crash_class(error):
            raise CheckFailed(
                "crash_point levantou uma SimulatedCrash definida no notebook; use a de harness.crash "
                "(from harness.crash import SimulatedCrash), a única que main() captura.",
                expected="harness.crash.SimulatedCrash", observed=f"{type(error).__module__}.SimulatedCrash",
            )
        if error is not None and not is_simulated_crash(error):
            raise CheckFailed(
                f"crash_point levantou {describe_error(error)}. A queda é uma SimulatedCrash; "
                "qualquer outro erro aqui é um defeito.",
                expected="SimulatedCrash (ou nada)", observed=f"{describe_error(error)}",
            )
    crashed = [index for index, error in enumerate(outcomes, start=1) if error is not None]
    wanted = expect["crashes_at"]
    if crashed != wanted:
        raise CheckFailed(describe_wrong_crash(calls, spec, wanted, crashed), expected=positions(calls, wanted),
                          observed=positions(calls, crashed))
    expected_counts = dict(Counter(calls))
    observed_counts = {label: count for label, count in dict(seen["counts"] or {}).items() if count}
    if observed_counts != expected_counts:
        raise CheckFailed(
            "crash_counts() não bate com as passagens: crash_point precisa somar 1 em _passes[rótulo] a cada "
            "chamada, antes de decidir se cai, com ou sem CRASH_AFTER (é a contagem que diz onde cada "
            "queda pode acontecer).",
            expected=expected_counts, observed=observed_counts,
        )


def positions(calls: list[str], indexes: list[int]) -> str:
    if not indexes:
        return "nenhuma queda"
    return ", ".join(f"chamada {i} ({calls[i - 1]})" for i in indexes)


def describe_wrong_crash(calls: list[str], spec: str | None, wanted: list[int], crashed: list[int]) -> str:
    if spec is None:
        return ("Sem CRASH_AFTER nada pode cair (os pontos de queda ficam no código de produção), mas houve "
                f"queda em {positions(calls, crashed)}.")
    if "," in spec:
        if crashed and set(crashed) < set(wanted):
            return (f"CRASH_AFTER={spec} é um plano com {len(wanted)} quedas ({positions(calls, wanted)}), mas só "
                    f"houve queda em {positions(calls, crashed)}: cada ponto do plano derruba a sua passagem, não só "
                    "o primeiro.")
        if not crashed:
            return (f"CRASH_AFTER={spec} é um plano de quedas ({positions(calls, wanted)}), mas nada caiu: leia "
                    "os pontos separados por vírgula (parse_crash_plan).")
        return f"O plano {spec} pede queda em {positions(calls, wanted)}, mas houve em {positions(calls, crashed)}."
    label, _, count = spec.partition(":")
    if not crashed:
        return (f"CRASH_AFTER={spec} pede a queda na {count or 1}ª passagem por {label} "
                f"({positions(calls, wanted)}), mas nada caiu.")
    first = crashed[0]
    if calls[first - 1] != label:
        return (f"A queda veio na {positions(calls, [first])}, que não é {label}: as passagens por outros "
                "rótulos não contam. A contagem é por rótulo (_passes[label]).")
    passes_then = calls[:first].count(label)
    if wanted and first < wanted[0]:
        return (f"A queda veio na chamada {first}, a {passes_then}ª passagem por {label}; CRASH_AFTER={spec} "
                f"pede a {count or 1}ª. Ou a contagem está misturando rótulos (ela é por rótulo: "
                "_passes[label]), ou a comparação acontece antes de somar a passagem atual.")
    if wanted and first == wanted[0] and len(crashed) > 1:
        return (f"Caiu na passagem certa e de novo em {positions(calls, crashed[1:])}: a queda acontece só "
                f"na {count or 1}ª passagem (==), não em todas as seguintes (>=).")
    if not wanted:
        return f"Esta sequência não deveria cair, mas caiu em {positions(calls, crashed)}."
    return f"A queda deveria vir em {positions(calls, wanted)}, mas veio em {positions(calls, crashed)}."


def check_loud_error(calls, spec, expect, outcomes) -> None:
    at, mentions = expect["error_at"], expect["error_mentions"]
    error = outcomes[at - 1]
    where = f"CRASH_AFTER={spec}" if spec is not None else f"crash_point({calls[at - 1]!r})"
    earlier = [i for i, e in enumerate(outcomes[: at - 1], start=1) if e is not None]
    if earlier:
        raise CheckFailed(f"Nada deveria acontecer antes da chamada {at}, mas houve erro na chamada {earlier[0]}.",
                          expected="nenhum erro antes", observed=f"{type(outcomes[earlier[0] - 1]).__name__}")
    if error is None:
        raise CheckFailed(
            f"Com {where}, crash_point seguiu em silêncio. Um rótulo desconhecido nunca bate com nenhuma "
            "passagem: o teste rodaria sem cair e passaria sem verificar nada. Levante ValueError.",
            expected="ValueError", observed="nenhum erro",
        )
    if not isinstance(error, ValueError):
        raise CheckFailed(
            f"Com {where}, crash_point levantou {describe_error(error)}; o esperado é ValueError.",
            expected="ValueError", observed=f"{describe_error(error)}",
        )
    missing = [m for m in mentions if m not in str(error)]
    if missing:
        raise CheckFailed(
            f"A mensagem do ValueError não mostra {', '.join(repr(m) for m in missing)}: diga qual valor está errado.",
            expected=f"uma mensagem com {', '.join(mentions)}", observed=str(error),
        )
