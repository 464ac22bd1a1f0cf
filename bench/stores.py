"""Benchmark: the same agent loop through each run store, beside LangGraph and DBOS, in one run.

Run from the project root (the peers come from the optional extra: python3 bootstrap.py python -m pip
install -e ".[bench]"):

    python3 bootstrap.py python bench/stores.py [--turns 100] [--long-turns 1000] [--repeats 3]

Every configuration runs the same loop: each turn the "model" (a stub that returns a prebuilt
SDK Message instantly) asks for read_file on a ~600-byte note, the tool answers, and the loop
goes on; nothing else happens, so what a turn costs beyond the in-memory loop is what the
durability costs. Our runner (`run_durable`) runs it with each store (files, SQLite,
PostgreSQL); LangGraph runs it as a two-node graph (model -> tools) with SqliteSaver and
durability="sync"; DBOS runs it as a workflow with one step per model call and per tool call,
on a SQLite system database. Each configuration has its own baseline without persistence (the
lesson-1 loop, the same graph without a checkpointer, the same loop without DBOS), and the
overhead of a turn is its time minus the baseline's.

Each sample is a fresh process; samples are interleaved so load drifts hit all alike. The
report gives, per configuration:

- overhead per turn (median over all turns), and over turns 1-10 against 91-100;
- bytes written per turn around turn 10, 100 and --long-turns (write() bytes of the process;
  for PostgreSQL, the server's WAL bytes), from a separate instrumented run;
- syncs per turn (fsync/fdatasync counted with strace when it is installed; PostgreSQL syncs
  in the server, so its setting is shown instead);
- then the flatness check: turns 1-10 against the last ten of a --long-turns run.

The closing lines check the targets: the SQLite store's overhead per turn at most LangGraph's,
and the SQL stores flat (last ten turns within 1.5x of the first ten).
"""
from __future__ import annotations

import argparse
import json
import operator
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated, TypedDict

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.fake_endpoint import expand_response  # noqa: E402
from harness.loop import answer_tool_uses, tool_uses_in  # noqa: E402
from harness.scenarios import Scenario  # noqa: E402

TASK = "Leia a ata até o fim."
NOTE = ("# Ata\n\n- Migrar o job noturno para a fila nova até sexta.\n- Congelar features na semana do "
        "lançamento.\n- Ana cuida do contrato; Bruno, do rollback.\n") * 4
FILES = {"atas/ata.md": NOTE}
BASELINE_OF = {"files": "memory", "sqlite": "memory", "postgresql": "memory",
               "langgraph-sqlite": "langgraph-memory", "dbos-sqlite": "dbos-off"}
PEER_INSTALL = 'python3 bootstrap.py python -m pip install -e ".[bench]"  (langgraph, langgraph-checkpoint-sqlite, dbos)'
SYNC_CALLS = ("fsync", "fdatasync", "sync_file_range", "msync")


def bench_responses(turns: int) -> list[dict]:
    responses = [{"content": [{"type": "text", "text": f"Vou reler a ata ({turn + 1})."},
                              {"type": "tool_use", "id": f"toolu_bench{turn:05d}", "name": "read_file",
                               "input": {"path": "atas/ata.md"}}],
                  "stop_reason": "tool_use", "usage": {"input_tokens": 400, "output_tokens": 30}}
                 for turn in range(turns)]
    responses.append({"content": [{"type": "text", "text": "Li tudo."}], "stop_reason": "end_turn",
                      "usage": {"input_tokens": 400, "output_tokens": 5}})
    return responses


# --- measuring inside the child ----------------------------------------------------------------

class TurnClock:
    """Called at the start of every model call: a timestamp per turn, and the bytes written so far."""

    def __init__(self, measure_bytes=False, wal_position=None):
        self.times, self.written = [], []
        self.measure_bytes = measure_bytes
        self.wal_position = wal_position

    def tick(self):
        if self.measure_bytes:
            self.written.append(self.wal_position() if self.wal_position else written_bytes())
        self.times.append(time.perf_counter())


