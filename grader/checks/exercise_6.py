"""Checks for exercise-6: the verification apparatus.

Level 1 grades ``parse_crash_after(spec)`` and ``crash_point(label)`` (the notebook gives
the counter ``_passes`` with ``crash_counts()`` and ``reset_crash_counts()``). Level 2 runs
the student's ``verify_resume(harness) -> list[str]`` against the reference harness (it must
approve it) and against seeded defective harnesses (it must reject each one); a verification
that rejects none of the defects under which every run still ends ``completed`` earns
nothing on the level. Level 3 grades a lease with a fencing token: ``acquire_lease``,
``check_fence`` and ``fenced_save``.

Fixtures (``grader/fixtures/exercise-6/*.json``) are data, one of three kinds:

    {"description": "...", "spec": "after-save-A:2",                        # level 1, parsing
     "expect": {"parsed": ["after-save-A", 2]} | {"error_mentions": ["..."]}}

    {"description": "...", "crash_after": "after-save-A:2" | null,         # level 1, crash_point
     "calls": ["after-model-response", "after-save-A", ...],
     "expect": {"crashes_at": [5]} | {"error_at": 1, "error_mentions": ["..."]}}

    {"description": "...", "harness": "reference" | "<defect name>",        # level 2
     "expect": {"verdict": "aprovar" | "reprovar"}}

The defects themselves are code, in ``grader/buggy_harnesses/`` (one module each).
"""
from __future__ import annotations

import json
import os
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from grader.checks.fixture_shape import problem, required_text, unknown_keys
from grader.checks.framework import (
    CheckFailed,
    Context,
    Exercise,
    Fixture,
    StudentProblem,
    describe_error,
    nothing_observed,
    show,
)

EXERCISE = Exercise("exercise-6")

VERDICTS = ("aprovar", "reprovar")


def _labels() -> tuple[str, ...]:
    from harness.crash import CRASH_LABELS

    return CRASH_LABELS


def kind_of(data: dict) -> str | None:
    for key, kind in (("spec", "parse"), ("calls", "sequence"), ("harness", "harness")):
        if key in data:
            return kind
    return None


# ----------------------------------------------------------------- fixture shape


def _positive_ints(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value)


def _texts(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, str) and v for v in value)


@EXERCISE.fixture_validator
def validate_fixture(data: dict) -> list[str]:
    problems = required_text(data, "description", "description")
    kind = kind_of(data)
    if kind is None:
        return problems + [problem("spec | calls | harness", "a fixture precisa de uma destas chaves")]
    expect = data.get("expect")
    if not isinstance(expect, dict):
        return problems + [problem("expect", "obrigatório, deveria ser um objeto")]
    if kind == "parse":
        problems += unknown_keys(data, {"description", "spec", "expect"})
        if not isinstance(data["spec"], str):
            problems.append(problem("spec", "deveria ser o texto de CRASH_AFTER"))
        problems += unknown_keys(expect, {"parsed", "error_mentions"}, "expect")
        parsed = expect.get("parsed")
        if ("parsed" in expect) == ("error_mentions" in expect):
            problems.append(problem("expect", "use parsed OU error_mentions"))
        elif "parsed" in expect and not (isinstance(parsed, list) and len(parsed) == 2 and parsed[0] in _labels()
                                         and _positive_ints(parsed[1:])):
            problems.append(problem("expect.parsed", "deveria ser [rótulo conhecido, n >= 1]"))
        elif "error_mentions" in expect and not _texts(expect["error_mentions"]):
            problems.append(problem("expect.error_mentions", "deveria ser uma lista de textos"))
    elif kind == "sequence":
        problems += unknown_keys(data, {"description", "crash_after", "calls", "expect"})
        calls = data["calls"]
        if not _texts(calls):
            problems.append(problem("calls", "deveria ser uma lista não vazia de rótulos"))
            calls = []
        if data.get("crash_after") is not None and not isinstance(data.get("crash_after"), str):
            problems.append(problem("crash_after", "deveria ser um texto ou null"))
        problems += unknown_keys(expect, {"crashes_at", "error_at", "error_mentions"}, "expect")
        if "crashes_at" in expect:
            if not _positive_ints(expect["crashes_at"]) or any(i > len(calls) for i in expect["crashes_at"]):
                problems.append(problem("expect.crashes_at", "deveria listar posições (1, 2, ...) de calls"))
            unknown = [c for c in calls if c not in _labels()]
            if unknown:
                problems.append(problem("calls", f"rótulos desconhecidos {unknown} só cabem com error_at"))
        elif not (_positive_ints([expect.get("error_at")]) and _texts(expect.get("error_mentions"))):
            problems.append(problem("expect", "deveria ter crashes_at, ou error_at com error_mentions"))
    else:
        from grader.buggy_harnesses import REFERENCE, harness_names

        problems += unknown_keys(data, {"description", "harness", "expect"})
        problems += unknown_keys(expect, {"verdict"}, "expect")
        name = data["harness"]
        if name not in harness_names():
            problems.append(problem("harness", f"desconhecido {name!r}; conhecidos: {', '.join(harness_names())}"))
        verdict = expect.get("verdict")
        right = "aprovar" if name == REFERENCE else "reprovar"
        if verdict not in VERDICTS:
            problems.append(problem("expect.verdict", f"deveria ser \"aprovar\" ou \"reprovar\" (é {verdict!r})"))
        elif verdict != right:
            problems.append(problem("expect.verdict", f"para o harness {name!r} o veredito certo é {right!r}"))
    return problems


