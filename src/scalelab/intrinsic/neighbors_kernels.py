"""Compiled (numba) kernels shared by the CPU k-NN searches: float64 row norms, exact re-ranking
of candidates, and keeping the C smallest approximate distances per row.

Why one module: both CPU searches (`neighbors_numpy`, torch-free; `neighbors_bf16`, torch)
re-rank with the same kernel, so for the same candidates they return bit-identical distances,
and neither imports the other.
"""

from __future__ import annotations

import numba
import numpy as np

# Fast-math without 'nnan'/'ninf': the kernels compare against +inf placeholders, which the
# compiler may not assume away; reassociation, contraction and the rest are safe here.
FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}
_TILE = 32  # columns of a transposed block per parallel task


@numba.njit(parallel=True, fastmath=FASTMATH, cache=True)
def row_sq_norms(x: np.ndarray) -> np.ndarray:
    """Float64 |x_i|^2 per row (products of float32 values are exact in float64)."""
    out = np.empty(x.shape[0])
    for i in numba.prange(x.shape[0]):
        total = 0.0
        for f in range(x.shape[1]):
            total += np.float64(x[i, f]) * np.float64(x[i, f])
        out[i] = total
    return out


@numba.njit(parallel=True, fastmath=FASTMATH, cache=True)
def rerank_kernel(
    x: np.ndarray, rows: np.ndarray, cand: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per row i = rows[r]: float64 |x_i - x_j|^2 from difference vectors for j in cand[r],
    keeping the k smallest in a list sorted by (distance, index)."""
    n_rows, n_cand = cand.shape
    best_sq = np.full((n_rows, k), np.inf)
    best_idx = np.full((n_rows, k), -1, dtype=np.int64)
    for r in numba.prange(n_rows):
        xi = x[rows[r]]
        for c in range(n_cand):
            j = cand[r, c]
            xj = x[j]
            total = 0.0
            for f in range(x.shape[1]):
                diff = np.float64(xi[f]) - np.float64(xj[f])
                total += diff * diff
            pos = k
            while pos > 0 and (
                best_sq[r, pos - 1] > total
                or (best_sq[r, pos - 1] == total and best_idx[r, pos - 1] > j)
            ):
                pos -= 1
            if pos < k:
                for m in range(k - 1, pos, -1):
                    best_sq[r, m] = best_sq[r, m - 1]
                    best_idx[r, m] = best_idx[r, m - 1]
                best_sq[r, pos] = total
                best_idx[r, pos] = j
    return best_sq, best_idx


@numba.njit(fastmath=FASTMATH, cache=True)
def _push(vals: np.ndarray, idx: np.ndarray, i: int, a: float, j: int) -> None:
    """Replace the largest of row i's kept values (the root of its max-heap) by (a, j)."""
    n_keep = vals.shape[1]
    pos = 0
    while True:
        child = 2 * pos + 1
        if child >= n_keep:
            break
        if child + 1 < n_keep and vals[i, child + 1] > vals[i, child]:
            child += 1
        if vals[i, child] <= a:
            break
        vals[i, pos] = vals[i, child]
        idx[i, pos] = idx[i, child]
        pos = child
    vals[i, pos] = a
    idx[i, pos] = j


@numba.njit(parallel=True, fastmath=FASTMATH, cache=True)
def keep_smallest(
    vals: np.ndarray,
    idx: np.ndarray,
    g: np.ndarray,
    row0: int,
    col0: int,
    sqn: np.ndarray,
    sqn32: np.ndarray,
    margin: float,
) -> None:
    """Fold one block of Gram products into the running candidate lists, in place.

    Row r of `g` belongs to point i = row0 + r, column c to point j = col0 + c, and
    `a = sqn[j] - 2 g[r, c]` (float64) is the approximate |x_j|^2 - 2 x_i.x_j. Per point i,
    `vals[i]`/`idx[i]` are a max-heap of the C smallest `a` seen so far (+inf and -1 while
    unfilled), so after all blocks every point j not kept has a >= vals[i, 0]. The point
    itself is skipped. A float32 pass (`sqn32`, twice as many lanes) first counts the values
    that may enter; `margin` (>= its rounding error plus the threshold's) keeps it
    conservative, and only rows with a count are scanned in float64.
    """
    n_rows, n_cols = g.shape
    for r in numba.prange(n_rows):
        i = row0 + r
        worst = vals[i, 0]
        limit = np.float32(worst + margin)
        hits = 0
        for c in range(n_cols):  # vectorised; most rows of most blocks have no hit
            hits += sqn32[col0 + c] - np.float32(2.0) * g[r, c] < limit
        if hits == 0:
            continue
        for c in range(n_cols):
            a = sqn[col0 + c] - 2.0 * np.float64(g[r, c])
            if a < worst and col0 + c != i:
                _push(vals, idx, i, a, col0 + c)
                worst = vals[i, 0]


@numba.njit(parallel=True, fastmath=FASTMATH, cache=True)
def keep_smallest_columns(
    vals: np.ndarray,
    idx: np.ndarray,
    g: np.ndarray,
    row0: int,
    col0: int,
    sqn: np.ndarray,
    sqn32: np.ndarray,
    margin: float,
) -> None:
    """`keep_smallest` for the transpose of `g`, without copying it: column c belongs to
    point i = col0 + c, row r to the candidate j = row0 + r. Tiles of columns run in
    parallel and read `g` row by row; a float32 count across the tile (each column against
    its own threshold) skips the rows that change nothing."""
    n_rows, n_cols = g.shape
    for t in numba.prange((n_cols + _TILE - 1) // _TILE):
        c0 = t * _TILE
        w = min(n_cols, c0 + _TILE) - c0
        limit = np.empty(_TILE, dtype=np.float32)
        for c in range(w):
            limit[c] = np.float32(vals[col0 + c0 + c, 0] + margin)
        for r in range(n_rows):
            s = sqn32[row0 + r]
            hits = 0
            for c in range(w):  # vectorised across the tile
                hits += s - np.float32(2.0) * g[r, c0 + c] < limit[c]
            if hits == 0:
                continue
            j = row0 + r
            for c in range(w):
                i = col0 + c0 + c
                a = sqn[j] - 2.0 * np.float64(g[r, c0 + c])
                if a < vals[i, 0] and i != j:
                    _push(vals, idx, i, a, j)
                    limit[c] = np.float32(vals[i, 0] + margin)
