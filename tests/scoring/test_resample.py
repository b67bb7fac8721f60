"""Seeded bootstrap and split-half resampling."""

from __future__ import annotations

import numpy as np
import pytest

from lmms_eval_unify.scoring.resample import (
    bootstrap,
    bootstrap_weights,
    percentile_interval,
    rank_agreement,
    score,
    split_half_weights,
    split_halves,
)


def acc_row(means, sizes):
    return {"acc": means["t"]["acc"]}


def test_bootstrap_weights_are_seeded_counts_that_sum_to_n():
    w = bootstrap_weights(0, "unit", 50, 200)
    assert w.shape == (200, 50) and np.all(w.sum(axis=1) == 50)
    np.testing.assert_array_equal(w, bootstrap_weights.__wrapped__(0, "unit", 50, 200))
    assert not np.array_equal(w, bootstrap_weights.__wrapped__(1, "unit", 50, 200))
    assert not np.array_equal(w, bootstrap_weights.__wrapped__(0, "other", 50, 200))


def test_split_halves_are_disjoint_and_cover_all_samples():
    a, b = split_half_weights(0, "unit", 11)
    assert a.sum() == 5 and b.sum() == 6
    np.testing.assert_array_equal(a + b, np.ones((1, 11)))


def test_bootstrap_interval_matches_the_binomial_standard_error():
    rng = np.random.default_rng(0)
    units = {"t": {"acc": 100.0 * (rng.random(400) < 0.5)}}
    point = score(units, acc_row)["acc"]
    low, high = percentile_interval(bootstrap(units, acc_row, 2000, seed=0)["acc"])
    half_width = 1.96 * 100 * np.sqrt(0.25 / 400)
    assert low < point < high
    assert (high - low) / 2 == pytest.approx(half_width, rel=0.15)


def test_split_halves_score_each_half():
    units = {"t": {"acc": np.array([100.0] * 10 + [0.0] * 10)}}
    a, b = split_halves(units, acc_row, seed=3)
    weights_a, _ = split_half_weights(3, "t", 20)
    assert a["acc"] == pytest.approx(100.0 * weights_a[0, :10].sum() / 10)
    assert a["acc"] + b["acc"] == pytest.approx(100.0)


def test_rank_agreement():
    assert rank_agreement([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx((1.0, 1.0))
    assert rank_agreement([1, 2, 3], [3, 2, 1]) == pytest.approx((-1.0, -1.0))
    assert all(np.isnan(rank_agreement([1.0], [2.0])))


def test_interval_without_replicates():
    assert percentile_interval(None) is None
    assert percentile_interval(np.array([np.nan, np.nan])) is None
