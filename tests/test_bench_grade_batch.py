"""bench/grade_batch.py's scaling lines: the ratio is the median of the per-round ratios (each pair
ran minutes apart on a noisy machine), and the verdict follows the target."""
from __future__ import annotations

from bench import grade_batch


def timings(j1: list[float], j2: list[float], sandbox: list[float]) -> dict:
    def figures(rounds: list[float]) -> dict:
        return {"wall": sum(rounds), "cpu": sum(rounds) * 0.9, "graded": 100 * len(rounds), "rounds": rounds}

    return {grade_batch.J1: figures(j1), grade_batch.J2: figures(j2), grade_batch.SANDBOX: figures(sandbox)}


def test_the_scaling_ratio_is_the_median_of_the_rounds_not_the_ratio_of_the_sums():
    # sums give 300 / 170 = 1.76x; the rounds' ratios are 2.0, 2.0 and 1.43: median 2.0
    text = grade_batch.format_scaling(timings([100, 100, 100], [50, 50, 70], [110, 110, 110]), 100)
    assert "3 rodada(s)" in text
    assert "(mediana das rodadas): 2.00x (meta: >= 1.9x, atingida)" in text
    assert "--sandbox / sem sandbox em 100 submissões: 1.10 (meta: <= 1.15, atingida)" in text


def test_a_short_ratio_is_reported_as_missed():
    text = grade_batch.format_scaling(timings([100], [60], [120]), 100)
    assert "1.67x (meta: >= 1.9x, NÃO atingida)" in text and "1.20 (meta: <= 1.15, NÃO atingida)" in text
