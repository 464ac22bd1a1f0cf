"""The fake endpoint's request log survives a writer killed in the middle of a line."""
from __future__ import annotations

import json
import os
import signal
import time

from harness.display.crash_lab import count_requests, orphan_requests
from harness.request_log import append_request, read_requests

ORPHAN = [{"role": "user", "content": "oi"},
          {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "send_email", "input": {}}]},
          {"role": "user", "content": "e então?"}]


def torn_line(body: dict) -> str:
    whole = json.dumps({"pid": 1, "body": body})
    return whole[: len(whole) // 2]  # what a SIGKILL in the middle of the write leaves


def test_a_line_cut_by_a_kill_does_not_swallow_the_next_request(tmp_path):
    log = tmp_path / "requests.jsonl"
    append_request(log, {"messages": [{"role": "user", "content": "primeiro"}]})
    with open(log, "a", encoding="utf-8") as file:
        file.write(torn_line({"messages": [{"role": "user", "content": "cortado"}]}))
    append_request(log, {"messages": ORPHAN})

    requests = read_requests(log)
    assert [request["body"]["messages"][-1]["content"] for request in requests] == ["primeiro", "e então?"]
    assert requests[1]["pid"] == os.getpid()
    assert count_requests(log) == 2
    [problem] = orphan_requests(log)  # the request written after the cut line is still checked
    assert problem.startswith("pedido 2:") and "toolu_1" in problem


def test_a_writer_killed_mid_write_leaves_every_other_line_whole(tmp_path):
    """A real SIGKILL against a child appending large records, then a survivor appends."""
    log = tmp_path / "requests.jsonl"
    big = {"messages": [{"role": "user", "content": "x" * 100_000}]}  # crosses pages: a kill can cut it
    for _ in range(5):
        pid = os.fork()
        if pid == 0:
            try:
                while True:
                    append_request(log, big)
            finally:
                os._exit(0)
        time.sleep(0.02)  # let the child be in the middle of its writes
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        append_request(log, {"messages": [{"role": "user", "content": "depois"}]})
    lines = [line for line in log.read_text(encoding="utf-8").splitlines() if line]
    survivors = [request for request in read_requests(log) if request["body"]["messages"][0]["content"] == "depois"]
    assert len(survivors) == 5
    assert len(read_requests(log)) >= len(lines) - 5  # at most one cut line per kill


def test_a_missing_or_empty_log_has_no_requests(tmp_path):
    assert read_requests(tmp_path / "absent.jsonl") == []
    (tmp_path / "empty.jsonl").write_text("\n\n")
    assert read_requests(tmp_path / "empty.jsonl") == [] and orphan_requests(tmp_path / "empty.jsonl") == []
