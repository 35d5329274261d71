"""Points to an intrinsic dimension and the exponents it predicts: the batch protocol
(`scalelab.intrinsic.protocol`) followed by the theory (`scalelab.laws.theory`).

One function for both users, so they cannot drift apart: `scalelab id` (any point cloud) and
`estimate_dimension` (a language model's embeddings). No torch here: `scalelab id` on the CPU
search does not load it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from scalelab.intrinsic import PAPER_BATCH_SIZE
from scalelab.intrinsic.protocol import BatchedEstimate, estimate_in_batches
from scalelab.laws.theory import predict_exponents

if TYPE_CHECKING:  # annotations only
    import torch


def exponents_of(est: BatchedEstimate, beta: float = 1.0) -> dict[str, Any]:
    """alpha_D and alpha_N of a batched estimate, with delta-method SEs and 95% intervals.

    One batch has no standard error, so its exponents have none either: their SEs and
    intervals are None (not a spurious zero-width interval)."""
    se = est.dimension_se if math.isfinite(est.dimension_se) else None
    pred = predict_exponents(est.dimension, 0.0 if se is None else se, beta)
    out = {k: v for k, v in pred.items() if k.startswith("alpha")}
    if se is None:
        out = {k: (None if k.endswith(("_se", "_ci95")) else v) for k, v in out.items()}
    return out


def dimension_and_exponents(
    points: np.ndarray | torch.Tensor,
    estimator: Any,
    *,
    batch_size: int = PAPER_BATCH_SIZE,
    seed: int = 0,
    beta: float = 1.0,
    quiet: bool = True,
) -> dict[str, Any]:
    """`estimator` (e.g. `make_estimator("mle")`) on batches of `points`, then the exponents:
    the fields of `BatchedEstimate.to_dict()` followed by those of `exponents_of`."""
    est = estimate_in_batches(points, estimator, batch_size=batch_size, seed=seed, quiet=quiet)
    return {**est.to_dict(), **exponents_of(est, beta)}
