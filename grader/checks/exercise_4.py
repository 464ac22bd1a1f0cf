"""Checks for exercise-4: side effects and idempotence.

Level 1 grades a structured answer (``ANSWERS``: operation -> "idempotente" /
"não idempotente"). Level 2 grades ``load_effects(path)`` and
``save_effect(path, tool_use_id, record)``. Level 3 grades the three-way
``reconcile(cp, effects_path)`` on every fixture. Level 4 grades
``run_tool_uses(tool_uses, ctx)`` with the approval gate, on worlds the checks build.

A level-3 fixture (``grader/fixtures/exercise-4/*.json``) is a crash scene:

    {
      "description": "...",
      "checkpoint": {version, task, turns, tokens_used, messages, pending_tool_use},
      "effects": {"<tool_use_id>": {tool, input_hash, status, result, recorded_at}},  # optional
      "workspace": {"files": {...}, "outbox": [...], "tickets": [...]},              # optional
      "expect": {
        "ways": {"<tool_use_id>": "reuse" | "rerun" | "run" | "confirm"},   # {} = nothing pending
        "outbox_after": 1,    # optional
        "tickets_after": 0    # optional
      }
    }

"reuse": a receipt is in the ledger, the recorded result comes back and nothing runs.
"rerun": a read-only call runs again once. "run": a high-impact call that never took
effect runs exactly once with idempotency_key == tool_use_id and leaves a receipt.
"confirm": an intent whose effect the external system already holds: nothing runs and
the receipt becomes committed.
"""
from __future__ import annotations

import copy
import json
import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from grader.checks.fixture_shape import (
    checkpoint_problems,
    count_problems,
    pending_ids,
    problem,
    required_text,
    unknown_keys,
    workspace_problems,
)
from grader.checks.framework import (
    NOT_IMPLEMENTED_PREFIX,
    CheckFailed,
    Context,
    Exercise,
    Fixture,
    StudentProblem,
    block_text,
    content_blocks,
    nothing_observed,
    show,
)
from grader.core.plural import quantity

EXERCISE = Exercise("exercise-4")

IDEMPOTENT = "idempotente"
NOT_IDEMPOTENT = "não idempotente"
LABELS = (IDEMPOTENT, NOT_IDEMPOTENT)

# Level 1: the operations listed in the exercise notebook, the right label, and why.
OPERATIONS = {
    "enviar_email_sem_chave": (
        NOT_IDEMPOTENT,
        "`send_email` sem chave acrescenta um e-mail à caixa de saída a cada chamada: duas chamadas, "
        "dois e-mails. O valor devolvido é igual nas duas vezes, mas o efeito não.",
    ),
    "enviar_email_mesma_chave": (
        IDEMPOTENT,
        "Com a mesma `idempotency_key`, o sistema externo reconhece a repetição e não envia de novo: "
        "o mundo fica com um e-mail só. A resposta muda (\"já tinha sido enviado\"), o efeito não.",
    ),
    "ler_arquivo": (
        IDEMPOTENT,
        "`read_file` não muda nada no mundo: ler uma ou dez vezes deixa o mesmo estado.",
    ),
    "acrescentar_linha_log": (
        NOT_IDEMPOTENT,
        "Acrescentar uma linha a um log é acréscimo: cada chamada deixa uma linha a mais.",
    ),
    "gravar_status_fixo": (
        IDEMPOTENT,
        "Gravar `status = \"concluído\"` por cima do arquivo é sobrescrita com valor fixo: uma ou "
        "dez vezes, o arquivo termina igual.",
    ),
    "somar_contador": (
        NOT_IDEMPOTENT,
        "Ler o contador, somar 1 e regravar o arquivo inteiro parece sobrescrita, mas o valor "
        "gravado depende do anterior: cada repetição soma mais um. É acréscimo disfarçado.",
    ),
    "apagar_arquivo_se_existir": (
        IDEMPOTENT,
        "Depois da primeira chamada o arquivo não existe; a segunda devolve \"não encontrado\", mas "
        "o mundo é o mesmo: sem o arquivo. Julgue pelo efeito, não pela resposta.",
    ),
    "ensure_ticket_mesmo_titulo": (
        IDEMPOTENT,
        "`ensure_ticket` procura pelo título e só cria o que falta: duas chamadas deixam um chamado.",
    ),
    "create_ticket_mesmo_titulo": (
        NOT_IDEMPOTENT,
        "`create_ticket` sem chave abre um chamado novo a cada chamada, mesmo com o mesmo título "
        "(regravar tickets.json inteiro não muda isso: o efeito é um chamado a mais).",
    ),
}

WAYS = ("reuse", "rerun", "run", "confirm")
HIGH_IMPACT = ("send_email", "create_ticket", "ensure_ticket")
LEDGER_STATUSES = ("intent", "committed", "rejected", "unknown")


# ----------------------------------------------------------------- fixture shape


@EXERCISE.fixture_validator
def validate_fixture(data: dict) -> list[str]:
    problems = unknown_keys(data, {"description", "checkpoint", "effects", "workspace", "expect"})
    problems += required_text(data, "description", "description")
    problems += checkpoint_problems(data.get("checkpoint"))
    problems += workspace_problems(data.get("workspace"))
    effects = data.get("effects", {})
    if not isinstance(effects, dict):
        problems.append(problem("effects", "deveria ser um objeto tool_use_id -> registro"))
        effects = {}
    for key, record in effects.items():
        if not isinstance(record, dict) or record.get("status") not in LEDGER_STATUSES \
                or not isinstance(record.get("tool"), str):
            problems.append(problem(
                f"effects.{key}", f"deveria ter tool (texto) e status em {', '.join(LEDGER_STATUSES)}"))
        elif record["status"] != "intent" and not (
                isinstance(record.get("result"), dict) and isinstance(record["result"].get("content"), str)
                and isinstance(record["result"].get("is_error"), bool)):
            problems.append(problem(f"effects.{key}.result", "um recibo precisa de {content: texto, is_error: bool}"))
    expect = data.get("expect")
    if not isinstance(expect, dict):
        return problems + [problem("expect", "obrigatório, deveria ser um objeto com ways")]
    problems += unknown_keys(expect, {"ways", "outbox_after", "tickets_after"}, "expect")
    ways = expect.get("ways")
    if not isinstance(ways, dict):
        problems.append(problem("expect.ways", "obrigatório: tool_use_id -> " + " | ".join(WAYS)))
        return problems
    for key, way in ways.items():
        if way not in WAYS:
            problems.append(problem(f"expect.ways.{key}", f"deveria ser um de {', '.join(WAYS)} (é {way!r})"))
        elif way == "reuse" and effects.get(key, {}).get("status") not in ("committed", "rejected"):
            problems.append(problem(f"expect.ways.{key}", "\"reuse\" pede um recibo committed ou rejected em effects"))
        elif way == "confirm" and effects.get(key, {}).get("status") not in ("intent", "unknown"):
            problems.append(problem(f"expect.ways.{key}", "\"confirm\" pede um registro intent ou unknown em effects"))
    ids = pending_ids(data.get("checkpoint"))
    if ids is not None and sorted(map(str, ways)) != sorted(map(str, ids)):
        problems.append(problem("expect.ways", f"as chaves deveriam ser exatamente os ids pendentes {ids}"))
    return problems + count_problems(expect, ("outbox_after", "tickets_after"), "expect")


