"""Exact k-nearest neighbours on the CPU without torch: float32 Gram products in numpy (BLAS),
candidates kept by a compiled kernel, exact float64 re-ranking, and a proof per row.

Why: importing torch costs about 1.4 s, more than the whole search on a few batches of 4096
points. The steps are those of the torch search (`neighbors_bf16`), in float32 instead of
bf16, and using the symmetry of the Gram matrix, so each pair is multiplied once:

1. candidates: on centred data z, for row block I and the points from I onwards,
   `g = z_I @ z_J^T` (float32 BLAS); `a_ij = |z_j|^2 - 2 g_ij` (float64) updates the C
   smallest values of the rows of I and, transposed, of the rows of J;
2. exact re-ranking: float64 |x_i - x_j|^2 of the C candidates from difference vectors of the
   original data (`neighbors_kernels.rerank_kernel`, the torch search's kernel);
3. proof: with `e_i` a rigorous bound on |a~_ij + |z_i|^2 - d_ij^2| (`GramSearch.error`), every
   point that is not a candidate has `d^2 >= a_(C) + |z_i|^2 - e_i`. Where that exceeds the
   k-th candidate distance the k neighbours are proven; other rows (near ties, duplicates)
   are searched again with a candidate set that is sufficient by construction.

So the result equals a float64 brute-force reference to rounding, and equals the torch
search's bit for bit (same kernel on the same true neighbours).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from scalelab.intrinsic.neighbors_kernels import (
    centre_rows,
    keep_smallest,
    keep_smallest_columns,
    rerank_kernel,
    row_sq_norms,
)

_UNIT = {np.dtype(np.float32): 2.0**-24, np.dtype(np.float64): 2.0**-53}
# Half the smallest subnormal spacing: the absolute error of an underflowing rounding.
_TINY = {np.dtype(np.float32): 2.0**-150, np.dtype(np.float64): 2.0**-1075}
_SAFE = 2.0**50  # |x| beyond this (or float64 data below 1/_SAFE): products in float64
_PANEL_ELEMENTS = 1 << 22  # float32 Gram products per block (16 MB)
_ROW_BLOCK = 512  # rows per block: large enough for BLAS, small enough for the symmetry


def column_mean(x: np.ndarray) -> np.ndarray:
    """The mean point, in x's dtype, by one matrix-vector product (float64 if that
    overflows). Any fixed vector would do: subtracting it changes no distance."""
    m = (np.ones(len(x), dtype=x.dtype) @ x) / len(x)
    if not np.isfinite(m).all():
        m = x.mean(axis=0, dtype=np.float64)
    return m.astype(x.dtype)


def centred(x: np.ndarray) -> np.ndarray:
    """The data minus its mean (rounded once): keeps |x| small relative to the distances.

    Subtracting one fixed vector changes no distance, so its own rounding does not matter;
    the subtraction rounds each entry with relative error u32 (u64 for float64 data).
    """
    return x - column_mean(x)


class GramSearch:
    """The centred data z in the product's dtype (float32 unless "fp64" is asked for or the
    values leave float32's safe range), its float64 squared norms, and the error bound.

    `error(rows)` bounds, for every other point j, |a~_ij + s_i - d_ij^2| where
    a~_ij = fl64(s_j - 2 fl(z_i.z_j)), s the float64 squared norms of z and d the distance of
    the original points. Terms (first order, u = unit roundoff, n = features):
    rounding x - m and the cast to z moves each point by at most
    δ_i = u_in |z_i| + sqrt(n) tiny, so |‖z_i - z_j‖^2 - d^2| <= 2 (N_i + R) δ + δ^2;
    the product's error is at most γ_n N_i R + n tiny (any summation order), doubled by the
    factor 2; float64 norms and sums add (n + 4) u64 (N_i + R)^2 a few times.
    N_i and R (the largest N) are inflated norms; a 10% margin covers the second order.
    """

    def __init__(self, x: np.ndarray, precision: str = "fp32") -> None:
        xc, sqn, peak = centre_rows(x, column_mean(x))
        big = float(peak.max()) if xc.size else 0.0
        tiny_data = x.dtype == np.float64 and 0.0 < big < 1.0 / _SAFE  # float32 would underflow
        work = np.float64 if precision == "fp64" or big > _SAFE or tiny_data else np.float32
        self.z = np.ascontiguousarray(xc, dtype=work)
        self.precision = "fp64" if work == np.float64 else "fp32"
        self.sqn = sqn if self.z is xc else row_sq_norms(self.z)
        n_feat = x.shape[1]
        u_w, tiny = _UNIT[self.z.dtype], _TINY[self.z.dtype]
        u_in = _UNIT[x.dtype] + (u_w if self.z.dtype != x.dtype else 0.0)
        shift = np.sqrt(n_feat) * tiny
        self.norms = np.sqrt(self.sqn) * (1 + 2 * u_in) + 2 * shift
        self.max_norm = float(self.norms.max())
        self.u_in, self.shift = u_in, shift
        self.gamma = n_feat * u_w / (1 - n_feat * u_w)
        self.tiny_sum = 2 * n_feat * tiny
        self.u64_terms = 8 * (n_feat + 4) * 2.0**-53

    def error(self, rows: np.ndarray) -> np.ndarray:
        """Per row, the largest possible |a~_ij + s_i - d_ij^2| over all columns j."""
        n_i, big = self.norms[rows], self.max_norm
        delta = self.u_in * (n_i + big) + 2 * self.shift
        total = (
            2 * self.gamma * n_i * big
            + 2 * self.tiny_sum
            + 2 * (n_i + big) * delta
            + delta**2
            + self.u64_terms * (n_i + big) ** 2
        )
        return 1.1 * total

    def approx(self, rows: np.ndarray) -> np.ndarray:
        """a~ (float64) of the given rows against every column; the point itself +inf."""
        a = self.sqn[None, :] - 2.0 * (self.z[rows] @ self.z.T)
        a[np.arange(len(rows)), rows] = np.inf
        return a


def candidates(search: GramSearch, c: int, stats: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """The C smallest a~ per row (indices, any order) and the largest of them.

    Blocks of rows I against the points from I's first row onwards: each product serves the
    rows of I directly and, transposed, the later rows, so every pair is multiplied once.
    """
    z = search.z
    n = len(z)
    vals = np.full((n, c), np.inf)
    idx = np.full((n, c), -1, dtype=np.int64)
    sqn = search.sqn
    if search.precision == "fp32":
        sqn32 = sqn.astype(np.float32)
        # The float32 pre-check's error: s_j rounded, the product doubled and subtracted, and
        # the threshold rounded (|a|, |threshold| <= 3 max s): 16 u32 max s covers them all.
        margin = 16 * 2.0**-24 * float(sqn.max())
    else:  # float64 products (values beyond float32's range): every row is scanned exactly
        sqn32, margin = np.zeros(n, dtype=np.float32), np.inf
    rows_per = min(n, _ROW_BLOCK)
    cols_per = max(rows_per, _PANEL_ELEMENTS // rows_per)
    for r0 in range(0, n, rows_per):
        r1 = min(n, r0 + rows_per)
        for c0 in range(r0, n, cols_per):
            c1 = min(n, c0 + cols_per)
            t0 = time.perf_counter()
            g = z[r0:r1] @ z[c0:c1].T
            if stats is not None:
                stats.gram_seconds += time.perf_counter() - t0
            keep_smallest(vals, idx, g, r0, c0, sqn, sqn32, margin)
            skip = max(0, r1 - c0)  # the diagonal block: its rows were served directly
            if c1 - c0 > skip:
                keep = keep_smallest_columns  # the later rows, from g's columns
                keep(vals, idx, g[:, skip:], r0, c0 + skip, sqn, sqn32, margin)
    return idx, vals[:, 0]


def exact_knn_squared(
    x: np.ndarray, k: int, c: int, precision: str = "fp32", stats: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """Squared distances `[n, k]` (float64, ascending; ties by index) and indices of the k
    nearest other rows of the validated float matrix `x`, from C = `c` candidates per row.
    `stats` (a `neighbors.SearchStats`) records the fallback rows and the Gram time."""
    n = len(x)
    search = GramSearch(x, precision)
    cand, top = candidates(search, c, stats)
    rows = np.arange(n)
    sq, idx = rerank_kernel(x, rows, cand, k)
    lower = top + search.sqn - search.error(rows)
    ok = (lower > sq[:, -1] * (1 + 1e-12)) | (c >= n - 1)
    todo = rows[~ok]
    if stats is not None:
        stats.record(n, c, len(todo), search.precision)
    if len(todo):
        sq[todo], idx[todo] = _fallback(x, search, todo, k)
    return sq, idx


def _fallback(
    x: np.ndarray, search: GramSearch, rows: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Rows the first pass could not prove, searched again with a sufficient candidate set.

    The true k-th d^2 is at most a~_(k) + s_i + e, so every true neighbour has
    a~ <= a~_(k) + 2e: taking all those points as candidates needs no further proof
    (exact ties and duplicates included).
    """
    sq = np.empty((len(rows), k))
    idx = np.empty((len(rows), k), dtype=np.int64)
    step = max(1, _PANEL_ELEMENTS // len(search.z))
    for start in range(0, len(rows), step):
        r = rows[start : start + step]
        a = search.approx(r)
        kth = np.partition(a, k - 1, axis=1)[:, k - 1]
        limit = kth + 2.0 * search.error(r)
        width = max(k, int((a <= limit[:, None]).sum(axis=1).max()))
        cand = np.argpartition(a, width - 1, axis=1)[:, :width]
        sl = slice(start, start + len(r))
        sq[sl], idx[sl] = rerank_kernel(x, r, np.ascontiguousarray(cand), k)
    return sq, idx
