"""Lição 6: o laboratório de quedas. Derruba uma execução num ponto escolhido, retoma e
examina o que ficou em disco.

Cada passo é o mesmo ``python -m harness run`` da linha de comando, em um de dois modos:

- ``"simulada"``: ``SimulatedCrash`` dentro deste processo (rápido; ``main()`` devolve 137);
- ``"sigkill"``: um processo filho de verdade que recebe SIGKILL no ponto pedido
  (``CRASH_MODE=kill``): nenhum ``except``, nenhum ``finally`` roda.

Depois de cada passo, ``run_outcome`` lê a pasta da execução como um verificador leria:
status, contadores, caixa de saída, livro-razão, se o livro-razão e o checkpoint contam a
mesma história, e se algum pedido ao modelo levou um tool_use órfão.

``python -m harness.display.crash_lab matrix ...`` roda as quedas por SIGKILL num único processo
auxiliar, que cria um processo filho (fork) por passo: cada queda acontece num processo
separado, sem pagar a importação do SDK a cada vez.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harness.checkpoint import CheckpointError
from harness.cli_endpoint import ENDPOINT_LOG_ENV
from harness.crash import CRASH_LABELS, crash_counts, reset_crash_counts
from harness.effects import EFFECTS_FILE, EffectsLedgerError, load_effects
from harness.exit_codes import EXIT_CODES
from harness.fake_endpoint import validate_messages
from harness.lifecycle import CHECKPOINT_FILE, load_run_checkpoint
from harness.request_log import read_requests
from harness.runner import WORLD_DIR
from harness.timeline import list_points
from harness.tools import HIGH_IMPACT_TOOLS, Workspace

MODES = ("simulada", "sigkill")
CRASH_ENV = ("CRASH_AFTER", "CRASH_MODE", ENDPOINT_LOG_ENV)
STEP_TIMEOUT = 120.0  # segundos: um passo que não termina é um erro, nunca uma espera eterna

# O que cada código de saída diz (o mesmo vocabulário de ``python -m harness run``).
EXIT_MEANINGS = {
    0: "concluída",
    EXIT_CODES["paused"]: "pausada",
    EXIT_CODES["waiting_for_approval"]: "esperando aprovação",
    EXIT_CODES["cancelled"]: "cancelada",
    EXIT_CODES["failed"]: "falhada",
    EXIT_CODES["refused"]: "recusada pelo modelo",
    2: "entrada ruim (checkpoint, livro-razão ou lease.json ilegíveis)",
    4: "outro worker tem a posse",
    5: "posse perdida no meio do caminho",
    137: "derrubada (128 + 9)",
    -signal.SIGKILL: "morta por SIGKILL (o Python mostra -9; a shell mostraria 137)",
}


def exit_meaning(code):
    """Uma frase para um código de saída; códigos desconhecidos são ditos como são."""
    return EXIT_MEANINGS.get(code, f"código {code} inesperado")


def requests_log(run_dir):
    """O arquivo, ao lado da pasta da execução, onde cada pedido ao modelo vira uma linha JSON.

    Fica fora da pasta para que um começo limpo (que apaga a pasta) não o misture com outro.
    """
    run_dir = Path(run_dir)
    return run_dir.parent / f"{run_dir.name}.pedidos.jsonl"


def run_arguments(run_dir, scenario="team-email", resume=False, extra=()):
    args = ["run", "--scenario", scenario, "--workdir", str(run_dir)]
    if resume:
        args.append("--resume")
    return args + list(extra)


def validate_mode(mode):
    if mode not in MODES:
        raise ValueError(f"modo de queda desconhecido {mode!r}; use um de {', '.join(MODES)}")


# --- Um passo: rodar ou retomar ----------------------------------------------------------

@dataclass
class Step:
    """Um processo (de verdade ou simulado) que rodou a execução: o que pediu e como terminou."""

    action: str          # "rodar" ou "retomar"
    crash_after: str | None
    mode: str
    exit_code: int       # como o Python vê: 137 numa queda simulada, -9 num SIGKILL
    output: str = ""

    @property
    def meaning(self):
        return exit_meaning(self.exit_code)

    @property
    def shell_status(self):
        """O número que ``echo $?`` mostraria na shell: 128 + sinal para um processo morto."""
        return 128 - self.exit_code if self.exit_code < 0 else self.exit_code


@contextlib.contextmanager
def crash_environment(crash_after=None, crash_mode=None, log_path=None):
    """Variáveis de ambiente de um passo, devolvidas ao que eram no fim (mesmo com erro)."""
    saved = {key: os.environ.get(key) for key in CRASH_ENV}
    try:
        for key in CRASH_ENV:
            os.environ.pop(key, None)
        if crash_after:
            os.environ["CRASH_AFTER"] = crash_after
        if crash_mode:
            os.environ["CRASH_MODE"] = crash_mode
        if log_path is not None:
            os.environ[ENDPOINT_LOG_ENV] = str(log_path)
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def run_in_process(args, crash_after=None, log_path=None):
    """``python -m harness ARGS`` dentro deste processo, como se fosse um processo novo.

    Contagens de queda zeradas, CRASH_MODE ausente (só SimulatedCrash, nunca um SIGKILL
    neste processo) e a saída capturada. Devolve (código de saída, texto impresso).
    """
    from harness import cli

    buffer = io.StringIO()
    reset_crash_counts()
    with crash_environment(crash_after, None, log_path), \
            contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        code = cli.main(list(args))
    return code, buffer.getvalue()


def harness_command(args):
    return [sys.executable, "-m", "harness", *args]


def child_environment(crash_after=None, crash_mode=None, log_path=None):
    env = {key: value for key, value in os.environ.items() if key not in CRASH_ENV}
    if crash_after:
        env["CRASH_AFTER"] = crash_after
    if crash_mode:
        env["CRASH_MODE"] = crash_mode
    if log_path is not None:
        env[ENDPOINT_LOG_ENV] = str(log_path)
    return env


def run_in_subprocess(args, crash_after=None, crash_mode=None, log_path=None, timeout=STEP_TIMEOUT):
    """``python -m harness ARGS`` num processo filho de verdade. Devolve (código, saída)."""
    done = subprocess.run(harness_command(args), env=child_environment(crash_after, crash_mode, log_path),
                          capture_output=True, text=True, timeout=timeout)
    return done.returncode, done.stdout + done.stderr


def crash_run(run_dir, label, n=1, mode="simulada", scenario="team-email"):
    """Começo limpo em ``run_dir`` com ``CRASH_AFTER=label:n``; devolve o Step da queda."""
    validate_mode(mode)
    crash_after = f"{label}:{n}"
    args = run_arguments(run_dir, scenario)
    if mode == "simulada":
        code, output = run_in_process(args, crash_after, requests_log(run_dir))
    else:
        code, output = run_in_subprocess(args, crash_after, "kill", requests_log(run_dir))
    return Step("rodar", crash_after, mode, code, output)


def resume_run(run_dir, scenario="team-email", crash_after=None):
    """``--resume`` dentro deste processo (sem queda, ou com outra queda simulada)."""
    code, output = run_in_process(run_arguments(run_dir, scenario, resume=True), crash_after,
                                  requests_log(run_dir))
    return Step("retomar", crash_after, "simulada", code, output)


def passes_per_label(scenario="team-email", work_dir=None):
    """Quantas vezes uma execução sem queda passa por cada rótulo (as janelas possíveis)."""
    if work_dir is None:  # the run is only counted, never looked at: its folder goes at once
        import tempfile

        with tempfile.TemporaryDirectory(prefix="passagens-") as folder:
            return passes_per_label(scenario, folder)
    code, output = run_in_process(run_arguments(Path(work_dir) / "sem-queda", scenario))
    if code != 0:
        raise RuntimeError(f"a execução sem queda de {scenario} terminou com {code}:\n{output}")
    return crash_counts()


# --- Um processo congelado (para mandar o SIGKILL de fora) ------------------------------------

def process_state(pid):
    """A letra de estado do processo em /proc (R, S, T = parado, Z = zumbi); None se não existe."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()[0]