def written_bytes() -> int:
    with open("/proc/self/io", encoding="ascii") as io:
        return int(re.search(r"^wchar: (\d+)", io.read(), re.M).group(1))


class StubMessages:
    """``client.messages.create`` that answers instantly with prebuilt SDK Messages (no HTTP)."""

    def __init__(self, responses, clock):
        from anthropic.types import Message

        self.messages = [Message.model_validate(expand_response(r, i)) for i, r in enumerate(responses)]
        self.clock = clock

    def create(self, *, messages, **_options):
        self.clock.tick()
        return self.messages[sum(1 for m in messages if m["role"] == "assistant")]


class StubClient:
    def __init__(self, responses, clock):
        self.messages = StubMessages(responses, clock)


def run_ours(kind, folder, turns, clock, dsn=None):
    from harness import loop
    from harness.runner import run_durable
    from harness.stores import open_store
    from harness.tools import workspace_in_use

    responses = bench_responses(turns)
    scenario = Scenario("bench", TASK, responses, FILES)
    client = StubClient(responses, clock)
    if kind == "memory":
        with workspace_in_use(scenario.make_workspace(folder / "world")):
            loop.run_agent(client, TASK, max_turns=turns + 1)
        return
    spec = {"files": "files", "sqlite": "sqlite", "postgresql": dsn}[kind]
    store = open_store(spec, folder / "run", run=f"bench-{os.getpid()}")
    state = run_durable(client, folder / "run", scenario, max_turns=turns + 1, store=store)
    assert state["status"] == "completed", state["status"]
    store.close()


class GraphState(TypedDict):
    messages: Annotated[list, operator.add]


def run_langgraph(kind, folder, turns, clock, dsn=None):
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph

    from harness.tools import workspace_in_use

    responses = bench_responses(turns)
    client = StubClient(responses, clock)

    def model(state):
        response = client.messages.create(model="x", max_tokens=1, messages=state["messages"])
        return {"messages": [{"role": "assistant",
                              "content": [block.model_dump(exclude_none=True) for block in response.content]}]}

    def tools(state):
        return {"messages": [{"role": "user", "content": answer_tool_uses(tool_uses_in(state["messages"][-1]["content"]))}]}

    def after_model(state):
        return "tools" if tool_uses_in(state["messages"][-1]["content"]) else END

    builder = StateGraph(GraphState)
    builder.add_node("model", model)
    builder.add_node("tools", tools)
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", after_model)
    builder.add_edge("tools", "model")
    scenario = Scenario("bench", TASK, responses, FILES)
    config = {"configurable": {"thread_id": "bench"}, "recursion_limit": 4 * turns + 10}
    with workspace_in_use(scenario.make_workspace(folder / "world")):
        if kind == "langgraph-memory":
            builder.compile().invoke({"messages": [{"role": "user", "content": TASK}]}, config)
            return
        connection = sqlite3.connect(folder / "langgraph.sqlite", check_same_thread=False)
        graph = builder.compile(checkpointer=SqliteSaver(connection))
        graph.invoke({"messages": [{"role": "user", "content": TASK}]}, config, durability="sync")
        connection.close()


def run_dbos(kind, folder, turns, clock, dsn=None):
    from harness.tools import workspace_in_use

    responses = bench_responses(turns)
    client = StubClient(responses, clock)

    def model_step(messages):
        response = client.messages.create(model="x", max_tokens=1, messages=messages)
        return [block.model_dump(exclude_none=True) for block in response.content]

    def tool_step(content):
        return answer_tool_uses(tool_uses_in(content))

    def agent(task):
        messages = [{"role": "user", "content": task}]
        while True:
            content = model_step(messages)
            messages.append({"role": "assistant", "content": content})
            if not tool_uses_in(content):
                return len(messages)
            messages.append({"role": "user", "content": tool_step(content)})

    scenario = Scenario("bench", TASK, responses, FILES)
    with workspace_in_use(scenario.make_workspace(folder / "world")):
        if kind == "dbos-off":
            agent(TASK)
            return
        from dbos import DBOS

        DBOS(config={"name": "bench-stores", "system_database_url": f"sqlite:///{folder / 'dbos.sqlite'}",
                     "log_level": "ERROR"})
        model_step, tool_step = DBOS.step()(model_step), DBOS.step()(tool_step)
        workflow = DBOS.workflow()(agent)
        DBOS.launch()
        workflow(TASK)
        DBOS.destroy()


