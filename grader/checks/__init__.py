"""Exercise checks: one ``exercise_N`` package per exercise (see README.md)."""
