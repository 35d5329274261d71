"""Points to an intrinsic dimension and the exponents it predicts: the batch protocol
(`scalelab.intrinsic.protocol`) followed by the theory (`scalelab.laws.theory`).

One function for both users, so they cannot drift apart: `scalelab id` (any point cloud) and
`estimate_dimension` (a language model's embeddings). No torch here: `scalelab id` on the CPU
search does not load it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from scalelab.config import Record
from scalelab.intrinsic import PAPER_BATCH_SIZE
from scalelab.intrinsic.protocol import BatchedEstimate, estimate_in_batches
from scalelab.laws.theory import Exponents, predict_exponents

if TYPE_CHECKING:  # annotations only
    import torch


def exponents_of(est: BatchedEstimate, beta: float = 1.0) -> Exponents:
    """alpha_D and alpha_N of a batched estimate, with delta-method SEs and 95% intervals.

    One batch has no standard error, so its exponents have none either: their SEs and
    intervals are None (not a spurious zero-width interval)."""
    if not math.isfinite(est.dimension_se):
        return predict_exponents(est.dimension, 0.0, beta).without_se()
    return predict_exponents(est.dimension, est.dimension_se, beta)


@dataclass(frozen=True)
class Dimension(Record):
    """A batched estimate of d and the exponents it predicts. Saved flat, as `scalelab id`
    writes it: the estimate's keys, then the exponents' (`alpha_*`), then, where a language
    model's points were measured (`estimate_dimension`), the time and the k-NN device."""

    estimate: BatchedEstimate
    exponents: Exponents
    wall_s: float | None = None
    knn_device: str | None = None

    @property
    def d(self) -> float:
        return self.estimate.dimension

    @property
    def d_se(self) -> float | None:
        """The standard error over batches; None from one batch (as saved)."""
        se = self.estimate.dimension_se
        return se if math.isfinite(se) else None

    @property
    def n_batches(self) -> int:
        return len(self.estimate.batch_dimensions)

    def to_dict(self) -> dict[str, Any]:
        out = {**self.estimate.to_dict(), **self.exponents.alphas()}
        if self.wall_s is not None:
            out["estimate_wall_s"] = self.wall_s
        if self.knn_device is not None:
            out["knn_device"] = self.knn_device
        return out


def dimension_and_exponents(
    points: np.ndarray | torch.Tensor,
    estimator: Any,
    *,
    batch_size: int = PAPER_BATCH_SIZE,
    seed: int = 0,
    beta: float = 1.0,
    quiet: bool = True,
) -> Dimension:
    """`estimator` (e.g. `make_estimator("mle")`) on batches of `points`, then the exponents."""
    est = estimate_in_batches(points, estimator, batch_size=batch_size, seed=seed, quiet=quiet)
    return Dimension(est, exponents_of(est, beta))
