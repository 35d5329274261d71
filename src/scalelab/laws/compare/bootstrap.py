"""Paired bootstrap over corpora: how sure is a margin in MAE, or a rank correlation?

Why: a source that beats a baseline by 0.016 in MAE on 10 corpora may owe it to one or two
corpora. Resampling the *corpora* (with replacement, the same draw for the source and the
baseline: paired) gives the distribution of the margin MAE_baseline − MAE_source that another
draw of corpora of the same population would give; its 2.5 and 97.5 percentiles are the 95%
interval, and the share of resamples with margin ≤ 0 says how often the source would not win.

Declared before any corpus was scored with it: `N_BOOT` = 10,000 resamples (the percentiles'
Monte Carlo error is then about 1% of the interval's width), seed 0, percentile intervals.
Pure: arrays in, numbers out.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.stats import rankdata

from scalelab.errors import InputError

N_BOOT = 10_000
SEED = 0
LEVEL = 0.95
TIE = 1e-12  # a resampled margin within this of 0 counts as "not above 0"


def resample_indices(n: int, n_boot: int = N_BOOT, seed: int = SEED) -> np.ndarray:
    """(n_boot, n) corpus indices drawn with replacement: one row per resample."""
    if n < 1 or n_boot < 1:
        raise InputError(f"a bootstrap needs at least 1 corpus and 1 resample (got {n}, {n_boot})")
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def _interval(values: np.ndarray, level: float = LEVEL) -> list[float] | None:
    values = values[np.isfinite(values)]
    if len(values) == 0:
        return None
    tail = 100 * (1 - level) / 2
    return [float(v) for v in np.percentile(values, [tail, 100 - tail])]


def mae_margin(
    source_abs_err: Any, baseline_abs_err: Any, idx: np.ndarray, level: float = LEVEL
) -> dict[str, Any]:
    """MAE_baseline − MAE_source (> 0: the source is better) on the corpora as given, its
    percentile interval over the resamples `idx`, and the share of resamples where it is ≤ 0."""
    s, b = np.asarray(source_abs_err, float), np.asarray(baseline_abs_err, float)
    if s.shape != b.shape or s.ndim != 1 or idx.shape[1] != len(s):
        raise InputError("paired errors need one value per corpus on both sides; fix the table")
    gain = b - s
    boot = gain[idx].mean(axis=1)
    return {
        "margin": float(gain.mean()),
        "ci95": _interval(boot, level),
        "p_not_above_0": float(np.mean(boot <= TIE)),
    }


def mae_interval(abs_err: Any, idx: np.ndarray, level: float = LEVEL) -> list[float] | None:
    """Percentile interval of the MAE over the resamples `idx`."""
    return _interval(np.asarray(abs_err, float)[idx].mean(axis=1), level)


def rho_interval(predicted: Any, observed: Any, idx: np.ndarray, level: float = LEVEL) -> dict:
    """Percentile interval of Spearman's rho over the resamples (ties get average ranks); a
    resample where either side is constant has no rho and is left out (their share is
    reported). None when no resample has one."""
    p, o = np.asarray(predicted, float), np.asarray(observed, float)
    pr, orank = rankdata(p[idx], axis=1), rankdata(o[idx], axis=1)
    pc, oc = pr - pr.mean(axis=1, keepdims=True), orank - orank.mean(axis=1, keepdims=True)
    den = np.sqrt((pc * pc).sum(axis=1) * (oc * oc).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where(den > 0, (pc * oc).sum(axis=1) / np.where(den > 0, den, 1.0), np.nan)
    return {
        "ci95": None if len(p) < 3 else _interval(rho, level),
        "undefined_share": float(np.mean(~np.isfinite(rho))),
    }
