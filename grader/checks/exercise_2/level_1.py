"""Level 1: ``save_checkpoint`` writes atomically and durably (temporary file, fsync, os.replace in the same folder)."""
from __future__ import annotations

import os
from pathlib import Path

from grader.checks.exercise_2.fixtures import EXERCISE
from grader.checks.exercise_2.save_probe import (
    CHECKPOINT_NAME,
    CRASH_AFTER_CHARACTERS,
    NotSerializable,
    last_good_checkpoint,
    read_checkpoint_file,
    save_run,
    state_to_save,
    torn_checkpoint,
)
from grader.checks.framework import CheckFailed, Context, StudentProblem, nothing_observed, show
from grader.checks.write_spies import observed_writes


@EXERCISE.check(
    level=1,
    title="save_checkpoint grava o estado inteiro em JSON",
    criterion="Depois de save_checkpoint(state, path), o arquivo em path é JSON e, lido de volta, é igual ao estado.",
)
def writes_the_state(ctx: Context) -> None:
    run = save_run(ctx)
    if isinstance(run.written, str):
        raise CheckFailed(
            f"Depois de uma gravação bem-sucedida, {run.written}.",
            expected="o estado gravado em JSON", observed=run.written,
        )
    if run.written != run.state:
        raise CheckFailed(
            "O arquivo gravado, lido com json.loads, não é igual ao estado passado a save_checkpoint.",
            expected=f"turns={run.state['turns']}, {len(run.state['messages'])} mensagens",
            observed=show(run.written, 200),
        )


@EXERCISE.check(
    level=1,
    title="Nenhum arquivo temporário sobra",
    criterion=(
        "A gravação passa por um arquivo temporário e, depois de uma gravação bem-sucedida, a pasta do "
        "checkpoint contém só o checkpoint.json."
    ),
)
def no_temporary_left(ctx: Context) -> None:
    run = save_run(ctx)
    if not run.temporaries():
        raise nothing_observed(
            "save_checkpoint não escreveu nenhum arquivo temporário (só o próprio checkpoint.json), "
            "então não há temporário cujo destino conferir. Escreva primeiro num temporário na mesma "
            "pasta, de nome único (tempfile.mkstemp(dir=pasta): dois gravadores não dividem o mesmo), e "
            "troque-o pelo checkpoint com os.replace",
            expected="um temporário escrito e trocado pelo checkpoint",
        )
    extra = [name for name in run.files_after if name != CHECKPOINT_NAME]
    if extra:
        raise CheckFailed(
            f"Sobrou {', '.join(extra)} na pasta depois da gravação: o temporário precisa virar o "
            "checkpoint (os.replace), não ser copiado para ele.",
            expected=[CHECKPOINT_NAME], observed=run.files_after,
        )


@EXERCISE.check(
    level=1,
    title="Arquivo temporário na mesma pasta, trocado com os.replace",
    criterion=(
        "A versão nova é escrita num arquivo temporário na mesma pasta do checkpoint e trocada pelo "
        "verdadeiro com os.replace (atômico no mesmo sistema de arquivos)."
    ),
)
def replaced_in_the_same_folder(ctx: Context) -> None:
    run = save_run(ctx)
    replaces = [event for event in run.events if event[0] == "replace"]
    renames = [event for event in run.events if event[0] == "rename"]
    if not replaces:
        if renames:
            raise CheckFailed(
                "A troca foi feita com os.rename: no Windows ele falha quando o destino já existe. Use "
                "os.replace, que substitui o destino de forma atômica em qualquer sistema.",
                expected="os.replace(temporário, path)", observed=f"os.rename{renames[0][1:]}",
            )
        raise CheckFailed(
            "save_checkpoint não chamou os.replace: sem a troca atômica, alguma hora quem lê o "
            "checkpoint o encontra pela metade (a gravação é feita no próprio arquivo?).",
            expected="os.replace(temporário, path)", observed="nenhuma chamada a os.replace",
        )
    target = [event for event in replaces if Path(event[2]).resolve() == run.path.resolve()]
    if not target:
        raise CheckFailed(
            f"os.replace foi chamado, mas nunca com o checkpoint como destino ({run.path.name}).",
            expected=f"os.replace(temporário, .../{run.path.name})", observed=[e[1:] for e in replaces],
        )
    source = Path(target[-1][1]).resolve()
    if source.parent != run.path.parent.resolve():
        raise CheckFailed(
            f"O arquivo temporário ficou em outra pasta ({source.parent}): os.replace só é atômico "
            "dentro de um mesmo sistema de arquivos, então o temporário fica ao lado do checkpoint.",
            expected=str(run.path.parent.resolve()), observed=str(source.parent),
        )


