"""The random baseline's analytic chance level and its seed-to-seed band on a generated set."""

import pytest

from lmms_eval_unify.puzzles import DOMAINS
from lmms_eval_unify.puzzles.dataset import (
    random_baseline_band,
    random_baseline_expectation,
    write_puzzles,
)
from lmms_eval_unify.puzzles.scoring import METRICS


@pytest.fixture(scope="module")
def puzzle_sets(tmp_path_factory):
    root = tmp_path_factory.mktemp("puzzles")
    write_puzzles(root / "small", 8, 8, seed=1)
    write_puzzles(root / "large", 64, 64, seed=1)
    return root


@pytest.mark.heavy  # simulated runs
@pytest.mark.parametrize("domain", ["maze", "sliding"])
def test_band_holds_the_analytic_expectation_and_narrows_with_more_items(puzzle_sets, domain):
    bands = {}
    for size in ("small", "large"):
        parquet = puzzle_sets / size / domain / "test.parquet"
        expected = random_baseline_expectation(DOMAINS[domain], parquet)
        bands[size] = random_baseline_band(DOMAINS[domain], parquet, seeds=400)
        for metric in METRICS:
            low, high = bands[size][metric]
            assert low <= expected[metric] <= high, (size, metric, low, expected[metric], high)
    for metric in ("text_step_acc", "img_step_acc"):
        small, large = (bands[s][metric][1] - bands[s][metric][0] for s in ("small", "large"))
        assert 0 < large < small, metric


@pytest.mark.heavy  # simulated runs
@pytest.mark.parametrize("domain", ["maze", "sliding"])
def test_simulated_runs_average_to_the_analytic_expectation(puzzle_sets, domain):
    """The band's Monte Carlo and the exact state propagation are two independent computations: the median
    of many simulated runs must sit next to the analytic mean (step metrics are near-symmetric)."""
    parquet = puzzle_sets / "large" / domain / "test.parquet"
    expected = random_baseline_expectation(DOMAINS[domain], parquet)
    (low, high) = random_baseline_band(DOMAINS[domain], parquet, seeds=400, level=0.0)["text_step_acc"]
    assert low == high
    assert abs(low - expected["text_step_acc"]) < 0.02
