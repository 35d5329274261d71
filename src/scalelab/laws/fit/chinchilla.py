"""The joint law `L = E + A/N^α + B/D^β` as Hoffmann et al. (2022) and the Epoch replication
(Besiroglu et al. 2024): summed Huber loss (δ = 1e-3) of log-space residuals through
log-sum-exp, L-BFGS from their grid of 4500 starts, all run as one batch; its compute-optimal
allocation and its held-out extrapolation check. The interval resamples points, as Epoch did.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scalelab.config import Record
from scalelab.errors import EstimationError, InputError
from scalelab.laws.fit.batched_lbfgs import minimize_batched
from scalelab.laws.fit.inputs import check_nld
from scalelab.laws.fit.power_law import holdout_summary

# Epoch's grid: alpha, beta in {0, 0.5, ..., 2}; e in {-1, -0.5, ..., 1}; a, b in {0, 5, ..., 25}.
EPOCH_GRID: dict[str, tuple[float, ...]] = {
    "a": (0.0, 5.0, 10.0, 15.0, 20.0, 25.0),
    "b": (0.0, 5.0, 10.0, 15.0, 20.0, 25.0),
    "e": (-1.0, -0.5, 0.0, 0.5, 1.0),
    "alpha": (0.0, 0.5, 1.0, 1.5, 2.0),
    "beta": (0.0, 0.5, 1.0, 1.5, 2.0),
}


def compute_optimal(
    compute: Any, A: float, B: float, alpha: float, beta: float
) -> tuple[np.ndarray, np.ndarray]:
    """N_opt, D_opt minimising `A/N^α + B/D^β` subject to C = 6·N·D (closed form):
    N_opt = G·(C/6)^(β/(α+β)), D_opt = G⁻¹·(C/6)^(α/(α+β)), G = (αA/(βB))^(1/(α+β))."""
    c6 = np.asarray(compute, dtype=np.float64) / 6.0
    s = alpha + beta
    g = (alpha * A / (beta * B)) ** (1.0 / s)
    return g * c6 ** (beta / s), c6 ** (alpha / s) / g


@dataclass(frozen=True)
class ChinchillaFit(Record):
    """`L(N, D) = E + A/N^alpha + B/D^beta` fitted by summed Huber loss on log L.

    `objective` is the summed Huber loss at the optimum (Epoch: 0.00101827 on their data);
    `se`/`ci95` are point-bootstrap standard errors and percentile intervals per parameter.
    """

    A: float
    B: float
    E: float
    alpha: float
    beta: float
    objective: float
    n_points: int
    n_starts: int
    delta: float
    n_boot: int = 0
    n_boot_used: int = 0
    seed: int = 0
    se: dict[str, float] = field(default_factory=dict)
    ci95: dict[str, list[float]] = field(default_factory=dict)
    form: str = "chinchilla"  # beside `PowerLawFit.form`: a saved fit says which law it is

    def predict(self, N: Any, D: Any) -> np.ndarray:
        N, D = np.asarray(N, dtype=np.float64), np.asarray(D, dtype=np.float64)
        return self.E + self.A / N**self.alpha + self.B / D**self.beta

    def compute_optimal(self, compute: Any) -> tuple[np.ndarray, np.ndarray]:
        return compute_optimal(compute, self.A, self.B, self.alpha, self.beta)


def epoch_starts(grid: dict[str, tuple[float, ...]] = EPOCH_GRID) -> np.ndarray:
    """All (a, b, e, alpha, beta) combinations of the grid (4500 for Epoch's)."""
    return np.array(list(itertools.product(*(grid[k] for k in ("a", "b", "e", "alpha", "beta")))))


def _chinchilla_solve(
    log_n: np.ndarray,
    log_d: np.ndarray,
    log_l: np.ndarray,
    weights: np.ndarray,
    starts: np.ndarray,
    delta: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Minimise from every start for every weight row; returns all endpoints and objectives
    shaped [n_weight_rows, n_starts, 5] and [n_weight_rows, n_starts]."""
    n_w, n_s = weights.shape[0], starts.shape[0]
    data_row = np.repeat(np.arange(n_w), n_s)

    def objective(theta: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a, b, e, alpha, beta = (theta[:, i : i + 1] for i in range(5))
        t1, t2 = a - alpha * log_n, b - beta * log_d
        top = np.maximum(np.maximum(t1, t2), e)
        p1, p2, p3 = np.exp(t1 - top), np.exp(t2 - top), np.exp(e - top)
        total = p1 + p2 + p3
        r = log_l - (top + np.log(total))
        w = weights[data_row[rows]]
        absr = np.abs(r)
        hub = np.where(absr <= delta, 0.5 * r * r, delta * (absr - 0.5 * delta))
        dh = -w * np.clip(r, -delta, delta) / total  # d loss / d LSE, over the softmax sum
        g1, g2, g3 = (dh * p1).sum(1), (dh * p2).sum(1), (dh * p3).sum(1)
        grad = np.stack([g1, g2, g3, -(dh * p1 * log_n).sum(1), -(dh * p2 * log_d).sum(1)], axis=1)
        return (w * hub).sum(1), grad

    # scipy's relative-decrease test uses max(|f|, 1) as the scale; with f ~ 1e-3 that stops
    # restarts near kinks of the (nearly L1) objective early, so ask for a tighter decrease.
    res = minimize_batched(objective, np.tile(starts, (n_w, 1)), max_iter=1000, ftol=1e-12)
    return res.x.reshape(n_w, n_s, 5), res.fun.reshape(n_w, n_s)


def _to_named(theta: np.ndarray) -> dict[str, np.ndarray]:
    a, b, e, alpha, beta = np.moveaxis(theta, -1, 0)
    return {"A": np.exp(a), "B": np.exp(b), "E": np.exp(e), "alpha": alpha, "beta": beta}


def fit_chinchilla(
    N: Any,
    D: Any,
    L: Any,
    *,
    delta: float = 1e-3,
    n_boot: int = 0,
    seed: int = 0,
    starts: np.ndarray | None = None,
    boot_starts: int = 8,
) -> ChinchillaFit:
    """Fit `L = E + A/N^α + B/D^β` (N parameters, D tokens, L loss) from a grid of starts.

    The objective is the SUM over points of Huber(δ) of `log L − LSE(a − α log N,
    b − β log D, e)` (averaging makes L-BFGS stop early: a known trap). Bootstrap resamples
    points (as multiplicity weights) and restarts from the `boot_starts` best full-data
    endpoints.
    """
    n_arr, d_arr, l_arr = check_nld(N, D, L)
    if n_arr.size < 6:
        raise InputError(f"{n_arr.size} point(s) given; the 5-parameter fit needs at least 6")
    if np.unique(n_arr).size < 2 or np.unique(d_arr).size < 2:
        raise InputError("N and D must each take at least two distinct values")
    if n_boot < 0 or delta <= 0:
        raise InputError(f"need n_boot >= 0 and delta > 0, got {n_boot} and {delta}")
    start_grid = epoch_starts() if starts is None else np.asarray(starts, dtype=np.float64)
    logs = np.log(n_arr), np.log(d_arr), np.log(l_arr)
    n = n_arr.size
    ends, objs = _chinchilla_solve(*logs, np.ones((1, n)), start_grid, delta)
    ends, objs = ends[0], objs[0]
    order = np.argsort(objs)
    best = ends[order[0]]
    if not np.isfinite(objs[order[0]]):
        raise EstimationError("the joint fit did not converge from any start")
    named = {k: float(v) for k, v in _to_named(best).items()}
    se: dict[str, float] = {}
    ci: dict[str, list[float]] = {}
    used = 0
    if n_boot > 0:
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, n, size=(n_boot, n))
        weights = np.zeros((n_boot, n))
        np.add.at(weights, (np.repeat(np.arange(n_boot), n), idx.ravel()), 1.0)
        b_ends, b_objs = _chinchilla_solve(
            *logs, weights, ends[order[: max(1, boot_starts)]], delta
        )
        pick = np.argmin(b_objs, axis=1)
        b_best = _to_named(b_ends[np.arange(n_boot), pick])
        ok = np.isfinite(b_objs[np.arange(n_boot), pick])
        used = int(ok.sum())
        for k, v in b_best.items():
            se[k] = float(np.std(v[ok], ddof=1))
            ci[k] = [float(q) for q in np.quantile(v[ok], [0.025, 0.975])]
    return ChinchillaFit(
        **named,
        objective=float(objs[order[0]]),
        n_points=n,
        n_starts=int(start_grid.shape[0]),
        delta=delta,
        n_boot=n_boot,
        n_boot_used=used,
        seed=seed,
        se=se,
        ci95=ci,
    )


@dataclass(frozen=True)
class ChinchillaExtrapolation(Record):
    """`Extrapolation` for the joint law: held out are the largest-compute (N, D) points."""

    form: str
    holdout: int
    n_fit: int
    N_heldout: list[float]
    D_heldout: list[float]
    observed: list[float]
    predicted: list[float]
    rel_error: list[float]
    max_abs_rel_error: float
    fit: ChinchillaFit


def chinchilla_extrapolation_check(
    N: Any, D: Any, L: Any, *, holdout: int = 1, **fit_kwargs: Any
) -> ChinchillaExtrapolation:
    """Fit the joint law without the `holdout` largest-compute (6·N·D) points; report the
    error predicting them."""
    n_arr, d_arr, l_arr = check_nld(N, D, L)
    if holdout < 1 or n_arr.size - holdout < 6:
        raise InputError(
            f"holdout={holdout} leaves {n_arr.size - holdout} points; the joint fit needs 6"
        )
    order = np.argsort(6.0 * n_arr * d_arr, kind="stable")
    train, test = order[:-holdout], order[-holdout:]
    fit = fit_chinchilla(n_arr[train], d_arr[train], l_arr[train], **fit_kwargs)
    return ChinchillaExtrapolation(
        form="chinchilla",
        holdout=holdout,
        n_fit=int(train.size),
        N_heldout=n_arr[test].tolist(),
        D_heldout=d_arr[test].tolist(),
        **holdout_summary(l_arr[test], fit.predict(n_arr[test], d_arr[test])),
        fit=fit,
    )
