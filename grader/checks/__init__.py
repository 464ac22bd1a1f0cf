"""Exercise checks: one ``exercise_N.py`` module per exercise (see README.md)."""
