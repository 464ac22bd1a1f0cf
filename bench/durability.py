"""Benchmark: what durability costs on a long run, measured side by side in one run.

Run from the project root:

    python3 bootstrap.py python bench/durability.py [--turns 100] [--repeats 3]

The same 100-turn scenario (`harness.scenarios.reading_loop_responses`: one list_dir per
turn, then the end) runs through, in alternation:

1. the in-memory loop of lesson 1 (no checkpoint at all);
2. the lesson-2 loop (checkpoint.json at points A and B);
3. the durable runner of lesson 6 (checkpoint.json v2 + the per-turn sequence + the
   effects ledger + the lease with its fencing token).

It prints the median time of each, the time per turn, the bytes left on disk and the
overhead ratio against the in-memory loop. A last line runs the same number of turns with
a high-impact tool (create_ticket) in every turn, so that the ledger writes its intent and
its receipt each turn too.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness import checkpointed_loop, loop  # noqa: E402
from harness.fake_endpoint import make_stub_client  # noqa: E402
from harness.runner import run_durable  # noqa: E402
from harness.scenarios import Scenario, reading_loop_responses  # noqa: E402
from harness.tools import workspace_in_use  # noqa: E402

TASK = "Olhe a pasta de trabalho até terminar."
FILES = {"notas/leia-me.md": "# Notas\n\nNada de novo por aqui.\n", "atas/2026-11-20.md": "- fila nova\n"}


def ticket_loop_responses(turns: int) -> list[dict]:
    """Like reading_loop_responses, but each turn opens a ticket: a ledger intent + receipt per turn."""
    responses = [
        {"content": [{"type": "tool_use", "id": f"toolu_tick{turn:04d}", "name": "create_ticket",
                      "input": {"title": f"Pendência {turn}", "body": "anotada pelo agente"}}],
         "stop_reason": "tool_use", "usage": {"input_tokens": 300 + 20 * turn, "output_tokens": 30}}
        for turn in range(turns)
    ]
    responses.append({"content": [{"type": "text", "text": "Pendências anotadas."}],
                      "stop_reason": "end_turn", "usage": {"input_tokens": 300 + 20 * turns, "output_tokens": 8}})
    return responses


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def in_memory(responses, folder: Path, turns: int) -> dict:
    scenario = Scenario("bench", TASK, responses, FILES)
    with workspace_in_use(scenario.make_workspace(folder / "world")):
        started = time.perf_counter()
        state = loop.run_agent(make_stub_client(responses), TASK, max_turns=turns + 1)
        elapsed = time.perf_counter() - started
    return {"seconds": elapsed, "turns": state["turns"], "bytes": 0}


def lesson2_checkpoint(responses, folder: Path, turns: int) -> dict:
    scenario = Scenario("bench", TASK, responses, FILES)
    with workspace_in_use(scenario.make_workspace(folder / "world")):
        started = time.perf_counter()
        state = checkpointed_loop.run_agent(make_stub_client(responses), loop.new_run_state(TASK),
                                            folder / "checkpoint.json", max_turns=turns + 1)
        elapsed = time.perf_counter() - started
    return {"seconds": elapsed, "turns": state["turns"], "bytes": (folder / "checkpoint.json").stat().st_size}


def durable(responses, folder: Path, turns: int) -> dict:
    scenario = Scenario("bench", TASK, responses, FILES)
    started = time.perf_counter()
    state = run_durable(make_stub_client(responses), folder / "run", scenario, max_turns=turns + 1)
    elapsed = time.perf_counter() - started
    assert state["status"] == "completed", state["status"]
    return {"seconds": elapsed, "turns": state["turns"], "bytes": folder_bytes(folder / "run") - folder_bytes(folder / "run" / "world")}


CONFIGURATIONS = {
    "in memory (lesson 1)": in_memory,
    "checkpoint.json (lesson 2)": lesson2_checkpoint,
    "durable runner (lesson 6)": durable,
}


def measure(responses, turns: int, repeats: int, configurations=CONFIGURATIONS) -> dict:
    """Median of ``repeats`` runs per configuration, taken in alternation so load hits all alike."""
    samples = {name: [] for name in configurations}
    last = {}
    with tempfile.TemporaryDirectory(prefix="bench-durability-", dir=ROOT) as scratch:
        for repeat in range(repeats):
            for name, run in configurations.items():
                folder = Path(scratch) / f"{repeat}-{len(samples[name])}-{name.split()[0]}"
                folder.mkdir()
                result = run(responses, folder, turns)
                samples[name].append(result["seconds"])
                last[name] = result
                shutil.rmtree(folder)
    return {name: dict(last[name], seconds=statistics.median(samples[name])) for name in configurations}


def format_report(results: dict, baseline: str, title: str) -> str:
    base = results[baseline]["seconds"]
    lines = [title, f"{'':28} {'total':>9} {'per turn':>10} {'on disk':>10} {'ratio':>7}"]
    for name, result in results.items():
        lines.append(f"{name:28} {result['seconds']:>8.2f}s {result['seconds'] / result['turns'] * 1000:>8.2f}ms "
                     f"{result['bytes'] / 1e6:>8.2f}MB {result['seconds'] / base:>6.2f}x")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    reading = measure(reading_loop_responses(args.turns), args.turns, args.repeats)
    baseline = "in memory (lesson 1)"
    print(format_report(reading, baseline,
                        f"{args.turns}-turn reading loop (list_dir each turn), median of {args.repeats}"))
    durable_name = "durable runner (lesson 6)"
    extra = reading[durable_name]["seconds"] - reading[baseline]["seconds"]
    print(f"overhead of durability: {reading[durable_name]['seconds'] / reading[baseline]['seconds']:.2f}x "
          f"the in-memory loop, {extra / reading[durable_name]['turns'] * 1000:.1f} ms per turn")

    tickets = measure(ticket_loop_responses(args.turns), args.turns, args.repeats,
                      {baseline: in_memory, durable_name: durable})
    print(format_report(tickets, baseline,
                        f"{args.turns}-turn ticket loop (create_ticket each turn: ledger intent + receipt)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