# ----------------------------------------------------------------- shared helpers


def read_ledger(path: Path) -> dict | None:
    """The ledger as JSON, or None when it is absent or unreadable (the checks say which)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def status_in(path: Path, tool_use_id: str) -> str | None:
    record = (read_ledger(path) or {}).get(tool_use_id)
    return record.get("status") if isinstance(record, dict) else None


def world(name: str, **spec: Any) -> Fixture:
    """A fixture-like world for the levels that build their own scenes."""
    return Fixture(name=name, data={"workspace": spec})


class Raised:
    """What a student's function raised, kept as a value so a check can inspect it."""

    def __init__(self, error: BaseException):
        self.error = error


def capturing(function, *expected: type) -> Any:
    """Wraps ``function`` so that the exceptions a check expects come back as ``Raised``."""

    def attempt(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except expected as error:
            return Raised(error)

    attempt.__name__ = getattr(function, "__name__", "função")
    return attempt


# ----------------------------------------------------------------- level 1


@EXERCISE.check(
    level=1,
    title="ANSWERS classifica todas as operações, com os rótulos do exercício",
    criterion=(
        "ANSWERS é um dict com exatamente as operações do caderno, cada uma valendo "
        "IDEMPOTENTE (\"idempotente\") ou NAO_IDEMPOTENTE (\"não idempotente\")."
    ),
)
def answers_are_complete(ctx: Context) -> None:
    answers = ctx.student_answer("ANSWERS")
    if not isinstance(answers, dict):
        raise CheckFailed(
            f"ANSWERS deveria ser um dict operação -> rótulo, mas é {type(answers).__name__}.",
            expected="dict", observed=answers,
        )
    missing = [key for key in OPERATIONS if key not in answers]
    extra = [key for key in answers if key not in OPERATIONS]
    if missing:
        raise CheckFailed(
            f"Faltam operações em ANSWERS: {', '.join(missing)}.",
            expected=sorted(OPERATIONS), observed=sorted(answers),
        )
    if extra:
        raise CheckFailed(
            f"ANSWERS tem chaves que não são operações do exercício: {', '.join(map(str, extra))}.",
            expected=sorted(OPERATIONS), observed=sorted(map(str, answers)),
        )
    for key, label in answers.items():
        if label is None:
            raise StudentProblem(f"Ainda não implementado: a operação {key} ainda vale None.", unwritten="ANSWERS")
        if label not in LABELS:
            raise CheckFailed(
                f"{key}: o rótulo {label!r} não é um dos dois do exercício; use IDEMPOTENTE ou NAO_IDEMPOTENTE.",
                expected=list(LABELS), observed=label,
            )


@EXERCISE.check(
    level=1,
    title="Cada operação classificada pelo efeito no mundo",
    criterion=(
        "Idempotente é a operação que, rodada duas vezes, deixa o mundo como rodada uma vez: "
        "acréscimos (linha nova, e-mail sem chave, chamado novo, contador somado) não são; "
        "leituras, sobrescritas com valor fixo, repetições com a mesma chave e \"garantir que existe\" são."
    ),
)
def answers_judge_by_effect(ctx: Context) -> None:
    answers = ctx.student_answer("ANSWERS")
    if not isinstance(answers, dict):
        raise CheckFailed("ANSWERS deveria ser um dict (veja a verificação anterior).", expected="dict", observed=answers)
    wrong = [key for key, (label, _) in OPERATIONS.items() if answers.get(key) != label]
    if wrong:
        key = wrong[0]
        label, why = OPERATIONS[key]
        others = f" (e mais {quantity(len(wrong) - 1, 'operação', 'operações')} com o rótulo trocado)" if len(wrong) > 1 else ""
        raise CheckFailed(
            f"{key}: {why}{others}",
            expected=label, observed=answers.get(key),
        )


# ----------------------------------------------------------------- level 2


def ledger_error_class() -> type:
    from harness.effects import EffectsLedgerError

    return EffectsLedgerError


CORRUPT_LEDGERS = {
    "arquivo vazio": "",
    "JSON truncado": '{"toolu_01TE2": {"tool": "send_email", "status": "comm',
    "uma lista em vez de objeto": '[{"tool": "send_email"}]',
    "status desconhecido": json.dumps({"toolu_01TE2": {"tool": "send_email", "status": "feito",
                                                        "result": {"content": "ok", "is_error": False}}}),
}


def receipt(tool_use_id: str, content: str) -> dict:
    from harness.effects import make_receipt

    call = {"id": tool_use_id, "name": "send_email", "input": {"to": "team@example.com", "subject": content}}
    record = make_receipt(call, {"content": content, "is_error": False})
    record["recorded_at"] = "2026-11-20T14:03:11+00:00"
    return record


@EXERCISE.check(
    level=2,
    title="load_effects: arquivo ausente é um livro vazio",
    criterion="Sem effects.json, nada foi feito ainda: load_effects devolve {} (e não cria o arquivo).",
)
def missing_ledger_is_empty(ctx: Context) -> None:
    load_effects = ctx.student_function("load_effects")
    with ctx.tools(world("n2-ausente")) as spy:
        path = Path(spy.workspace.root) / "effects.json"
        observed = ctx.call(capturing(load_effects, ledger_error_class()), path)
    if isinstance(observed, Raised):
        raise CheckFailed(
            "load_effects levantou EffectsLedgerError para um arquivo que não existe: ausência é o "
            "caso normal de uma execução que ainda não fez nenhum efeito; devolva {}.",
            expected={}, observed=str(observed.error),
        )
    if observed != {}:
        raise CheckFailed(
            f"Sem arquivo, load_effects deveria devolver {{}}, mas devolveu {show(observed, 120)}.",
            expected={}, observed=observed,
        )
    if path.exists():
        raise CheckFailed("load_effects criou effects.json: ler não deve gravar nada.",
                          expected="arquivo ausente", observed="arquivo criado")


@EXERCISE.check(
    level=2,
    title="load_effects: livro corrompido falha fechado",
    criterion=(
        "Arquivo vazio, JSON truncado, um valor que não é objeto ou um registro com status "
        "desconhecido levantam EffectsLedgerError com o motivo; nunca viram {}."
    ),
)
def corrupt_ledger_fails_closed(ctx: Context) -> None:
    load_effects = ctx.student_function("load_effects")
    error_class = ledger_error_class()
    with ctx.tools(world("n2-corrompido")) as spy:
        path = Path(spy.workspace.root) / "effects.json"
        for label, text in CORRUPT_LEDGERS.items():
            path.write_text(text, encoding="utf-8")
            try:
                observed = ctx.call(capturing(load_effects, error_class), path)
            except StudentProblem as problem_:
                if problem_.message.startswith(NOT_IMPLEMENTED_PREFIX):
                    raise
                raise CheckFailed(
                    f"Com um livro-razão ({label}), load_effects falhou, mas não com EffectsLedgerError: "
                    f"{problem_.message} Troque o erro de leitura por `raise EffectsLedgerError(path, motivo)`, "
                    "para que a retomada pare com uma mensagem clara.",
                    expected="EffectsLedgerError", observed=problem_.message,
                ) from None
            if isinstance(observed, Raised):
                if not str(observed.error).strip():
                    raise CheckFailed(f"EffectsLedgerError sem motivo ({label}): diga o que está errado.",
                                      expected="uma mensagem com o motivo", observed="mensagem vazia")
                continue
            if observed == {} or observed == []:
                raise CheckFailed(
                    f"Com um livro-razão ({label}), load_effects devolveu {show(observed)} em vez de "
                    "falhar: um livro lido como vazio faz todo efeito já feito parecer \"nunca começou\", "
                    "e a retomada repetiria o e-mail. Levante EffectsLedgerError (falha fechada).",
                    expected="EffectsLedgerError", observed=observed,
                )
            raise CheckFailed(
                f"Com um livro-razão ({label}), load_effects devolveu {show(observed, 160)} em vez de "
                "levantar EffectsLedgerError: confira o JSON, que o valor é um objeto e que cada status "
                "é intent, committed, rejected ou unknown.",
                expected="EffectsLedgerError", observed=observed,
            )


@EXERCISE.check(
    level=2,
    title="save_effect grava por tool_use_id e preserva os outros registros",
    criterion=(
        "Dois save_effect seguidos deixam os dois registros, cada um sob o seu tool_use_id, e "
        "load_effects os lê de volta iguais; o arquivo é JSON válido."
    ),
)
def save_effect_round_trips(ctx: Context) -> None:
    load_effects = ctx.student_function("load_effects")
    save_effect = ctx.student_function("save_effect")
    first, second = receipt("toolu_a1", "primeiro"), receipt("toolu_b2", "segundo")
    with ctx.tools(world("n2-ida-e-volta")) as spy:
        path = Path(spy.workspace.root) / "effects.json"
        ctx.call(save_effect, path, "toolu_a1", copy.deepcopy(first))
        ctx.call(save_effect, path, "toolu_b2", copy.deepcopy(second))
        on_disk = read_ledger(path)
        loaded = ctx.call(load_effects, path)
    if on_disk is None:
        raise CheckFailed("Depois de save_effect, effects.json não existe ou não é um objeto JSON.",
                          expected={"toolu_a1": "...", "toolu_b2": "..."}, observed="arquivo ausente ou ilegível")
    if set(on_disk) == {"toolu_b2"}:
        raise CheckFailed(
            "O segundo save_effect apagou o primeiro registro: leia o livro, acrescente ou troque só "
            "o registro desta chamada e regrave tudo.",
            expected=["toolu_a1", "toolu_b2"], observed=sorted(on_disk),
        )
    if set(on_disk) != {"toolu_a1", "toolu_b2"}:
        raise CheckFailed(
            "As chaves do livro-razão deveriam ser os tool_use_id passados a save_effect.",
            expected=["toolu_a1", "toolu_b2"], observed=sorted(on_disk),
        )
    if on_disk["toolu_a1"] != first or on_disk["toolu_b2"] != second:
        raise CheckFailed("O registro gravado não é o registro recebido: grave o dict como veio.",
                          expected=first, observed=on_disk.get("toolu_a1"))
    if loaded != on_disk:
        raise CheckFailed("load_effects não devolveu o que save_effect gravou.", expected=on_disk, observed=loaded)


@contextmanager
def recorded_replace(fail: bool) -> Iterator[list]:
    """os.replace (and os.rename) observed; with ``fail`` the rename dies like a killed process."""
    real_replace, real_rename = os.replace, os.rename
    moves: list = []

    def replace(src, dst, *args, **kwargs):
        moves.append((os.fspath(src), os.fspath(dst)))
        if fail:
            raise OSError("processo morto no meio da gravação (simulado pelo corretor)")
        return real_replace(src, dst, *args, **kwargs)

    os.replace, os.rename = replace, replace
    try:
        yield moves
    finally:
        os.replace, os.rename = real_replace, real_rename


@EXERCISE.check(
    level=2,
    title="save_effect grava de forma atômica",
    criterion=(
        "save_effect escreve num arquivo temporário e troca com os.replace (write_json_atomic): se "
        "o processo morre na troca, o livro-razão anterior continua inteiro e legível."
    ),
)
def save_effect_is_atomic(ctx: Context) -> None:
    save_effect = ctx.student_function("save_effect")
    original = {"toolu_a1": receipt("toolu_a1", "primeiro")}
    with ctx.tools(world("n2-atomico")) as spy:
        path = Path(spy.workspace.root) / "effects.json"
        path.write_text(json.dumps(original, ensure_ascii=False, indent=1), encoding="utf-8")
        before = path.read_bytes()
        with recorded_replace(fail=False) as moves:
            ctx.call(save_effect, path, "toolu_b2", receipt("toolu_b2", "segundo"))
        if not moves and path.read_bytes() == before:
            raise nothing_observed(
                "save_effect não gravou nada (effects.json ficou igual e nenhum os.replace aconteceu), então "
                "não há gravação cuja atomicidade conferir", expected="o registro novo gravado em effects.json")
        if not any(Path(dst).resolve() == path.resolve() for _, dst in moves):
            raise CheckFailed(
                "save_effect gravou effects.json direto no lugar: uma queda no meio da escrita deixaria "
                "um JSON pela metade. Use write_json_atomic (arquivo temporário + os.replace).",
                expected="os.replace(temporário, effects.json)", observed="nenhum os.replace para effects.json",
            )
        path.write_bytes(before)
        with recorded_replace(fail=True):
            # the simulated crash surfaces as an exception: that is expected
            ctx.call_or_problem(save_effect, path, "toolu_b2", receipt("toolu_b2", "segundo"))
        after = path.read_bytes() if path.exists() else b""
    if after != before:
        raise CheckFailed(
            "Com a troca de arquivos interrompida, effects.json mudou: o livro anterior deveria "
            "ficar intacto (escreva tudo no temporário, e só então troque).",
            expected="o livro anterior, byte a byte", observed=after[:120].decode("utf-8", "replace"),
        )


@EXERCISE.check(
    level=2,
    title="Uma queda no meio da escrita não estraga o livro-razão",
    criterion=(
        "Se o processo morre no meio da escrita (o corretor faz a escrita parar depois de alguns bytes), "
        "effects.json continua sendo o livro anterior, inteiro e legível: os recibos já gravados não se perdem."
    ),
)
def save_effect_survives_a_torn_write(ctx: Context) -> None:
    from grader.checks.write_spies import observed_writes

    save_effect = ctx.student_function("save_effect")
    original = {f"toolu_a{n}": receipt(f"toolu_a{n}", f"recibo {n}") for n in range(1, 4)}
    with ctx.tools(world("n2-escrita-rasgada")) as spy:
        path = Path(spy.workspace.root) / "effects.json"
        path.write_text(json.dumps(original, ensure_ascii=False, indent=1), encoding="utf-8")
        before = path.read_bytes()
        with observed_writes(ctx, crash_after=len(before) // 2) as budget:
            # the simulated death comes back as the student's problem: what counts is the file left behind
            ctx.call_or_problem(save_effect, path, "toolu_b2", receipt("toolu_b2", "segundo"))
        after = path.read_bytes() if path.exists() else b""
    if not budget["crashed"]:
        raise nothing_observed(
            "save_effect não escreveu nada por open() (nem por write_json_atomic), então a queda no meio da "
            "escrita não pôde ser simulada", expected="uma escrita do livro-razão")
    if after != before:
        raise CheckFailed(
            "O processo morreu no meio da gravação e effects.json ficou diferente do livro anterior "
            f"({len(after)} bytes em vez de {len(before)}): os recibos já gravados se perderam ou o JSON ficou "
            "pela metade. Escreva num temporário e só troque pelo verdadeiro quando ele estiver completo "
            "(write_json_atomic).",
            expected="o livro anterior, byte a byte", observed=after[:120].decode("utf-8", "replace"),
        )


@EXERCISE.check(
    level=2,
    title="save_effect não grava por cima de um livro corrompido",
    criterion=(
        "save_effect lê o livro antes de gravar; corrompido, ele levanta EffectsLedgerError e "
        "deixa o arquivo como estava, em vez de trocá-lo por um livro novo com um registro só."
    ),
)
def save_effect_refuses_corrupt(ctx: Context) -> None:
    save_effect = ctx.student_function("save_effect")
    corrupt = CORRUPT_LEDGERS["JSON truncado"]
    with ctx.tools(world("n2-gravar-corrompido")) as spy:
        path = Path(spy.workspace.root) / "effects.json"
        path.write_text(corrupt, encoding="utf-8")
        returned, problem_ = ctx.call_or_problem(capturing(save_effect, ledger_error_class()), path, "toolu_b2",
                                                 receipt("toolu_b2", "segundo"))
        observed = problem_ or returned
        after = path.read_text(encoding="utf-8")
    if after != corrupt:
        raise CheckFailed(
            "save_effect substituiu um livro-razão corrompido por um novo: os registros que estavam "
            "lá (talvez recibos de e-mails enviados) se perderam. Leia com load_effects antes de gravar.",
            expected="o arquivo corrompido, intacto, e EffectsLedgerError", observed=after[:120],
        )
    if not isinstance(observed, Raised):
        message = observed.message if isinstance(observed, StudentProblem) else f"devolveu {show(observed, 80)}"
        raise CheckFailed(
            f"Com o livro corrompido, save_effect deveria levantar EffectsLedgerError ({message}).",
            expected="EffectsLedgerError", observed=message,
        )


# ----------------------------------------------------------------- level 3


def pending_calls(fixture: Fixture) -> list[dict]:
    return list(fixture.data["checkpoint"].get("pending_tool_use") or [])


def ways(fixture: Fixture) -> dict:
    return fixture.expect.get("ways", {})


@dataclass
class ReconcileRun:
    before: dict
    after: dict
    calls: list
    ledger_before: dict
    ledger_after: dict | None
    emails_before: int
    emails_after: int
    tickets_after: int


def reconciled(ctx: Context, fixture: Fixture) -> ReconcileRun:
    """The student's reconcile, run once per fixture on instrumented tools (memoized)."""

    def run() -> ReconcileRun:
        reconcile = ctx.student_function("reconcile")
        checkpoint = fixture.checkpoint()
        ledger_before = copy.deepcopy(fixture.data.get("effects") or {})
        with ctx.tools(fixture, "reconcile") as spy:
            path = Path(spy.workspace.root) / "effects.json"
            if "effects" in fixture.data:
                path.write_text(json.dumps(ledger_before, ensure_ascii=False, indent=1), encoding="utf-8")
            emails_before = len(spy.emails())
            returned = ctx.call(reconcile, checkpoint, path)
            emails_after, tickets_after = len(spy.emails()), len(spy.tickets())
            ledger_after = read_ledger(path) if path.exists() else {}
        if returned is None:
            raise StudentProblem("reconcile devolveu None: devolva o checkpoint reconciliado (return cp).")
        if not isinstance(returned, dict) or not isinstance(returned.get("messages"), list):
            raise StudentProblem(f"reconcile deveria devolver o checkpoint, mas devolveu {show(returned, 120)}.")
        return ReconcileRun(copy.deepcopy(fixture.data["checkpoint"]), copy.deepcopy(returned), list(spy.calls),
                            ledger_before, ledger_after, emails_before, emails_after, tickets_after)

    return ctx.memo(f"reconcile:{fixture.name}", run)


def answer_block(run: ReconcileRun, tool_use_id: str) -> dict | None:
    before, after = run.before["messages"], run.after["messages"]
    if len(after) != len(before) + 1 or after[: len(before)] != before:
        return None
    return next((b for b in content_blocks(after[-1], "tool_result") if b.get("tool_use_id") == tool_use_id), None)


@EXERCISE.check(
    level=3,
    per_fixture=True,
    title="Uma mensagem com um tool_result por chamada pendente; nada mais muda",
    criterion=(
        "reconcile acrescenta UMA mensagem user com um tool_result por chamada pendente, na ordem, "
        "ids casados; as mensagens anteriores ficam; pending_tool_use vira None; turns e "
        "tokens_used seguem; a API aceita a conversa. Sem nada pendente, nada é acrescentado."
    ),
)
def closes_every_pending_call(ctx: Context, fixture: Fixture) -> None:
    from grader.checks.conversation import require_api_accepts

    run = reconciled(ctx, fixture)
    before, after = run.before["messages"], run.after["messages"]
    ids = [call["id"] for call in pending_calls(fixture)]
    if after[: len(before)] != before:
        raise CheckFailed("As mensagens anteriores foram alteradas: reconcile só acrescenta ao fim.",
                          expected="histórico intacto", observed="histórico alterado")
    added = after[len(before):]
    if not ids and added:
        raise CheckFailed("Nada estava pendente, mas reconcile acrescentou mensagens.",
                          expected="nenhuma mensagem nova", observed=added)
    if ids:
        if len(added) != 1:
            raise CheckFailed(
                f"Os tool_result vão juntos numa única mensagem user; reconcile acrescentou {len(added)}.",
                expected="1 mensagem nova", observed=f"{len(added)} mensagens novas",
            )
        message = added[0]
        answered = [b.get("tool_use_id") for b in content_blocks(message, "tool_result")] \
            if isinstance(message, dict) else []
        if message.get("role") != "user" or answered != ids:
            raise CheckFailed(
                "A mensagem nova deveria ser {\"role\": \"user\"} com um tool_result por chamada pendente, "
                "na mesma ordem, cada um com o tool_use_id da chamada.",
                expected=ids, observed={"role": message.get("role"), "tool_use_ids": answered},
            )
    if run.after.get("pending_tool_use", "<ausente>") is not None:
        raise CheckFailed("pending_tool_use deveria voltar a None depois de reconciliar.",
                          expected=None, observed=run.after.get("pending_tool_use", "<ausente>"))
    for key in ("turns", "tokens_used", "task", "version"):
        if run.after.get(key) != run.before[key]:
            raise CheckFailed(f"{key} mudou de {run.before[key]!r} para {run.after.get(key)!r}: reconciliar não é um turno novo.",
                              expected=run.before[key], observed=run.after.get(key))
    require_api_accepts("a conversa retomada", after)


def executions_of(run: ReconcileRun, call: dict) -> list:
    return [c for c in run.calls if c.name == call["name"] and c.input == call["input"]]


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=lambda fixture: bool(ways(fixture)),
    title="Cada chamada segue a sua via",
    criterion=(
        "Recibo no livro-razão → o resultado registrado volta e nada executa. Somente leitura sem "
        "recibo → reexecuta uma vez. Alto impacto sem recibo e sem intenção (ou com intenção e "
        "nada no sistema externo) → roda uma vez com idempotency_key = tool_use_id. Intenção com "
        "o efeito já no sistema externo → nada executa."
    ),
)
def each_call_takes_its_way(ctx: Context, fixture: Fixture) -> None:
    run = reconciled(ctx, fixture)
    for call in pending_calls(fixture):
        way = ways(fixture)[call["id"]]
        ran = executions_of(run, call)
        block = answer_block(run, call["id"])
        if block is None:
            raise CheckFailed(f"Não achei o tool_result de {call['id']} na mensagem acrescentada.",
                              expected="um tool_result por chamada", observed="sem tool_result")
        text, flagged = block_text(block.get("content")), block.get("is_error") is True
        if way == "reuse":
            recorded = run.ledger_before[call["id"]]
            if ran:
                raise CheckFailed(
                    f"`{call['name']}` ({call['id']}) tinha recibo {recorded['status']} no livro-razão e mesmo "
                    "assim foi executada: é a via 1, reaproveite record[\"result\"] sem executar.",
                    expected="0 execuções", observed=f"{quantity(len(ran), 'execução', 'execuções')}",
                )
            if text != recorded["result"]["content"] or flagged != recorded["result"]["is_error"]:
                raise CheckFailed(
                    f"O tool_result de {call['id']} deveria trazer o resultado registrado no recibo "
                    "(content e is_error de record[\"result\"]).",
                    expected=recorded["result"], observed={"content": block.get("content"), "is_error": block.get("is_error")},
                )
        elif way == "rerun":
            if len(ran) != 1:
                raise CheckFailed(
                    f"`{call['name']}` ({call['id']}) é somente leitura e não tem recibo: reexecute-a uma vez "
                    f"(rodou {quantity(len(ran), 'vez', 'vezes')}).",
                    expected="1 execução", observed=f"{len(ran)}",
                )
            if text != ran[0].result["content"]:
                raise CheckFailed(f"O tool_result de {call['id']} deveria trazer o resultado real da leitura.",
                                  expected=ran[0].result["content"], observed=block.get("content"))
        elif way == "run":
            intent = run.ledger_before.get(call["id"]) is not None
            if not ran:
                reason = ("há só a intenção e o sistema externo não tem efeito com a chave (find_effect devolve "
                          "None): rodar de novo com a mesma chave é seguro") if intent else (
                          "não há registro nenhum no livro-razão: a chamada nunca começou e deve rodar uma vez")
                extra = " Responder is_error, como na lição 3, deixaria a tarefa sem o efeito." if flagged else ""
                raise CheckFailed(f"`{call['name']}` ({call['id']}) não foi executada, mas {reason}.{extra}",
                                  expected="1 execução, com a chave", observed="0 execuções")
            if len(ran) > 1:
                raise CheckFailed(f"`{call['name']}` ({call['id']}) rodou {len(ran)} vezes; uma basta.",
                                  expected="1 execução", observed=f"{len(ran)}")
            if ran[0].idempotency_key != call["id"]:
                raise CheckFailed(
                    f"`{call['name']}` rodou com idempotency_key={ran[0].idempotency_key!r}: passe o "
                    "tool_use_id como chave, para que o sistema externo reconheça uma repetição.",
                    expected=call["id"], observed=ran[0].idempotency_key,
                )
        elif way == "confirm":
            status = run.ledger_before[call["id"]]["status"]
            if ran:
                raise CheckFailed(
                    f"`{call['name']}` ({call['id']}) foi executada de novo, mas havia um registro {status} no "
                    "livro-razão e o efeito já existe no sistema externo com a chave: pergunte antes (find_effect, "
                    "ou confirmed_effect) e só rode o que não aconteceu.",
                    expected="0 execuções", observed=f"{quantity(len(ran), 'execução', 'execuções')}",
                )
            if flagged and status == "unknown":
                raise CheckFailed(
                    f"O registro de {call['id']} no livro-razão era unknown, e o tool_result repetiu o is_error "
                    "dele. unknown não é um desfecho (só committed e rejected são, SETTLED_STATUSES): é uma "
                    "pergunta que ficou sem resposta. Pergunte de novo ao sistema externo (confirmed_effect): "
                    "aqui o efeito está lá, e o recibo vira committed.",
                    expected="efeito confirmado, sem is_error", observed="is_error do registro unknown",
                )
            if flagged:
                raise CheckFailed(
                    f"O efeito de {call['id']} foi confirmado no sistema externo, mas o tool_result diz is_error: "
                    "o modelo acharia que a ação falhou.",
                    expected=False, observed=True,
                )


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=lambda fixture: any(w in ("run", "confirm") for w in ways(fixture).values()),
    title="O livro-razão termina com o recibo de cada efeito",
    criterion=(
        "Depois de reconcile, toda chamada de alto impacto que rodou ou foi confirmada tem um "
        "recibo committed em effects.json (executar primeiro, registrar depois), e o arquivo "
        "continua legível."
    ),
)
def ledger_holds_receipts(ctx: Context, fixture: Fixture) -> None:
    run = reconciled(ctx, fixture)
    if run.ledger_after is None:
        raise CheckFailed("Depois de reconcile, effects.json ficou ilegível.", expected="um objeto JSON",
                          observed="arquivo ilegível")
    for call in pending_calls(fixture):
        if ways(fixture)[call["id"]] not in ("run", "confirm"):
            continue
        record = run.ledger_after.get(call["id"])
        status = record.get("status") if isinstance(record, dict) else None
        if status != "committed":
            detail = "nenhum registro" if record is None else f"status {status!r}"
            raise CheckFailed(
                f"Depois de reconcile, {call['id']} ({call['name']}) ficou com {detail} no livro-razão: grave o "
                "recibo committed (execute_and_record e confirmed_effect já fazem isso). Sem ele, a próxima "
                "retomada não sabe que o efeito aconteceu.",
                expected="committed", observed=status,
            )


