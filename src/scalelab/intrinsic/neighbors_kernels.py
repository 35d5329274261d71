"""Compiled (numba) kernels shared by the CPU k-NN searches: float64 row norms, exact re-ranking
of candidates, and keeping the C smallest approximate distances per row.

Why one module: both CPU searches (`neighbors_numpy`, torch-free; `neighbors_bf16`, torch)
re-rank with the same kernel, so for the same candidates they return bit-identical distances,
and neither imports the other.
"""

from __future__ import annotations

import sys

import numba
import numpy as np

# Fast-math without 'nnan'/'ninf': the kernels compare against +inf placeholders, which the
# compiler may not assume away; reassociation, contraction and the rest are safe here.
FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}
_TILE = 32  # columns of a transposed block per parallel task


def _start_pool() -> None:
    """Start numba's thread pool now, keeping torch's thread count. Starting it (numba does at
    the first parallel kernel) sets OpenMP's thread count, which torch shares, to every core:
    a run with one torch thread (`--threads 1`) trained on all cores after its first k-NN
    search. Where torch is loaded, numba takes its count too."""
    torch = sys.modules.get("torch")
    threads = torch.get_num_threads() if torch is not None else None
    numba.get_num_threads()  # launches the pool
    if threads is not None:
        torch.set_num_threads(threads)
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))


