"""Checks for exercise-1: memory versus run state, the agent loop with a token budget, and the
loop carried to another agent.

Level 1 grades the structured answer ``CLASSIFICATION`` (item -> "memória" or
"estado de execução") against every ``classification`` fixture. Level 2 runs the
student's ``run_agent(client, task, max_turns=..., token_budget=...)`` on every ``run``
fixture: the real ``anthropic`` client over the offline endpoint, instrumented tools, and then
the requests the endpoint received and the state returned are compared with the script; the
budget is always passed (a fixture's ``token_budget``, else one no run reaches) and must be
kept in the state. Level 3 runs ``run_agent_with_tools(client, task, tools, schemas, ...)`` on
every ``tools_run`` fixture, with the fixture's tools as recording Python functions.

Fixture shapes (``grader/fixtures/exercise-1/*.json``)::

    {"description": "...", "kind": "classification",
     "items": {"<key>": {"answer": "memória" | "estado de execução", "why": "..."}}}

    {"description": "...", "kind": "run", "task": "...",
     "workspace": {"files": {...}},            # optional
     "responses": [<compact scripted responses>],
     "max_turns": 5,                           # optional; absent = the student's default
     "token_budget": 1000,                     # optional; absent = a budget never reached
     "expect": {"model_calls": 3, "tokens_used": 1952, "status": "completed"}}

    {"description": "...", "kind": "tools_run", "task": "...",
     "tools": {"<name>": {"description": "...", "input_schema": {...},
                          "answers": [{"input": {...}, "returns": "..."} | {"input": {...}, "raises": "..."}]}},
     "responses": [...], "max_turns": 4, "expect": {...}}  # a tool_use naming no tool: one the agent lacks

``expect`` is checked against the script when the fixture loads, so an instructor's
arithmetic slip is reported as a fixture problem, not as a student mistake. The
script may use every stop_reason; the loop must follow the stop-reason rule of
``harness.loop.STOP_REASON_ACTIONS``: tool_use runs the tools, pause_turn calls again,
end_turn/stop_sequence complete, refusal ends as refused and a cut answer (max_tokens,
model_context_window_exceeded) as failed,
and a refused or cut answer neither runs nor enters the conversation. The budget stops the
loop like the turn ceiling: no call once tokens_used has reached it, status still running.
"""
from __future__ import annotations

# importing each level declares its checks on EXERCISE, in level order
from grader.checks.exercise_1 import level_1, level_2, level_3  # noqa: F401
from grader.checks.exercise_1.fixtures import EXERCISE, validate_fixture

__all__ = ["EXERCISE", "validate_fixture"]
