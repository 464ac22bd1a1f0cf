"""The harness as the course ships it, for the checks to judge by.

The checks run in the student's kernel, where a cell may have patched a harness module
(``harness.fake_endpoint.validate_messages = lambda m: None``, an entry of
``STOP_REASON_ACTIONS`` changed). Whatever the checks judge by comes from here: the
offline endpoint and its validation, the stop-reason rule, the tool sets, the model
settings, the initial state and the atomic write the checks save with. In the grading
kernel, the grading cell imports this module while every ``harness`` module is out of
``sys.modules``, so it holds private copies loaded from disk that no cell has touched,
and then puts the student's harness back for their code and for the tool spies.
Outside a kernel (tests, fixture validation) these are simply the harness's own.
"""
from __future__ import annotations

from harness import checkpoint as _checkpoint
from harness import fake_endpoint as _fake_endpoint
from harness import loop as _loop
from harness import model as _model
from harness import tools as _tools

make_stub_client = _fake_endpoint.make_stub_client
validate_messages = _fake_endpoint.validate_messages
STOP_REASON_ACTIONS = _loop.STOP_REASON_ACTIONS
new_run_state = _loop.new_run_state
HIGH_IMPACT_TOOLS = _tools.HIGH_IMPACT_TOOLS
READ_ONLY_TOOLS = _tools.READ_ONLY_TOOLS
TOOL_SCHEMAS = _tools.TOOL_SCHEMAS
MODEL, MAX_TOKENS = _model.MODEL, _model.MAX_TOKENS
write_json_atomic = _checkpoint.write_json_atomic