RUNNERS = {"memory": run_ours, "files": run_ours, "sqlite": run_ours, "postgresql": run_ours,
           "langgraph-memory": run_langgraph, "langgraph-sqlite": run_langgraph,
           "dbos-off": run_dbos, "dbos-sqlite": run_dbos}


def server_wal_position(dsn):
    """PostgreSQL writes in its own process: count the bytes of WAL the server generated."""
    import psycopg

    watcher = psycopg.connect(dsn, autocommit=True)
    return lambda: int(watcher.execute("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')").fetchone()[0])


def child(name, turns, measure_bytes, dsn):
    """One configuration, one fresh process: prints the per-turn timestamps (and bytes) as JSON."""
    clock = TurnClock(measure_bytes, server_wal_position(dsn) if measure_bytes and name == "postgresql" else None)
    with tempfile.TemporaryDirectory(prefix="bench-stores-") as scratch:
        RUNNERS[name](name, Path(scratch), turns, clock, dsn)
    print(json.dumps({"times": clock.times, "written": clock.written}))


# --- the parent: samples, strace, report -------------------------------------------------------------

def available(name):
    import importlib.util

    module = {"langgraph": "langgraph.checkpoint.sqlite", "dbos": "dbos"}.get(name.split("-")[0])
    try:
        if module and importlib.util.find_spec(module) is None:
            return f"{module} not installed; {PEER_INSTALL}"
    except ModuleNotFoundError:
        return f"{module} not installed; {PEER_INSTALL}"
    return None


def sample(name, turns, measure_bytes=False, dsn=None, prefix=()):
    command = [*prefix, sys.executable, __file__, "--child", name, "--turns", str(turns)]
    if measure_bytes:
        command.append("--measure-bytes")
    if dsn:
        command += ["--dsn", dsn]
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=1800)
    if result.returncode != 0:
        raise RuntimeError(f"{name} failed:\n{result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def durations(times):
    """Turn i lasts from the model call of turn i to the model call of turn i+1."""
    return [later - earlier for earlier, later in zip(times, times[1:])]


def window(values, first, last):
    return statistics.median(values[first - 1:last])


def overheads(samples, baseline_samples):
    """Per-turn overhead: each turn's median over samples, minus the baseline's median for that turn."""
    own = [statistics.median(turn) for turn in zip(*(durations(s["times"]) for s in samples))]
    base = [statistics.median(turn) for turn in zip(*(durations(s["times"]) for s in baseline_samples))]
    return [mine - theirs for mine, theirs in zip(own, base)]


def bytes_per_turn(written, around):
    """Mean bytes written per turn over the ten turns ending at ``around``."""
    return (written[around] - written[around - 10]) / 10


def count_syncs(name, dsn):
    """fsync-family calls per turn, by strace on a 20- and a 40-turn run (setup cancels out)."""
    if shutil.which("strace") is None:
        return "strace missing"
    counts = []
    for turns in (20, 40):
        with tempfile.NamedTemporaryFile(prefix="strace-", suffix=".txt") as out:
            sample(name, turns, dsn=dsn, prefix=["strace", "-f", "-c", "-o", out.name, "-e",
                                                 "trace=" + ",".join(SYNC_CALLS)])
            text = Path(out.name).read_text()
        counts.append(sum(int(match.group(1)) for match in  # one line per call; the "total" line is not one
                          re.finditer(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$", text, re.M)
                          if match.group(2) in SYNC_CALLS))
    return f"{(counts[1] - counts[0]) / 20:.1f}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--long-turns", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--measure-bytes", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--dsn", help="a PostgreSQL to use (default: a throwaway local cluster, if available)")
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.turns, args.measure_bytes, args.dsn)
        return 0

    from harness.stores.local_postgres import LocalPostgres, unavailable_reason

    names = list(RUNNERS)
    skipped = {name: reason for name in names if (reason := available(name))}
    server = None
    if args.dsn is None and "postgresql" in names:
        reason = unavailable_reason()
        if reason:
            skipped["postgresql"] = reason
        else:
            server = LocalPostgres().start()
            args.dsn = server.dsn
    try:
        return report(args, [name for name in names if name not in skipped], skipped)
    finally:
        if server is not None:
            server.stop()


