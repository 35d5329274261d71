"""Exact k-nearest neighbours on the CPU with bf16 Gram products in torch (`precision="bf16"`).

Why this search: on CPUs with native bf16 (AVX512-BF16, AMX) the product runs about twice as
fast as float32, but its rounding can swap near-tied neighbours, and torch costs about 1.4 s
to import. So it is chosen explicitly (see `neighbors.knn`) and runs in three steps:

1. candidates: on centred data, one product `[x, 1] @ [-2y, |y|^2]^T` in bf16 gives
   `|y|^2 - 2 x.y`, and `torch.topk` keeps the C > k smallest per row;
2. exact re-ranking: the C candidate distances are recomputed in float64 from the difference
   vectors `x - y` of the original data (no cancellation), and the k smallest kept, in one
   compiled numba kernel shared with the torch-free search (`neighbors_kernels`);
3. proof: a rigorous bound `e_i` on the rounding error of step 1 gives, for every point that is
   not a candidate, `d^2 >= |x_i|^2 + a_(C) - e_i` (`a_(C)` the largest candidate value). Where
   that lower bound exceeds the k-th exact candidate distance, the true k neighbours are among
   the candidates. Rows where it does not hold (near ties, duplicates) are searched again in
   float32 with a candidate set that is sufficient by construction; when too many rows of a
   block fail, the remaining blocks switch to float32.

The returned distances therefore equal a float64 brute-force reference to rounding (~1e-15
relative), and those of the torch-free search bit for bit.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from scalelab.intrinsic.neighbors_kernels import rerank_kernel, row_sq_norms
from scalelab.intrinsic.neighbors_numpy import centred

_DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}
# Unit roundoff of the input rounding and of the product's output, per search precision.
_UNIT = {"bf16": 2.0**-9, "fp32": 2.0**-24}
_U32 = 2.0**-24
_BF16_INF_BITS = 0x7F80
_MAX_UNPROVEN = 0.25  # fraction of unproven rows in a block that switches bf16 to float32
_BLOCK_ELEMENTS = 1 << 24  # approximate distances per block (32 MB in bf16)
_PROBE_ROWS = 512  # rows of the first block, which decides between bf16 and float32


def exact_knn_squared(
    xn: np.ndarray, k: int, c: int, block_rows: int, stats: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """Squared distances `[n, k]` (float64, ascending; ties by index) and indices of the k
    nearest other rows of the validated float matrix `xn`, from C = `c` candidates per row.
    `stats` (a `neighbors.SearchStats`) records the fallback rows and the Gram time."""
    # Small per-row arithmetic stays in numpy: tiny multi-threaded torch ops cost more in
    # thread wake-ups than in work, badly so on a loaded machine.
    n = xn.shape[0]
    xc = centred(xn)
    search = _ApproxSearch(xc, "bf16")
    sq = np.empty((n, k))
    idx = np.empty((n, k), dtype=np.int64)
    unproven = []
    # A small first block probes whether bf16 can prove this data's neighbours at all.
    probe = min(block_rows, _PROBE_ROWS)
    for start in [0, *range(probe, n, block_rows)]:
        r = np.arange(start, min(n, start + (probe if start == 0 else block_rows)))
        t0 = time.perf_counter()
        a = search.approx(r)
        if stats is not None:
            stats.gram_seconds += time.perf_counter() - t0
        a_c, cand = torch.topk(a, c, dim=1, largest=False, sorted=False)
        sq[r], idx[r], kth = _rerank(xn, r, cand.numpy(), k)
        # Every non-candidate j has a_ij >= max(a_c): its true d^2 is at least that + |x_i|^2 - e.
        lower = _to_float64(a_c).max(axis=1) + search.sqn[r] - search.error(r)
        ok = (lower > kth * (1 + 1e-12)) | (c >= n - 1)
        unproven.append(r[~ok])
        if search.precision == "bf16" and (~ok).mean() > _MAX_UNPROVEN:
            # Neighbours much closer than the data's radius (low d, many points): bf16 cannot
            # separate them, and float32 for the remaining rows is cheaper than fallbacks.
            search = _ApproxSearch(xc, "fp32")
    todo = np.concatenate(unproven)
    if stats is not None:
        stats.record(n, c, len(todo), search.precision)
    if len(todo):
        fp32 = search if search.precision == "fp32" else _ApproxSearch(xc, "fp32")
        sq[todo], idx[todo] = _fallback(xn, fp32, todo, k, block_rows)
    return sq, idx


def _to_float64(t: torch.Tensor) -> np.ndarray:
    """A tensor's values as float64 numpy (bf16 decoded from its bits, without torch ops)."""
    if t.dtype == torch.bfloat16:
        bits = t.view(torch.int16).numpy().astype(np.int32) << 16
        return bits.view(np.float32).astype(np.float64)
    return t.numpy().astype(np.float64)


