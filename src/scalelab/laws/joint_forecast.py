"""The joint law `L = E + A·N^-a + B·D^-b` over a data × model grid, with the exponents fixed
or free, and its compute-optimal split for a budget C ≈ 6·N·D.

With both exponents fixed (e.g. from d: a = α_N = 2/d, b = α_D = 2/(2+d)) the law is linear in
(E, A, B): non-negative least squares in the loss, solved exactly (scipy's NNLS). With one
fixed, the other is profiled (bounded scalar search of the linear solve's residual). With both
free it is `fit_chinchilla` (Hoffmann et al. / Epoch's Huber fit in log space).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from scalelab.errors import InputError
from scalelab.laws.fit import _check_nld, compute_optimal, fit_chinchilla


@dataclass(frozen=True)
class JointFit:
    """`L = E + A·N^-a + B·D^-b`; `method` says which exponents were fixed."""

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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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
    n_arr, d_arr, l_arr = _check_nld(N, D, L)
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
