"""Forecast a larger run's loss from a few small runs, by one law or the joint law (tables in,
numbers out).

With the exponent α fixed (from d via α_D = 2/(2+d), from a number, or from other corpora),
the rest of `L(n) = E + A·n^-α` is linear in (E, A): least squares in the loss itself, with
E ≥ 0 and A ≥ 0 (a 2-variable non-negative least squares, solved exactly: the unconstrained
optimum if it is feasible, else the better of the two boundary optima). That stays stable with
3 runs, where a free 3-parameter fit often is not (Choshen et al. 2024, "A Hitchhiker's Guide
to Scaling Law Estimation", arXiv 2410.11840, who score forecasts by the absolute relative
error, ARE, of the largest held-out run).

Methods (`METHODS`):
- "log-log": `L = A·n^-α`, least squares of log L on log n (the paper's fit), α free;
- "free": `L = E + A·n^-α`, α free, by profiling the linear solve over α (works from 3 runs);
- "fixed": `L = E + A·n^-α` with α given, optionally with an interval to sample;
- "fixed, E=0": `L = A·n^-α` with α given (A by least squares in the loss, A >= 0).

Intervals resample residuals onto the fitted curve (the sizes are a designed grid) and, for a
fixed α with an interval (e.g. d's range mapped to α), draw α uniformly from that interval.

The joint law `L = E + A·N^-a + B·D^-b` over a data × model grid (`fit_joint`) has its
exponents fixed or free, and a compute-optimal split for a budget C ≈ 6·N·D. With both
exponents fixed (e.g. from d: a = α_N = 2/d, b = α_D = 2/(2+d)) the law is linear in (E, A, B):
non-negative least squares in the loss, solved exactly (scipy's NNLS). With one fixed, the
other is profiled (bounded scalar search of the linear solve's residual). With both free it is
`fit_chinchilla` (Hoffmann et al. / Epoch's Huber fit in log space).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scalelab.config import Record
from scalelab.errors import InputError
from scalelab.laws.fit.chinchilla import compute_optimal, fit_chinchilla
from scalelab.laws.fit.inputs import check_nld, check_xy

METHODS = ("log-log", "free", "fixed", "fixed, E=0")
FIXED = ("fixed", "fixed, E=0")

# Exponents the "free" profile searches (then refines the best by a bounded scalar search).
_ALPHA_GRID = np.geomspace(0.005, 3.0, 321)


@dataclass(frozen=True)
class Exponent:
    """A source of the exponent: `alpha` with an optional `interval` to sample (a d range
    mapped to α, a confidence interval, ...); `label` names it in tables."""

    label: str
    alpha: float
    interval: tuple[float, float] | None = None
    d: float | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.alpha) and self.alpha > 0):
            raise InputError(f"exponent {self.label!r} must be a positive number, got {self.alpha}")
        if self.interval is not None:
            lo, hi = self.interval
            if not (0 < lo <= hi and math.isfinite(hi)):
                raise InputError(
                    f"exponent interval of {self.label!r} must satisfy 0 < lo <= hi, got "
                    f"{self.interval}"
                )

    @classmethod
    def from_d(
        cls, label: str, d: float, d_range: tuple[float, float] | None = None, axis: str = "data"
    ) -> Exponent:
        """α_D = 2/(2+d) (axis "data") or α_N = 2/d (axis "model"); a d range becomes an
        α interval (larger d, smaller α)."""
        if not (math.isfinite(d) and d > 0):
            raise InputError(f"d of {label!r} must be a positive number, got {d}")
        if axis not in ("data", "model"):
            raise InputError(f"axis must be 'data' or 'model', got {axis!r}")
        conv = (lambda v: 2.0 / (2.0 + v)) if axis == "data" else (lambda v: 2.0 / v)
        interval = None
        if d_range is not None:
            lo, hi = float(min(d_range)), float(max(d_range))
            if not lo > 0:
                raise InputError(f"d range of {label!r} must be positive, got {d_range}")
            interval = (conv(hi), conv(lo))
        return cls(label, conv(float(d)), interval, float(d))


def nonneg_linear_fit(z: Any, y: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(E, A, sse) minimising Σ (y − E − A·z)² with E ≥ 0, A ≥ 0, exactly, for each row of
    `z` and `y` (shape [R, n] or [n]). With z = n^-α this is the fixed-exponent fit."""
    z, y = np.atleast_2d(np.asarray(z, float)), np.atleast_2d(np.asarray(y, float))
    z, y = np.broadcast_arrays(z, y)
    zm, ym = z.mean(1, keepdims=True), y.mean(1, keepdims=True)
    szz = ((z - zm) ** 2).sum(1)
    a_free = ((z - zm) * (y - ym)).sum(1) / np.maximum(szz, 1e-300)
    e_free = ym[:, 0] - a_free * zm[:, 0]
    # Boundary optima: E = 0 (A by a line through the origin), A = 0 (E = mean y).
    a_e0 = np.maximum(0.0, (z * y).sum(1) / np.maximum((z * z).sum(1), 1e-300))
    e_a0 = np.maximum(0.0, ym[:, 0])
    cand_e = np.stack([e_free, np.zeros_like(e_free), e_a0], 1)
    cand_a = np.stack([a_free, a_e0, np.zeros_like(a_free)], 1)
    resid = y[:, None, :] - cand_e[:, :, None] - cand_a[:, :, None] * z[:, None, :]
    sse = (resid**2).sum(2)
    sse[:, 0] = np.where((e_free >= 0) & (a_free >= 0), sse[:, 0], np.inf)
    best = np.argmin(sse, 1)
    rows = np.arange(z.shape[0])
    return cand_e[rows, best], cand_a[rows, best], sse[rows, best]


