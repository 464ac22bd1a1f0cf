"""O comando ``run`` de ``python -m harness``: escolher o cenário e a pasta, chamar ``run_durable``, mostrar.

``execute_run`` devolve o código de saída do status em que a execução parou (0 concluída,
10 pausada...). Quando ela para sem chegar a um status (uma queda simulada, a posse de
outro worker, um arquivo ilegível), o erro sobe: quem o traduz num código e numa linha é a
tabela de ``harness.exit_codes``, a mesma de todos os comandos.
"""
from __future__ import annotations

from pathlib import Path

from harness.cli_endpoint import make_run_client
from harness.exit_codes import EXIT_CODES
from harness.runner import ScenarioUnknown, ask_a_person, no_checkpoint, recorded_scenario, run_durable
from harness.scenarios import ScenarioError, load_scenario
from harness.stores import open_store


def run_scenario(args, store):
    """O cenário do ``run``: o de --scenario ou, numa retomada, o que a execução gravou."""
    if args.scenario:
        name = args.scenario
    elif not args.resume:
        raise ScenarioUnknown("diga o cenário: --scenario NOME")
    elif not store.exists():
        raise no_checkpoint(store)
    else:
        name = recorded_scenario(store)
    try:
        return load_scenario(name)
    except ScenarioError as error:
        raise ScenarioUnknown(str(error)) from None


def describe_message(message):
    """Uma linha legível por mensagem, para acompanhar a execução no terminal."""
    content = message["content"]
    if isinstance(content, str):
        return f"{message['role']}: {content}"
    parts = []
    for block in content:
        if block["type"] == "text":
            parts.append(block["text"])
        elif block["type"] == "tool_use":
            parts.append(f"[tool_use {block['name']} {block['id']}]")
        elif block["type"] == "tool_result":
            flag = " is_error" if block.get("is_error") else ""
            parts.append(f"[tool_result {block['tool_use_id']}{flag}]")
    return f"{message['role']}: " + " ".join(parts)


def execute_run(args):
    """O comando ``run``: roda ou retoma e devolve o código de saída do status em que a execução parou."""
    if not (args.workdir or args.scenario or args.run):
        raise ScenarioUnknown("diga o cenário (--scenario NOME) ou a pasta da execução (--workdir PASTA)")
    workdir = Path(args.workdir or Path("runs") / (args.scenario or args.run))
    store = open_store(args.store, workdir, run=args.run)
    scenario = run_scenario(args, store)
    client = make_run_client(scenario.responses, live=args.live)
    if args.resume:
        print(f"retomando '{scenario.name}' ({store.describe()})")
    else:
        print(f"iniciando '{scenario.name}': {scenario.task}")
    state = run_durable(
        client, workdir, scenario, resume=args.resume, max_turns=args.max_turns,
        approver=ask_a_person if args.approval else None, lease_seconds=args.lease_seconds,
        max_recovery_attempts=args.max_recovery_attempts, max_tokens=args.max_tokens, store=store,
        token_budget=args.token_budget,
    )
    for message in state["messages"][1:]:
        print("  " + describe_message(message))
    reason = f" ({state['status_reason']})" if state.get("status_reason") else ""
    print(f"status={state['status']}{reason} turns={state['turns']} tokens_used={state['tokens_used']} "
          f"run_id={state['run_id']} checkpoint={store.describe()}")
    return EXIT_CODES[state["status"]]
