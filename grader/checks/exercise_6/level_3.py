"""Level 3: the lease with a fencing token (``acquire_lease``, ``check_fence``, ``fenced_save``)."""
from __future__ import annotations

import json

from grader.checks.exercise_6.fixtures import EXERCISE
from grader.checks.exercise_6.lease_probe import (
    CHECKPOINT_FILE,
    CORRUPT_LEASES,
    LEASE_FILE,
    acquire,
    expect_lost,
    fresh_run_dir,
    lease_file_error,
    lease_held_error,
    lease_lost_error,
    lease_taken_elsewhere,
    read_lease_file,
)
from grader.checks.framework import CheckFailed, Context, describe_error, nothing_observed, show


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


@EXERCISE.check(
    level=3,
    title="Um worker com o mesmo nome não divide a posse nem o token",
    criterion=(
        "Enquanto a posse vale, acquire_lease levanta LeaseHeld também para o mesmo owner (o nome não "
        "identifica um processo: pode ser um zumbi que acordou) e não muda o lease.json; vencida, o mesmo owner "
        "recebe um token novo, o anterior + 1."
    ),
)
def same_name_gets_no_shared_token(ctx: Context) -> None:
    acquire_lease = ctx.student_function("acquire_lease")
    run_dir = fresh_run_dir(ctx, "mesmo-nome")
    first = acquire(ctx, run_dir, "worker-a", 1000.0, 30.0)
    before = (run_dir / LEASE_FILE).read_bytes()
    value, error = ctx.call_catching(acquire_lease, run_dir, "worker-a", 1010.0, 30.0)
    if error is None:
        token = value.get("token") if isinstance(value, dict) else None
        if token == first["token"]:
            raise CheckFailed(
                f"Um segundo worker-a pediu a posse em now=1010, com a de worker-a valendo até 1030, e recebeu o "
                f"mesmo token ({token}): renovar pelo nome devolvendo o token antigo faz dois processos com o mesmo "
                "nome (o vivo e um zumbi que acordou) passarem pela mesma cerca, e os dois gravam. Enquanto "
                "now < expires_at, levante LeaseHeld para qualquer owner, inclusive o mesmo: quem identifica a "
                "posse é o token, não o nome.",
                expected="LeaseHeld", observed=show(value, 120),
            )
        raise CheckFailed(
            f"worker-a tomou de novo, em now=1010, uma posse que ainda valia até 1030 (devolveu {show(value, 80)}): "
            "enquanto now < expires_at, acquire_lease levanta LeaseHeld para qualquer owner, inclusive o mesmo. "
            "O nome não identifica um processo; quem já tem a posse segue com o token que recebeu.",
            expected="LeaseHeld", observed=show(value, 120),
        )
    if not isinstance(error, lease_held_error()):
        raise CheckFailed(f"A recusa deveria ser LeaseHeld (de harness.lifecycle), foi {describe_error(error)}.",
                          expected="LeaseHeld", observed=type(error).__name__)
    if (run_dir / LEASE_FILE).read_bytes() != before:
        raise CheckFailed("O pedido recusado de worker-a alterou o lease.json: quem não pegou a posse não grava nada.",
                          expected="lease.json intacto", observed="lease.json alterado")
    again = acquire(ctx, run_dir, "worker-a", 1040.0, 30.0)
    if again.get("token") != first["token"] + 1:
        raise CheckFailed(
            f"worker-a tomou de novo a posse vencida e recebeu o token {again.get('token')!r}, o mesmo número de "
            f"antes ({first['token']}) ou outro que não o seguinte: toda posse nova recebe o anterior + 1, até para "
            "o mesmo nome. Um worker-a antigo, parado com o token velho, passaria pela cerca.",
            expected=first["token"] + 1, observed=again.get("token"),
        )


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
    title="A cerca e a posse leem o lease.json, não a memória",
    criterion=(
        "Quando outro processo troca o lease.json entre a posse e a gravação (o corretor grava a posse de outro "
        "worker por fora das suas funções), fenced_save com o token antigo levanta LeaseLost sem gravar, com o "
        "token do arquivo grava, e a próxima posse continua do token que está no arquivo."
    ),
)
def fence_reads_the_lease_file(ctx: Context) -> None:
    fenced_save = ctx.student_function("fenced_save")
    run_dir = fresh_run_dir(ctx, "outro-processo")
    mine = acquire(ctx, run_dir, "worker-a", 0.0, 30.0)
    state = {"version": 2, "task": "t", "turns": 1, "tokens_used": 10, "messages": [], "pending_tool_use": None}
    _, error = ctx.call_catching(fenced_save, run_dir, mine["token"], state)
    if error is not None:
        raise CheckFailed(f"O dono atual (token {mine['token']}) não conseguiu gravar: {describe_error(error)}.",
                          expected="checkpoint.json gravado", observed=type(error).__name__)
    path = run_dir / CHECKPOINT_FILE
    if not path.exists():
        raise nothing_observed("fenced_save com o token atual não criou checkpoint.json, então não há gravação a "
                               "proteger", expected="checkpoint.json")
    newer = mine["token"] + 1
    lease_taken_elsewhere(run_dir, {"owner": "worker-a", "token": newer, "expires_at": 70.0})
    before = path.read_bytes()
    _, error = ctx.call_catching(fenced_save, run_dir, mine["token"], dict(state, turns=2))
    changed = path.read_bytes() != before
    if error is None or changed:
        raise CheckFailed(
            f"Outro processo tomou a posse (o lease.json agora tem o token {newer}, de um worker com o mesmo nome), "
            f"mas fenced_save com o token {mine['token']} "
            + ("gravou por cima" if changed else "não foi barrado")
            + ": a cerca conferiu um token guardado na memória deste processo, não o do lease.json. Leia o "
            "lease.json a cada conferência: é o único lugar que todos os workers veem.",
            expected="LeaseLost e checkpoint.json intacto",
            observed="checkpoint.json alterado" if changed else "nenhum erro",
        )
    if not isinstance(error, lease_lost_error()):
        raise CheckFailed(f"O esperado é LeaseLost; veio {describe_error(error)}.", expected="LeaseLost",
                          observed=type(error).__name__)
    _, error = ctx.call_catching(fenced_save, run_dir, newer, dict(state, turns=3))
    if error is not None:
        raise CheckFailed(
            f"O token {newer} é o da posse atual no lease.json (tomada em outro processo), mas fenced_save o recusou "
            f"({describe_error(error)}): a cerca compara com o token do arquivo, não com o último que este processo "
            "recebeu de acquire_lease.",
            expected="checkpoint.json gravado", observed=type(error).__name__,
        )
    saved = json.loads(path.read_text(encoding="utf-8"))
    if saved.get("turns") != 3:
        raise CheckFailed("fenced_save com o token do lease.json não gravou o estado em checkpoint.json.",
                          expected=dict(state, turns=3), observed=saved)
    lease_taken_elsewhere(run_dir, {"owner": "worker-c", "token": 7, "expires_at": 100.0})
    value = acquire(ctx, run_dir, "worker-b", 200.0, 30.0)
    if value.get("token") != 8:
        raise CheckFailed(
            f"Outro processo deixou no lease.json uma posse vencida com o token 7, e acquire_lease deu o token "
            f"{value.get('token')!r}: o próximo token sai do lease.json (anterior + 1), não de um contador na memória "
            "deste processo; senão o dono de outro processo teria um token igual ou maior que o novo.",
            expected=8, observed=value.get("token"),
        )


