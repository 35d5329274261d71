"""Exact k-NN: equality with a float64 brute-force reference built from difference vectors
(scipy's cdist, no Gram identity), for every metric and search precision, including rows that
need the fallback; the rounding-error bounds the exactness proofs rely on; and the torch-free
search (the CPU default) against the torch bf16 search, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist

from scalelab.errors import InputError
from scalelab.intrinsic.neighbors import SearchStats, knn
from scalelab.intrinsic.neighbors_bf16 import _ApproxSearch
from scalelab.intrinsic.neighbors_numpy import GramSearch, centred
from scalelab.intrinsic.synthetic import curved_manifold, known_manifold


def brute_force(x: np.ndarray, k: int, metric: str = "euclidean") -> tuple[np.ndarray, np.ndarray]:
    """Reference: float64 distances from differences, self excluded, stable order."""
    x64 = x.astype(np.float64)
    if metric == "euclidean":
        dist = cdist(x64, x64, "euclidean")
    else:
        u = x64 / np.linalg.norm(x64, axis=1, keepdims=True)
        chord = cdist(u, u, "euclidean")
        dist = chord**2 / 2 if metric == "cosine" else 2 * np.arcsin(np.minimum(chord / 2, 1))
    np.fill_diagonal(dist, np.inf)
    idx = np.argsort(dist, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(dist, idx, axis=1), idx


@pytest.mark.parametrize("precision", ["auto", "bf16", "fp32", "fp64"])
def test_matches_float64_reference_on_curved_manifold(precision: str) -> None:
    x = curved_manifold(1500, 12, 256, seed=3)
    stats = SearchStats()
    dist, idx = knn(x, 20, precision=precision, stats=stats, block_rows=512)
    ref_d, ref_i = brute_force(x, 20)
    assert dist.dtype == np.float64 and idx.dtype == np.int64
    np.testing.assert_allclose(dist, ref_d, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(idx, ref_i)
    assert stats.n_rows == 1500 and stats.n_fallback < 1500


def test_low_dimension_forces_fallback_and_stays_exact() -> None:
    # Neighbours of a 2-sphere are far closer than the data radius: bf16 proves few rows.
    x = known_manifold("sphere", 1200, 2, 64, seed=0)
    stats = SearchStats()
    dist, idx = knn(x, 10, precision="bf16", stats=stats, block_rows=256)
    ref_d, ref_i = brute_force(x, 10)
    assert stats.n_fallback > 0
    np.testing.assert_allclose(dist, ref_d, rtol=1e-12)
    np.testing.assert_array_equal(idx, ref_i)


def test_torch_free_fallback_stays_exact() -> None:
    # With C = k candidates the proof cannot hold (the k-th candidate bounds itself), so every
    # row goes through the fallback; duplicates add exact ties at distance 0.
    base = known_manifold("sphere", 700, 2, 64, seed=1)
    x = np.concatenate([base, base[:40]])
    stats = SearchStats()
    dist, idx = knn(x, 10, n_candidates=10, stats=stats)
    ref_d, ref_i = brute_force(x, 10)
    assert stats.n_fallback > 700 and stats.precision == "fp32"
    np.testing.assert_allclose(dist, ref_d, rtol=1e-12)
    np.testing.assert_array_equal(idx, ref_i)


@pytest.mark.parametrize(
    "x",
    [
        curved_manifold(2100, 16, 256, seed=11),  # several blocks of rows, float32
        known_manifold("torus", 900, 3, 96, seed=2, dtype=np.float64),
    ],
    ids=["curved-float32", "torus-float64"],
)
def test_torch_free_and_bf16_searches_agree_bit_for_bit(x: np.ndarray) -> None:
    """The CPU default (numpy float32, no torch) and the torch bf16 search return the same
    neighbours and identical distances: both re-rank with the same compiled kernel."""
    d_np, i_np = knn(x, 20)
    d_bf, i_bf = knn(x, 20, precision="bf16", block_rows=512)
    np.testing.assert_array_equal(i_np, i_bf)
    np.testing.assert_array_equal(d_np, d_bf)


@pytest.mark.parametrize("metric", ["cosine", "angular"])
def test_cosine_and_angular(metric: str) -> None:
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((600, 40)) + 0.5).astype(np.float32)
    dist, idx = knn(x, 7, metric)
    ref_d, ref_i = brute_force(x, 7, metric)
    np.testing.assert_allclose(dist, ref_d, rtol=1e-10)
    np.testing.assert_array_equal(idx, ref_i)
    if metric == "cosine":  # sklearn's definition, computed independently
        from sklearn.metrics.pairwise import cosine_distances

        full = cosine_distances(x.astype(np.float64))
        np.testing.assert_allclose(dist, full[np.arange(600)[:, None], idx], atol=1e-12)


def test_far_from_origin_data_is_exact() -> None:
    # An offset of 1e4 with unit spread: the Gram identity without centring loses everything.
    rng = np.random.default_rng(2)
    x = (1e4 + rng.standard_normal((500, 30))).astype(np.float64)
    dist, idx = knn(x, 5)
    ref_d, ref_i = brute_force(x, 5)
    np.testing.assert_allclose(dist, ref_d, rtol=1e-12)
    np.testing.assert_array_equal(idx, ref_i)


@pytest.mark.parametrize("scale", [1e20, 1e-20])
def test_values_outside_float32s_range_search_in_float64(scale: float) -> None:
    # float32 products would overflow (1e20^2 * 8) or underflow (1e-20^2): the torch-free
    # search switches its products to float64 and stays exact.
    x = np.random.default_rng(5).standard_normal((300, 8)) * scale
    stats = SearchStats()
    dist, idx = knn(x, 5, stats=stats)
    ref_d, ref_i = brute_force(x, 5)
    assert stats.precision == "fp64"
    np.testing.assert_allclose(dist, ref_d, rtol=1e-12)
    np.testing.assert_array_equal(idx, ref_i)


def test_duplicates_give_zero_distances_and_exact_ties() -> None:
    rng = np.random.default_rng(4)
    base = rng.standard_normal((200, 16)).astype(np.float32)
    x = np.concatenate([base, base[:50], base[:50]])
    dist, _ = knn(x, 4)
    ref_d, _ = brute_force(x, 4)
    np.testing.assert_allclose(dist, ref_d, rtol=1e-12)
    assert (dist[:50, :2] == 0).all() and (dist[50:200, 0] > 0).all()


@pytest.mark.parametrize("precision", ["bf16", "fp32"])
def test_error_bound_holds(precision: str) -> None:
    """The proof needs |a~ - a| <= e: check the bound on every pair of real data."""
    xc = centred(curved_manifold(800, 10, 384, seed=5))
    search = _ApproxSearch(xc, precision)
    rows = np.arange(800)
    approx = search.approx(rows).to(torch.float64).numpy()
    xc64 = xc.astype(np.float64)
    exact = search.sqn[None, :] - 2 * xc64 @ xc64.T
    off = ~np.eye(800, dtype=bool)
    err = np.abs(approx - exact)[off].reshape(800, 799).max(axis=1)
    bound = search.error(rows)
    assert (err <= bound).all()
    assert (err / bound).max() > 1e-3  # the bound is not vacuous either
    assert np.isinf(np.diag(approx)).all()


@pytest.mark.parametrize(
    ("dtype", "offset"), [(np.float32, 0.0), (np.float64, 0.0), (np.float32, 30.0)]
)
def test_torch_free_error_bound_holds(dtype: type, offset: float) -> None:
    """The torch-free proof needs |a~_ij + s_i - d_ij^2| <= e_i against the distances of the
    original points (centring and cast included): check it on every pair."""
    x = (curved_manifold(700, 10, 384, seed=6) + offset).astype(dtype)
    search = GramSearch(x)
    rows = np.arange(700)
    approx = search.approx(rows) + search.sqn[:, None]
    exact = cdist(x.astype(np.float64), x.astype(np.float64), "sqeuclidean")
    off = ~np.eye(700, dtype=bool)
    err = np.abs(approx - exact)[off].reshape(700, 699).max(axis=1)
    bound = search.error(rows)
    assert search.precision == "fp32"
    assert (err <= bound).all()
    assert (err / bound).max() > 1e-4  # the bound is not vacuous either


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(5, 80),
    dim=st.integers(1, 12),
    k=st.integers(1, 4),
    scale=st.sampled_from([1e-3, 1.0, 1e3]),
    seed=st.integers(0, 10_000),
    precision=st.sampled_from(["auto", "bf16", "fp32", "fp64"]),
)
def test_random_small_clouds(
    n: int, dim: int, k: int, scale: float, seed: int, precision: str
) -> None:
    rng = np.random.default_rng(seed)
    x = (scale * rng.standard_normal((n, dim))).astype(np.float32)
    dist, _ = knn(x, k, precision=precision, block_rows=16)
    ref_d, _ = brute_force(x, k)
    np.testing.assert_allclose(dist, ref_d, rtol=1e-12)


@pytest.mark.parametrize(
    ("x", "k", "kwargs", "message"),
    [
        (np.zeros(10), 2, {}, "2-D"),
        (np.zeros((0, 3)), 2, {}, "empty"),
        (np.array([[0.0, 1.0], [np.nan, 1.0], [2.0, 2.0]]), 1, {}, "NaN or inf"),
        (np.ones((3, 2)), 3, {}, r"at least k \+ 1"),
        (np.ones((3, 2)), 0, {}, "k >= 1"),
        (np.ones((3, 2)), 1, {"metric": "manhattan"}, "unknown metric"),
        (np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]), 1, {"metric": "cosine"}, "all-zero"),
        (np.ones((3, 2)), 1, {"precision": "fp16"}, "unknown precision"),
        (np.array([["a", "b"], ["c", "d"]]), 1, {}, "not numeric"),
        ([[1.0, 2.0], [3.0]], 1, {}, "rectangular"),
    ],
)
def test_bad_inputs(x: object, k: int, kwargs: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        knn(x, k, **kwargs)


def test_torch_and_integer_inputs() -> None:
    x = curved_manifold(300, 4, 16, seed=8)
    ref_d, ref_i = knn(x, 5)
    d_t, i_t = knn(torch.from_numpy(x), 5)
    np.testing.assert_array_equal(d_t, ref_d)
    np.testing.assert_array_equal(i_t, ref_i)
    grid = np.arange(40).reshape(20, 2) ** 2  # int64, distinct points
    d_int, _ = knn(grid, 1)
    np.testing.assert_allclose(d_int, brute_force(grid.astype(float), 1)[0], rtol=1e-15)