class _ApproxSearch:
    """`a_ij = |x_j|^2 - 2 x_i.x_j` in one precision, with a rigorous bound on its error.

    One product `[x~, 1] @ [-2 x~, s~]^T` (x~ the centred data and s~ = |x|^2 rounded to the
    search precision, accumulated in `acc`, output rounded to the search precision) gives
    `a~`. To first order in the unit roundoffs, rounding the inputs (u_in on each side), s~
    (u), the accumulation over dim + 1 terms (u_acc) and the output (u) give
    `|a~_ij - a_ij| <= c1 |x_i| |x_j| + c2 |x_j|^2`; a 10% margin covers the second order.
    """

    def __init__(self, xc: np.ndarray, precision: str) -> None:
        dtype = _DTYPES[precision]
        self.precision = precision
        n, dim = xc.shape
        self.sqn = row_sq_norms(xc)
        left = np.ones((n, dim + 1), dtype=np.float32)
        left[:, :dim] = xc
        right = np.empty((n, dim + 1), dtype=np.float32)
        np.multiply(xc, -2.0, out=right[:, :dim])
        right[:, dim] = self.sqn
        self.left = torch.from_numpy(left).to(dtype)
        self.right = torch.from_numpy(right).to(dtype)
        u = _UNIT[precision]
        u_in = u + _U32  # the centring's rounding (float32 data) plus the cast
        u_acc = _U32  # CPU bf16 GEMMs accumulate in fp32
        self.c1 = 1.1 * (4 * u_in + 2 * (dim + 1) * u_acc + 2 * u)
        self.c2 = 1.1 * (2 * u + _U32 + (dim + 1) * u_acc)
        self.norms = np.sqrt(self.sqn)
        self.max_norm = float(self.norms.max())

    def approx(self, rows: np.ndarray) -> torch.Tensor:
        """a~ for the given rows against every column; the point itself set to +inf."""
        contiguous = rows[-1] - rows[0] + 1 == len(rows)
        left = self.left[rows[0] : rows[-1] + 1] if contiguous else self.left[rows]
        a = left @ self.right.T
        if a.dtype == torch.bfloat16:
            a.view(torch.int16).numpy()[np.arange(len(rows)), rows] = _BF16_INF_BITS
        else:
            a.numpy()[np.arange(len(rows)), rows] = np.inf
        return a

    def error(self, rows: np.ndarray) -> np.ndarray:
        """Per row, the largest possible error of a~_ij over all columns j."""
        return self.c1 * self.norms[rows] * self.max_norm + self.c2 * self.max_norm**2


def _rerank(
    x: np.ndarray, rows: np.ndarray, cand: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact squared distances to the candidates: the k smallest (ties by index), their
    indices, and the k-th value."""
    sq, idx = rerank_kernel(x, rows, np.ascontiguousarray(cand), k)
    return sq, idx, sq[:, -1]


def _fallback(
    x: np.ndarray, search: _ApproxSearch, rows: np.ndarray, k: int, block_rows: int
) -> tuple[np.ndarray, np.ndarray]:
    """Rows the first pass could not prove, searched again with a sufficient candidate set.

    The true k-th d^2 is at most a~_(k) + |x_i|^2 + e, so every true neighbour has
    a~ <= a~_(k) + 2e: taking all those points as candidates needs no further proof, whatever
    the precision (exact ties and duplicates included).
    """
    sq = np.empty((len(rows), k))
    idx = np.empty((len(rows), k), dtype=np.int64)
    for start in range(0, len(rows), block_rows):
        r = rows[start : start + block_rows]
        a = search.approx(r)
        values = _to_float64(a)
        kth = np.partition(values, k - 1, axis=1)[:, k - 1]
        limit = kth + 2.0 * search.error(r)
        width = max(k, int((values <= limit[:, None]).sum(axis=1).max()))
        _, cand = torch.topk(a, width, dim=1, largest=False, sorted=False)
        sl = slice(start, start + len(r))
        sq[sl], idx[sl], _ = _rerank(x, r, cand.numpy(), k)
    return sq, idx
