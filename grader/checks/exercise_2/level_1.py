"""Level 1: ``save_checkpoint`` writes atomically and durably (temporary file, fsync, os.replace in the same folder)."""
from __future__ import annotations

import copy
import os
from pathlib import Path

from grader.checks.exercise_2.fixtures import EXERCISE
from grader.checks.exercise_2.save_probe import (
    CHECKPOINT_NAME,
    CRASH_AFTER_CHARACTERS,
    SWAP_EVENTS,
    NotSerializable,
    folder_files,
    found_described,
    death_at_the_first_sync_or_swap,
    json_refusals,
    last_good_checkpoint,
    os_spies,
    left_as_at_death,
    read_checkpoint_file,
    returned_or_raised,
    save_run,
    state_to_save,
    summary,
    torn_checkpoint,
)
from grader.checks.framework import CheckFailed, Context, StudentProblem, nothing_observed, show
from grader.checks.write_spies import observed_writes


def swap_shown(event: tuple) -> str:
    """("rename", "/x/checkpoint.json.tmp", "/x/checkpoint.json", via) as "(checkpoint.json.tmp, checkpoint.json)"."""
    return f"({Path(event[1]).name}, {Path(event[2]).name})"


def fsyncs_shown(events: list[tuple], checkpoint_inode: int) -> str:
    """The fsyncs a save made, in a short Portuguese line: "fsync de outro arquivo (4096 bytes);
    fsync da pasta /x" (events as ``os_spies`` records them)."""
    parts = []
    for event in events:
        if event[0] != "fsync":
            continue
        if event[1] == "folder":
            parts.append(f"fsync da pasta {event[4]}")
        else:
            which = "do arquivo que virou o checkpoint" if event[2] == checkpoint_inode else "de outro arquivo"
            parts.append(f"fsync {which} ({event[3]} bytes)")
    return "; ".join(parts) or "nenhum fsync"


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
    links = [event for event in run.events if event[0] == "link"]
    if not replaces:
        if renames and renames[0][3] == "shutil.move":
            raise CheckFailed(
                "A troca foi feita com shutil.move: aqui ele chama os.rename, mas quando o nome não pode ser "
                "trocado (o destino existe no Windows, ou outra pasta em outro disco) ele copia o temporário por "
                "cima do checkpoint, e uma queda no meio da cópia o deixa pela metade. Use os.replace, que troca "
                "o nome de uma vez ou falha sem tocar no checkpoint.",
                expected="os.replace(temporário, path)", observed=f"shutil.move{swap_shown(renames[0])}",
            )
        if renames:
            called = "Path.rename" if renames[0][3] == "Path.rename" else "os.rename"
            raise CheckFailed(
                f"A troca foi feita com {called}: no Windows ele falha quando o destino já existe. Use "
                "os.replace (ou Path.replace), que substitui o destino de forma atômica em qualquer sistema.",
                expected="os.replace(temporário, path)", observed=f"{called}{swap_shown(renames[0])}",
            )
        if links:
            raise CheckFailed(
                "A troca foi feita com os.link (criar um segundo nome para o temporário), que não substitui um "
                "destino que existe: o checkpoint anterior precisa ser apagado antes, e entre o apagar e o link "
                "não há checkpoint nenhum. Use os.replace, que substitui o destino de uma vez.",
                expected="os.replace(temporário, path)", observed=f"os.link{swap_shown(links[0])}",
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
            expected=f"os.replace(temporário, .../{run.path.name})",
            observed="; ".join(f"os.replace{swap_shown(event)}" for event in replaces),
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
    replace_at = next((i for i, e in enumerate(run.events) if e[0] in SWAP_EVENTS), None)
    file_syncs = [(i, e) for i, e in enumerate(run.events) if e[0] == "fsync" and e[1] == "file" and e[2] == final.st_ino]
    folder_syncs = [(i, e) for i, e in enumerate(run.events) if e[0] == "fsync" and e[1] == "folder" and e[2] == folder.st_ino]
    if not file_syncs:
        raise CheckFailed(
            "Nenhum os.fsync (nem os.fdatasync) no arquivo que virou o checkpoint: sem ele, os bytes podem estar só no cache "
            "do sistema quando a energia cai, e o checkpoint volta vazio. Chame f.flush() e "
            "os.fsync(f.fileno()) antes de fechar o temporário.",
            expected="os.fsync(<temporário>)", observed=fsyncs_shown(run.events, final.st_ino),
        )
    index, (_, _, _, size, _) = file_syncs[-1]
    rewritten = replace_at is not None and run.path.resolve() in run.opened
    if size != final.st_size and rewritten:
        raise CheckFailed(
            f"Depois da troca, o próprio {CHECKPOINT_NAME} foi aberto de novo para escrita e reescrito no lugar: o "
            f"fsync foi do temporário, com {size} bytes, e o checkpoint agora tem {final.st_size}, que nenhum fsync "
            "cobre. No meio dessa reescrita ele esteve vazio ou pela metade. Depois do os.replace, não abra o "
            "checkpoint para escrever: se quiser outro formato (indent, por exemplo), grave-o já assim no temporário.",
            expected=f"{final.st_size} bytes no fsync, sem reescrever o checkpoint",
            observed=f"{size} bytes no fsync; o checkpoint reescrito no lugar depois da troca",
        )
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
    other_folders = [e for e in run.events if e[0] == "fsync" and e[1] == "folder" and e[2] != folder.st_ino]
    if not folder_syncs and other_folders:
        raise CheckFailed(
            f"O fsync de pasta foi feito em outra pasta ({other_folders[0][4]}), não na do checkpoint: a "
            "troca de nome aconteceu na pasta do checkpoint, e só um fsync dela a torna durável. Abra "
            "os.path.dirname(os.path.abspath(path)), não \".\" nem a pasta atual.",
            expected="os.fsync(<pasta do checkpoint>) depois do os.replace",
            observed=f"os.fsync de {other_folders[0][4]}",
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
        "Se a gravação morre no meio (o corretor faz a escrita parar depois de alguns bytes; se os bytes vão "
        "por onde ele não vê, como um mmap, o processo morre logo antes do primeiro fsync ou troca), o "
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
            returned_or_raised(raised)  # dying is fine; looping or exiting after it is not
    if not budget["crashed"]:  # the bytes went where no write spy sees them (an mmap): die before they are kept
        path, good = last_good_checkpoint(ctx, "crash-at-sync")
        with death_at_the_first_sync_or_swap(ctx) as death:
            try:
                ctx.call(save, state_to_save("nova", 6), path)
            except StudentProblem as raised:
                if death["died"] is None:
                    raise
                returned_or_raised(raised)
        if death["died"] is None:
            raise nothing_observed(
                "save_checkpoint não escreveu nada por open(), Path.write_text ou os.write, e não chamou os.fsync, "
                "os.replace nem os.rename: o corretor não viu nenhum ponto onde fazer o processo morrer no meio da "
                "gravação. Escreva o JSON num temporário com open(temporário, \"w\") (ou os.write) e troque-o com "
                "os.replace",
                expected="uma escrita com open() ou os.write, ou um os.fsync/os.replace",
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
    with observed_writes(ctx) as writes, json_refusals() as encoder:
        _, raised = ctx.call_or_problem(save, broken, path)  # raising is fine: what counts is the file left behind
    returned_or_raised(raised)
    if raised is None and not writes["handles"]:
        raise nothing_observed(
            "save_checkpoint recebeu um estado que o json não sabe gravar e voltou normalmente, sem levantar "
            "erro e sem abrir nenhum arquivo para escrever: o TypeError do json foi engolido antes da escrita "
            "(um except que só imprime ou passa?), então não houve gravação interrompida a conferir"
            if encoder["json"] else
            "save_checkpoint recebeu um estado que o json não sabe gravar, não levantou erro, não passou o "
            "estado ao json e não abriu nenhum arquivo para escrever: ela nem tentou gravar",
            expected="uma tentativa de gravação (que falha no json.dump) ou o TypeError do json chegando a quem chamou",
        )
    found = read_checkpoint_file(path)
    if isinstance(found, str) or not isinstance(found, dict) or found.get("version") != 1:
        raise torn_checkpoint(found)


@EXERCISE.check(
    level=1,
    title="Depois de uma gravação que falhou no meio, a seguinte grava o checkpoint certo",
    criterion=(
        "Uma gravação falha no meio (o json encontra um valor que não sabe gravar; ou o processo morre no "
        "meio da escrita, e o que ele deixou na pasta fica lá); a gravação seguinte, do mesmo estado sem o "
        "problema, deixa em path exatamente o checkpoint novo."
    ),
)
def a_save_after_a_failed_save(ctx: Context) -> None:
    save = ctx.student_function("save_checkpoint")
    for how in ("json", "death"):
        path, _ = last_good_checkpoint(ctx, f"after-failed-{how}")
        retry = state_to_save("repetida", 6)
        if how == "json":
            broken = copy.deepcopy(retry)
            broken["messages"].append({"role": "user", "content": NotSerializable()})
            failure = "o json encontrou um valor que não sabe gravar"
            with observed_writes(ctx):
                _, problem = ctx.call_or_problem(save, broken, path)
        else:
            failure = "o processo morreu no meio da escrita, e o que ele deixou na pasta ficou lá"
            at_death: dict[str, bytes] = {}
            with observed_writes(ctx, crash_after=CRASH_AFTER_CHARACTERS,
                                 on_crash=lambda kept=at_death, folder=path.parent: kept.update(folder_files(folder))
                                 ) as budget:
                _, problem = ctx.call_or_problem(save, copy.deepcopy(retry), path)
            if not budget["crashed"]:
                continue  # nothing written through open() or os.write: survives_a_crash_mid_write says so
            left_as_at_death(path.parent, at_death)
        returned_or_raised(problem)
        with observed_writes(ctx) as writes:
            _, second = ctx.call_or_problem(save, copy.deepcopy(retry), path)
        returned_or_raised(second)
        if second is not None:
            raise CheckFailed(
                f"Depois de uma gravação que falhou no meio ({failure}), a seguinte, do mesmo estado, também "
                f"falhou: {second.message} O que a gravação que falhou deixou na pasta (o temporário) não pode "
                "impedir a próxima: use um nome novo a cada gravação (tempfile.mkstemp) ou abra o temporário "
                "com \"w\", que começa do zero.",
                expected="o checkpoint novo gravado", observed=second.observed,
            )
        found = read_checkpoint_file(path)
        if found != retry:
            appended = [(Path(opened).name, mode) for opened, mode in writes["modes"]
                        if "a" in mode and Path(opened) != path.resolve()]
            cause = (f"o temporário {appended[0][0]} foi aberto com {appended[0][1]!r}, que acrescenta ao que "
                     "a gravação que falhou deixou nele em vez de começar do zero" if appended else
                     "a gravação nova não começou de um temporário vazio")
            raise CheckFailed(
                f"Depois de uma gravação que falhou no meio ({failure}), a seguinte, do mesmo estado, deixou um "
                f"checkpoint errado ({found_described(found)}): {cause}. Abra o temporário com \"w\", ou use um "
                "nome novo a cada gravação (tempfile.mkstemp), para que cada gravação comece de um arquivo vazio.",
                expected=summary(retry), observed=summary(found),
            )


@EXERCISE.check(
    level=1,
    title="save_checkpoint aceita um caminho relativo",
    criterion=(
        "Com um caminho relativo (só \"checkpoint.json\", na pasta atual), save_checkpoint grava o checkpoint "
        "ali, sem sobrar temporário, e o temporário trocado por ele fica ali também: a pasta do checkpoint é a "
        "pasta atual."
    ),
)
def saves_to_a_relative_path(ctx: Context) -> None:
    save = ctx.student_function("save_checkpoint")
    folder = ctx.fresh_dir("relative")
    state = state_to_save("relativa", 2)
    here = os.getcwd()
    events: list[tuple] = []
    os.chdir(folder)
    try:
        with os_spies(ctx, events):
            _, problem = ctx.call_or_problem(save, copy.deepcopy(state), CHECKPOINT_NAME)
    finally:
        os.chdir(here)
    returned_or_raised(problem)
    target = (folder / CHECKPOINT_NAME).resolve()
    swaps = [(Path(folder, event[1]).resolve(), Path(folder, event[2]).resolve())
             for event in events if event[0] in SWAP_EVENTS]
    elsewhere = [source for source, destination in swaps
                 if destination == target and source.parent != target.parent]
    if elsewhere:
        raise CheckFailed(
            f"Com o caminho relativo \"{CHECKPOINT_NAME}\", o temporário foi criado em {elsewhere[0].parent}, "
            "não na pasta do checkpoint (a pasta atual). Para um nome sem pasta, os.path.dirname(path) é \"\", e "
            "tempfile.mkstemp(dir=None) usa a pasta temporária do sistema: lá, os.replace pode nem funcionar "
            "(outro disco) e o fsync da pasta não cobre a troca. Tire a pasta de os.path.dirname(os.path.abspath(path)).",
            expected=f"o temporário em {target.parent}", observed=f"o temporário em {elsewhere[0].parent}",
        )
    if problem is not None:
        raise CheckFailed(
            f"Com o caminho relativo \"{CHECKPOINT_NAME}\", {problem.message} Um nome sem pasta tem "
            "os.path.dirname(path) igual a \"\" (e os.open(\"\") falha): tire a pasta de "
            "os.path.dirname(os.path.abspath(path)).",
            expected="o checkpoint gravado na pasta atual", observed=problem.observed,
        )
    found = read_checkpoint_file(folder / CHECKPOINT_NAME)
    if found != state:
        raise CheckFailed(
            f"Com o caminho relativo \"{CHECKPOINT_NAME}\", a pasta atual ficou sem o checkpoint certo "
            f"({found_described(found)}).", expected=summary(state), observed=summary(found),
        )