def _fit_fixed(
    x: np.ndarray, Y: np.ndarray, alpha: np.ndarray, floor: bool = True
) -> tuple[np.ndarray, ...]:
    z = x[None, :] ** -alpha[:, None]
    if not floor:
        a = np.maximum(0.0, (z * Y).sum(1) / (z * z).sum(1))
        return np.zeros_like(a), a, alpha
    e, a, _ = nonneg_linear_fit(z, Y)
    return e, a, alpha


def _fit_loglog(x: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, ...]:
    lx, ly = np.log(x), np.log(Y)
    xc = lx - lx.mean()
    slope = (ly @ xc) / (xc @ xc)
    log_a = ly.mean(1) - slope * lx.mean()
    return np.zeros_like(slope), np.exp(log_a), -slope


def _fit_free(x: np.ndarray, Y: np.ndarray, refine: bool) -> tuple[np.ndarray, ...]:
    """Profile over α: the linear solve at each grid exponent, the best kept; with `refine`
    (the point fit, not bootstrap rows) a bounded scalar search around the best grid point."""
    z = x[None, None, :] ** -_ALPHA_GRID[None, :, None]  # [1, G, n]
    rows, g, n = Y.shape[0], _ALPHA_GRID.size, x.size
    zz = np.broadcast_to(z, (rows, g, n)).reshape(rows * g, n)
    yy = np.repeat(Y, g, axis=0)
    e, a, sse = (v.reshape(rows, g) for v in nonneg_linear_fit(zz, yy))
    best = np.argmin(sse, 1)
    idx = np.arange(rows)
    e, a, alpha = e[idx, best], a[idx, best], _ALPHA_GRID[best].copy()
    if refine:
        from scipy.optimize import minimize_scalar

        for r in range(rows):
            lo = _ALPHA_GRID[max(best[r] - 1, 0)]
            hi = _ALPHA_GRID[min(best[r] + 1, g - 1)]
            res = minimize_scalar(
                lambda t, r=r: nonneg_linear_fit(x**-t, Y[r])[2][0],
                bounds=(lo, hi),
                method="bounded",
                options={"xatol": 1e-10},
            )
            if res.fun <= sse[r, best[r]]:
                alpha[r] = res.x
                e[r], a[r] = (v[0] for v in nonneg_linear_fit(x**-res.x, Y[r])[:2])
    return e, a, alpha


