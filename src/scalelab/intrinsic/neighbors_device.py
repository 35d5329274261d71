"""Exact k-nearest neighbours on any torch device (CUDA, or CPU for testing the same code).

The CPU search in `neighbors.py` proves each row exact with compiled numba kernels, which a
GPU cannot run. Here every step is a torch op on the device, in float64 (data-centre GPUs
run float64 GEMMs at a large fraction of their float32 speed):

1. candidates: on centred data, `|y|^2 - 2 x.y` for a block of rows against all points, and
   `torch.topk` keeps the C > k smallest per row (float64: cancellation error ~1e-16 |x|^2,
   far below any gap between distinct neighbours of real data);
2. exact re-ranking: float64 `|x - y|^2` from the difference vectors of the candidates, the
   k smallest kept with ties broken by index, as the CPU search does.

So the distances equal the CPU search's to float64 rounding; only exact ties among more than
C points at the k-th place could pick other (equally distant) indices.
"""

from __future__ import annotations

import numpy as np
import torch

_BLOCK_ELEMENTS = 1 << 26  # float64 values per block: 512 MB of distances or differences


def knn_device(
    x: torch.Tensor, k: int, device: torch.device, block_rows: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Squared distances `[n, k]` (float64, ascending) and int64 indices of the k nearest
    other rows of the validated float matrix `x`, computed on `device`."""
    x = x.to(device=device, dtype=torch.float64)
    x = x - x.mean(dim=0)
    n, dim = x.shape
    c = min(n - 1, k + max(8, k // 2))
    sqn = (x * x).sum(dim=1)
    if block_rows is None:
        block_rows = max(1, min(n, _BLOCK_ELEMENTS // max(n, c * dim)))
    sq = torch.empty((n, k), dtype=torch.float64, device=device)
    idx = torch.empty((n, k), dtype=torch.int64, device=device)
    for start in range(0, n, block_rows):
        rows = torch.arange(start, min(n, start + block_rows), device=device)
        a = torch.addmm(sqn[None, :], x[rows], x.T, alpha=-2.0)
        a[torch.arange(len(rows), device=device), rows] = torch.inf  # not its own neighbour
        cand = torch.topk(a, c, dim=1, largest=False).indices
        del a
        cand, _ = torch.sort(cand, dim=1)  # by index first: the stable sort keeps ties so
        diff = x[rows][:, None, :] - x[cand]
        d2 = (diff * diff).sum(dim=2)
        d2, order = torch.sort(d2, dim=1, stable=True)
        sq[rows] = d2[:, :k]
        idx[rows] = torch.gather(cand, 1, order[:, :k])
    return sq.cpu().numpy(), idx.cpu().numpy()
