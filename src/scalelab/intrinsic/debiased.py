"""Two sources of d that take the MLE's batch-size bias into account, on points or on
estimates already made.

Why: the Levina–Bickel MLE reads higher with larger batches (SmolLM2-135M on shakespeare:
18.1 / 19.3 / 20.2 at 2,048 / 4,096 / 8,192 points), so "d at batch 4,096" is a choice, and
the prediction 2/(2+d) moves with it. Two ways to remove the choice, each a separately
declared source:

- `extrapolate_in_batch`: d(b) fitted as `d(b) = d_∞ − c/b` over the batch sizes measured and
  read at b → ∞. Why 1/b: the simplest form with a finite limit, and linear, so two or three
  batch sizes determine it without a starting point. It is conservative: where d rises
  more slowly than 1/b (the k-NN radius argument gives a bias ∝ (k/b)^(2/d), which for
  d ≈ 20 falls as b^-0.1) the 1/b fit reaches its limit too early, so d_∞ is a lower bound
  on the large-batch limit. The log-b slope (change of d per doubling of the batch) is
  reported beside it as a diagnostic, not as a source (it has no limit).
- `calibrated_in_batches`: the calibrated MLE (`CalibratedMLE`, simulation on uniform balls
  of the same size) on the protocol's batches; its bias correction is per batch size.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from scalelab.errors import InputError
from scalelab.intrinsic import PAPER_BATCH_SIZE


def extrapolate_in_batch(batch_sizes: Any, dims: Any) -> dict[str, Any]:
    """Least squares of d on 1/b: `d_inf` (the intercept), `c` (d_inf − d(b) = c/b), the
    fitted values and residuals, and the slope of d per doubling of b (least squares on
    log2 b). Needs at least two distinct batch sizes."""
    b = np.asarray(batch_sizes, dtype=np.float64)
    d = np.asarray(dims, dtype=np.float64)
    if b.shape != d.shape or b.ndim != 1 or not np.all(np.isfinite(d)) or np.any(b <= 0):
        raise InputError("batch sizes and d must be equal-length lists, b > 0, d finite")
    if np.unique(b).size < 2:
        raise InputError(
            f"d at {np.unique(b).size} batch size(s): extrapolation needs at least 2; the "
            "corpus has too few points for more than one batch size"
        )
    x = 1.0 / b
    xc = x - x.mean()
    slope = float(xc @ (d - d.mean()) / (xc @ xc))
    d_inf = float(d.mean() - slope * x.mean())
    fitted = d_inf + slope * x
    lb = np.log2(b) - np.log2(b).mean()
    return {
        "model": "d(b) = d_inf - c/b (least squares on 1/b)",
        "d_inf": d_inf,
        "c": -slope,
        "batch_sizes": b.tolist(),
        "dims": d.tolist(),
        "fitted": fitted.tolist(),
        "residuals": (d - fitted).tolist(),
        "per_doubling": float(lb @ (d - d.mean()) / (lb @ lb)),
    }


def batch_points(sensitivity: list[dict[str, Any]], k: int) -> tuple[list[int], list[float]]:
    """(batch sizes, d) of the sensitivity rows measured with `k` (`scalelab.probe.references`
    writes them: batch sizes 2,048 / 4,096 / 8,192 or all points, at the protocol's K)."""
    rows = sorted((r for r in sensitivity if r["k"] == k), key=lambda r: r["batch_size"])
    return [int(r["batch_size"]) for r in rows], [float(r["dimension"]) for r in rows]


def calibrated_in_batches(
    points: np.ndarray, batch_size: int = PAPER_BATCH_SIZE, *, k: int = 5, seed: int = 0
) -> dict[str, Any]:
    """The calibrated MLE (its defaults: K = 5, harmonic mean) on seeded batches of
    `batch_size` points: d = mean over batches ± SE, as the protocol reports the plain MLE."""
    from scalelab.intrinsic.calibrated import CalibratedMLE
    from scalelab.intrinsic.protocol import estimate_in_batches

    n = len(points)
    est = estimate_in_batches(
        points, CalibratedMLE(k=k, seed=seed), batch_size=min(batch_size, n), seed=seed
    )
    return est.to_dict()
