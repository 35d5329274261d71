"""Exact k-nearest neighbours by blocked Gram products, with a proof of exactness per row.

Why this shape: the Gram product `X @ X.T` dominates the cost, and bfloat16 runs it 2-4x faster
than float32 on CPU, but its rounding can swap near-tied neighbours. So the search runs in three
steps:

1. candidates: on centred data, approximate squared distances `|x|^2 + |y|^2 - 2 x.y` in the
   chosen `precision` (bf16/fp32/fp64), and keep the C > k smallest per row (`torch.topk`);
2. exact re-ranking: the C candidate distances are recomputed in float64 from the difference
   vectors `x - y` of the original data (no cancellation), and the k smallest kept;
3. proof: a rigorous bound `e_i` on the rounding error of step 1 gives, for every point that is
   not a candidate, `d^2 >= a_(C) - e_i` (`a_(C)` the largest candidate approximation). Where
   that lower bound exceeds the k-th exact candidate distance, the true k neighbours are among
   the candidates. Rows where it does not hold (near ties, duplicates) are searched again in
   float64 with a candidate set that is sufficient by construction.

The returned distances therefore equal a float64 brute-force reference to rounding (~1e-15
relative) whatever the search precision.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from scalelab.errors import InputError

METRICS = ("euclidean", "cosine", "angular")
PRECISIONS = {"bf16": torch.bfloat16, "fp32": torch.float32, "fp64": torch.float64}
# Unit roundoff of the input rounding and of the product's output, per search precision.
_UNIT = {"bf16": 2.0**-9, "fp32": 2.0**-24, "fp64": 2.0**-53}
_U32 = 2.0**-24


@dataclass
class SearchStats:
    """How the search went: how many rows needed each fallback (for benchmarks and tests)."""

    n_rows: int = 0
    n_candidates: int = 0
    n_fallback: int = 0
    gram_seconds: float = 0.0


def knn(
    X: np.ndarray | torch.Tensor,
    k: int,
    metric: str = "euclidean",
    *,
    precision: str = "bf16",
    n_candidates: int | None = None,
    block_rows: int = 1024,
    stats: SearchStats | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The k nearest neighbours of every row of `X` among the other rows.

    Returns `(dist, idx)`: float64 distances `[n, k]` in ascending order and int64 indices, the
    point itself excluded. `metric`: "euclidean"; "cosine" (1 - cos, as sklearn defines it);
    "angular" (the angle in radians between the vectors). `precision` only sets the speed of
    the candidate search: the result is exact either way (see the module docstring).
    """
    if metric not in METRICS:
        raise InputError(f"unknown metric {metric!r}: use one of {', '.join(METRICS)}")
    if precision not in PRECISIONS:
        raise InputError(f"unknown precision {precision!r}: use one of {', '.join(PRECISIONS)}")
    x = _as_matrix(X)
    n = x.shape[0]
    if k < 1:
        raise InputError(f"k = {k}: use k >= 1")
    if n < k + 1:
        raise InputError(f"{n} points but k = {k}: give at least k + 1 points or lower k")
    if metric != "euclidean":
        x = _unit_rows(x)
    sq, idx = _exact_knn_squared(x, k, precision, n_candidates, block_rows, stats)
    dist = np.sqrt(sq)
    if metric == "cosine":
        dist = sq / 2.0  # 1 - cos(u, v) = |u - v|^2 / 2 for unit vectors
    elif metric == "angular":
        dist = 2.0 * np.arcsin(np.minimum(dist / 2.0, 1.0))  # chord -> angle, no cancellation
    return dist, idx


