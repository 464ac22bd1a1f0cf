"""``python -m harness run``: roda um cenário offline, turno a turno, gravando o checkpoint."""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from harness.checkpoint import CheckpointError, load_checkpoint
from harness.checkpointed_loop import run_agent
from harness.loop import MAX_TURNS, new_run_state
from harness.model import make_client
from harness.resume import resume_run
from harness.scenarios import list_scenarios, load_scenario
from harness.tools import Workspace, use_workspace


def describe_message(message: dict) -> str:
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


def run(args: argparse.Namespace) -> int:
    scenario = load_scenario(args.scenario)
    workdir = Path(args.workdir or Path("runs") / scenario.name)
    checkpoint_path = workdir / "checkpoint.json"
    client = make_client(scenario.responses, live=args.live)

    if args.resume:
        use_workspace(Workspace(workdir / "world"))
        try:
            before = load_checkpoint(checkpoint_path)
        except CheckpointError as error:
            print(f"não dá para retomar: {error}", file=sys.stderr)
            return 2
        if before is None:
            print(f"não há checkpoint em {checkpoint_path}; rode sem --resume primeiro", file=sys.stderr)
            return 2
        print(f"retomando '{scenario.name}' do turno {before['turns']} ({checkpoint_path})")
        shown = len(before["messages"])
        state = resume_run(client, checkpoint_path, args.max_turns)
    else:
        # Começo limpo: apaga o checkpoint antigo e recria o mundo do cenário.
        if workdir.exists():
            shutil.rmtree(workdir)
        workdir.mkdir(parents=True)
        use_workspace(scenario.make_workspace(workdir / "world"))
        print(f"iniciando '{scenario.name}': {scenario.task}")
        state = new_run_state(scenario.task)
        shown = 1
        state = run_agent(client, state, checkpoint_path, args.max_turns)

    for message in state["messages"][shown:]:
        print("  " + describe_message(message))
    print(f"turns={state['turns']} tokens_used={state['tokens_used']} checkpoint={checkpoint_path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m harness", description="Aparato do curso.")
    sub = parser.add_subparsers(dest="command", required=True)
    run_parser = sub.add_parser("run", help="roda um cenário offline")
    run_parser.add_argument("--scenario", required=True, choices=list_scenarios())
    run_parser.add_argument("--workdir", help="pasta da execução (padrão: runs/CENÁRIO)")
    run_parser.add_argument("--resume", action="store_true", help="continua do checkpoint")
    run_parser.add_argument("--max-turns", type=int, default=MAX_TURNS)
    run_parser.add_argument("--live", action="store_true",
                            help="usa a API real (exige ANTHROPIC_API_KEY)")
    run_parser.set_defaults(func=run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)