_start_pool()


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
def centre_rows(x: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """z = x - m (in x's dtype), float64 |z_i|^2 and max_f |z_if| per row: one pass over the
    data instead of four (subtract, absolute value, maximum, norms)."""
    n, n_feat = x.shape
    z = np.empty_like(x)
    sqn = np.empty(n)
    peak = np.empty(n)
    for i in numba.prange(n):
        total, top = 0.0, 0.0
        for f in range(n_feat):
            v = x[i, f] - m[f]
            z[i, f] = v
            w = np.float64(v)
            total += w * w
            top = max(top, abs(w))
        sqn[i] = total
        peak[i] = top
    return z, sqn, peak


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
        xi = x[rows[r]].astype(np.float64)  # converted once, not once per candidate
        for c in range(n_cand):
            j = cand[r, c]
            xj = x[j]
            total = 0.0
            for f in range(x.shape[1]):
                diff = xi[f] - np.float64(xj[f])
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


@numba.njit(fastmath=FASTMATH, cache=True)
def _fill_empty(
    vals: np.ndarray,
    idx: np.ndarray,
    i: int,
    line: np.ndarray,
    sq: np.ndarray,
    sq32: np.ndarray,
    j0: int,
    margin: float,
    kept_a: np.ndarray,
    kept_j: np.ndarray,
) -> bool:
    """Fill point i's empty heap from a whole contiguous line of products (candidate
    j = j0 + r, a = sq[r] - 2 line[r]) at once instead of push by push.

    Why: filling a heap by pushes costs about C (1 + ln(m / C)) sift-downs with unpredictable
    branches, and the first block of a search is all fills. Here a bisection on the value,
    with vectorised float32 counts, finds a threshold `hi` that C + 1 to 2 C + 2 values (the
    point itself may be one) do not exceed; the values with a32 <= hi + 2 margin, a superset
    of the C smallest in float64 since |a32 - a| < margin, are sorted by (a, j) and the C
    smallest written in descending order, which is a valid max-heap. Every value left out has
    a > hi + margin >= the largest kept, the invariant the pushes keep. False, with nothing
    written, when the line is short, `kept_a` overflows (many near-equal values) or the
    products are float64 (`margin` inf): the caller then pushes as usual."""
    n_keep, m = vals.shape[1], len(line)
    if m < 8 * n_keep or not margin < np.inf:
        return False
    lo, hi = np.float32(np.inf), np.float32(-np.inf)
    for r in range(m):
        v = sq32[r] - np.float32(2.0) * line[r]
        lo, hi = min(lo, v), max(hi, v)
    for _ in range(40):
        mid = np.float32(0.5) * (lo + hi)
        count = 0
        for r in range(m):  # vectorised
            count += sq32[r] - np.float32(2.0) * line[r] <= mid
        if count <= n_keep:
            lo = mid
        else:
            hi = mid
            if count <= 2 * n_keep + 2:
                break
    bound = np.float32(hi + 2.0 * margin)
    n = 0
    for r in range(m):
        if sq32[r] - np.float32(2.0) * line[r] <= bound and j0 + r != i:
            if n == len(kept_a):
                return False
            kept_a[n] = sq[r] - 2.0 * np.float64(line[r])
            kept_j[n] = j0 + r
            n += 1
    if n < n_keep:
        return False
    for p in range(1, n):  # insertion sort by (a, j): n is about 2 C
        a, j, q = kept_a[p], kept_j[p], p
        while q > 0 and (kept_a[q - 1] > a or (kept_a[q - 1] == a and kept_j[q - 1] > j)):
            kept_a[q], kept_j[q] = kept_a[q - 1], kept_j[q - 1]
            q -= 1
        kept_a[q], kept_j[q] = a, j
    for q in range(n_keep):
        vals[i, q] = kept_a[n_keep - 1 - q]
        idx[i, q] = kept_j[n_keep - 1 - q]
    return True


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
    itself is skipped. A float32 check (`sqn32`) against the current worst plus `margin`
    (>= its rounding error plus the threshold's) lets only the values that may enter reach
    the float64 comparison; the check's branch is rarely taken once the heap is full.
    """
    n_rows, n_cols = g.shape
    n_keep = vals.shape[1]
    sq, sq32 = sqn[col0 : col0 + n_cols], sqn32[col0 : col0 + n_cols]
    for r in numba.prange(n_rows):
        i = row0 + r
        worst = vals[i, 0]
        if worst == np.inf:  # the first block: fill the whole heap at once
            kept_a = np.empty(4 * n_keep + 8)
            kept_j = np.empty(4 * n_keep + 8, dtype=np.int64)
            if _fill_empty(vals, idx, i, g[r], sq, sq32, col0, margin, kept_a, kept_j):
                continue
        limit = np.float32(worst + margin)
        for c in range(n_cols):
            if sqn32[col0 + c] - np.float32(2.0) * g[r, c] < limit:
                a = sqn[col0 + c] - 2.0 * np.float64(g[r, c])
                if a < worst and col0 + c != i:
                    _push(vals, idx, i, a, col0 + c)
                    worst = vals[i, 0]
                    limit = np.float32(worst + margin)


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
    its own threshold) skips the rows that change nothing. Empty heaps (the first block) are
    filled at once from a transposed copy of the tile (`_fill_empty`)."""
    n_rows, n_cols = g.shape
    n_keep = vals.shape[1]
    sq, sq32 = sqn[row0 : row0 + n_rows], sqn32[row0 : row0 + n_rows]
    for t in numba.prange((n_cols + _TILE - 1) // _TILE):
        c0 = t * _TILE
        w = min(n_cols, c0 + _TILE) - c0
        limit = np.empty(_TILE, dtype=np.float32)
        empty = 0
        for c in range(w):
            empty += vals[col0 + c0 + c, 0] == np.inf
        lines = np.empty((w if empty else 0, n_rows), dtype=g.dtype)
        for r in range(n_rows if empty else 0):
            for c in range(w):
                lines[c, r] = g[r, c0 + c]
        kept_a = np.empty(4 * n_keep + 8)
        kept_j = np.empty(4 * n_keep + 8, dtype=np.int64)
        for c in range(w):
            i = col0 + c0 + c
            filled = vals[i, 0] == np.inf and _fill_empty(
                vals, idx, i, lines[c], sq, sq32, row0, margin, kept_a, kept_j
            )
            limit[c] = -np.inf if filled else np.float32(vals[i, 0] + margin)
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
