"""The device k-NN path (torch ops, float64), run here on CPU through the same code a CUDA
device runs: equal to a float64 brute force and to the CPU search, in blocks, for every
metric; the MLE on it equals the MLE on the CPU search; bad devices are refused."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.spatial.distance import cdist

from scalelab.errors import InputError
from scalelab.intrinsic.mle import MLE
from scalelab.intrinsic.neighbors import knn


def brute(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    d = cdist(x.astype(np.float64), x.astype(np.float64))
    np.fill_diagonal(d, np.inf)
    idx = np.argsort(d, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(d, idx, axis=1), idx


@pytest.mark.parametrize("block_rows", [None, 37])
def test_device_path_equals_brute_force_and_cpu_search(block_rows: int | None) -> None:
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((600, 5)) @ rng.standard_normal((5, 40))).astype(np.float32)
    want_d, want_i = brute(x, 20)
    got_d, got_i = knn(x, 20, device="cpu", block_rows=block_rows)
    cpu_d, cpu_i = knn(x, 20)
    np.testing.assert_allclose(got_d, want_d, rtol=1e-12)
    np.testing.assert_array_equal(got_i, want_i)
    np.testing.assert_allclose(got_d, cpu_d, rtol=1e-12)
    np.testing.assert_array_equal(got_i, cpu_i)


@pytest.mark.parametrize("metric", ["cosine", "angular"])
def test_device_path_other_metrics(metric: str) -> None:
    x = np.random.default_rng(1).standard_normal((300, 16))
    got_d, got_i = knn(x, 10, metric, device="cpu")
    cpu_d, cpu_i = knn(x, 10, metric)
    np.testing.assert_allclose(got_d, cpu_d, rtol=1e-10)
    np.testing.assert_array_equal(got_i, cpu_i)


def test_ties_are_broken_by_index_like_the_cpu_search() -> None:
    x = np.repeat(np.random.default_rng(2).standard_normal((50, 3)), 3, axis=0)  # triplicates
    got_d, got_i = knn(x, 4, device="cpu")
    cpu_d, cpu_i = knn(x, 4)
    np.testing.assert_array_equal(got_d[:, :2], 0.0)
    np.testing.assert_allclose(got_d, cpu_d, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(got_i, cpu_i)


def test_mle_on_the_device_path_equals_the_cpu_mle() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2000, 6)) @ rng.standard_normal((6, 64))
    cpu = MLE(k=20).fit(x)
    dev = MLE(k=20, device="cpu").fit(x)
    tensor = MLE(k=20).fit(torch.from_numpy(x))  # a CPU tensor stays on the CPU search
    assert dev.dimension_ == pytest.approx(cpu.dimension_, rel=1e-12)
    np.testing.assert_allclose(dev.dimension_pw_, cpu.dimension_pw_, rtol=1e-10)
    assert tensor.dimension_ == cpu.dimension_
    assert 5.0 < cpu.dimension_ < 7.0  # a 6-dimensional Gaussian in R^64


def test_bad_devices_are_refused() -> None:
    x = np.random.default_rng(4).standard_normal((30, 3))
    with pytest.raises(InputError, match="unknown device"):
        knn(x, 3, device="tpu-7")
    if not torch.cuda.is_available():
        with pytest.raises(InputError, match="CUDA is not available"):
            MLE(k=5, device="cuda").fit(x)