@EXERCISE.check(
    level=3,
    title="Um lease.json que não é uma posse falha fechado",
    criterion=(
        "Com um lease.json vazio, truncado, null, [], 0, false, sem token ou com o token em texto, acquire_lease "
        "levanta LeaseFileError e fenced_save recusa (LeaseFileError), e nenhum dos dois grava nada: na dúvida "
        "sobre quem tem a posse, ninguém a toma nem grava."
    ),
)
def corrupt_lease_fails_closed(ctx: Context) -> None:
    acquire_lease, fenced_save = ctx.student_function("acquire_lease"), ctx.student_function("fenced_save")
    state = {"version": 2, "task": "t", "turns": 1, "tokens_used": 10, "messages": [], "pending_tool_use": None}
    for label, text in CORRUPT_LEASES.items():
        run_dir = fresh_run_dir(ctx, "posse-ilegivel")
        (run_dir / LEASE_FILE).write_text(text, encoding="utf-8")
        value, error = ctx.call_catching(acquire_lease, run_dir, "worker-b", 1000.0, 30.0)
        if error is None:
            raise CheckFailed(
                f"Com {label} no lease.json, acquire_lease deu a posse ({show(value, 80)}): um arquivo que não diz quem "
                "tem a posse foi lido como \"ninguém nunca teve\", e o token recomeçou. Um dono antigo com esse "
                "token passaria pela cerca. Só a ausência do arquivo é uma posse livre; qualquer outro conteúdo que não "
                "seja {owner, token inteiro, expires_at} levanta LeaseFileError (falha fechada).",
                expected="LeaseFileError", observed=show(value, 120),
            )
        if not isinstance(error, lease_file_error()):
            raise CheckFailed(
                f"Com {label} no lease.json, acquire_lease falhou com {describe_error(error)}, não com LeaseFileError "
                "(de harness.lifecycle): confira o JSON e os campos e levante LeaseFileError com o motivo, para o "
                "operador saber que o arquivo precisa de conserto.",
                expected="LeaseFileError", observed=type(error).__name__,
            )
        if (run_dir / LEASE_FILE).read_text(encoding="utf-8") != text:
            raise CheckFailed(f"Com {label} no lease.json, acquire_lease trocou o arquivo: quem não pegou a posse "
                              "não grava nada.", expected="lease.json intacto", observed="lease.json alterado")
        _, error = ctx.call_catching(fenced_save, run_dir, 1, state)
        if (run_dir / CHECKPOINT_FILE).exists():
            raise CheckFailed(
                f"Com {label} no lease.json, fenced_save com o token 1 gravou checkpoint.json: sem saber de quem é a "
                "posse, ninguém grava.", expected="LeaseFileError e nenhum checkpoint.json", observed="checkpoint.json gravado")
        if not isinstance(error, (lease_file_error(), lease_lost_error())):
            raise CheckFailed(
                f"Com {label} no lease.json, fenced_save não gravou, mas falhou com "
                f"{describe_error(error) if error else 'nenhum erro'}: check_fence levanta LeaseFileError quando o "
                "lease.json não é uma posse.",
                expected="LeaseFileError", observed=type(error).__name__ if error else "nenhum erro",
            )


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
