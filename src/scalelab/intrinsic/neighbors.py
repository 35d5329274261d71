"""Exact k-nearest neighbours by blocked Gram products, with a proof of exactness per row.

Why this shape: the Gram product `X @ X.T` dominates the cost, and bfloat16 runs it 2-4x faster
than float32 on CPU, but its rounding can swap near-tied neighbours. So the search runs in three
steps:

1. candidates: on centred data, one product `[x, 1] @ [-2y, |y|^2]^T` in the chosen
   `precision` (bf16/fp32/fp64) gives `|y|^2 - 2 x.y`, and `torch.topk` keeps the C > k
   smallest per row;
2. exact re-ranking: the C candidate distances are recomputed in float64 from the difference
   vectors `x - y` of the original data (no cancellation), and the k smallest kept, in one
   compiled numba kernel (gathering n*C rows in torch costs more than the Gram product);
3. proof: a rigorous bound `e_i` on the rounding error of step 1 gives, for every point that is
   not a candidate, `d^2 >= |x_i|^2 + a_(C) - e_i` (`a_(C)` the largest candidate value). Where
   that lower bound exceeds the k-th exact candidate distance, the true k neighbours are among
   the candidates. Rows where it does not hold (near ties, duplicates) are searched again in
   float32 with a candidate set that is sufficient by construction.

The returned distances therefore equal a float64 brute-force reference to rounding (~1e-15
relative) whatever the search precision.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numba
import numpy as np
import torch

from scalelab.errors import InputError
from scalelab.intrinsic.neighbors_device import knn_device

METRICS = ("euclidean", "cosine", "angular")
PRECISIONS = {"bf16": torch.bfloat16, "fp32": torch.float32, "fp64": torch.float64}
# Unit roundoff of the input rounding and of the product's output, per search precision.
_UNIT = {"bf16": 2.0**-9, "fp32": 2.0**-24, "fp64": 2.0**-53}
_U32 = 2.0**-24
_BF16_INF_BITS = 0x7F80
_MAX_UNPROVEN = 0.25  # fraction of unproven rows in a block that switches bf16 to float32
_BLOCK_ELEMENTS = 1 << 24  # approximate distances per block (32 MB in bf16)
_PROBE_ROWS = 512  # rows of the first block, which decides between bf16 and float32


@dataclass
class SearchStats:
    """How the search went (for benchmarks and tests): rows searched, candidates per row,
    rows that needed the fallback, seconds in the Gram product, the precision it ended in."""

    n_rows: int = 0
    n_candidates: int = 0
    n_fallback: int = 0
    gram_seconds: float = 0.0
    precision: str = ""


def knn(
    X: np.ndarray | torch.Tensor,
    k: int,
    metric: str = "euclidean",
    *,
    precision: str = "bf16",
    n_candidates: int | None = None,
    block_rows: int | None = None,
    stats: SearchStats | None = None,
    device: str | torch.device | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The k nearest neighbours of every row of `X` among the other rows.

    Returns `(dist, idx)`: float64 distances `[n, k]` in ascending order and int64 indices, the
    point itself excluded. `metric`: "euclidean"; "cosine" (1 - cos, as sklearn defines it);
    "angular" (the angle in radians between the vectors). `precision` only sets the speed of
    the candidate search: the result is exact either way (see the module docstring).
    `device` ("cuda", "cuda:1", "cpu"; default: the device of a torch tensor `X`, else this
    CPU search) runs the search as torch ops there (`neighbors_device`, float64 throughout;
    `precision` then does not apply); the same distances to float64 rounding.
    """
    if metric not in METRICS:
        raise InputError(f"unknown metric {metric!r}: use one of {', '.join(METRICS)}")
    if precision not in PRECISIONS:
        raise InputError(f"unknown precision {precision!r}: use one of {', '.join(PRECISIONS)}")
    target = _target_device(X, device)
    x = _as_matrix(X)
    n = x.shape[0]
    if k < 1:
        raise InputError(f"k = {k}: use k >= 1")
    if n < k + 1:
        raise InputError(f"{n} points but k = {k}: give at least k + 1 points or lower k")
    if metric != "euclidean":
        x = _unit_rows(x)
    if target is not None:
        sq, idx = knn_device(x, k, target, block_rows)
    else:
        if block_rows is None:  # fewer, larger products: ~32 MB of bf16 distances per block
            block_rows = max(256, min(n, _BLOCK_ELEMENTS // n))
        sq, idx = _exact_knn_squared(x, k, precision, n_candidates, block_rows, stats)
    dist = np.sqrt(sq)
    if metric == "cosine":
        dist = sq / 2.0  # 1 - cos(u, v) = |u - v|^2 / 2 for unit vectors
    elif metric == "angular":
        dist = 2.0 * np.arcsin(np.minimum(dist / 2.0, 1.0))  # chord -> angle, no cancellation
    return dist, idx


def _target_device(
    X: np.ndarray | torch.Tensor, device: str | torch.device | None
) -> torch.device | None:
    """The device of the torch search, or None for the CPU search."""
    if device is None:
        on = X.device if isinstance(X, torch.Tensor) else None
        return on if on is not None and on.type != "cpu" else None
    try:
        target = torch.device(device)
    except RuntimeError as err:
        raise InputError(f"unknown device {device!r} ({err}): use cpu, cuda or cuda:N") from None
    if target.type == "cuda" and not torch.cuda.is_available():
        raise InputError(f"device {device!r}: CUDA is not available here; use --device cpu")
    return target


def _as_matrix(X: np.ndarray | torch.Tensor) -> torch.Tensor:
    """A 2-D finite float tensor (float32 kept, other numbers converted to float64)."""
    if isinstance(X, torch.Tensor):
        X = X.detach().cpu()
        X = (X.float() if X.dtype in (torch.bfloat16, torch.float16) else X).numpy()
    try:
        x = np.asarray(X)
    except ValueError as err:
        raise InputError(f"not a rectangular array ({err}): give [points, features]") from err
    if x.dtype.kind not in "fiu":
        raise InputError(f"dtype {x.dtype} is not numeric: convert the data to floats")
    if x.ndim != 2:
        raise InputError(f"expected a 2-D array [points, features], got shape {x.shape}")
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise InputError(f"empty array of shape {x.shape}: give at least one feature")
    if x.dtype not in (np.float32, np.float64):
        x = x.astype(np.float64)
    finite = np.isfinite(x)
    if not finite.all():
        bad = int((~finite).any(axis=1).sum())
        raise InputError(f"{bad} rows contain NaN or inf: drop or repair those rows first")
    return torch.from_numpy(np.ascontiguousarray(x))


def _unit_rows(x: torch.Tensor) -> torch.Tensor:
    """Rows scaled to unit length in float64 (cosine/angular distances need non-zero rows)."""
    x64 = x.to(torch.float64)
    norms = torch.linalg.vector_norm(x64, dim=1, keepdim=True)
    if bool((norms == 0).any()):
        raise InputError(
            f"{int((norms == 0).sum())} all-zero rows have no direction: "
            "drop them or use metric 'euclidean'"
        )
    return x64 / norms


def _exact_knn_squared(
    x: torch.Tensor,
    k: int,
    precision: str,
    n_candidates: int | None,
    block_rows: int,
    stats: SearchStats | None,
) -> tuple[np.ndarray, np.ndarray]:
    # Small per-row arithmetic stays in numpy: tiny multi-threaded torch ops cost more in
    # thread wake-ups than in work, badly so on a loaded machine.
    n = x.shape[0]
    c = min(n - 1, n_candidates if n_candidates is not None else k + max(8, k // 2))
    if c < k:
        raise InputError(f"n_candidates = {c} < k = {k}: use n_candidates >= k")
    xn = x.numpy()
    xc = _centred(xn)
    search = _ApproxSearch(xc, precision)
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
        stats.n_rows += n
        stats.n_candidates = c
        stats.n_fallback += len(todo)
        stats.precision = search.precision
    if len(todo):
        fp32 = search if search.precision == "fp32" else _ApproxSearch(xc, "fp32")
        sq[todo], idx[todo] = _fallback(xn, fp32, todo, k, block_rows)
    return sq, idx


def _centred(x: np.ndarray) -> np.ndarray:
    """The data minus its mean (rounded once): keeps |x| small relative to the distances.

    Subtracting one fixed vector changes no distance, so its own rounding does not matter;
    the subtraction rounds each entry with relative error u32 (u64 for float64 data).
    """
    return x - x.mean(axis=0, dtype=np.float64).astype(x.dtype)


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
        dtype = PRECISIONS[precision]
        self.precision = precision
        n, dim = xc.shape
        self.sqn = _row_sq_norms(xc)
        # Built in float64 for an fp64 search (|x|^2 must not be rounded to float32 there).
        work = np.float64 if precision == "fp64" else np.float32
        left = np.ones((n, dim + 1), dtype=work)
        left[:, :dim] = xc
        right = np.empty((n, dim + 1), dtype=work)
        np.multiply(xc, -2.0, out=right[:, :dim])
        right[:, dim] = self.sqn
        self.left = torch.from_numpy(left).to(dtype)
        self.right = torch.from_numpy(right).to(dtype)
        u = _UNIT[precision]
        u_in = u + _U32  # the centring's rounding (float32 data) plus the cast
        u_acc = 2.0**-53 if precision == "fp64" else _U32  # CPU bf16 GEMMs accumulate in fp32
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


# Fast-math without 'nnan'/'ninf': the kernels compare against +inf placeholders, which the
# compiler may not assume away; reassociation, contraction and the rest are safe here.
FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}


def _rerank(
    x: np.ndarray, rows: np.ndarray, cand: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact squared distances to the candidates: the k smallest (ties by index), their
    indices, and the k-th value."""
    sq, idx = _rerank_kernel(x, rows, np.ascontiguousarray(cand), k)
    return sq, idx, sq[:, -1]


@numba.njit(parallel=True, fastmath=FASTMATH, cache=True)
def _row_sq_norms(x: np.ndarray) -> np.ndarray:
    """Float64 |x_i|^2 per row (products of float32 values are exact in float64)."""
    out = np.empty(x.shape[0])
    for i in numba.prange(x.shape[0]):
        total = 0.0
        for f in range(x.shape[1]):
            total += np.float64(x[i, f]) * np.float64(x[i, f])
        out[i] = total
    return out


@numba.njit(parallel=True, fastmath=FASTMATH, cache=True)
def _rerank_kernel(
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
