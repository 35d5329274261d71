"""Exact k-nearest neighbours: the one entry point (`knn`), its validation, and which search
runs where.

Three searches return the same neighbours and the same float64 distances (each equals a
float64 brute-force reference built from difference vectors, to rounding); the choice is
explicit, never guessed from the data:

- `neighbors_numpy`, float32 Gram products in numpy, no torch: the CPU search by default
  (`precision="auto"` or "fp32"; "fp64" for float64 products);
- `neighbors_bf16`, bf16 Gram products in torch: the CPU search with `precision="bf16"`;
- `neighbors_device`, float64 torch ops on a device: with `device="cuda"` (CLI `--device`),
  or when the points are a torch tensor on a GPU.

Why the CPU default avoids torch: importing torch costs about 1.4 s, more than the whole
search on two batches of 4096 x 768 points, and the float32 search multiplies each pair once
(the Gram matrix is symmetric), which offsets bf16's faster products (docs/benchmarks.md).
bf16 pays off only where its products are much faster than float32 (CPUs with AMX) on inputs
large enough to amortise the import. The two CPU searches share their compiled re-ranking
kernel, so their distances agree bit for bit.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from scalelab.errors import InputError
from scalelab.intrinsic import neighbors_numpy

METRICS = ("euclidean", "cosine", "angular")
PRECISIONS = ("auto", "fp32", "fp64", "bf16")
_BLOCK_ELEMENTS = 1 << 24  # approximate distances per block of the bf16 search (32 MB)


@dataclass
class SearchStats:
    """How the search went (for benchmarks and tests): rows searched, candidates per row,
    rows that needed the fallback, seconds in the Gram products, the precision it ended in."""

    n_rows: int = 0
    n_candidates: int = 0
    n_fallback: int = 0
    gram_seconds: float = 0.0
    precision: str = ""

    def record(self, n_rows: int, n_candidates: int, n_fallback: int, precision: str) -> None:
        """Add one search's outcome (a batch of `n_rows` rows)."""
        self.n_rows += n_rows
        self.n_candidates = n_candidates
        self.n_fallback += n_fallback
        self.precision = precision


def knn(
    X: Any,
    k: int,
    metric: str = "euclidean",
    *,
    precision: str = "auto",
    n_candidates: int | None = None,
    block_rows: int | None = None,
    stats: SearchStats | None = None,
    device: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The k nearest neighbours of every row of `X` (numpy array or torch tensor) among the
    other rows.

    Returns `(dist, idx)`: float64 distances `[n, k]` in ascending order and int64 indices, the
    point itself excluded. `metric`: "euclidean"; "cosine" (1 - cos, as sklearn defines it);
    "angular" (the angle in radians between the vectors). `precision` picks the CPU search's
    products ("auto" = "fp32": numpy, no torch; "fp64": numpy float64; "bf16": torch); the
    result is exact either way (see the module docstring). `device` ("cuda", "cuda:1", "cpu";
    default: the device of a torch tensor `X`, else the CPU search) runs the search as torch
    float64 ops there (`neighbors_device`; `precision` then does not apply). `block_rows` sets
    the rows per product of the bf16 and device searches.
    """
    if metric not in METRICS:
        raise InputError(f"unknown metric {metric!r}: use one of {', '.join(METRICS)}")
    if precision not in PRECISIONS:
        raise InputError(f"unknown precision {precision!r}: use one of {', '.join(PRECISIONS)}")
    target = _target_device(X, device)
    x = as_matrix(X)
    n = x.shape[0]
    if k < 1:
        raise InputError(f"k = {k}: use k >= 1")
    if n < k + 1:
        raise InputError(f"{n} points but k = {k}: give at least k + 1 points or lower k")
    if metric != "euclidean":
        x = _unit_rows(x)
    if target is not None:
        import torch

        from scalelab.intrinsic.neighbors_device import knn_device

        sq, idx = knn_device(torch.from_numpy(x), k, target, block_rows)
    else:
        sq, idx = _cpu_search(x, k, precision, n_candidates, block_rows, stats)
    dist = np.sqrt(sq)
    if metric == "cosine":
        dist = sq / 2.0  # 1 - cos(u, v) = |u - v|^2 / 2 for unit vectors
    elif metric == "angular":
        dist = 2.0 * np.arcsin(np.minimum(dist / 2.0, 1.0))  # chord -> angle, no cancellation
    return dist, idx


def _cpu_search(
    x: np.ndarray,
    k: int,
    precision: str,
    n_candidates: int | None,
    block_rows: int | None,
    stats: SearchStats | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Squared distances and indices from the CPU search that `precision` names."""
    n = x.shape[0]
    if n_candidates is None:  # a few more than k; bf16's looser error bound needs more
        n_candidates = k + (max(8, k // 2) if precision == "bf16" else max(4, k // 5))
    c = min(n - 1, n_candidates)
    if c < k:
        raise InputError(f"n_candidates = {c} < k = {k}: use n_candidates >= k")
    if precision == "bf16":
        from scalelab.intrinsic.neighbors_bf16 import exact_knn_squared

        if block_rows is None:  # fewer, larger products: ~32 MB of bf16 distances per block
            block_rows = max(256, min(n, _BLOCK_ELEMENTS // n))
        return exact_knn_squared(x, k, c, block_rows, stats)
    products = "fp64" if precision == "fp64" else "fp32"
    return neighbors_numpy.exact_knn_squared(x, k, c, products, stats)


def is_tensor(X: Any) -> bool:
    """Whether `X` is a torch tensor, without importing torch (no torch, no tensors)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(X, torch.Tensor)


def _target_device(X: Any, device: Any) -> Any:
    """The torch device of the device search, or None for the CPU search."""
    if device is None:
        on = X.device if is_tensor(X) else None
        return on if on is not None and on.type != "cpu" else None
    import torch

    try:
        target = torch.device(device)
    except RuntimeError as err:
        raise InputError(f"unknown device {device!r} ({err}): use cpu, cuda or cuda:N") from None
    if target.type == "cuda" and not torch.cuda.is_available():
        raise InputError(f"device {device!r}: CUDA is not available here; use --device cpu")
    return target


def as_matrix(X: Any) -> np.ndarray:
    """A 2-D finite float array, C-contiguous (float32 kept, other numbers as float64)."""
    if is_tensor(X):
        X = X.detach().cpu()
        X = (X.float() if str(X.dtype) in ("torch.bfloat16", "torch.float16") else X).numpy()
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
    if not np.isfinite(x.max()) or not np.isfinite(x.min()):  # cheap: no boolean copy
        bad = int((~np.isfinite(x)).any(axis=1).sum())
        raise InputError(f"{bad} rows contain NaN or inf: drop or repair those rows first")
    return np.ascontiguousarray(x)


def _unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length in float64 (cosine/angular distances need non-zero rows)."""
    x64 = x.astype(np.float64)
    norms = np.sqrt(np.einsum("ij,ij->i", x64, x64))[:, None]
    if (norms == 0).any():
        raise InputError(
            f"{int((norms == 0).sum())} all-zero rows have no direction: "
            "drop them or use metric 'euclidean'"
        )
    return x64 / norms