def start_frozen(run_dir, label, n=1, scenario="team-email", extra=(), timeout=STEP_TIMEOUT):
    """Sobe ``python -m harness run`` que se congela (SIGSTOP) ao passar por ``label:n``.

    Devolve o Popen já parado exatamente ali: quem chamou decide o que fazer com ele
    (mandar SIGKILL, ou SIGCONT para deixá-lo seguir). Se o filho terminar antes de
    chegar ao ponto, é um erro com a saída dele.
    """
    process = subprocess.Popen(harness_command(run_arguments(run_dir, scenario, extra=extra)),
                               env=child_environment(f"{label}:{n}", "stop", requests_log(run_dir)),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process_state(process.pid) == "T":
            return process
        if process.poll() is not None:
            out, err = process.communicate()
            raise RuntimeError(f"o processo terminou ({process.returncode}) antes de chegar a "
                               f"{label}:{n}:\n{out}{err}")
        time.sleep(0.02)
    process.kill()
    process.wait()
    raise TimeoutError(f"o processo não chegou a {label}:{n} em {timeout:.0f} s")


def kill_now(process):
    """Manda SIGKILL ao processo e devolve o código de saída que o Python vê (-9)."""
    process.send_signal(signal.SIGKILL)
    process.communicate()
    return process.returncode


# --- O que ficou em disco -------------------------------------------------------------------

def world_of(run_dir):
    return Workspace(Path(run_dir) / WORLD_DIR)


def _blocks(messages, kind):
    return [block for message in messages if isinstance(message.get("content"), list)
            for block in message["content"] if isinstance(block, dict) and block.get("type") == kind]


def agreement_problems(state, effects, emails, latest_point=None):
    """O checkpoint, o livro-razão, a caixa de saída e a sequência contam a mesma história?

    Devolve a lista de desacordos (vazia = concordam):
    - toda chamada de alto impacto já respondida tem um recibo (committed ou rejected) com o
      mesmo resultado que o modelo recebeu;
    - o livro-razão não fala de chamadas que o checkpoint nunca viu;
    - todo e-mail na caixa de saída tem um recibo committed com a sua chave (ou está pendente);
    - o ponto mais recente da sequência tem as mesmas mensagens do checkpoint.json.
    """
    problems = []
    uses = {block["id"]: block for block in _blocks(state["messages"], "tool_use")}
    results = {block["tool_use_id"]: block for block in _blocks(state["messages"], "tool_result")}
    pending = {call["id"] for call in state["pending_tool_use"] or []}
    for tool_use_id, use in uses.items():
        if use["name"] not in HIGH_IMPACT_TOOLS or tool_use_id in pending:
            continue
        record, result = effects.get(tool_use_id), results.get(tool_use_id)
        if result is None:
            problems.append(f"{tool_use_id}: tool_use sem tool_result num turno que não está pendente")
        elif record is None:
            if not (result.get("is_error") or str(result.get("content", "")).startswith("[dry-run]")):
                problems.append(f"{tool_use_id}: {use['name']} deu certo, mas não há recibo no livro-razão")
        elif record["status"] not in ("committed", "rejected"):
            problems.append(f"{tool_use_id}: o modelo recebeu a resposta, mas o livro-razão diz {record['status']}")
        elif (record["result"]["content"], record["result"]["is_error"]) != \
                (result.get("content"), bool(result.get("is_error"))):
            problems.append(f"{tool_use_id}: o resultado no livro-razão difere do tool_result no checkpoint")
    for tool_use_id in effects:
        if tool_use_id not in uses:
            problems.append(f"{tool_use_id}: registro no livro-razão de uma chamada que o checkpoint não conhece")
    committed = {key for key, record in effects.items() if record["status"] == "committed"}
    for email in emails:
        key = email.get("idempotency_key")
        if key not in committed and key not in pending:
            problems.append(f"e-mail com a chave {key} sem recibo committed no livro-razão")
    if latest_point is not None and latest_point["messages"] != state["messages"]:
        problems.append("o ponto mais recente da sequência e o checkpoint.json não têm as mesmas mensagens")
    return problems


def orphan_requests(log_path):
    """Para cada pedido registrado que a API recusaria, o texto do 400 (lista vazia = nenhum)."""
    problems = []
    for number, request in enumerate(read_requests(log_path), start=1):
        error = validate_messages(request["body"].get("messages"))
        if error:
            problems.append(f"pedido {number}: {error}")
    return problems


def count_requests(log_path):
    return len(read_requests(log_path))


@dataclass
class Outcome:
    """O retrato de uma pasta de execução, do jeito que um verificador a lê."""

    status: str | None
    turns: int | None
    tokens_used: int | None
    pending: list[str]
    emails: int
    tickets: int
    ledger: dict[str, str]               # tool_use_id -> status do registro
    disagreements: list[str]             # livro-razão x checkpoint x caixa de saída x sequência
    orphans: list[str]                   # pedidos ao modelo que a API recusaria
    requests: int                        # pedidos ao modelo, de todos os processos
    unreadable: list[str] = field(default_factory=list)

    @property
    def agrees(self):
        return not self.disagreements and not self.unreadable

    def to_dict(self):
        return asdict(self)


def run_outcome(run_dir):
    """Lê checkpoint.json, effects.json, a caixa de saída, a sequência e o registro de pedidos."""
    run_dir = Path(run_dir)
    unreadable = []
    try:
        state = load_run_checkpoint(run_dir / CHECKPOINT_FILE)
    except CheckpointError as error:
        state, unreadable = None, unreadable + [f"checkpoint: {error}"]
    try:
        effects = load_effects(run_dir / EFFECTS_FILE)
    except EffectsLedgerError as error:
        effects, unreadable = {}, unreadable + [f"livro-razão: {error}"]
    world = world_of(run_dir)
    emails = world.emails() if world.outbox_path.exists() else []
    tickets = world.tickets() if world.tickets_path.exists() else []
    disagreements = []
    if state is not None and not unreadable:
        points = list_points(run_dir)
        latest = json.loads(points[-1].read_text(encoding="utf-8")) if points else None
        disagreements = agreement_problems(state, effects, emails, latest)
    log = requests_log(run_dir)
    return Outcome(
        status=state["status"] if state else None,
        turns=state["turns"] if state else None,
        tokens_used=state["tokens_used"] if state else None,
        pending=[f"{call['name']} ({call['id']})" for call in (state or {}).get("pending_tool_use") or []],
        emails=len(emails),
        tickets=len(tickets),
        ledger={key: record["status"] for key, record in effects.items()},
        disagreements=disagreements,
        orphans=orphan_requests(log),
        requests=count_requests(log),
        unreadable=unreadable,
    )


# --- A matriz de quedas -----------------------------------------------------------------------

@dataclass
class MatrixRow:
    """Uma linha da matriz: a queda, a retomada e o retrato final da execução."""

    label: str
    n: int
    mode: str
    crash_code: int
    resume_code: int
    outcome: dict

    @property
    def ok(self):
        o = self.outcome
        return (self.resume_code == 0 and o["status"] == "completed" and o["emails"] == 1
                and not o["disagreements"] and not o["unreadable"] and not o["orphans"])


def _fork_step(args, crash_after, crash_mode, log_path, output_path):
    """Roda ``harness.cli.main(args)`` num processo filho (fork) e devolve o código de saída.

    O filho é um processo separado de verdade (um SIGKILL nele não toca o pai), mas já
    nasce com o harness importado.
    """
    from harness import cli

    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            descriptor = os.open(output_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.dup2(descriptor, 1)
            os.dup2(descriptor, 2)
            for key in CRASH_ENV:
                os.environ.pop(key, None)
            if crash_after:
                os.environ["CRASH_AFTER"] = crash_after
            if crash_mode:
                os.environ["CRASH_MODE"] = crash_mode
            os.environ[ENDPOINT_LOG_ENV] = str(log_path)
            reset_crash_counts()
            code = cli.main(list(args))
        except BaseException as error:  # o filho nunca volta para o código do pai
            os.write(2, f"o processo filho falhou: {error!r}\n".encode())
            code = 71
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    code, killed = wait_or_kill(pid, STEP_TIMEOUT)
    if killed:
        raise TimeoutError(f"o passo {args} não terminou em {STEP_TIMEOUT:.0f} s")
    return code


def wait_or_kill(pid, timeout, poll=0.005):
    """Espera o processo filho ``pid`` terminar; se ``timeout`` segundos passam antes, derruba-o
    com SIGKILL. Devolve (código de saída, se foi derrubado); o código é o de
    ``os.waitstatus_to_exitcode``: menos o sinal que matou o processo (-9 para SIGKILL)."""
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status), False
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)  # inofensivo se ele acabou de sair (um zumbi até ser colhido)
            _, status = os.waitpid(pid, 0)
            return os.waitstatus_to_exitcode(status), True
        time.sleep(poll)


