"""The batch protocol: batches, mean and standard error, duplicates, non-finite batches."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scalelab.errors import ConfigError, EstimationError
from scalelab.intrinsic.mle import MLE, TwoNN
from scalelab.intrinsic.protocol import (
    BatchedEstimate,
    batch_indices,
    estimate_in_batches,
    make_estimator,
)
from scalelab.intrinsic.synthetic import curved_manifold


def test_every_batch_holds_exactly_batch_size_and_the_remainder_is_left_out() -> None:
    batches = batch_indices(10_000, 3000, seed=5)
    assert [len(b) for b in batches] == [3000, 3000, 3000]
    used = np.concatenate(batches)
    assert len(np.unique(used)) == 9000 and used.min() >= 0 and used.max() < 10_000
    again = batch_indices(10_000, 3000, 5)
    assert all(np.array_equal(a, b) for a, b in zip(batches, again, strict=True))
    assert not np.array_equal(batches[0], batch_indices(10_000, 3000, 6)[0])
    # 10,240 points at the paper's 4,096: two batches of 4,096 (not two of 5,120)
    assert [len(b) for b in batch_indices(10_240, 4096, 0)] == [4096, 4096]


def test_fewer_points_than_one_batch_are_refused() -> None:
    with pytest.raises(EstimationError, match=r"fewer than one batch of 4,096.*at most 500"):
        batch_indices(500, 4096, 0)
    with pytest.raises(EstimationError, match="fewer than one batch"):
        estimate_in_batches(curved_manifold(400, 3, 16, seed=1), TwoNN(), batch_size=4096)


def test_points_used_and_left_out_are_reported() -> None:
    x = curved_manifold(2500, 3, 16, seed=2)
    result = estimate_in_batches(np.concatenate([x, x[:10]]), MLE(k=10), batch_size=1000)
    d = result.to_dict()
    assert d["n_points"] == 2510 and d["n_duplicates_removed"] == 10
    assert d["n_batches"] == 2 and d["n_points_used"] == 2000 and d["n_points_left_out"] == 500
    direct = [MLE(k=10).fit_transform(x[b]) for b in batch_indices(2500, 1000, 0)]
    assert result.batch_dimensions == pytest.approx(direct, rel=1e-12)


def test_mean_se_and_values_equal_a_direct_computation() -> None:
    x = curved_manifold(3000, 6, 64, seed=1)
    result = estimate_in_batches(x, MLE(k=10), batch_size=1000, seed=3)
    direct = [MLE(k=10).fit_transform(x[b]) for b in batch_indices(3000, 1000, 3)]
    assert result.batch_dimensions == pytest.approx(direct, rel=1e-12)
    assert result.dimension == pytest.approx(np.mean(direct), rel=1e-12)
    assert result.dimension_se == pytest.approx(np.std(direct, ddof=1) / math.sqrt(3), rel=1e-9)
    d = result.to_dict()
    assert d["n_batches"] == 3 and d["estimator"] == "mle" and d["k"] == 10
    assert d["metric"] == "euclidean" and d["batch_size"] == 1000 and d["n_points"] == 3000


def test_single_batch_has_no_standard_error() -> None:
    x = curved_manifold(400, 3, 16, seed=1)
    result = estimate_in_batches(x, TwoNN(), batch_size=400)
    assert math.isnan(result.dimension_se) and result.to_dict()["dimension_se"] is None
    assert result.k == 2 and result.estimator == "twonn"


def test_duplicates_removed_once_before_batching_and_reported() -> None:
    x = curved_manifold(2000, 4, 32, seed=4)
    with_dups = np.concatenate([x, x[:300]])
    result = estimate_in_batches(with_dups, MLE(k=10), batch_size=1000)
    assert result.n_duplicates_removed == 300 and result.n_points == 2300
    clean = estimate_in_batches(x, MLE(k=10), batch_size=1000)
    assert result.dimension == clean.dimension


class _Broken:
    """An estimator whose second batch is not finite."""

    k = 5
    calls = 0

    def fit(self, x: np.ndarray) -> _Broken:
        self.calls += 1
        self.dimension_ = 3.0 if self.calls == 1 else math.inf
        return self


def test_non_finite_batch_is_an_error() -> None:
    x = curved_manifold(400, 3, 16, seed=1)
    with pytest.raises(EstimationError, match="batch 1"):
        estimate_in_batches(x, _Broken(), batch_size=200)


def test_batch_size_must_exceed_k() -> None:
    with pytest.raises(ConfigError, match="batch size"):
        estimate_in_batches(np.eye(50), MLE(k=20), batch_size=20)


def test_make_estimator() -> None:
    assert isinstance(make_estimator("mle", k=7), MLE) and make_estimator("mle", k=7).k == 7
    assert make_estimator("mle", aggregate="harmonic").aggregate == "harmonic"
    assert make_estimator("mle-calibrated").name == "mle-calibrated"
    with pytest.raises(ConfigError, match="2 neighbours"):
        make_estimator("twonn", k=5)
    with pytest.raises(ConfigError, match="unknown estimator"):
        make_estimator("danco")


def test_result_is_frozen() -> None:
    result = estimate_in_batches(curved_manifold(300, 3, 16, seed=1), MLE(k=5), batch_size=100)
    assert isinstance(result, BatchedEstimate)
    with pytest.raises(AttributeError):
        result.dimension = 1.0  # type: ignore[misc]
