"""Scaling-law fits with bootstrap intervals.

- `fit_power_law(x, y, form="power")`: least squares of log y on log x, the fit the
  intrinsic-dimension paper reports (no irreducible term).
- `fit_power_law(x, y, form="power+E")`: `y = E + A·x^-α` by least squares on log y, from a
  grid of starts, with `0 <= E < min y`.
- `fit_chinchilla(N, D, L)`: `L = E + A/N^α + B/D^β` as Hoffmann et al. (2022) and the Epoch
  replication (Besiroglu et al. 2024): summed Huber loss (δ = 1e-3) of log-space residuals
  through log-sum-exp, L-BFGS from their grid of 4500 starts, all run as one batch.

The sizes of a sweep are a designed grid, so the one-variable intervals resample residuals
(fixed design) rather than points; the joint fit resamples points, as Epoch did.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import expit

from scalelab.config import Record
from scalelab.errors import EstimationError, InputError
from scalelab.laws.batched_lbfgs import minimize_batched
from scalelab.laws.fitted import PowerLawFit

FORMS = ("power", "power+E")

# Epoch's grid: alpha, beta in {0, 0.5, ..., 2}; e in {-1, -0.5, ..., 1}; a, b in {0, 5, ..., 25}.
EPOCH_GRID: dict[str, tuple[float, ...]] = {
    "a": (0.0, 5.0, 10.0, 15.0, 20.0, 25.0),
    "b": (0.0, 5.0, 10.0, 15.0, 20.0, 25.0),
    "e": (-1.0, -0.5, 0.0, 0.5, 1.0),
    "alpha": (0.0, 0.5, 1.0, 1.5, 2.0),
    "beta": (0.0, 0.5, 1.0, 1.5, 2.0),
}

# Starts for power+E: exponents, and E as a fraction of min(y) (A then follows in closed form).
_PE_ALPHAS = (0.05, 0.1, 0.2, 0.4, 0.7, 1.0, 1.5, 2.5)
_PE_FRACTIONS = (0.01, 0.25, 0.5, 0.75, 0.9, 0.99)
_PE_BOOT_ALPHAS = (0.1, 0.3, 0.6, 1.0, 2.0)
_PE_BOOT_FRACTIONS = (0.05, 0.5, 0.9)


def _as_positive(values: Any, name: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise InputError(f"{name} must be numbers ({err}); fix the column values") from None
    if arr.ndim != 1:
        raise InputError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        bad = int(np.sum(~np.isfinite(arr) | (arr <= 0)))
        raise InputError(
            f"{name} has {bad} non-positive or non-finite value(s); a log-log fit needs "
            "positive finite numbers: drop or fix those rows"
        )
    return arr


def _check_xy(x: Any, y: Any, min_points: int, names: tuple[str, str] = ("x", "y")):
    xa, ya = _as_positive(x, names[0]), _as_positive(y, names[1])
    if xa.shape != ya.shape:
        raise InputError(f"{names[0]} and {names[1]} differ in length ({xa.size} vs {ya.size})")
    if xa.size < min_points:
        raise InputError(
            f"{xa.size} point(s) given; this fit needs at least {min_points}: add runs"
        )
    if np.unique(xa).size < 2:
        raise InputError(f"all {names[0]} values are equal; a fit needs at least two sizes")
    return xa, ya


def fit_power_law(
    x: Any, y: Any, *, form: str = "power", n_boot: int = 1000, seed: int = 0
) -> PowerLawFit:
    """Fit a decreasing power law to positive `(x, y)` pairs with a seeded bootstrap CI."""
    if form not in FORMS:
        raise InputError(f"unknown form {form!r}; choose one of {', '.join(FORMS)}")
    if n_boot < 0:
        raise InputError(f"n_boot must be >= 0, got {n_boot}")
    xa, ya = _check_xy(x, y, 3 if form == "power" else 4)
    rng = np.random.default_rng(seed)
    if form == "power":
        return _fit_power(xa, ya, n_boot, rng, seed)
    return _fit_power_e(xa, ya, n_boot, rng, seed)


def _fit_power(x: np.ndarray, y: np.ndarray, n_boot: int, rng, seed: int) -> PowerLawFit:
    lx, ly = np.log(x), np.log(y)
    n = lx.size
    xc = lx - lx.mean()
    sxx = float(xc @ xc)
    slope = float(xc @ ly) / sxx
    intercept = float(ly.mean() - slope * lx.mean())
    fitted = intercept + slope * lx
    resid = ly - fitted
    se = math.sqrt(float(resid @ resid) / max(n - 2, 1) / sxx)
    ci, boot_se, used = (-slope, -slope), math.nan, 0
    if n_boot > 0 and se > 0:
        # Leverage-corrected, centred residuals resampled onto the fitted line.
        lev = 1.0 / n + xc**2 / sxx
        adj = resid / np.sqrt(np.clip(1.0 - lev, 1e-12, None))
        adj -= adj.mean()
        ystar = fitted + adj[rng.integers(0, n, size=(n_boot, n))]
        b = (ystar @ xc) / sxx
        r = ystar - ystar.mean(1, keepdims=True) - b[:, None] * xc
        se_b = np.sqrt((r * r).sum(1) / max(n - 2, 1) / sxx)
        ok = se_b > 0
        t = (b[ok] - slope) / se_b[ok]
        lo_t, hi_t = np.quantile(t, [0.025, 0.975])
        # slope CI = [slope - hi_t·se, slope - lo_t·se]; exponent = -slope.
        ci = (-(slope - lo_t * se), -(slope - hi_t * se))
        boot_se, used = float(np.std(b[ok], ddof=1)), int(ok.sum())
    return PowerLawFit(
        form="power",
        exponent=-slope,
        exponent_ci95=(float(ci[0]), float(ci[1])),
        A=math.exp(intercept),
        E=None,
        n_points=n,
        exponent_se=boot_se,
        rmse_log=float(np.sqrt(np.mean(resid**2))),
        n_boot=n_boot,
        n_boot_used=used,
        seed=seed,
        ci_method="studentized residual bootstrap",
        x_range=(float(x.min()), float(x.max())),
    )


def _pe_pred_jac(theta: np.ndarray, lx: np.ndarray, log_m: float) -> tuple[np.ndarray, np.ndarray]:
    """log(E + A·x^-α) and its Jacobian, θ = (log A, u, α), E = min(y)·sigmoid(u) so that
    0 < E < min(y). Rows of θ are independent problems: shapes [R, n] and [R, n, 3]."""
    log_a, u, alpha = theta[:, 0:1], theta[:, 1:2], theta[:, 2:3]
    log_e = log_m - np.logaddexp(0.0, -u)
    t = log_a - alpha * lx
    pred = np.logaddexp(log_e, t)
    w = np.exp(t - pred)  # share of the power term in E + A·x^-α
    d_u = (1.0 - w) * expit(-u)  # d log E / du = sigmoid(-u)
    return pred, np.stack([w, d_u, -w * lx], axis=2)


def _pe_starts(lx: np.ndarray, ly: np.ndarray, alphas, fractions) -> np.ndarray:
    """Grid over (α, E/min y); log A by least squares given both (closed form)."""
    m = float(np.exp(ly.min()))
    rows = []
    for alpha, frac in itertools.product(alphas, fractions):
        log_a = float(np.mean(np.log(np.exp(ly) - frac * m) + alpha * lx))
        rows.append((log_a, math.log(frac / (1.0 - frac)), alpha))
    return np.array(rows)


def _pe_solve(
    lx: np.ndarray, ly_rows: np.ndarray, starts: np.ndarray, log_m: float, max_iter: int = 200
) -> tuple[np.ndarray, np.ndarray]:
    """Best of `starts` for each row of `ly_rows` (one data vector per row): (θ, sse).

    Levenberg-Marquardt on all (row, start) pairs at once: a 3-parameter least-squares
    problem converges in tens of steps, where first-order methods crawl along the E-α ridge.
    """
    n_data, n_starts = ly_rows.shape[0], starts.shape[0]
    ly = np.repeat(ly_rows, n_starts, axis=0)
    theta = np.tile(starts, (n_data, 1))
    pred, jac = _pe_pred_jac(theta, lx, log_m)
    r = ly - pred
    sse = np.einsum("rn,rn->r", r, r)
    lam = np.full(theta.shape[0], 1e-3)
    eye = np.eye(3)
    for _ in range(max_iter):
        h = np.einsum("rni,rnj->rij", jac, jac)
        g = np.einsum("rni,rn->ri", jac, r)
        damp = lam[:, None, None] * (h * eye + 1e-12 * eye)
        step = np.linalg.solve(h + damp, g[:, :, None])[:, :, 0]
        trial = theta + step
        p_new, j_new = _pe_pred_jac(trial, lx, log_m)
        r_new = ly - p_new
        sse_new = np.einsum("rn,rn->r", r_new, r_new)
        better = sse_new < sse
        gain = np.where(better, (sse - sse_new) / np.maximum(sse, 1e-300), 0.0)
        theta[better], r[better], jac[better] = trial[better], r_new[better], j_new[better]
        sse = np.where(better, sse_new, sse)
        lam = np.where(better, lam / 3.0, lam * 2.0)
        if np.all((better & (gain < 1e-12)) | (lam > 1e12) | (sse < 1e-28)):
            break
    sse = np.where(np.isfinite(sse), sse, np.inf).reshape(n_data, n_starts)
    best = np.argmin(sse, axis=1)
    theta = theta.reshape(n_data, n_starts, 3)[np.arange(n_data), best]
    return theta, sse[np.arange(n_data), best]


def _fit_power_e(x: np.ndarray, y: np.ndarray, n_boot: int, rng, seed: int) -> PowerLawFit:
    lx, ly = np.log(x), np.log(y)
    n = lx.size
    log_m = float(ly.min())
    starts = _pe_starts(lx, ly, _PE_ALPHAS, _PE_FRACTIONS)
    theta, _ = _pe_solve(lx, ly[None, :], starts, log_m)
    theta = theta[0]
    if not np.all(np.isfinite(theta)):
        raise EstimationError("the power+E fit did not converge; try form='power'")
    fitted = _pe_pred_jac(theta[None, :], lx, log_m)[0][0]
    resid = ly - fitted
    exponent = float(theta[2])
    ci, boot_se, used = (exponent, exponent), math.nan, 0
    if n_boot > 0 and np.any(np.abs(resid) > 0):
        adj = (resid - resid.mean()) * math.sqrt(n / (n - 3))
        ystar = fitted + adj[rng.integers(0, n, size=(n_boot, n))]
        # Each resample starts from the full-data optimum and a coarse grid; E keeps the cap
        # min(y) of the observed data.
        coarse = _pe_starts(lx, ly, _PE_BOOT_ALPHAS, _PE_BOOT_FRACTIONS)
        boot_starts = np.vstack([theta[None, :], coarse])
        bt, _ = _pe_solve(lx, ystar, boot_starts, log_m)
        a = bt[:, 2]
        a = a[np.isfinite(a)]
        if a.size >= 2:
            lo, hi = np.quantile(a, [0.025, 0.975])
            ci, boot_se, used = (float(lo), float(hi)), float(np.std(a, ddof=1)), int(a.size)
    e_val = float(math.exp(log_m) * expit(theta[1]))
    return PowerLawFit(
        form="power+E",
        exponent=exponent,
        exponent_ci95=ci,
        A=float(math.exp(theta[0])),
        E=e_val,
        n_points=n,
        exponent_se=boot_se,
        rmse_log=float(np.sqrt(np.mean(resid**2))),
        n_boot=n_boot,
        n_boot_used=used,
        seed=seed,
        ci_method="percentile residual bootstrap",
        x_range=(float(x.min()), float(x.max())),
    )


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


def _check_nld(N: Any, D: Any, L: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n_arr = _as_positive(N, "N (parameters)")
    d_arr = _as_positive(D, "D (tokens)")
    l_arr = _as_positive(L, "L (loss)")
    if not n_arr.size == d_arr.size == l_arr.size:
        raise InputError(f"N, D and L differ in length ({n_arr.size}, {d_arr.size}, {l_arr.size})")
    return n_arr, d_arr, l_arr


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
    n_arr, d_arr, l_arr = _check_nld(N, D, L)
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
class Extrapolation(Record):
    """A power-law fit without the `holdout` largest x, beside its error predicting them
    (`rel_error` = (predicted - observed) / observed, one per held-out point)."""

    form: str
    holdout: int
    n_fit: int
    x_heldout: list[float]
    observed: list[float]
    predicted: list[float]
    rel_error: list[float]
    max_abs_rel_error: float
    fit: PowerLawFit


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


def _holdout_summary(observed: np.ndarray, predicted: np.ndarray) -> dict[str, Any]:
    """The error fields both extrapolation records share."""
    rel = (predicted - observed) / observed
    return {
        "observed": observed.tolist(),
        "predicted": predicted.tolist(),
        "rel_error": rel.tolist(),
        "max_abs_rel_error": float(np.max(np.abs(rel))),
    }


def extrapolation_check(
    x: Any, y: Any, *, form: str = "power", holdout: int = 1, n_boot: int = 0, seed: int = 0
) -> Extrapolation:
    """Fit on all but the `holdout` largest x and report the error predicting those."""
    xa, ya = _check_xy(x, y, 1)
    need = 3 if form == "power" else 4
    if holdout < 1 or xa.size - holdout < need:
        raise InputError(
            f"holdout={holdout} leaves {xa.size - holdout} of {xa.size} points to fit; "
            f"the {form} fit needs {need}: hold out fewer or add runs"
        )
    order = np.argsort(xa, kind="stable")
    train, test = order[:-holdout], order[-holdout:]
    fit = fit_power_law(xa[train], ya[train], form=form, n_boot=n_boot, seed=seed)
    return Extrapolation(
        form=form,
        holdout=holdout,
        n_fit=int(train.size),
        x_heldout=xa[test].tolist(),
        **_holdout_summary(ya[test], fit.predict(xa[test])),
        fit=fit,
    )


def chinchilla_extrapolation_check(
    N: Any, D: Any, L: Any, *, holdout: int = 1, **fit_kwargs: Any
) -> ChinchillaExtrapolation:
    """Fit the joint law without the `holdout` largest-compute (6·N·D) points; report the
    error predicting them."""
    n_arr, d_arr, l_arr = _check_nld(N, D, L)
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
        **_holdout_summary(l_arr[test], fit.predict(n_arr[test], d_arr[test])),
        fit=fit,
    )