def matrix_case(base_dir, label, n, mode, scenario="team-email", resume_scenario=None):
    """Uma célula da matriz, em processos filhos: queda em ``label:n`` no ``mode``, depois --resume."""
    validate_mode(mode)
    run_dir = Path(base_dir) / f"{label}-{n}-{mode}"
    output = Path(base_dir) / f"{label}-{n}-{mode}.saida.txt"
    log = requests_log(run_dir)
    crash_code = _fork_step(run_arguments(run_dir, scenario), f"{label}:{n}",
                            "kill" if mode == "sigkill" else None, log, output)
    resume_code = _fork_step(run_arguments(run_dir, resume_scenario or scenario, resume=True),
                             None, None, log, output)
    return MatrixRow(label, n, mode, crash_code, resume_code, run_outcome(run_dir).to_dict())


def parse_case(text):
    label, _, n = text.partition(":")
    if label not in CRASH_LABELS or not n.isdigit() or int(n) < 1:
        raise ValueError(f"caso inválido {text!r}; use rótulo:n, com rótulo em {', '.join(CRASH_LABELS)}")
    return label, int(n)


def simulated_case(base_dir, label, n, scenario="team-email", resume_scenario=None):
    """Uma célula da matriz no modo simulado, dentro deste processo: queda, depois --resume."""
    run_dir = Path(base_dir) / f"{label}-{n}-simulada"
    crash = crash_run(run_dir, label, n, "simulada", scenario)
    resume = resume_run(run_dir, resume_scenario or scenario)
    return MatrixRow(label, n, "simulada", crash.exit_code, resume.exit_code, run_outcome(run_dir).to_dict())


