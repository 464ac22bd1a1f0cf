"""Demonstrações com processos de verdade, para as lições 1 e 2.

Uma lição não consegue mostrar "o processo morreu" matando o próprio kernel, então
estas funções sobem um processo filho (``python -m harness.display.demos ...``), deixam-no
trabalhar, mandam um SIGKILL de verdade e devolvem o que sobrou em disco. Nenhum
``except`` e nenhum ``finally`` do filho roda depois de um SIGKILL: o que não estava
em disco some.

- ``kill_agent_midway``: o loop do agente morto no meio da tarefa (lição 1; com
  ``checkpoint=True``, o mesmo loop gravando checkpoint.json, lição 2);
- ``kill_writer``: um processo que regrava o checkpoint sem parar, morto num instante
  sorteado, sobrescrevendo no lugar ou com escrita atômica (lição 2).
"""
from __future__ import annotations

import argparse
import json
import random
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

KILL_TIMEOUT = 30.0  # segundos: um filho que não dá sinal de vida é um erro, nunca uma espera eterna


# --- A tarefa longa da lição 1 ------------------------------------------------------------

MEETINGS = 8


def long_task_files():
    """O mundo da tarefa longa: um NOTES.md de sessões anteriores e oito atas de reunião."""
    files = {
        "NOTES.md": (
            "# Notas do agente\n\n"
            "- Sessão anterior: as atas ficam em atas/, uma por reunião.\n"
            "- Formato do relatório: uma linha por decisão.\n"
        )
    }
    for number in range(1, MEETINGS + 1):
        files[f"atas/reuniao-{number:02d}.md"] = (
            f"# Reunião {number:02d}\n\n- Decidido: item {number} do plano trimestral.\n"
        )
    return files


def long_task_responses():
    """O roteiro: lê o NOTES.md, depois uma ata por turno, e só então conclui."""
    responses = [{
        "content": [
            {"type": "text", "text": "Primeiro, minhas notas de sessões anteriores."},
            {"type": "tool_use", "id": "toolu_demo00", "name": "read_file", "input": {"path": "NOTES.md"}},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 420, "output_tokens": 40},
    }]
    for number in range(1, MEETINGS + 1):
        responses.append({
            "content": [{"type": "tool_use", "id": f"toolu_demo{number:02d}", "name": "read_file",
                         "input": {"path": f"atas/reuniao-{number:02d}.md"}}],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 460 + 60 * number, "output_tokens": 30},
        })
    responses.append({
        "content": [{"type": "text", "text": f"Relatório pronto: {MEETINGS} decisões, uma por reunião."}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 460 + 60 * (MEETINGS + 1), "output_tokens": 60},
    })
    return responses


LONG_TASK = "Leia as atas das reuniões do trimestre e monte um relatório com as decisões."


# --- O que o pai vê depois da morte do filho ------------------------------------------------

@dataclass
class KilledRun:
    """O que sobrou de um processo morto: código de saída, o que ele anunciou e os arquivos."""

    returncode: int
    lines: list[str]
    files: dict[str, int] = field(default_factory=dict)  # caminho relativo -> bytes

    @property
    def killed_by_sigkill(self) -> bool:
        return self.returncode == -signal.SIGKILL


def _files_under(folder: Path) -> dict[str, int]:
    return {
        str(path.relative_to(folder)): path.stat().st_size
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _start_child(*arguments: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "harness.display.demos", *arguments],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _read_line(process: subprocess.Popen, deadline: float) -> str:
    """Uma linha do filho, sem nunca esperar para sempre."""
    remaining = deadline - time.monotonic()
    ready, _, _ = select.select([process.stdout], [], [], max(remaining, 0))
    if not ready:
        raise TimeoutError("o processo filho ficou mudo por tempo demais")
    line = process.stdout.readline()
    if not line:
        raise RuntimeError(f"o processo filho terminou antes da hora:\n{process.stderr.read()}")
    return line.rstrip("\n")


def _kill(process: subprocess.Popen) -> int:
    if process.poll() is None:
        process.send_signal(signal.SIGKILL)
    returncode = process.wait()
    process.stdout.close()
    process.stderr.close()
    return returncode


def kill_agent_midway(workdir, kill_at_turn=4, checkpoint=False):
    """Roda a tarefa longa num processo filho e o mata com SIGKILL quando o turno ``kill_at_turn`` começa.

    O filho anuncia cada pedido ao modelo numa linha ("turno 3: ..."); ao ler o anúncio do
    turno pedido, o pai manda o SIGKILL enquanto o filho espera a resposta do modelo.
    """
    workdir = Path(workdir)
    arguments = ["agent", str(workdir)] + (["--checkpoint"] if checkpoint else [])
    process = _start_child(*arguments)
    lines = []
    try:
        deadline = time.monotonic() + KILL_TIMEOUT
        while True:
            line = _read_line(process, deadline)
            lines.append(line)
            if line.startswith(f"turno {kill_at_turn}:"):
                break
    finally:
        returncode = _kill(process)
    return KilledRun(returncode, lines, _files_under(workdir))


# --- Regravar o checkpoint sem parar ------------------------------------------------------

def big_state(turns, conversation_turns=300):
    """Um estado de execução grande (cerca de 1 MB), para que cada gravação leve algum tempo."""
    messages = [{"role": "user", "content": LONG_TASK}]
    for turn in range(1, conversation_turns + 1):
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Turno {turn}: " + "lendo e resumindo as atas. " * 60},
        ]})
        messages.append({"role": "user", "content": "continue " * 200})
    return {"version": 1, "task": LONG_TASK, "turns": turns, "tokens_used": 500 * turns,
            "messages": messages, "pending_tool_use": None}