@EXERCISE.check(
    level=3,
    per_fixture=True,
    applies=lambda fixture: "outbox_after" in fixture.expect or "tickets_after" in fixture.expect,
    title="O mundo termina com exatamente os efeitos esperados",
    criterion="A caixa de saída e o sistema de chamados terminam com a contagem que a fixture espera (um e-mail, nunca dois).",
)
def world_counts(ctx: Context, fixture: Fixture) -> None:
    run = reconciled(ctx, fixture)
    expect = fixture.expect
    if "outbox_after" in expect and run.emails_after != expect["outbox_after"]:
        raise CheckFailed(
            f"A caixa de saída terminou com {quantity(run.emails_after, 'e-mail', 'e-mails')}; o esperado é {expect['outbox_after']}.",
            expected=expect["outbox_after"], observed=run.emails_after,
        )
    if "tickets_after" in expect and run.tickets_after != expect["tickets_after"]:
        raise CheckFailed(
            f"O sistema de chamados terminou com {run.tickets_after}; o esperado é {expect['tickets_after']}.",
            expected=expect["tickets_after"], observed=run.tickets_after,
        )


# ----------------------------------------------------------------- level 4

NOTES = {"notes/conclusoes.md": "# Conclusões\n\n1. Job noturno migra para a fila nova.\n"}
EMAIL = {"id": "toolu_04N1", "name": "send_email",
         "input": {"to": "team@example.com", "subject": "Conclusões", "body": "Oi, time!"}}
