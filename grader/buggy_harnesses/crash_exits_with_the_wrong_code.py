"""Defect: a crash leaves the process with exit code 1 instead of 137. Everything on disk is
what a real kill leaves, and a resume finishes the run; only the exit code lies, so a
supervisor that restarts killed runs (137) gives up on this one, and only a verification
that reads the crash's exit code catches it."""
from __future__ import annotations

NAME = "crash-exits-with-the-wrong-code"
COMPLETES = True
DESCRIPTION = (
    "Uma queda sai com o código 1, o de um erro qualquer do Python, em vez de 137: o que fica em disco é o de "
    "uma morte de verdade, mas um supervisor que retoma as execuções derrubadas (137) desiste desta."
)
SYMPTOM = (
    "Derrube a execução (crash_after=...) e confira o código que harness.run devolve: uma queda é 137, "
    "sempre. Só então retome."
)


def patches() -> dict:
    from dataclasses import replace

    from harness import exit_codes
    from harness.crash import SimulatedCrash

    # The row of the exit-code table that turns a simulated crash into 137, with 1 instead.
    table = tuple(replace(row, running=replace(row.running, code=1)) if SimulatedCrash in row.errors else row
                  for row in exit_codes.FAILURES)
    return {"harness.exit_codes:FAILURES": table}