def _fit_rows(method: str, x: np.ndarray, Y: np.ndarray, alpha: np.ndarray | None, refine: bool):
    if method == "log-log":
        return _fit_loglog(x, Y)
    if method == "free":
        return _fit_free(x, Y, refine)
    return _fit_fixed(x, Y, alpha, floor=method == "fixed")


_N_PARAMS = {"log-log": 2, "free": 3, "fixed": 2, "fixed, E=0": 1}


@dataclass(frozen=True)
class PowerForecast:
    """A fitted `L = E + A·n^-alpha` (E = 0 for "log-log") with bootstrap parameter draws
    (`draws`: rows of E, A, alpha) for forecast and data-needed intervals."""

    method: str
    label: str
    E: float
    A: float
    alpha: float
    n_fit: int
    x_range: tuple[float, float]
    level: float = 0.95
    n_boot: int = 0
    seed: int = 0
    alpha_interval: tuple[float, float] | None = None
    draws: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)), repr=False)

    def predict(self, x: Any) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        return self.E + self.A * x ** (-self.alpha)

    def interval(self, x: Any) -> tuple[np.ndarray, np.ndarray]:
        """Central `level` interval of the forecast at each x (the point forecast twice when
        there are no draws)."""
        x = np.atleast_1d(np.asarray(x, dtype=np.float64))
        if self.draws.shape[0] < 2:
            p = self.predict(x)
            return p, p
        d = self.draws
        preds = d[:, 0:1] + d[:, 1:2] * x[None, :] ** (-d[:, 2:3])
        q = (1 - self.level) / 2
        lo, hi = np.quantile(preds, [q, 1 - q], axis=0)
        return lo, hi

    def data_needed(self, loss: float) -> dict[str, Any]:
        """The size n at which the forecast reaches `loss` (inf when loss <= E: never), with
        the interval from the draws (a bound is inf when that share of draws never gets there).
        """
        if not loss > 0:
            raise InputError(f"--loss must be positive, got {loss}")
        n = float(_invert(self.E, self.A, self.alpha, loss))
        lo = hi = n
        if self.draws.shape[0] >= 2:
            d = self.draws
            ns = _invert(d[:, 0], d[:, 1], d[:, 2], loss)
            q = (1 - self.level) / 2
            # No interpolation: a share of draws that never reach the loss is inf, not nan.
            lo, hi = (float(v) for v in np.quantile(ns, [q, 1 - q], method="inverted_cdf"))
        return {"loss": float(loss), "n": n, "interval": [lo, hi], "level": self.level}

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "label": self.label,
            "E": self.E,
            "A": self.A,
            "alpha": self.alpha,
            "alpha_interval": list(self.alpha_interval) if self.alpha_interval else None,
            "n_fit": self.n_fit,
            "x_range": list(self.x_range),
            "level": self.level,
            "n_boot": self.n_boot,
            "n_boot_used": int(self.draws.shape[0]),
            "seed": self.seed,
        }


def _invert(e: Any, a: Any, alpha: Any, loss: float) -> np.ndarray:
    """n with e + a·n^-alpha = loss; inf where loss <= e (the floor is above the target)."""
    e, a, alpha = (np.asarray(v, dtype=np.float64) for v in (e, a, alpha))
    gap = loss - e
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        n = np.where(gap > 0, (a / np.where(gap > 0, gap, 1.0)) ** (1.0 / alpha), np.inf)
    return np.where(a > 0, n, np.where(gap >= 0, 0.0, np.inf))


