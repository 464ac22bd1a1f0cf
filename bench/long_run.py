"""Benchmark: one long run end to end per store, through the real SDK client and the offline endpoint.

Run from the project root:

    python3 bootstrap.py python bench/long_run.py [--turns 1000] [--stores files,sqlite,postgresql]

Each store runs the same scripted task in its own fresh process, the way ``python -m harness run``
does: ``run_durable`` with the client of ``make_run_client`` (the ``anthropic`` SDK client over
the offline ``ScriptedEndpoint``). Each turn the model asks for ``read_file`` on a ~600-byte note
and the loop goes on, so the conversation grows by two messages a turn and every request carries
all of it.

The report gives, per store:

- the peak memory of the child process (its RSS high-water mark, from ``os.wait4``);
- the time of a turn around turn 10 (median of turns 1-10) and at the end (median of the last
  ten turns), split in two: the round-trip (``client.messages.create``: the SDK serializes the
  whole conversation, the endpoint parses and validates it, the SDK parses the answer), which
  grows with the conversation whatever the harness does, and the harness (everything else in
  the turn: the lease, the checkpoint writes, the tool), which is what durability costs;
- the ratio of the end to turn 10 for each part.

No assertion on timings: the figures are printed, measured side by side in one run.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

STORES = ("files", "sqlite", "postgresql")
WINDOW = 10  # turns per measuring window: the first ten and the last ten


# --- the child: one store, one long run --------------------------------------------------------

def timed_client(client, starts, round_trips):
    """Wraps ``client.messages.create``: when each model call starts and how long its round-trip takes."""
    messages = client.messages  # the SDK caches this resource: patching it patches every call
    create = messages.create

    def create_and_time(*args, **kwargs):
        started = time.perf_counter()
        starts.append(started)
        try:
            return create(*args, **kwargs)
        finally:
            round_trips.append(time.perf_counter() - started)

    messages.create = create_and_time
    return client


def child(store_name, turns, dsn, out_path):
    from bench.stores import FILES, TASK, bench_responses
    from harness.cli_endpoint import make_run_client
    from harness.runner import run_durable
    from harness.scenarios import Scenario
    from harness.stores import open_store

    responses = bench_responses(turns)
    scenario = Scenario("bench", TASK, responses, FILES)
    starts, round_trips = [], []
    client = timed_client(make_run_client(responses), starts, round_trips)
    spec = {"files": "files", "sqlite": "sqlite", "postgresql": dsn}[store_name]
    with tempfile.TemporaryDirectory(prefix="bench-long-run-") as scratch:
        run_dir = Path(scratch) / "run"
        store = open_store(spec, run_dir, run=f"bench-long-{os.getpid()}")
        try:
            state = run_durable(client, run_dir, scenario, max_turns=turns + 1, store=store)
        finally:
            store.close()
    if state["status"] != "completed":
        raise SystemExit(f"{store_name}: the run ended {state['status']!r}, not completed")
    Path(out_path).write_text(json.dumps({"starts": starts, "round_trips": round_trips}), encoding="utf-8")


# --- the parent: one child per store, the report ----------------------------------------------

def run_child(store_name, turns, dsn):
    """Runs one store in a fresh process; its figures and its peak RSS in MiB (ru_maxrss is KiB on Linux)."""
    with tempfile.NamedTemporaryFile(prefix="bench-long-run-", suffix=".json", delete=False) as out:
        out_path = out.name
    command = [sys.executable, __file__, "--child", store_name, "--turns", str(turns), "--out", out_path]
    if dsn:
        command += ["--dsn", dsn]
    try:
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _pid, status, usage = os.wait4(process.pid, 0)  # the rusage of this child alone
        wall = time.perf_counter() - started
        stderr = process.stderr.read().decode("utf-8", "replace")
        process.stderr.close()
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"{store_name} failed:\n{stderr[-2000:]}")
        figures = json.loads(Path(out_path).read_text(encoding="utf-8"))
    finally:
        Path(out_path).unlink(missing_ok=True)
    return figures, usage.ru_maxrss / 1024, wall


def split_turns(figures):
    """Per turn: (whole turn, round-trip, harness). Turn i runs from model call i to model call i+1."""
    starts, round_trips = figures["starts"], figures["round_trips"]
    rows = []
    for index in range(len(starts) - 1):
        whole = starts[index + 1] - starts[index]
        rows.append((whole, round_trips[index], whole - round_trips[index]))
    return rows


def window_median(rows, column, first, last):
    return statistics.median(row[column] for row in rows[first:last])


def milliseconds(seconds):
    return f"{seconds * 1000:8.2f} ms"


def report(results, turns):
    print(f"\n{turns} turns, one fresh process per store; turn time = median of the turns in the window")
    header = (f"{'store':<11} {'peak RSS':>10} {'wall':>8}   {'part':<10} {'turns 1-10':>12} "
              f"{f'turns {turns - WINDOW + 1}-{turns}':>16} {'ratio':>7}")
    print(header)
    print("-" * len(header))
    for store_name, (figures, peak_mib, wall) in results.items():
        rows = split_turns(figures)
        first = (0, min(WINDOW, len(rows)))
        last = (max(0, len(rows) - WINDOW), len(rows))
        for column, part in enumerate(("turn", "round-trip", "harness")):
            early, late = window_median(rows, column, *first), window_median(rows, column, *last)
            ratio = f"{late / early:6.2f}x" if early > 0 else "    n/a"
            lead = f"{store_name:<11} {peak_mib:7.1f} MiB {wall:6.1f} s" if column == 0 else " " * 30
            print(f"{lead}   {part:<10} {milliseconds(early):>12} {milliseconds(late):>16} {ratio}")
    print("\nround-trip: client.messages.create (SDK + offline endpoint: grows with the conversation sent);"
          "\nharness: the rest of the turn (lease, checkpoint writes, tool): what durability costs.")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000, help="turns per run (default 1000)")
    parser.add_argument("--stores", default=",".join(STORES), help="comma-separated: files,sqlite,postgresql")
    parser.add_argument("--dsn", help="a PostgreSQL to use (default: a throwaway local cluster, if available)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.turns < WINDOW:
        parser.error(f"--turns must be at least {WINDOW}")
    if args.child:
        child(args.child, args.turns, args.dsn, args.out)
        return 0

    names = [name.strip() for name in args.stores.split(",") if name.strip()]
    unknown = sorted(set(names) - set(STORES))
    if unknown:
        parser.error(f"unknown store(s): {', '.join(unknown)}; use {', '.join(STORES)}")
    server = None
    if "postgresql" in names and args.dsn is None:
        from harness.stores.local_postgres import LocalPostgres, unavailable_reason

        reason = unavailable_reason()
        if reason:
            print(f"skipped postgresql: {reason}")
            names.remove("postgresql")
        else:
            server = LocalPostgres().start()
            args.dsn = server.dsn
    try:
        results = {}
        for name in names:
            results[name] = run_child(name, args.turns, args.dsn)
            print(f"{name}: done in {results[name][2]:.1f} s", flush=True)
        report(results, args.turns)
    finally:
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