def write_json_in_place(path, data):
    """A gravação ingênua: abre o arquivo verdadeiro com "w" (que já o esvazia) e escreve por cima."""
    with open(path, "w", encoding="utf-8") as file:
        json.dump(data, file, ensure_ascii=False, indent=1)


@dataclass
class WriterKill:
    """Uma morte do gravador: quanto tempo ele viveu e o que ficou em disco."""

    seconds_alive: float
    size: int
    temporary_size: int | None  # tamanho do .tmp que sobrou, se sobrou
    loaded_turns: int | None  # turns do checkpoint lido; None se a leitura falhou
    error: str | None  # a mensagem do load_checkpoint quando o arquivo não presta


def kill_writer(path, mode, rng=None, min_delay=0.02, max_delay=0.25):
    """Sobe um filho que regrava ``path`` sem parar e o mata num instante sorteado.

    ``mode`` é "in-place" (sobrescrever no lugar) ou "atomic" (write_json_atomic). O pai
    espera a primeira gravação completa, então sorteia quanto tempo ainda deixa o filho
    viver, manda o SIGKILL e tenta ler o que sobrou com ``load_checkpoint``.
    """
    from harness.checkpoint import CheckpointError, load_checkpoint

    if mode not in ("in-place", "atomic"):
        raise ValueError(f"modo desconhecido {mode!r}; use 'in-place' ou 'atomic'")
    rng = rng or random.Random()
    path = Path(path)
    earlier = set(path.parent.glob(f"{path.name}*.tmp"))  # os que mortes anteriores deixaram
    process = _start_child("writer", str(path), mode)
    try:
        _read_line(process, time.monotonic() + KILL_TIMEOUT)  # a primeira gravação terminou
        delay = rng.uniform(min_delay, max_delay)
        time.sleep(delay)
    finally:
        _kill(process)
    # write_json_atomic dá a cada temporário um nome único; um SIGKILL deixa no máximo um por gravação
    temporaries = sorted(set(path.parent.glob(f"{path.name}*.tmp")) - earlier)
    try:
        loaded, error = load_checkpoint(path), None
    except CheckpointError as problem:
        loaded, error = None, str(problem)
    return WriterKill(
        seconds_alive=delay,
        size=path.stat().st_size if path.exists() else 0,
        temporary_size=temporaries[-1].stat().st_size if temporaries else None,
        loaded_turns=loaded["turns"] if loaded else None,
        error=error,
    )


# --- O lado do filho ------------------------------------------------------------------------

def _child_agent(workdir: Path, checkpoint: bool) -> None:
    """O loop da lição 1 (ou da lição 2, com checkpoint) contra um modelo que demora a responder."""
    from harness.fake_endpoint import ScriptedEndpoint
    from harness.loop import new_run_state
    from harness.tools import Workspace, use_workspace

    class SlowEndpoint(ScriptedEndpoint):
        # Um modelo de verdade leva segundos por resposta; aqui, uma fração disso.
        def handle(self, request):
            body = json.loads(request.content)
            turn = sum(1 for m in body["messages"] if m["role"] == "assistant") + 1
            print(f"turno {turn}: pedido ao modelo com {len(body['messages'])} mensagens", flush=True)
            time.sleep(0.15)
            return super().handle(request)

    workspace = Workspace(workdir / "mundo")
    workspace.add_files(long_task_files())
    use_workspace(workspace)
    client = SlowEndpoint(long_task_responses()).client()
    if checkpoint:
        from harness.checkpointed_loop import run_agent
        state = run_agent(client, new_run_state(LONG_TASK), workdir / "checkpoint.json")
    else:
        from harness.loop import run_agent
        state = run_agent(client, LONG_TASK)
    print(f"fim: turns={state['turns']} tokens_used={state['tokens_used']}", flush=True)


def _child_writer(path: str, mode: str) -> None:
    """Regrava o checkpoint para sempre; avisa quando a primeira gravação termina."""
    from harness.checkpoint import write_json_atomic

    write = write_json_atomic if mode == "atomic" else write_json_in_place
    turns = 1
    write(path, big_state(turns))
    print("primeira gravação completa", flush=True)
    while True:
        turns += 1
        write(path, big_state(turns))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.display.demos")
    sub = parser.add_subparsers(dest="command", required=True)
    agent = sub.add_parser("agent")
    agent.add_argument("workdir")
    agent.add_argument("--checkpoint", action="store_true")
    writer = sub.add_parser("writer")
    writer.add_argument("path")
    writer.add_argument("mode", choices=["in-place", "atomic"])
    args = parser.parse_args(argv)
    if args.command == "agent":
        _child_agent(Path(args.workdir), args.checkpoint)
    else:
        _child_writer(args.path, args.mode)
    return 0


if __name__ == "__main__":
    sys.exit(main())
