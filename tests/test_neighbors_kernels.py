"""The candidate-keeping kernels against numpy: after one block, every point's heap holds
exactly the C smallest approximate values, whether it was filled push by push or at once
from an empty heap (`_fill_empty`), with ties, with many equal values, and with float64
products (where the fill steps aside)."""

from __future__ import annotations

import numpy as np
import pytest

from scalelab.intrinsic.neighbors_kernels import keep_smallest, keep_smallest_columns

C = 24


def _block(seed: int, rows: int, cols: int, n: int, ties: bool, dtype: type = np.float32):
    """Products `g` of `rows` x `cols` points, squared norms of all n points, float32 norms
    and the float32 check's margin (inf for float64 products, as `candidates` passes)."""
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((rows, cols))
    sqn = 4.0 + rng.random(n)
    if ties:  # few distinct values: many equal a at the C-th place
        g, sqn = np.round(g * 2) / 2, np.full_like(sqn, 4.0)
    g = g.astype(dtype)
    margin = 16 * 2.0**-24 * float(sqn.max()) if dtype == np.float32 else np.inf
    sqn32 = sqn.astype(np.float32) if dtype == np.float32 else np.zeros(len(sqn), np.float32)
    return g, sqn, sqn32, margin


def _check(vals: np.ndarray, idx: np.ndarray, a: np.ndarray) -> None:
    """Heaps hold the C smallest of each row of `a` (as values; equal values may swap)."""
    np.testing.assert_array_equal(np.sort(vals, axis=1), np.sort(a, axis=1)[:, :C])
    np.testing.assert_array_equal(np.take_along_axis(a, idx, axis=1), vals)
    assert all(len(set(row)) == C for row in idx)
    assert (vals[:, :1] >= vals).all()  # a max-heap's root is its largest value


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed", [0, 1])
def test_rows_kernel_keeps_the_c_smallest_from_an_empty_heap(seed, dtype, ties):
    g, sqn, sqn32, margin = _block(seed, 256, 1024, 1024, ties, dtype)
    vals, idx = np.full((1024, C), np.inf), np.full((1024, C), -1, dtype=np.int64)
    keep_smallest(vals, idx, g, 0, 0, sqn, sqn32, margin)  # rows 0..255 are points 0..255
    a = sqn[None, :1024] - 2.0 * g.astype(np.float64)
    a[np.arange(256), np.arange(256)] = np.inf  # not its own neighbour
    _check(vals[:256], idx[:256], a)
    # a second block on top of full heaps: the pushes keep the C smallest of both
    g2 = _block(seed + 10, 256, 1024, 1024, ties, dtype)[0]
    keep_smallest(vals, idx, g2, 0, 0, sqn, sqn32, margin)
    a2 = sqn[None, :1024] - 2.0 * g2.astype(np.float64)
    a2[np.arange(256), np.arange(256)] = np.inf
    both = np.concatenate([a, a2], axis=1)
    np.testing.assert_array_equal(np.sort(vals[:256], axis=1), np.sort(both, axis=1)[:, :C])


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed", [0, 1])
def test_columns_kernel_keeps_the_c_smallest_from_an_empty_heap(seed, dtype, ties):
    g, sqn, sqn32, margin = _block(seed, 512, 300, 812, ties, dtype)  # a partial last tile
    vals, idx = np.full((812, C), np.inf), np.full((812, C), -1, dtype=np.int64)
    keep_smallest_columns(vals, idx, g, 0, 512, sqn, sqn32, margin)
    a = (sqn[:512, None] - 2.0 * g.astype(np.float64)).T  # point 512 + c, candidate r
    vals_c, idx_c = vals[512:], idx[512:]
    np.testing.assert_array_equal(np.sort(vals_c, axis=1), np.sort(a, axis=1)[:, :C])
    np.testing.assert_array_equal(np.take_along_axis(a, idx_c, axis=1), vals_c)
    assert (vals[:512] == np.inf).all()  # the rows' own heaps are untouched


# Starting numba's pool set OpenMP's thread count (torch's too) to every core once torch had
# run an op; these scripts print torch's count after a torch op and a k-NN search, with torch
# imported before scalelab and after it.
_THREADS_SCRIPTS = {
    "torch first": "import torch; torch.set_num_threads(1); from scalelab.intrinsic.mle import MLE",
    "scalelab first": (
        "from scalelab.intrinsic.mle import MLE; import torch; torch.set_num_threads(1)"
    ),
}


@pytest.mark.parametrize("order", sorted(_THREADS_SCRIPTS))
def test_a_knn_search_keeps_torchs_thread_count(order: str) -> None:
    import os
    import subprocess
    import sys

    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: every thread count is 1, so a change cannot show")
    script = (
        f"{_THREADS_SCRIPTS[order]}; import numpy as np; "
        "torch.ones(512, 512) @ torch.ones(512, 512); "
        "MLE(k=5).fit(np.random.default_rng(0).normal(size=(500, 4))); "
        "print(torch.get_num_threads())"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1"]