# ----------------------------------------------------------------- calling student code


@contextmanager
def crash_env(value: str | None):
    """CRASH_AFTER set (or absent) only while the student's code runs; CRASH_MODE always absent,
    so no student code can send a signal to the grading kernel."""
    saved = {key: os.environ.get(key) for key in ("CRASH_AFTER", "CRASH_MODE")}
    os.environ.pop("CRASH_MODE", None)
    os.environ.pop("CRASH_AFTER", None)
    if value is not None:
        os.environ["CRASH_AFTER"] = value
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


def is_simulated_crash(error: BaseException | None) -> bool:
    from harness.crash import SimulatedCrash

    return isinstance(error, SimulatedCrash)


def wrong_crash_class(error: BaseException | None) -> bool:
    return error is not None and type(error).__name__ == "SimulatedCrash" and not is_simulated_crash(error)


# ----------------------------------------------------------------- level 1: parsing


def is_parse(fixture: Fixture) -> bool:
    return kind_of(fixture.data) == "parse"


def is_sequence(fixture: Fixture) -> bool:
    return kind_of(fixture.data) == "sequence"


@EXERCISE.check(
    level=1,
    per_fixture=True,
    applies=is_parse,
    title="parse_crash_after lê rótulo:n e recusa valores malformados",
    criterion=(
        "\"rótulo:n\" vira (rótulo, n); sem \":n\", n = 1. Rótulo desconhecido, contagem que não é "
        "número ou menor que 1 levantam ValueError com uma mensagem que cita CRASH_AFTER e o valor ruim."
    ),
)
def parse_crash_after_reads_the_value(ctx: Context, fixture: Fixture) -> None:
    parse = ctx.student_function("parse_crash_after")
    spec, expect = fixture.data["spec"], fixture.expect
    value, error = ctx.call_catching(parse, spec, label="parse_crash_after")
    if "parsed" in expect:
        wanted = tuple(expect["parsed"])
        if error is not None:
            raise CheckFailed(
                f"parse_crash_after({spec!r}) levantou {describe_error(error)}, mas o valor é válido"
                + (" (sem \":n\", a contagem é 1)." if ":" not in spec else "."),
                expected=list(wanted), observed=f"{describe_error(error)}",
            )
        if isinstance(value, list):
            value = tuple(value)
        if value != wanted:
            hint = ""
            if isinstance(value, tuple) and len(value) == 2 and value[1] == str(wanted[1]):
                hint = " A contagem precisa ser um int, não o texto."
            raise CheckFailed(
                f"parse_crash_after({spec!r}) devolveu {show(value, 80)}; esperado (rótulo, n).{hint}",
                expected=list(wanted), observed=show(value, 80),
            )
        return
    mentions = expect["error_mentions"]
    if error is None:
        raise CheckFailed(
            f"parse_crash_after({spec!r}) aceitou um valor malformado e devolveu {show(value, 80)}. Um "
            "CRASH_AFTER errado que passa em silêncio faz o teste rodar sem nunca cair: ele passaria sem "
            "verificar nada. Levante ValueError.",
            expected="ValueError", observed=show(value, 80),
        )
    if not isinstance(error, ValueError):
        raise CheckFailed(
            f"parse_crash_after({spec!r}) levantou {type(error).__name__}; use ValueError para um valor malformado.",
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


# ----------------------------------------------------------------- level 1: crash_point


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
    title="crash_point conta por rótulo e cai só na n-ésima passagem",
    criterion=(
        "Cada chamada soma 1 ao rótulo (com ou sem CRASH_AFTER). SimulatedCrash sai na n-ésima passagem "
        "do rótulo de CRASH_AFTER e só nela; sem CRASH_AFTER nada cai; um rótulo desconhecido, no "
        "CRASH_AFTER ou no próprio crash_point, é um ValueError."
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


# ----------------------------------------------------------------- level 2: verify_resume


def is_harness(fixture: Fixture) -> bool:
    return kind_of(fixture.data) == "harness"


def verdict_of(ctx: Context, name: str) -> list[str]:
    """The student's verify_resume on one harness (memoized): the list of problems it found."""

    def compute() -> list[str]:
        from grader.buggy_harnesses import make_harness

        verify = ctx.student_function("verify_resume")
        harness = make_harness(name, shown_as="harness sob teste")  # the real name stays hidden

        def attempt() -> Any:
            try:
                return verify(harness)
            except AssertionError as error:  # an assert that fails is a problem found
                return [f"AssertionError: {error}" if str(error) else "AssertionError"]

        attempt.__name__ = "verify_resume"
        try:
            found = ctx.call(attempt)
        finally:
            harness.cleanup()
        if found is None:
            raise StudentProblem(
                "verify_resume devolveu None: devolva a lista de problemas encontrados ([] quando o harness "
                "passou em tudo). Esqueceu o return?"
            )
        if not isinstance(found, (list, tuple)):
            raise StudentProblem(
                f"verify_resume deveria devolver uma lista de problemas (textos), mas devolveu "
                f"{type(found).__name__}: {show(found, 120)}."
            )
        return [str(item) for item in found]

    return ctx.memo(f"verify:{name}", compute)


def silent_defects() -> list[str]:
    from grader.buggy_harnesses import defects

    return [name for name, defect in defects().items() if defect.completes]


def catches_a_silent_defect(ctx: Context) -> bool:
    """Does the verification reject at least one defect under which every run ends completed?"""
    for name in silent_defects():
        try:
            if verdict_of(ctx, name):
                return True
        except StudentProblem:
            continue
    return False


CANNOT_FAIL = (
    "Sua verificação não reprovou nenhum dos harnesses defeituosos em que a execução termina "
    "`completed` (e-mail duplicado, recibo antes da execução, contadores zerados...). Uma verificação "
    "que não consegue falhar não ganha nada: o nível 2 fica em zero até ela pegar pelo menos um "
    "deles. Conferir só que a execução terminou não basta; olhe o mundo e os arquivos."
)


def require_reference_approved(ctx: Context) -> None:
    found = verdict_of(ctx, "reference")
    if found:
        shown = "; ".join(found[:3]) + (f" (e mais {len(found) - 3})" if len(found) > 3 else "")
        raise CheckFailed(
            "Sua verificação reprovou o harness de referência, que está certo. Antes de pegar defeitos, ela "
            f"precisa aprovar um harness sem defeito. Problemas que ela apontou: {shown}",
            expected="[] no harness de referência", observed=show(found, 400),
        )


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=lambda fixture: is_harness(fixture) and fixture.expect.get("verdict") == "aprovar",
    title="A verificação aprova o harness de referência (e consegue falhar)",
    criterion=(
        "verify_resume(harness) devolve [] para o harness de referência, e reprova pelo menos um harness "
        "defeituoso em que a execução termina completed: uma verificação que sempre aprova, ou que só "
        "confere que a execução terminou, fica com zero no nível."
    ),
)
def approves_the_reference(ctx: Context, fixture: Fixture) -> None:
    require_reference_approved(ctx)
    if not catches_a_silent_defect(ctx):
        raise CheckFailed(CANNOT_FAIL, expected="pelo menos um defeito silencioso reprovado",
                          observed="nenhum reprovado")


@EXERCISE.check(
    level=2,
    per_fixture=True,
    applies=lambda fixture: is_harness(fixture) and fixture.expect.get("verdict") == "reprovar",
    title="A verificação reprova o harness defeituoso",
    criterion=(
        "verify_resume devolve pelo menos um problema para este harness defeituoso, aprova o de "
        "referência e reprova algum defeito em que a execução termina completed."
    ),
)
def rejects_the_defect(ctx: Context, fixture: Fixture) -> None:
    from grader.buggy_harnesses import defects

    defect = defects()[fixture.data["harness"]]
    found = verdict_of(ctx, defect.name)
    require_reference_approved(ctx)
    if not catches_a_silent_defect(ctx):
        raise CheckFailed(CANNOT_FAIL, expected="pelo menos um defeito silencioso reprovado",
                          observed="nenhum reprovado")
    if not found:
        raise CheckFailed(
            f"Sua verificação aprovou um harness com defeito. O defeito: {defect.description} "
            f"Como ele aparece: {defect.symptom}",
            expected="pelo menos um problema", observed="[] (aprovado)",
        )


# ----------------------------------------------------------------- level 3: the lease


LEASE_FILE = "lease.json"
CHECKPOINT_FILE = "checkpoint.json"


def lease_functions(ctx: Context):
    return (ctx.student_function("acquire_lease"), ctx.student_function("check_fence"),
            ctx.student_function("fenced_save"))


def fresh_run_dir(ctx: Context, label: str) -> Path:
    return ctx._session.fresh_dir(label)


def read_lease_file(run_dir: Path) -> dict | None:
    path = run_dir / LEASE_FILE
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise CheckFailed(f"lease.json não é JSON válido: {error.msg}", expected="um objeto JSON",
                          observed=path.read_text(encoding="utf-8")[:200]) from None


def acquire(ctx: Context, run_dir: Path, owner: str, now: float, seconds: float = 30.0) -> dict:
    acquire_lease = ctx.student_function("acquire_lease")
    value, error = ctx.call_catching(acquire_lease, run_dir, owner, now, seconds)
    if isinstance(error, FileNotFoundError) and not run_dir.is_dir():
        raise CheckFailed(
            f"acquire_lease levantou {describe_error(error)} numa execução cuja pasta ainda não existia: a "
            "primeira posse é quem abre a pasta. Crie run_dir (mkdir(parents=True, exist_ok=True)) antes de "
            "gravar lease.json.",
            expected="a posse, com run_dir criada", observed=f"{describe_error(error)}",
        )
    if error is not None:
        raise CheckFailed(
            f"acquire_lease(..., owner={owner!r}, now={now:g}) levantou {describe_error(error)}, mas a "
            "posse estava livre (nunca teve dono, ou a anterior já tinha vencido).",
            expected="a posse", observed=f"{describe_error(error)}",
        )
    if not isinstance(value, dict) or not {"owner", "token", "expires_at"} <= set(value):
        raise CheckFailed(
            f"acquire_lease deveria devolver um dict com owner, token e expires_at; devolveu {show(value, 120)}.",
            expected="{owner, token, expires_at}", observed=show(value, 120),
        )
    return value


def lease_held_error():
    from harness.lifecycle import LeaseHeld

    return LeaseHeld


def lease_lost_error():
    from harness.lifecycle import LeaseLost

    return LeaseLost


@EXERCISE.check(
    level=3,
    title="A primeira posse recebe o token 1 e fica gravada",
    criterion=(
        "acquire_lease numa pasta sem lease.json devolve e grava {owner, token: 1, expires_at: now + seconds}, "
        "com o seconds pedido (30 s e 7,5 s); a pasta da execução que ainda não existe é criada."
    ),
)
def first_lease_gets_token_one(ctx: Context) -> None:
    # a lifetime fixed in the code fails one of them; the second run folder does not exist yet
    for now, seconds, folder in ((1000.0, 30.0, ""), (500.0, 7.5, "execucao-nova")):
        run_dir = fresh_run_dir(ctx, "primeira-posse") / folder
        lease = acquire(ctx, run_dir, "worker-a", now, seconds)
        wanted = {"owner": "worker-a", "token": 1, "expires_at": now + seconds}
        got = {key: lease.get(key) for key in wanted}
        if got != wanted:
            hint = ""
            if got["expires_at"] != wanted["expires_at"] and got["token"] == 1:
                hint = (f" Com seconds={seconds:g}, a posse vence em now + seconds = {now + seconds:g}: use o "
                        "argumento seconds, não um prazo fixo no código.")
            raise CheckFailed("A primeira posse deveria ter o token 1 e vencer em now + seconds." + hint,
                              expected=wanted, observed=got)
        stored = read_lease_file(run_dir)
        if stored is None:
            raise CheckFailed("acquire_lease não gravou lease.json na pasta da execução: os outros workers leem a "
                              "posse de lá.", expected="lease.json", observed="nenhum arquivo")
        stored_part = {key: stored.get(key) for key in wanted}
        if stored_part != wanted:
            raise CheckFailed("lease.json não guarda a posse devolvida.", expected=wanted, observed=stored_part)


@EXERCISE.check(
    level=3,
    title="Uma posse válida de outro worker é recusada",
    criterion="Enquanto now < expires_at, acquire_lease levanta LeaseHeld e não muda o lease.json.",
)
def held_lease_is_refused(ctx: Context) -> None:
    run_dir = fresh_run_dir(ctx, "posse-ocupada")
    acquire(ctx, run_dir, "worker-a", 1000.0, 30.0)
    before = (run_dir / LEASE_FILE).read_bytes()
    acquire_lease = ctx.student_function("acquire_lease")
    for now in (1010.0, 1029.5):
        value, error = ctx.call_catching(acquire_lease, run_dir, "worker-b", now, 30.0)
        if error is None:
            raise CheckFailed(
                f"worker-b pegou a posse em now={now:g}, mas a de worker-a vale até 1030: dois workers "
                "retomariam a mesma execução.",
                expected="LeaseHeld", observed=show(value, 120),
            )
        if not isinstance(error, lease_held_error()):
            raise CheckFailed(f"A recusa deveria ser LeaseHeld (de harness.lifecycle), foi {describe_error(error)}.",
                              expected="LeaseHeld", observed=type(error).__name__)
        if (run_dir / LEASE_FILE).read_bytes() != before:
            raise CheckFailed("A tentativa recusada alterou o lease.json: quem não pegou a posse não grava nada.",
                              expected="lease.json intacto", observed="lease.json alterado")


@EXERCISE.check(
    level=3,
    title="Uma posse vencida pode ser tomada, com um token maior",
    criterion="Com now >= expires_at, outro worker toma a posse e recebe o token anterior + 1.",
)
def expired_lease_is_taken_over(ctx: Context) -> None:
    run_dir = fresh_run_dir(ctx, "posse-vencida")
    first = acquire(ctx, run_dir, "worker-a", 1000.0, 30.0)
    acquire_lease = ctx.student_function("acquire_lease")
    value, error = ctx.call_catching(acquire_lease, run_dir, "worker-b", 1030.0, 30.0)
    if error is not None:
        raise CheckFailed(
            "Em now == expires_at (1030) a posse de worker-a já venceu (a regra é now >= expires_at), mas "
            f"worker-b foi recusado com {describe_error(error)}. Sem isso, um worker que morreu "
            "prende a execução para sempre.",
            expected="a posse para worker-b", observed=f"{type(error).__name__}",
        )
    if not isinstance(value, dict) or value.get("owner") != "worker-b":
        raise CheckFailed("acquire_lease deveria devolver a posse de worker-b.", expected="owner worker-b",
                          observed=show(value, 120))
    if value.get("token") != first["token"] + 1:
        raise CheckFailed(
            f"O novo dono recebeu o token {value.get('token')!r}; o anterior tinha {first['token']}. O fencing "
            "token precisa crescer a cada posse, senão o dono antigo não se distingue do novo.",
            expected=first["token"] + 1, observed=value.get("token"),
        )


@EXERCISE.check(
    level=3,
    title="O token só cresce",
    criterion="Posses seguidas (a, b, a de novo), cada uma depois da anterior vencer, recebem 1, 2, 3.",
)
def token_only_grows(ctx: Context) -> None:
    run_dir = fresh_run_dir(ctx, "tokens")
    tokens = [acquire(ctx, run_dir, owner, now, 30.0)["token"]
              for owner, now in (("worker-a", 0.0), ("worker-b", 40.0), ("worker-a", 80.0))]
    if tokens != [1, 2, 3]:
        raise CheckFailed(
            "Cada posse nova recebe um token maior que todos os anteriores, mesmo quando o dono é um worker "
            "que já teve a posse antes.",
            expected=[1, 2, 3], observed=tokens,
        )
    stored = read_lease_file(run_dir) or {}
    if stored.get("token") != 3:
        raise CheckFailed("lease.json deveria guardar o token da posse atual.", expected=3,
                          observed=stored.get("token"))


def expect_lost(ctx: Context, function: Any, label: str, *args: Any, why: str) -> None:
    value, error = ctx.call_catching(function, *args, label=label)
    if error is None:
        raise CheckFailed(why, expected="LeaseLost", observed=f"nenhum erro ({show(value, 60)})")
    if not isinstance(error, lease_lost_error()):
        raise CheckFailed(f"O esperado é LeaseLost (de harness.lifecycle); veio {describe_error(error)}.",
                          expected="LeaseLost", observed=type(error).__name__)


@EXERCISE.check(
    level=3,
    title="check_fence só aceita o token da posse atual",
    criterion="check_fence passa com o token atual e levanta LeaseLost com um token velho, um token "
              "que não existe, ou sem lease.json.",
)
def check_fence_accepts_only_the_current_token(ctx: Context) -> None:
    check_fence = ctx.student_function("check_fence")
    run_dir = fresh_run_dir(ctx, "cerca")
    expect_lost(ctx, check_fence, "check_fence", run_dir, 1,
                why="Sem lease.json ninguém tem a posse, mas check_fence deixou o token 1 passar.")
    acquire(ctx, run_dir, "worker-a", 0.0, 30.0)
    acquire(ctx, run_dir, "worker-b", 40.0, 30.0)
    _, error = ctx.call_catching(check_fence, run_dir, 2)
    if error is not None:
        raise CheckFailed(f"check_fence recusou o token da posse atual (2): {describe_error(error)}.",
                          expected="nenhum erro", observed=type(error).__name__)
    expect_lost(ctx, check_fence, "check_fence", run_dir, 1,
                why="worker-a (token 1) perdeu a posse para worker-b (token 2), mas check_fence deixou o token 1 "
                    "passar: o dono antigo gravaria por cima do novo.")
    expect_lost(ctx, check_fence, "check_fence", run_dir, 3,
                why="O token 3 não é o da posse atual (2), mas passou: compare com igualdade, não com >=.")


@EXERCISE.check(
    level=3,
    title="Um dono antigo não grava; o atual grava",
    criterion="fenced_save com um token velho levanta LeaseLost e deixa checkpoint.json intacto, byte a "
              "byte; com o token atual, grava o estado em checkpoint.json.",
)
def stale_holder_cannot_write(ctx: Context) -> None:
    fenced_save = ctx.student_function("fenced_save")
    run_dir = fresh_run_dir(ctx, "gravacao")
    acquire(ctx, run_dir, "worker-a", 0.0, 30.0)
    acquire(ctx, run_dir, "worker-b", 40.0, 30.0)
    newer = {"version": 2, "task": "t", "turns": 5, "tokens_used": 50, "messages": [], "pending_tool_use": None}
    older = dict(newer, turns=3, tokens_used=30)
    _, error = ctx.call_catching(fenced_save, run_dir, 2, newer)
    if error is not None:
        raise CheckFailed(f"O dono atual (token 2) não conseguiu gravar: {describe_error(error)}.",
                          expected="checkpoint.json gravado", observed=type(error).__name__)
    path = run_dir / CHECKPOINT_FILE
    if not path.exists():
        raise CheckFailed("fenced_save com o token atual não criou checkpoint.json.", expected="checkpoint.json",
                          observed="nenhum arquivo")
    if json.loads(path.read_text(encoding="utf-8")) != newer:
        raise CheckFailed("checkpoint.json não tem o estado gravado pelo dono atual.", expected=newer,
                          observed=path.read_text(encoding="utf-8")[:300])
    before = path.read_bytes()
    _, error = ctx.call_catching(fenced_save, run_dir, 1, older)
    changed = path.read_bytes() != before
    if error is None or changed:
        raise CheckFailed(
            "O dono antigo (token 1) " + ("gravou por cima do checkpoint do dono atual" if changed else
                                          "não foi barrado") +
            ": confira o token com check_fence ANTES de gravar, e não grave nada se ele não for o atual.",
            expected="LeaseLost e checkpoint.json intacto",
            observed=("checkpoint.json alterado" if changed else "nenhum erro"),
        )
    if not isinstance(error, lease_lost_error()):
        raise CheckFailed(f"O esperado é LeaseLost; veio {describe_error(error)}.", expected="LeaseLost",
                          observed=type(error).__name__)
    leftovers = sorted(p.name for p in run_dir.iterdir() if p.name.endswith(".tmp"))
    if leftovers:
        raise CheckFailed(f"Sobrou {', '.join(leftovers)} na pasta: grave com write_json_atomic.",
                          expected="nenhum .tmp", observed=", ".join(leftovers))


@EXERCISE.check(
    level=3,
    title="Uma queda no meio da escrita não estraga o lease nem o checkpoint",
    criterion=(
        "Se o processo morre no meio da escrita (o corretor faz a escrita parar depois de alguns bytes), "
        "lease.json continua sendo a posse anterior e checkpoint.json o estado anterior, inteiros e "
        "legíveis: as duas gravações trocam um temporário completo pelo arquivo verdadeiro."
    ),
)
def torn_writes_keep_lease_and_checkpoint(ctx: Context) -> None:
    from grader.checks.write_spies import observed_writes

    acquire_lease, fenced_save = ctx.student_function("acquire_lease"), ctx.student_function("fenced_save")
    run_dir = fresh_run_dir(ctx, "queda-na-escrita")
    acquire(ctx, run_dir, "worker-a", 0.0, 30.0)
    state = {"version": 2, "task": "t", "turns": 5, "tokens_used": 50, "messages": [
        {"role": "user", "content": "Resuma as atas da semana. " * 20}], "pending_tool_use": None}
    ctx.call_catching(fenced_save, run_dir, 1, state)
    for name, function, args in (
            ("checkpoint.json", fenced_save, (run_dir, 1, dict(state, turns=6))),
            ("lease.json", acquire_lease, (run_dir, "worker-b", 40.0, 30.0))):
        path = run_dir / name
        if not path.exists():
            raise nothing_observed(f"não há {name} na pasta depois da gravação anterior, então não há o que "
                                   "uma queda poderia estragar", expected=name)
        before = path.read_bytes()
        with observed_writes(ctx, crash_after=min(40, len(before) // 2)) as budget:
            ctx.call_or_problem(function, *args)
        if not budget["crashed"]:
            raise nothing_observed(
                f"{function.__name__} não escreveu nada por open() (nem por write_json_atomic), então a queda no "
                "meio da escrita não pôde ser simulada", expected=f"a gravação de {name}")
        after = path.read_bytes() if path.exists() else b""
        if after != before:
            raise CheckFailed(
                f"O processo morreu no meio da gravação de {name} por {function.__name__} e o arquivo ficou "
                f"diferente do anterior ({len(after)} bytes em vez de {len(before)}): "
                + ("o worker que tinha a posse a perdeu sem ninguém a ter tomado. " if name == "lease.json" else
                   "o último estado bom se perdeu. ")
                + "Grave com write_json_atomic (temporário completo, depois os.replace), nunca direto no arquivo.",
                expected=f"{name} anterior, byte a byte", observed=after[:120].decode("utf-8", "replace"),
            )


# ----------------------------------------------------------------- for the exercise notebook


def reference_harness():
    """The course's harness as shipped, for ``verify_resume`` to approve."""
    from grader.buggy_harnesses import REFERENCE, make_harness

    return make_harness(REFERENCE)


def buggy_harness(name: str):
    """A harness with one seeded defect (see ``defect_names()``), for ``verify_resume`` to reject."""
    from grader.buggy_harnesses import make_harness

    return make_harness(name)


def defect_names() -> list[str]:
    from grader.buggy_harnesses import defects

    return list(defects())