@EXERCISE.check(
    level=1,
    title="fsync do arquivo antes da troca e da pasta depois",
    criterion=(
        "os.fsync é chamado no arquivo temporário já completo (depois do flush) antes do os.replace, "
        "e num descritor da pasta depois dele: assim a gravação sobrevive também a uma queda de energia."
    ),
)
def fsyncs_file_and_folder(ctx: Context) -> None:
    run = save_run(ctx)
    if not run.path.exists():
        raise CheckFailed("Não há checkpoint depois da gravação.", expected=CHECKPOINT_NAME, observed="nada")
    final = os.stat(run.path)
    folder = os.stat(run.folder)
    replace_at = next((i for i, e in enumerate(run.events) if e[0] in ("replace", "rename")), None)
    file_syncs = [(i, e) for i, e in enumerate(run.events) if e[0] == "fsync" and e[1] == "file" and e[2] == final.st_ino]
    folder_syncs = [(i, e) for i, e in enumerate(run.events) if e[0] == "fsync" and e[1] == "folder" and e[2] == folder.st_ino]
    if not file_syncs:
        raise CheckFailed(
            "Nenhum os.fsync no arquivo que virou o checkpoint: sem ele, os bytes podem estar só no cache "
            "do sistema quando a energia cai, e o checkpoint volta vazio. Chame f.flush() e "
            "os.fsync(f.fileno()) antes de fechar o temporário.",
            expected="os.fsync(<temporário>)", observed=[e for e in run.events if e[0] == "fsync"] or "nenhum fsync",
        )
    index, (_, _, _, size) = file_syncs[-1]
    if size < final.st_size:
        raise CheckFailed(
            f"O fsync aconteceu quando o arquivo tinha {size} de {final.st_size} bytes: faltou f.flush() "
            "antes do os.fsync, e o resto ainda estava no buffer do Python.",
            expected=f"{final.st_size} bytes no fsync", observed=f"{size} bytes",
        )
    if replace_at is not None and index > replace_at:
        raise CheckFailed(
            "O fsync do arquivo veio depois da troca: a ordem é escrever, flush, fsync e só então os.replace.",
            expected="fsync antes de os.replace", observed="fsync depois de os.replace",
        )
    if not folder_syncs:
        raise CheckFailed(
            "Faltou o fsync da pasta: a troca de nome é uma mudança na pasta, e só um fsync num "
            "descritor dela (os.open(pasta, os.O_RDONLY)) garante que a troca chegou ao disco.",
            expected="os.fsync(<pasta>) depois do os.replace", observed="nenhum fsync da pasta",
        )
    if replace_at is not None and folder_syncs[-1][0] < replace_at:
        raise CheckFailed(
            "O fsync da pasta veio antes do os.replace: nesse momento a troca ainda não tinha acontecido.",
            expected="fsync da pasta depois de os.replace", observed="fsync da pasta antes",
        )


@EXERCISE.check(
    level=1,
    title="Uma queda no meio da escrita deixa o último checkpoint bom",
    criterion=(
        "Se a gravação morre no meio (o corretor faz a escrita parar depois de alguns bytes), o "
        "arquivo em path continua sendo o último checkpoint bom, inteiro e legível."
    ),
)
def survives_a_crash_mid_write(ctx: Context) -> None:
    save = ctx.student_function("save_checkpoint")
    path, good = last_good_checkpoint(ctx, "crash")
    with observed_writes(ctx, crash_after=CRASH_AFTER_CHARACTERS) as budget:
        try:
            ctx.call(save, state_to_save("nova", 6), path)
        except StudentProblem as raised:
            if not budget["crashed"]:
                raise
    if not budget["crashed"]:
        raise CheckFailed(
            "A gravação terminou sem escrever nada por open(), Path.write_text ou os.write, então o "
            "corretor não conseguiu simular a queda. Escreva o JSON com open(temporário, \"w\").",
            expected="uma escrita com open() ou os.write", observed="nenhuma",
        )
    found = read_checkpoint_file(path)
    if found != good:
        raise torn_checkpoint(found)


@EXERCISE.check(
    level=1,
    title="Um erro no meio do json.dump também não estraga o checkpoint",
    criterion=(
        "Se a serialização falha no meio (um valor que o json não sabe gravar no fim da conversa), "
        "o checkpoint anterior continua inteiro e legível."
    ),
)
def survives_a_serialization_error(ctx: Context) -> None:
    save = ctx.student_function("save_checkpoint")
    path, good = last_good_checkpoint(ctx, "serialization")
    broken = state_to_save("nova", 6)
    broken["messages"].append({"role": "user", "content": NotSerializable()})
    with observed_writes(ctx) as writes:
        _, raised = ctx.call_or_problem(save, broken, path)  # raising is fine: what counts is the file left behind
    if raised is None and not writes["opened"]:
        raise nothing_observed(
            "save_checkpoint recebeu um estado que o json não sabe gravar, não levantou erro e não abriu "
            "nenhum arquivo para escrever: ela nem tentou gravar",
            expected="uma tentativa de gravação (que falha no json.dump)",
        )
    found = read_checkpoint_file(path)
    if isinstance(found, str) or not isinstance(found, dict) or found.get("version") != 1:
        raise torn_checkpoint(found)
