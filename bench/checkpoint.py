"""Benchmark: what one `save_checkpoint` costs as the conversation grows, and what a long run
spends on checkpoints.

Run from the project root:

    python3 bootstrap.py python bench/checkpoint.py [--sizes 10 100 1000] [--repeats 15] [--turns 200]

For each conversation size it measures, side by side in the same run and on the same
disk, the atomic write of lesson 2 (tmp + fsync + os.replace + fsync of the folder) and
the same write with `os.fsync` turned into a no-op, and prints the bytes written, the
median time of each, and the share of the time that goes to fsync. Then it replays a
whole run of N turns (two saves per turn, point A and point B, with the conversation
growing by two messages per turn) and prints the total time and bytes spent on
checkpoints. The checkpoint rewrites the whole conversation every time, so the total
grows with the square of the number of turns.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.checkpoint import save_checkpoint  # noqa: E402
from harness.loop import new_run_state  # noqa: E402

# A tool result about the size of a short notes file read by read_file.
FILE_TEXT = (
    "# Reunião de planejamento\n\n"
    "- Migrar o job noturno para a fila nova até sexta.\n"
    "- Congelar features na semana do lançamento.\n"
    "- Ana cuida do contrato; Bruno, do rollback.\n"
) * 3


def assistant_message(turn: int) -> dict:
    return {"role": "assistant", "content": [
        {"type": "text", "text": f"Vou ler a ata {turn}."},
        {"type": "tool_use", "id": f"toolu_bench{turn:05d}", "name": "read_file",
         "input": {"path": f"atas/reuniao-{turn:03d}.md"}},
    ]}


def result_message(turn: int) -> dict:
    return {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": f"toolu_bench{turn:05d}", "content": FILE_TEXT},
    ]}


def state_with(messages: int) -> dict:
    """A run state whose conversation has exactly ``messages`` messages (task included)."""
    state = new_run_state("Leia as atas e resuma as decisões.")
    turn = 0
    while len(state["messages"]) < messages:
        turn += 1
        state["messages"].append(assistant_message(turn))
        if len(state["messages"]) < messages:
            state["messages"].append(result_message(turn))
    state["turns"] = turn
    return state


@contextmanager
def fsync_disabled():
    """Same write, minus the fsync calls: the difference is what durability costs."""
    real = os.fsync
    os.fsync = lambda descriptor: None
    try:
        yield
    finally:
        os.fsync = real


def time_saves(state: dict, path: Path, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        save_checkpoint(state, path)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def measure_size(messages: int, folder: Path, repeats: int) -> dict:
    state = state_with(messages)
    path = folder / f"checkpoint-{messages}.json"
    save_checkpoint(state, path)  # warm up: file exists, caches are hot
    with_fsync = time_saves(state, path, repeats)
    with fsync_disabled():
        without_fsync = time_saves(state, path, repeats)
    serialise = statistics.median(
        _timed(lambda: json.dumps(state, ensure_ascii=False, indent=1)) for _ in range(repeats))
    return {
        "messages": messages,
        "bytes": path.stat().st_size,
        "with_fsync": with_fsync,
        "without_fsync": without_fsync,
        "fsync_share": max(0.0, (with_fsync - without_fsync) / with_fsync),
        "serialise": serialise,
    }


def _timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def replay_run(turns: int, folder: Path) -> dict:
    """Every save a run of ``turns`` turns makes (A and B per turn), timed and weighed."""
    state = new_run_state("Leia as atas e resuma as decisões.")
    path = folder / "checkpoint-run.json"
    total_time = total_bytes = 0.0
    saves = 0
    for turn in range(1, turns + 1):
        state["turns"] = turn
        state["messages"].append(assistant_message(turn))
        for point in ("A", "B"):
            if point == "B":
                state["messages"].append(result_message(turn))
            started = time.perf_counter()
            save_checkpoint(state, path)
            total_time += time.perf_counter() - started
            total_bytes += path.stat().st_size
            saves += 1
    return {"turns": turns, "saves": saves, "seconds": total_time, "bytes": total_bytes,
            "last_bytes": path.stat().st_size}


def format_report(rows: list[dict], run: dict, run_without_fsync: dict) -> str:
    lines = ["save_checkpoint (lesson 2 atomic write), median of repeats, same disk, same run",
             f"{'messages':>9} {'bytes':>10} {'with fsync':>12} {'no fsync':>12} {'fsync share':>12} "
             f"{'json.dumps':>12} {'µs/KB':>8}"]
    for row in rows:
        lines.append(
            f"{row['messages']:>9} {row['bytes']:>10,} {row['with_fsync'] * 1000:>10.2f}ms "
            f"{row['without_fsync'] * 1000:>10.2f}ms {row['fsync_share']:>11.0%} "
            f"{row['serialise'] * 1000:>10.2f}ms {row['with_fsync'] * 1e6 / (row['bytes'] / 1024):>8.1f}"
        )
    first, last = rows[0], rows[-1]
    lines.append(
        f"from {first['messages']} to {last['messages']} messages: bytes x{last['bytes'] / first['bytes']:.0f}, "
        f"time x{last['with_fsync'] / first['with_fsync']:.1f} (fsync is a fixed cost per save; "
        f"serialising and writing grow with the conversation)"
    )
    lines.append("fsync share = the part of the save that disappears when os.fsync is skipped "
                 "(on ext4 a rename over an existing file may still start writeback, so it is a lower bound)")
    share = max(0.0, 1 - run_without_fsync["seconds"] / run["seconds"])
    lines.append(
        f"a {run['turns']}-turn run: {run['saves']} saves, {run['seconds']:.2f} s and "
        f"{run['bytes'] / 1e6:.1f} MB written on checkpoints (last checkpoint {run['last_bytes'] / 1e3:.0f} KB); "
        f"without fsync {run_without_fsync['seconds']:.2f} s, so fsync is {share:.0%} of it"
    )
    lines.append(
        f"average per save: {run['seconds'] / run['saves'] * 1000:.2f} ms, "
        f"{run['bytes'] / run['saves'] / 1e3:.0f} KB"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-checkpoint-", dir=ROOT) as folder:
        folder = Path(folder)
        rows = [measure_size(size, folder, args.repeats) for size in args.sizes]
        run = replay_run(args.turns, folder)
        with fsync_disabled():
            run_without_fsync = replay_run(args.turns, folder)
    print(format_report(rows, run, run_without_fsync))
    return 0


if __name__ == "__main__":
    sys.exit(main())