READ = {"id": "toolu_04N2", "name": "read_file", "input": {"path": "notes/conclusoes.md"}}
ENSURE = {"id": "toolu_04N3", "name": "ensure_ticket", "input": {"title": "Migrar o job noturno"}}


class Clock:
    def __init__(self, now: float = 10_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


@contextmanager
def observed_executions(ledger: Path, events: list) -> Iterator[None]:
    """Records every real tool execution with the ledger status of that call at that instant."""
    from harness import tools

    real_run = tools._run

    def run(name, input, idempotency_key):
        ledger_status = status_in(ledger, idempotency_key) if idempotency_key else None
        events.append(("execute", name, idempotency_key, ledger_status))
        return real_run(name, input, idempotency_key)

    tools._run = run
    try:
        yield
    finally:
        tools._run = real_run


def tool_context(path: Path, approver=None, clock=None, dry_run=False, ttl=600):
    from harness.tool_runner import ToolContext

    return ToolContext(path, approver=approver, approvals_path=path.with_name("approvals.json"),
                       approval_ttl=ttl, dry_run=dry_run, clock=clock or Clock())


def recording_approver(events: list, decide):
    def approver(call):
        events.append(("approval", call["name"], call["id"], None))
        return decide(call)

    return approver


def run_turn(ctx: Context, label: str, tool_uses: list, *, approver=None, clock=None, dry_run=False,
             setup=None, waiting_ok=False, ttl=600) -> dict:
    """Runs the student's run_tool_uses once on a fresh world; returns what was observed."""
    from harness.approval import WaitingForApproval

    run_tool_uses = ctx.student_function("run_tool_uses")
    events: list = []
    with ctx.tools(world(label, files=NOTES)) as spy:
        ledger = Path(spy.workspace.root) / "effects.json"
        if setup:
            setup(spy.workspace, ledger)
        outbox_before = spy.workspace.outbox_path.read_bytes() if spy.workspace.outbox_path.exists() else b""
        context = tool_context(ledger, recording_approver(events, approver) if approver else None, clock, dry_run, ttl)
        function = capturing(run_tool_uses, WaitingForApproval) if waiting_ok else run_tool_uses
        with observed_executions(ledger, events):
            returned = ctx.call(function, copy.deepcopy(tool_uses), context)
        outbox_after = spy.workspace.outbox_path.read_bytes() if spy.workspace.outbox_path.exists() else b""
        approvals = read_ledger(ledger.with_name("approvals.json")) or {}
        return {"returned": returned, "events": events, "ledger": read_ledger(ledger) or {}, "approvals": approvals,
                "emails": len(spy.emails()), "tickets": len(spy.tickets()),
                "outbox_same": outbox_before == outbox_after, "calls": list(spy.calls)}


def results_by_id(observed: dict, tool_uses: list) -> dict:
    returned = observed["returned"]
    ids = [call["id"] for call in tool_uses]
    if not isinstance(returned, list):
        raise CheckFailed(f"run_tool_uses deveria devolver uma lista de tool_result, mas devolveu {show(returned, 120)}.",
                          expected="lista de tool_result", observed=returned)
    got = [b.get("tool_use_id") if isinstance(b, dict) else None for b in returned]
    if got != ids or not all(isinstance(b, dict) and b.get("type") == "tool_result" for b in returned):
        raise CheckFailed("run_tool_uses deveria devolver um tool_result por tool_use, na mesma ordem, ids casados.",
                          expected=ids, observed=got)
    return {b["tool_use_id"]: b for b in returned}


def approve_all(call):
    from harness.approval import approve

    return approve()


@EXERCISE.check(
    level=4,
    title="Livro-razão → aprovação → executar → registrar, com a chave",
    criterion=(
        "Num turno com send_email, read_file e ensure_ticket: só as de alto impacto passam pela "
        "aprovação, antes de executar; a intenção está gravada quando a ferramenta roda; o "
        "recibo committed está gravado no fim; idempotency_key = tool_use_id nas de alto impacto; "
        "um tool_result por chamada, na ordem."
    ),
)
def order_and_keys(ctx: Context) -> None:
    turn = [EMAIL, READ, ENSURE]
    observed = run_turn(ctx, "n4-ordem", turn, approver=approve_all)
    results = results_by_id(observed, turn)
    events = observed["events"]
    approvals = [e[1] for e in events if e[0] == "approval"]
    if "read_file" in approvals:
        raise CheckFailed("read_file passou pela válvula: ferramentas somente leitura não têm o que aprovar.",
                          expected=["send_email", "ensure_ticket"], observed=approvals)
    for call in (EMAIL, ENSURE):
        asked = [i for i, e in enumerate(events) if e[0] == "approval" and e[2] == call["id"]]
        ran = [i for i, e in enumerate(events) if e[0] == "execute" and e[1] == call["name"]]
        if not asked:
            raise CheckFailed(
                f"`{call['name']}` executou sem passar pela válvula: chame check_approval antes de executar "
                "uma ferramenta de alto impacto.",
                expected="aprovação consultada", observed="nenhuma consulta",
            )
        if not ran:
            raise CheckFailed(f"`{call['name']}` aprovada, mas não executada.", expected="1 execução", observed="0")
        if len(ran) > 1:
            raise CheckFailed(f"`{call['name']}` executou {len(ran)} vezes.", expected="1", observed=len(ran))
        if asked[0] > ran[0]:
            raise CheckFailed(f"`{call['name']}` executou antes de a aprovação ser consultada: a ordem é aprovação → executar.",
                              expected="aprovação, depois execução", observed="execução, depois aprovação")
        key, ledger_status = events[ran[0]][2], events[ran[0]][3]
        if key != call["id"]:
            raise CheckFailed(
                f"`{call['name']}` rodou com idempotency_key={key!r}: ferramentas de alto impacto recebem o "
                "tool_use_id como chave.",
                expected=call["id"], observed=key,
            )
        if ledger_status == "committed":
            raise CheckFailed(
                f"Quando `{call['name']}` rodou, o livro-razão já dizia committed: o recibo foi gravado antes "
                "de executar. Executar primeiro, registrar depois.",
                expected="intent no instante da execução", observed="committed",
            )
        if ledger_status != "intent":
            raise CheckFailed(
                f"Quando `{call['name']}` rodou, não havia registro de intenção no livro-razão: grave a "
                "intenção antes (record_intent, ou use execute_and_record), para a retomada separar "
                "\"nunca começou\" de \"começou\".",
                expected="intent", observed=ledger_status,
            )
        final = (observed["ledger"].get(call["id"]) or {}).get("status")
        if final != "committed":
            raise CheckFailed(f"Depois do turno, o livro-razão deveria ter o recibo committed de {call['id']}.",
                              expected="committed", observed=final)
    read_runs = [e for e in events if e[0] == "execute" and e[1] == "read_file"]
    if len(read_runs) != 1 or read_runs[0][2] is not None:
        raise CheckFailed("read_file deveria rodar uma vez, sem chave de idempotência.",
                          expected="1 execução sem chave", observed=[e[2] for e in read_runs])
    if results[READ["id"]].get("content") != NOTES["notes/conclusoes.md"]:
        raise CheckFailed("O tool_result do read_file deveria trazer o conteúdo do arquivo.",
                          expected=NOTES["notes/conclusoes.md"], observed=results[READ["id"]].get("content"))
    if observed["emails"] != 1 or observed["tickets"] != 1:
        raise CheckFailed("O turno deveria deixar exatamente um e-mail e um chamado.",
                          expected={"emails": 1, "tickets": 1},
                          observed={"emails": observed["emails"], "tickets": observed["tickets"]})


@EXERCISE.check(
    level=4,
    title="Um recibo no livro-razão é reaproveitado antes de qualquer aprovação",
    criterion=(
        "Se o livro-razão já tem o recibo de uma chamada, committed ou rejected, run_tool_uses devolve "
        "o resultado registrado sem pedir aprovação e sem executar (já foi feito vem antes de deve ser feito)."
    ),
)
def ledger_before_approval(ctx: Context) -> None:
    from harness.effects import make_receipt

    outcomes = {
        "committed": {"content": "e-mail enviado para team@example.com: Conclusões", "is_error": False},
        "rejected": {"content": "ação recusada pela aprovação: fora do horário comercial", "is_error": True},
    }
    for status, recorded in outcomes.items():

        def setup(workspace, ledger, status=status, recorded=recorded):
            ledger.write_text(json.dumps({EMAIL["id"]: make_receipt(EMAIL, recorded, status)}), encoding="utf-8")

        observed = run_turn(ctx, f"n4-recibo-{status}", [EMAIL], approver=approve_all, setup=setup)
        results = results_by_id(observed, [EMAIL])
        events = observed["events"]
        if any(e[0] == "execute" for e in events):
            extra = (" Um recibo rejected também é um desfecho conhecido: a recusa já aconteceu, e executar "
                     "agora passaria por cima dela." if status == "rejected" else "")
            raise CheckFailed(f"A chamada já tinha recibo {status} e foi executada.{extra} Reaproveite os recibos "
                              "committed e rejected (SETTLED_STATUSES) sem executar.",
                              expected="0 execuções", observed="executada")
        if any(e[0] == "approval" for e in events):
            raise CheckFailed(
                f"A válvula foi consultada para uma chamada que o livro-razão já registrou ({status}): consulte "
                "o livro-razão primeiro; não se pede aprovação para o que já tem desfecho.",
                expected="nenhuma consulta", observed="aprovação consultada",
            )
        block = results[EMAIL["id"]]
        if block.get("content") != recorded["content"] or bool(block.get("is_error")) != recorded["is_error"]:
            raise CheckFailed(f"O tool_result deveria trazer o resultado registrado no recibo {status}.",
                              expected=recorded,
                              observed={"content": block.get("content"), "is_error": block.get("is_error")})


@EXERCISE.check(
    level=4,
    title="Aprovação recusada vira is_error com o motivo",
    criterion=(
        "Recusada, a chamada não executa: o tool_result tem is_error True e o motivo no texto, a "
        "caixa de saída não muda e o livro-razão guarda um recibo rejected."
    ),
)
def rejection_is_an_error_result(ctx: Context) -> None:
    from harness.approval import reject

    reason = "destinatário fora do horário comercial"
    observed = run_turn(ctx, "n4-recusa", [EMAIL], approver=lambda call: reject(reason))
    results = results_by_id(observed, [EMAIL])
    block = results[EMAIL["id"]]
    if any(e[0] == "execute" for e in observed["events"]) or observed["emails"]:
        raise CheckFailed("A aprovação recusou, mas send_email executou: uma recusa impede o efeito.",
                          expected="0 e-mails", observed=f"{quantity(observed['emails'], 'e-mail', 'e-mails')}")
    if block.get("is_error") is not True:
        raise CheckFailed("Uma recusa vira tool_result com \"is_error\": True, para o modelo saber e se adaptar.",
                          expected=True, observed=block.get("is_error", "<ausente>"))
    if reason not in (block_text(block.get("content")) or ""):
        raise CheckFailed("O texto do tool_result deveria trazer o motivo da recusa (decision.reason).",
                          expected=f"um texto com {reason!r}", observed=block.get("content"))
    status = (observed["ledger"].get(EMAIL["id"]) or {}).get("status")
    if status != "rejected":
        raise CheckFailed(
            "Grave um recibo rejected para a chamada recusada (save_effect com make_receipt(..., \"rejected\")): "
            "numa retomada, a recusa é reaproveitada em vez de perguntada de novo.",
            expected="rejected", observed=status,
        )


@EXERCISE.check(
    level=4,
    title="Aprovação pendente interrompe o turno sem efeito",
    criterion=(
        "Com a política respondendo PENDING, run_tool_uses levanta WaitingForApproval com o pedido "
        "(id, entrada e input_hash) e nada é executado."
    ),
)
def pending_waits(ctx: Context) -> None:
    from harness.approval import PENDING, input_hash

    clock = Clock(52_000.0)
    observed = run_turn(ctx, "n4-pendente", [EMAIL], approver=lambda call: PENDING, waiting_ok=True, clock=clock)
    returned = observed["returned"]
    if observed["emails"] or any(e[0] == "execute" for e in observed["events"]):
        raise CheckFailed("Com a aprovação pendente, send_email executou: pendente não é aprovado.",
                          expected="0 e-mails", observed=f"{quantity(observed['emails'], 'e-mail', 'e-mails')}")
    if not isinstance(returned, Raised):
        raise CheckFailed(
            "Com a aprovação pendente, run_tool_uses deveria levantar WaitingForApproval (com "
            "pending_approval_for(call, now)), para a execução parar e gravar o pedido; ela devolveu "
            f"{show(returned, 160)}.",
            expected="WaitingForApproval", observed=returned,
        )
    request = getattr(returned.error, "pending_approval", None)
    if not isinstance(request, dict) or request.get("id") != EMAIL["id"] \
            or request.get("input_hash") != input_hash(EMAIL["name"], EMAIL["input"]):
        raise CheckFailed("WaitingForApproval deveria carregar o pedido da chamada: pending_approval_for(call, now).",
                          expected={"id": EMAIL["id"], "input_hash": input_hash(EMAIL["name"], EMAIL["input"])},
                          observed=request)
    if request.get("requested_at") != clock.now:
        raise CheckFailed(
            "O pedido de aprovação deveria marcar a hora do relógio do contexto (now = ctx.clock()), não a "
            "do sistema: é o relógio que a retomada e os testes controlam.",
            expected=clock.now, observed=request.get("requested_at"),
        )


@EXERCISE.check(
    level=4,
    title="A aprovação usa o relógio e o prazo do ToolContext",
    criterion=(
        "Uma decisão nova fica gravada com a hora de ctx.clock() e vence em ctx.approval_ttl segundos, "
        "qualquer que seja o prazo configurado (não um prazo fixo no código)."
    ),
)
def approval_uses_context_clock_and_ttl(ctx: Context) -> None:
    from harness.approval import approve

    clock = Clock(73_000.0)
    for ttl in (120.0, 45.0):
        observed = run_turn(ctx, f"n4-prazo-{ttl:g}", [EMAIL], approver=lambda call: approve(), clock=clock,
                            ttl=ttl)
        record = observed["approvals"].get(EMAIL["id"])
        if not isinstance(record, dict):
            raise nothing_observed(
                "nenhuma decisão de aprovação foi gravada em approvals.json para o send_email (check_approval "
                "grava a decisão da política)", expected="a decisão gravada, com decided_at e expires_at")
        if record.get("decided_at") != clock.now:
            raise CheckFailed(
                f"A decisão foi gravada com decided_at={record.get('decided_at')!r}, mas o relógio do contexto "
                f"marcava {clock.now:g}: passe now = ctx.clock() para check_approval.",
                expected=clock.now, observed=record.get("decided_at"),
            )
        if record.get("expires_at") != clock.now + ttl:
            raise CheckFailed(
                f"Com ctx.approval_ttl = {ttl:g} s, a aprovação deveria vencer em {clock.now + ttl:g}, mas vence em "
                f"{record.get('expires_at')!r}: passe ctx.approval_ttl para check_approval (o prazo é "
                "configurável, não fixo no código).",
                expected=clock.now + ttl, observed=record.get("expires_at"),
            )


@EXERCISE.check(
    level=4,
    title="A aprovação vale só para a entrada exata e dentro do prazo",
    criterion=(
        "Uma aprovação gravada para esta entrada e no prazo deixa executar sem perguntar de novo; "
        "gravada para outra entrada, ou vencida, não vale: a política é consultada e, pendente, "
        "nada é executado."
    ),
)
def approval_bound_to_input_and_time(ctx: Context) -> None:
    from harness.approval import PENDING, approve, record_decision

    clock = Clock(10_000.0)

    def approved_for(call, decided_at):
        def setup(workspace, ledger):
            record_decision(ledger.with_name("approvals.json"), call, approve(), now=decided_at, ttl_seconds=600)
        return setup

    same = run_turn(ctx, "n4-aprovada", [EMAIL], approver=lambda c: PENDING, clock=clock,
                    setup=approved_for(EMAIL, 9_900.0), waiting_ok=True)
    if isinstance(same["returned"], Raised) or same["emails"] != 1:
        asked = any(e[0] == "approval" for e in same["events"])
        raise CheckFailed(
            "Havia uma aprovação gravada para esta entrada exata, ainda no prazo, e mesmo assim o e-mail não "
            "saiu" + (" (a política foi consultada de novo)" if asked else "") + ": use check_approval, que "
            "reaproveita a decisão gravada em approvals.json.",
            expected="1 e-mail, sem nova consulta", observed=f"{quantity(same['emails'], 'e-mail', 'e-mails')}",
        )
    changed = {**EMAIL, "input": {**EMAIL["input"], "to": "todos@example.com"}}
    other = run_turn(ctx, "n4-outra-entrada", [changed], approver=lambda c: PENDING, clock=clock,
                     setup=approved_for(EMAIL, 9_900.0), waiting_ok=True)
    if other["emails"]:
        raise CheckFailed(
            "A aprovação gravada era para outra entrada (outro destinatário), com o mesmo tool_use_id, e o "
            "e-mail saiu: a aprovação fica presa ao hash da entrada exata (check_approval compara input_hash).",
            expected="WaitingForApproval, 0 e-mails", observed=f"{quantity(other['emails'], 'e-mail', 'e-mails')}",
        )
    expired = run_turn(ctx, "n4-vencida", [EMAIL], approver=lambda c: PENDING, clock=clock,
                       setup=approved_for(EMAIL, 9_000.0), waiting_ok=True)
    if expired["emails"]:
        raise CheckFailed(
            "A aprovação gravada tinha vencido (prazo de 600 s, dada 1000 s antes) e o e-mail saiu: passe "
            "ctx.clock() e ctx.approval_ttl a check_approval, que pergunta de novo quando o prazo acaba.",
            expected="WaitingForApproval, 0 e-mails", observed=f"{quantity(expired['emails'], 'e-mail', 'e-mails')}",
        )


@EXERCISE.check(
    level=4,
    title="dry_run não toca o mundo",
    criterion=(
        "Com ctx.dry_run, as ferramentas de alto impacto não executam: a caixa de saída e os chamados "
        "ficam como estavam, o livro-razão não ganha registro delas, e cada uma recebe um resultado "
        "simulado (sem is_error)."
    ),
)
def dry_run_leaves_world(ctx: Context) -> None:
    turn = [EMAIL, READ, ENSURE]
    observed = run_turn(ctx, "n4-dry-run", turn, dry_run=True)
    results = results_by_id(observed, turn)
    if not observed["outbox_same"] or observed["tickets"]:
        raise CheckFailed(
            "Com ctx.dry_run, a caixa de saída ou os chamados mudaram: em dry-run, ferramentas de alto "
            "impacto devolvem dry_run_output(call) em vez de executar.",
            expected="mundo intacto", observed={"caixa de saída igual": observed["outbox_same"], "chamados": observed["tickets"]},
        )
    for call in (EMAIL, ENSURE):
        if results[call["id"]].get("is_error") is True:
            raise CheckFailed(f"Em dry-run, {call['name']} deveria receber um resultado simulado, não um erro.",
                              expected=False, observed=True)
        record = observed["ledger"].get(call["id"])
        if record is not None:
            status = record.get("status") if isinstance(record, dict) else record
            raise CheckFailed(
                f"Em dry-run, {call['name']} não rodou, mas o livro-razão ganhou um registro {status!r} para "
                f"{call['id']}. O livro-razão só guarda o que aconteceu no mundo: um recibo de um efeito "
                "simulado faria uma retomada de verdade reaproveitá-lo, e o efeito nunca aconteceria. Em "
                "dry-run, devolva dry_run_output(call) sem gravar nada no livro-razão.",
                expected="nenhum registro de chamada simulada", observed={call["id"]: status},
            )
    if results[READ["id"]].get("content") != NOTES["notes/conclusoes.md"]:
        raise CheckFailed("Em dry-run a leitura continua real: read_file deveria devolver o conteúdo do arquivo.",
                          expected=NOTES["notes/conclusoes.md"], observed=results[READ["id"]].get("content"))
