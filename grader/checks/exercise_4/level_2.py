"""Level 2: ``load_effects`` and ``save_effect``, the ledger read fail-closed and written atomically."""
from __future__ import annotations

import copy
import json
from pathlib import Path

from grader.checks.exercise_4.fixtures import EXERCISE
from grader.checks.exercise_4.probes import (
    CORRUPT_LEDGERS,
    MALFORMED_RECORDS,
    Raised,
    capturing,
    intent,
    ledger_error_class,
    read_ledger,
    receipt,
    receipt_with,
    recorded_replace,
    world,
)
from grader.checks.framework import (
    NOT_IMPLEMENTED_PREFIX,
    CheckFailed,
    Context,
    StudentProblem,
    nothing_observed,
    show,
)


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


def require_fails_closed(ctx: Context, load_effects, error_class: type, path: Path, label: str, text: str,
                         cost: str | None = None) -> None:
    """load_effects on ``text`` raises EffectsLedgerError with a reason, or the check fails naming ``label``."""
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
        return
    if not observed:  # {}, [], None, 0, False: every one of them reads as "nothing was done"
        raise CheckFailed(
            f"Com um livro-razão ({label}), load_effects devolveu {show(observed)} em vez de "
            "falhar: um livro lido como vazio faz todo efeito já feito parecer \"nunca começou\", "
            "e a retomada repetiria o e-mail. Só a ausência do arquivo é um livro vazio; qualquer outro "
            "conteúdo que não seja um objeto JSON levanta EffectsLedgerError (falha fechada).",
            expected="EffectsLedgerError", observed=observed,
        )
    if cost is not None:
        raise CheckFailed(
            f"Com {label} no livro-razão, load_effects devolveu o livro em vez de levantar EffectsLedgerError: "
            f"{cost}. Um registro malformado faz o livro inteiro não merecer confiança: confira em cada registro "
            "que ele é um objeto com tool (texto) e status em RECEIPT_STATUSES, e que todo recibo (status que não "
            "é intent) traz result {content: texto, is_error: true/false}.",
            expected="EffectsLedgerError", observed=show(observed, 160),
        )
    raise CheckFailed(
        f"Com um livro-razão ({label}), load_effects devolveu {show(observed, 160)} em vez de "
        "levantar EffectsLedgerError: confira o JSON e que o valor é um objeto.",
        expected="EffectsLedgerError", observed=observed,
    )


@EXERCISE.check(
    level=2,
    title="load_effects: livro corrompido falha fechado",
    criterion=(
        "Arquivo vazio, JSON truncado ou um valor que não é objeto (uma lista, null, [], 0, false) levantam "
        "EffectsLedgerError com o motivo; nunca viram {}."
    ),
)
def corrupt_ledger_fails_closed(ctx: Context) -> None:
    load_effects = ctx.student_function("load_effects")
    error_class = ledger_error_class()
    with ctx.tools(world("n2-corrompido")) as spy:
        path = Path(spy.workspace.root) / "effects.json"
        for label, text in CORRUPT_LEDGERS.items():
            require_fails_closed(ctx, load_effects, error_class, path, label, text)


@EXERCISE.check(
    level=2,
    title="load_effects: um registro malformado falha fechado",
    criterion=(
        "Um registro que não é objeto, sem tool, com status fora de RECEIPT_STATUSES, ou um recibo "
        "(committed, rejected, unknown) sem result {content: texto, is_error: bool} levantam "
        "EffectsLedgerError, mesmo ao lado de registros bons."
    ),
)
def malformed_records_fail_closed(ctx: Context) -> None:
    load_effects = ctx.student_function("load_effects")
    error_class = ledger_error_class()
    with ctx.tools(world("n2-registro-malformado")) as spy:
        path = Path(spy.workspace.root) / "effects.json"
        for label, (text, cost) in MALFORMED_RECORDS.items():
            require_fails_closed(ctx, load_effects, error_class, path, label, text, cost)


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
    # two calls that start: each enters the ledger with its intent (a receipt needs one first)
    first, second = intent("toolu_a1", "primeiro"), intent("toolu_b2", "segundo")
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


@EXERCISE.check(
    level=2,
    title="save_effect troca o registro anterior da mesma chamada",
    criterion=(
        "Um registro novo para um tool_use_id que já está no livro substitui o anterior: intent seguido de "
        "committed deixa o recibo committed, intent seguido de rejected deixa o recibo rejected; os registros "
        "das outras chamadas ficam como estavam."
    ),
)
def save_effect_replaces_the_same_call(ctx: Context) -> None:
    save_effect = ctx.student_function("save_effect")
    other = receipt("toolu_a1", "primeiro")
    costs = {
        "committed": "a retomada veria só a intenção, trataria o e-mail já enviado como \"começou, não sei\" e "
                     "voltaria a perguntar ao sistema externo (ou a rodar)",
        "rejected": "a recusa se perderia: a retomada veria só a intenção e pediria a aprovação de novo, e uma "
                    "política que agora aprova mandaria o e-mail que alguém recusou",
    }
    for status, cost in costs.items():
        final = receipt_with("toolu_b2", f"desfecho {status}", status)
        with ctx.tools(world(f"n2-troca-{status}")) as spy:
            path = Path(spy.workspace.root) / "effects.json"
            path.write_text(json.dumps({"toolu_a1": other}, ensure_ascii=False), encoding="utf-8")
            ctx.call(save_effect, path, "toolu_b2", intent("toolu_b2", f"desfecho {status}"))
            ctx.call(save_effect, path, "toolu_b2", copy.deepcopy(final))
            on_disk = read_ledger(path)
        if on_disk is None:
            raise CheckFailed("Depois de save_effect, effects.json não existe ou não é um objeto JSON.",
                              expected={"toolu_a1": "committed", "toolu_b2": status}, observed="arquivo ausente ou ilegível")
        stored = on_disk.get("toolu_b2")
        stored_status = stored.get("status") if isinstance(stored, dict) else stored
        if stored_status == "intent":
            raise CheckFailed(
                f"Depois da intenção e do recibo {status} da mesma chamada (toolu_b2), o livro-razão ainda diz "
                f"intent: save_effect não substitui o registro anterior da mesma chamada, e {cost}. Ponha o "
                "registro novo no lugar do antigo (livro[tool_use_id] = record), sem conferir se já havia um.",
                expected=status, observed="intent",
            )
        if stored != final:
            raise CheckFailed(f"O registro de toolu_b2 deveria ser o último gravado, o recibo {status}, como veio.",
                              expected=final, observed=stored)
        if on_disk.get("toolu_a1") != other:
            raise CheckFailed("Trocar o registro de toolu_b2 mexeu no de toolu_a1: só o da chamada gravada muda.",
                              expected=other, observed=on_disk.get("toolu_a1"))


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
            ctx.call(save_effect, path, "toolu_b2", intent("toolu_b2", "segundo"))
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
            ctx.call_or_problem(save_effect, path, "toolu_b2", intent("toolu_b2", "segundo"))
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
            ctx.call_or_problem(save_effect, path, "toolu_b2", intent("toolu_b2", "segundo"))
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
                                                 intent("toolu_b2", "segundo"))
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
