"""Level 3's gateway from a fixture: ``harness.sms.SmsGateway`` built from a fixture's
``gateway`` field, for the checks (``gateway_of``) and for the exercise notebook
(``fixture_gateway``). The class itself lives in the harness, imported when called: the
grading kernel imports the grader afresh, and only the harness's class is the one the
student's ``except SmsLookupError`` names."""
from __future__ import annotations


def gateway_of(data: dict):
    """The gateway a fixture describes, fresh."""
    from harness.sms import SmsGateway

    gateway = data.get("gateway") or {}
    return SmsGateway(gateway.get("messages") or [], gateway.get("lookup", "up"))


def fixture_gateway(name: str):
    """Um gateway novo, como o da fixture ``name`` do exercise-3."""
    from grader.core.fixture_loader import read_fixture_files

    for item in read_fixture_files("exercise-3"):
        if item.name == name:
            if item.problems or item.data is None:
                raise ValueError("; ".join(item.problems))
            return gateway_of(item.data)
    raise KeyError(f"não existe a fixture {name!r} do exercise-3")