def crash_matrix(base_dir, cases, modes=MODES, scenario="team-email", resume_scenario=None):
    """Queda + retomada para cada caso (rótulo, n) em cada modo; devolve as linhas na ordem dos casos.

    As quedas simuladas rodam aqui mesmo (SimulatedCrash não derruba este processo). As
    quedas por SIGKILL rodam num único processo auxiliar, que cria um filho (fork) por
    passo e imprime o resultado em JSON: nenhum SIGKILL acontece neste processo.
    """
    base_dir = Path(base_dir)
    base_dir.mkdir(parents=True, exist_ok=True)
    for mode in modes:
        validate_mode(mode)
    killed = {}
    if "sigkill" in modes:
        command = [sys.executable, "-m", "harness.display.crash_lab", "matrix", "--base", str(base_dir),
                   "--scenario", scenario, "--modes", "sigkill"]
        if resume_scenario:
            command += ["--resume-scenario", resume_scenario]
        command += [f"{label}:{n}" for label, n in cases]
        done = subprocess.run(command, env=child_environment(), capture_output=True, text=True,
                              timeout=STEP_TIMEOUT * 2 * max(1, len(cases)))
        if done.returncode != 0:
            raise RuntimeError(f"a matriz de quedas falhou ({done.returncode}):\n{done.stderr}")
        killed = {(row["label"], row["n"]): MatrixRow(**row) for row in json.loads(done.stdout)}
    rows = []
    for label, n in cases:
        for mode in modes:
            if mode == "simulada":
                rows.append(simulated_case(base_dir, label, n, scenario, resume_scenario))
            else:
                rows.append(killed[(label, n)])
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m harness.display.crash_lab")
    sub = parser.add_subparsers(dest="command", required=True)
    matrix = sub.add_parser("matrix", help="queda + retomada para cada caso e modo; imprime JSON")
    matrix.add_argument("--base", required=True)
    matrix.add_argument("--scenario", default="team-email")
    matrix.add_argument("--resume-scenario", default=None)
    matrix.add_argument("--modes", default=",".join(MODES))
    matrix.add_argument("cases", nargs="+", help="rótulo:n")
    args = parser.parse_args(argv)
    modes = [mode for mode in args.modes.split(",") if mode]
    rows = [matrix_case(args.base, label, n, mode, args.scenario, args.resume_scenario)
            for label, n in map(parse_case, args.cases) for mode in modes]
    print(json.dumps([asdict(row) for row in rows], ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