def _as_matrix(X: np.ndarray | torch.Tensor) -> torch.Tensor:
    """A 2-D finite float tensor (float32 kept, other dtypes converted to float64)."""
    t = X.detach().cpu() if isinstance(X, torch.Tensor) else torch.from_numpy(np.asarray(X))
    if t.ndim != 2:
        raise InputError(f"expected a 2-D array [points, features], got shape {tuple(t.shape)}")
    if t.shape[0] == 0 or t.shape[1] == 0:
        raise InputError(f"empty array of shape {tuple(t.shape)}: give at least one feature")
    if not (t.dtype.is_floating_point or t.dtype in (torch.int32, torch.int64, torch.int16)):
        raise InputError(f"dtype {t.dtype} is not numeric: convert the data to floats")
    if t.dtype not in (torch.float32, torch.float64):
        t = t.to(torch.float64)
    if not bool(torch.isfinite(t).all()):
        bad = int((~torch.isfinite(t)).any(dim=1).sum())
        raise InputError(f"{bad} rows contain NaN or inf: drop or repair those rows first")
    return t.contiguous()


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
    n = x.shape[0]
    c = min(n - 1, n_candidates if n_candidates is not None else k + max(8, k // 2))
    if c < k:
        raise InputError(f"n_candidates = {c} < k = {k}: use n_candidates >= k")
    xc = _centred(x)
    bound = _ErrorBound(xc, precision)
    sq = torch.empty(n, k, dtype=torch.float64)
    idx = torch.empty(n, k, dtype=torch.int64)
    todo = []
    for start in range(0, n, block_rows):
        r = torch.arange(start, min(n, start + block_rows))
        t0 = time.perf_counter()
        a = bound.approx(r)
        if stats is not None:
            stats.gram_seconds += time.perf_counter() - t0
        a_c, cand = torch.topk(a, c, dim=1, largest=False, sorted=False)
        sq[r], idx[r], kth = _rerank(x, r, cand, k)
        # Every non-candidate j has a_ij >= max(a_c): its true distance is at least that - e_i.
        lower = a_c.max(dim=1).values.to(torch.float64) - bound.error(r)
        todo.append(r[~((lower > kth * (1 + 1e-12)) | (c >= n - 1))])
    todo = torch.cat(todo)
    if stats is not None:
        stats.n_rows += n
        stats.n_candidates = c
        stats.n_fallback += len(todo)
    if len(todo):
        sq[todo], idx[todo] = _fallback(x, xc, todo, k, block_rows)
    return sq.numpy(), idx.numpy()


def _centred(x: torch.Tensor) -> torch.Tensor:
    """Centring (in float64, then rounded once) keeps |x| small relative to the distances."""
    x64 = x.to(torch.float64)
    return (x64 - x64.mean(dim=0, keepdim=True)).to(x.dtype)


class _ErrorBound:
    """Approximate squared distances in one precision, with a rigorous bound on their error.

    a_ij = |x_i|^2 + fl(|x_j|^2 - 2 fl(x~_i . x~_j)) with x~ the centred data rounded to the
    search precision. Rounding the inputs (u_in, twice), the product's output (u_out), its
    accumulation over `dim` terms and the final subtraction give
    |a_ij - d_ij^2| <= c1 |x_i| |x_j| + c2 (|x_i|^2 + |x_j|^2); c1 and c2 carry 2x slack.
    """

    def __init__(self, xc: torch.Tensor, precision: str) -> None:
        self.dtype = PRECISIONS[precision]
        self.acc = torch.float64 if precision == "fp64" else torch.float32
        self.xs = xc.to(self.dtype)
        self.sqn64 = (xc.to(torch.float64) ** 2).sum(dim=1)
        self.sqn = self.sqn64.to(self.acc)
        self.norms = self.sqn64.sqrt()
        u_in = _UNIT[precision] + _U32  # the centring's rounding plus the cast
        u_acc = _U32 if self.acc == torch.float32 else 2.0**-53
        dim = xc.shape[1]
        self.c1 = 2.0 * (2.0 * (2 * u_in + _UNIT[precision] + dim * u_acc) + 4 * u_acc)
        self.c2 = 2.0 * 3 * u_acc
        self.max_norm = float(self.norms.max())
        self.max_sq = float(self.sqn64.max())

    def approx(self, rows: torch.Tensor) -> torch.Tensor:
        """a_ij for the given rows and every column, the point itself set to +inf."""
        g = self.xs[rows] @ self.xs.T
        a = self.sqn[None, :] - 2.0 * g.to(self.acc)
        a += self.sqn[rows, None]
        a[torch.arange(len(rows)), rows] = torch.inf
        return a

    def error(self, rows: torch.Tensor) -> torch.Tensor:
        """Per row, the largest possible error of a_ij over all columns j."""
        return self.c1 * self.norms[rows] * self.max_norm + self.c2 * (
            self.sqn64[rows] + self.max_sq
        )


def _rerank(
    x: torch.Tensor, rows: torch.Tensor, cand: torch.Tensor, k: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Exact distances of the candidates; the k smallest (ties by index) and the k-th value."""
    cand, _ = torch.sort(cand, dim=1)  # index order first, so the stable sort breaks ties by it
    exact = _squared_distances(x, rows[:, None].expand_as(cand), cand)
    exact, order = torch.sort(exact, dim=1, stable=True)
    return exact[:, :k], torch.gather(cand, 1, order[:, :k]), exact[:, k - 1]


def _fallback(
    x: torch.Tensor, xc: torch.Tensor, rows: torch.Tensor, k: int, block_rows: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows the first pass could not prove: float64 search with a provably sufficient set.

    The k-th true distance is at most a_(k) + e, so every true neighbour has a <= a_(k) + 2e:
    taking all those points as candidates needs no further proof (exact ties included).
    """
    bound = _ErrorBound(xc, "fp64")
    sq = torch.empty(len(rows), k, dtype=torch.float64)
    idx = torch.empty(len(rows), k, dtype=torch.int64)
    for start in range(0, len(rows), block_rows):
        r = rows[start : start + block_rows]
        a = bound.approx(r)
        kth = torch.topk(a, k, dim=1, largest=False).values[:, -1]
        limit = kth + 2.0 * bound.error(r)
        width = int((a <= limit[:, None]).sum(dim=1).max())
        _, cand = torch.topk(a, width, dim=1, largest=False, sorted=False)
        sl = slice(start, start + len(r))
        sq[sl], idx[sl], _ = _rerank(x, r, cand, k)
    return sq, idx


def _squared_distances(x: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
    """Float64 |x_i - x_j|^2 for index arrays of equal shape, from difference vectors."""
    i, j = rows.reshape(-1), cols.reshape(-1)
    out = torch.empty(i.shape, dtype=torch.float64)
    step = max(1, (1 << 21) // x.shape[1])  # pairs per chunk: ~16 MB of float64 differences
    for s in range(0, len(i), step):
        diff = x[i[s : s + step]].to(torch.float64) - x[j[s : s + step]].to(torch.float64)
        out[s : s + step] = torch.einsum("ij,ij->i", diff, diff)
    return out.view(cols.shape)