def report(args, names, skipped):
    for name, reason in skipped.items():
        print(f"skipped {name}: {reason}")
    turns, long_turns = args.turns, args.long_turns
    samples = {name: [] for name in names}
    for _ in range(args.repeats):
        for name in names:  # interleaved: every configuration sees the same drift in load
            samples[name].append(sample(name, turns, dsn=args.dsn))

    measured = [name for name in names if name in BASELINE_OF and BASELINE_OF[name] in names]
    rows = {}
    for name in measured:
        over = overheads(samples[name], samples[BASELINE_OF[name]])
        rows[name] = {"overhead": statistics.median(over), "first": window(over, 1, 10),
                      "last": window(over, turns - 9, turns)}
    long_runs = {}
    for name in measured:
        # Bytes: one instrumented run; the long run is skipped for the file store (it rewrites
        # the whole scene each save: ~3 MB per turn at turn 1000).
        length = long_turns if name != "files" else turns
        written = sample(name, length, measure_bytes=True, dsn=args.dsn)["written"]
        rows[name]["bytes"] = {around: bytes_per_turn(written, around) for around in (10, turns, long_turns)
                               if around <= length}
        rows[name]["syncs"] = ("WAL flush per COMMIT (in the server)" if name == "postgresql"
                               else count_syncs(name, args.dsn))
        if name != "files":
            long_runs[name] = (sample(name, long_turns, dsn=args.dsn), sample(BASELINE_OF[name], long_turns,
                                                                              dsn=args.dsn))

    print(f"\n{turns}-turn loop (read_file each turn), {args.repeats} fresh processes each, interleaved")
    print(f"{'':18} {'overhead/turn':>13} {'turns 1-10':>11} {f'turns {turns - 9}-{turns}':>13} "
          f"{'bytes/turn @10':>15} {f'@{turns}':>10} {f'@{long_turns}':>10}  syncs/turn")
    for name, row in rows.items():
        written = row["bytes"]
        cells = [f"{written[around] / 1024:>8.1f} KB" if around in written else f"{'not run':>11}"
                 for around in (10, turns, long_turns)]
        print(f"{name:18} {row['overhead'] * 1e3:>10.2f} ms {row['first'] * 1e3:>8.2f} ms "
              f"{row['last'] * 1e3:>10.2f} ms {cells[0]:>15} {cells[1]:>10} {cells[2]:>10}  {row['syncs']}")

    print(f"\nflatness: overhead per turn, turns 1-10 against {long_turns - 9}-{long_turns} of a {long_turns}-turn run")
    flat = {}
    for name, (own, base) in long_runs.items():
        over = overheads([own], [base])
        first, last = window(over, 1, 10), window(over, long_turns - 9, long_turns)
        flat[name] = last / first if first > 0 else float("inf")
        print(f"{name:18} {first * 1e3:>8.2f} ms -> {last * 1e3:>8.2f} ms  ({flat[name]:.2f}x)")

    print("\ntargets")
    if "sqlite" in rows and "langgraph-sqlite" in rows:
        ours, theirs = rows["sqlite"]["overhead"], rows["langgraph-sqlite"]["overhead"]
        print(f"  SQLite store overhead per turn <= LangGraph SqliteSaver (sync): {ours * 1e3:.2f} ms vs "
              f"{theirs * 1e3:.2f} ms -> {'met' if ours <= theirs else 'NOT met'}")
    for name in ("sqlite", "postgresql"):
        if name in flat:
            print(f"  {name} turns {long_turns - 9}-{long_turns} within 1.5x of turns 1-10: {flat[name]:.2f}x -> "
                  f"{'met' if flat[name] <= 1.5 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
