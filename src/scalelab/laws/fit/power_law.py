"""The one-variable power law with bootstrap intervals, and its held-out extrapolation check.

- `fit_power_law(x, y, form="power")`: least squares of log y on log x, the fit the
  intrinsic-dimension paper reports (no irreducible term).
- `fit_power_law(x, y, form="power+E")`: `y = E + A·x^-α` by least squares on log y, from a
  grid of starts, with `0 <= E < min y`.

The sizes of a sweep are a designed grid, so the intervals resample residuals (fixed design)
rather than points. The joint law `L = E + A/N^α + B/D^β` is in `laws.fit.chinchilla`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import expit

from scalelab.config import Record
from scalelab.errors import EstimationError, InputError
from scalelab.laws.fit.fitted import PowerLawFit
from scalelab.laws.fit.forms import FORMS
from scalelab.laws.fit.inputs import check_xy

# Starts for power+E: exponents, and E as a fraction of min(y) (A then follows in closed form).
_PE_ALPHAS = (0.05, 0.1, 0.2, 0.4, 0.7, 1.0, 1.5, 2.5)
_PE_FRACTIONS = (0.01, 0.25, 0.5, 0.75, 0.9, 0.99)
_PE_BOOT_ALPHAS = (0.1, 0.3, 0.6, 1.0, 2.0)
_PE_BOOT_FRACTIONS = (0.05, 0.5, 0.9)


def fit_power_law(
    x: Any, y: Any, *, form: str = "power", n_boot: int = 1000, seed: int = 0
) -> PowerLawFit:
    """Fit a decreasing power law to positive `(x, y)` pairs with a seeded bootstrap CI, in
    one of the forms of `laws.fit.forms.FORMS`."""
    if form not in FORMS:
        raise InputError(f"unknown form {form!r}; choose one of {', '.join(FORMS)}")
    if n_boot < 0:
        raise InputError(f"n_boot must be >= 0, got {n_boot}")
    xa, ya = check_xy(x, y, FORMS[form].min_points)
    return FORMS[form].function()(xa, ya, n_boot, np.random.default_rng(seed), seed)


def fit_log_log(x: np.ndarray, y: np.ndarray, n_boot: int, rng, seed: int) -> PowerLawFit:
    """The "power" form: least squares of log y on log x, a studentized residual bootstrap."""
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


def fit_with_floor(x: np.ndarray, y: np.ndarray, n_boot: int, rng, seed: int) -> PowerLawFit:
    """The "power+E" form: least squares on log y from a grid of starts, 0 <= E < min y."""
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


def power_e_intervals(
    x: np.ndarray, y: np.ndarray, n_boot: int, seed: int
) -> tuple[tuple[float, float], tuple[float, float]]:
    """95% percentile intervals of the power+E exponent and floor from one residual
    bootstrap: the resamples `fit_power_law(form="power+E")` draws with the same seed, so
    the exponent's interval is the one that function reports."""
    lx, ly = np.log(x), np.log(y)
    n, log_m = lx.size, float(ly.min())
    starts = _pe_starts(lx, ly, _PE_ALPHAS, _PE_FRACTIONS)
    theta = _pe_solve(lx, ly[None, :], starts, log_m)[0][0]
    fitted = _pe_pred_jac(theta[None, :], lx, log_m)[0][0]
    resid = ly - fitted
    e_hat = float(math.exp(log_m) * expit(theta[1]))
    if n_boot <= 0 or not np.any(np.abs(resid) > 0):
        return (float(theta[2]), float(theta[2])), (e_hat, e_hat)
    rng = np.random.default_rng(seed)
    adj = (resid - resid.mean()) * math.sqrt(n / (n - 3))
    ystar = fitted + adj[rng.integers(0, n, size=(n_boot, n))]
    coarse = _pe_starts(lx, ly, _PE_BOOT_ALPHAS, _PE_BOOT_FRACTIONS)
    bt, _ = _pe_solve(lx, ystar, np.vstack([theta[None, :], coarse]), log_m)
    bt = bt[np.isfinite(bt[:, 2])]
    a_lo, a_hi = np.quantile(bt[:, 2], [0.025, 0.975])
    e_lo, e_hi = np.quantile(math.exp(log_m) * expit(bt[:, 1]), [0.025, 0.975])
    return (float(a_lo), float(a_hi)), (float(e_lo), float(e_hi))


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


def holdout_summary(observed: np.ndarray, predicted: np.ndarray) -> dict[str, Any]:
    """The error fields both extrapolation records (this and the joint law's) share."""
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
    xa, ya = check_xy(x, y, 1)
    if form not in FORMS:
        raise InputError(f"unknown form {form!r}; choose one of {', '.join(FORMS)}")
    need = FORMS[form].min_points
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
        **holdout_summary(ya[test], fit.predict(xa[test])),
        fit=fit,
    )
