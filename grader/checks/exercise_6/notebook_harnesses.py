"""What the exercise notebook imports to try ``verify_resume``: the reference harness and the seeded defective ones."""
from __future__ import annotations


def reference_harness():
    """The course's harness as shipped, for ``verify_resume`` to approve."""
    from grader.buggy_harnesses import REFERENCE, make_harness

    return make_harness(REFERENCE)


def buggy_harness(name: str):
    """A harness with one seeded defect (see ``defect_names()``), for ``verify_resume`` to reject."""
    from grader.buggy_harnesses import make_harness

    return make_harness(name)


def defect_names() -> list[str]:
    from grader.buggy_harnesses import defects

    return list(defects())