def fit_forecast(
    x: Any,
    y: Any,
    *,
    method: str = "fixed",
    exponent: Exponent | None = None,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> PowerForecast:
    """Fit one method to runs `(x, y)` (sizes, losses) with seeded bootstrap draws.

    Draws resample centred residuals (scaled by √(n/(n−p))) onto the fitted curve, in log
    space for "log-log"; with fewer runs than p + 1 there is nothing to resample. A fixed
    exponent with an interval draws α uniformly from it in every resample.
    """
    if method not in METHODS:
        raise InputError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    if (method in FIXED) != (exponent is not None):
        raise InputError("the fixed methods need an exponent; 'log-log' and 'free' take none")
    xa, ya = check_xy(x, y, 3, names=("sizes", "losses"))
    order = np.argsort(xa, kind="stable")
    xa, ya = xa[order], ya[order]
    alpha0 = np.array([exponent.alpha]) if exponent else None
    e, a, al = (float(v[0]) for v in _fit_rows(method, xa, ya[None, :], alpha0, refine=True))
    draws = _draws(method, xa, ya, (e, a, al), exponent, n_boot, seed)
    return PowerForecast(
        method=method,
        label=exponent.label if exponent else method,
        E=e,
        A=a,
        alpha=al,
        n_fit=int(xa.size),
        x_range=(float(xa[0]), float(xa[-1])),
        level=level,
        n_boot=n_boot,
        seed=seed,
        alpha_interval=exponent.interval if exponent else None,
        draws=draws,
    )


def _draws(method, x, y, params, exponent, n_boot, seed) -> np.ndarray:
    e, a, alpha = params
    n, p = x.size, _N_PARAMS[method]
    if n_boot == 0:
        return np.zeros((0, 3))
    rng = np.random.default_rng(seed)
    log = method == "log-log"
    fitted = e + a * x ** (-alpha)
    resid = (np.log(y) - np.log(fitted)) if log else (y - fitted)
    can_resample = n > p and np.any(np.abs(resid) > 1e-12 * np.abs(y).max())
    if not can_resample and (exponent is None or exponent.interval is None):
        return np.zeros((0, 3))
    adj = (resid - resid.mean()) * math.sqrt(n / (n - p)) if can_resample else 0 * resid
    pick = adj[rng.integers(0, n, size=(n_boot, n))]
    Y = np.exp(np.log(fitted) + pick) if log else fitted + pick
    alphas = None
    if exponent is not None:
        lo, hi = exponent.interval or (exponent.alpha, exponent.alpha)
        alphas = rng.uniform(lo, hi, size=n_boot)
    if not log:
        Y = np.maximum(Y, 1e-12)  # a loss stays positive
    out = np.stack(_fit_rows(method, x, Y, alphas, refine=False), 1)
    return out[np.all(np.isfinite(out), 1)]


def forecast_table(fc: PowerForecast, at: Any) -> list[dict[str, Any]]:
    """One row per size in `at`: the forecast loss and its interval."""
    at = np.atleast_1d(np.asarray(at, dtype=np.float64))
    if np.any(~np.isfinite(at)) or np.any(at <= 0):
        raise InputError(f"sizes to forecast must be positive numbers, got {at.tolist()}")
    lo, hi = fc.interval(at)
    return [
        {"n": float(n), "loss": float(p), "lo": float(a), "hi": float(b)}
        for n, p, a, b in zip(at, fc.predict(at), lo, hi, strict=True)
    ]


@dataclass(frozen=True)
class JointFit(Record):
    """`L = E + A·N^-a + B·D^-b`; `method` says which exponents were fixed. A record: saved
    in forecast.json as its fields."""

    E: float
    A: float
    B: float
    a: float
    b: float
    method: str
    n_points: int
    rmse: float

    def predict(self, N: Any, D: Any) -> np.ndarray:
        N, D = np.asarray(N, dtype=np.float64), np.asarray(D, dtype=np.float64)
        return self.E + self.A * N ** (-self.a) + self.B * D ** (-self.b)

    def compute_optimal(self, budgets: Any) -> list[dict[str, Any]]:
        """N_opt, D_opt (C = 6·N·D, closed form) and the law's loss there, per budget."""
        c = np.atleast_1d(np.asarray(budgets, dtype=np.float64))
        if np.any(~np.isfinite(c)) or np.any(c <= 0):
            raise InputError(f"--budget values must be positive numbers, got {c.tolist()}")
        if self.A <= 0 or self.B <= 0:
            raise InputError(
                f"the joint fit has A = {self.A:.3g}, B = {self.B:.3g}: one size does not "
                "matter, so no compute-optimal split exists; use a grid that varies both"
            )
        n_opt, d_opt = compute_optimal(c, self.A, self.B, self.a, self.b)
        loss = self.predict(n_opt, d_opt)
        return [
            {
                "C": float(ci),
                "N_opt": float(n),
                "D_opt": float(d),
                "tokens_per_param": float(d / n),
                "loss": float(lo),
            }
            for ci, n, d, lo in zip(c, n_opt, d_opt, loss, strict=True)
        ]


def _nnls(N: np.ndarray, D: np.ndarray, L: np.ndarray, a: float, b: float):
    from scipy.optimize import nnls

    design = np.stack([np.ones_like(N), N**-a, D**-b], 1)
    coef, rnorm = nnls(design, L)
    return coef, rnorm


def _profile(N, D, L, a: float | None, b: float | None) -> tuple[float, float]:
    """The free one of (a, b), by a grid then a bounded scalar search of the NNLS residual."""
    from scipy.optimize import minimize_scalar

    def resid(t: float) -> float:
        return _nnls(N, D, L, t if a is None else a, t if b is None else b)[1]

    grid = np.geomspace(0.005, 3.0, 121)
    i = int(np.argmin([resid(t) for t in grid]))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    t = float(minimize_scalar(resid, bounds=(lo, hi), method="bounded").x)
    return (t if a is None else a), (t if b is None else b)


def fit_joint(
    N: Any, D: Any, L: Any, *, a: float | None = None, b: float | None = None
) -> JointFit:
    """Fit the joint law to runs (N parameters, D tokens, L loss); `a` (model exponent) and
    `b` (data exponent) fixed when given, else fitted."""
    n_arr, d_arr, l_arr = check_nld(N, D, L)
    for name, v in (("a", a), ("b", b)):
        if v is not None and not (math.isfinite(v) and v > 0):
            raise InputError(f"exponent {name} must be a positive number, got {v}")
    if np.unique(n_arr).size < 2 or np.unique(d_arr).size < 2:
        raise InputError("the joint fit needs at least two distinct N and two distinct D")
    need = 3 + (a is None) + (b is None) + 1
    if n_arr.size < need:
        raise InputError(f"{n_arr.size} run(s) given; this joint fit needs at least {need}")
    if a is None and b is None:
        fit = fit_chinchilla(n_arr, d_arr, l_arr)
        e, ca, cb, a, b, method = fit.E, fit.A, fit.B, fit.alpha, fit.beta, "free (Huber, log L)"
    else:
        method = (
            "a, b fixed"
            if (a is not None and b is not None)
            else ("a fixed, b fitted" if a is not None else "b fixed, a fitted")
        )
        if a is None or b is None:
            a, b = _profile(n_arr, d_arr, l_arr, a, b)
        (e, ca, cb), _ = _nnls(n_arr, d_arr, l_arr, a, b)
    pred = e + ca * n_arr ** (-a) + cb * d_arr ** (-b)
    return JointFit(
        E=float(e),
        A=float(ca),
        B=float(cb),
        a=float(a),
        b=float(b),
        method=method,
        n_points=int(n_arr.size),
        rmse=float(np.sqrt(np.mean((l_arr - pred) ** 2))),
    )
