"""L-BFGS run on many independent small problems at once (one row of `x` per problem).

Scaling-law fits are tiny (3-5 parameters) but need thousands of starts and bootstrap
resamples; a Python loop over scipy calls costs seconds to minutes, while one batched
iteration over all rows costs about as much as a single objective evaluation. Each row keeps
its own curvature history, step length and stopping test, so every row follows the same path
as a per-problem L-BFGS with a backtracking (Armijo) line search would.

Plain numpy with analytic gradients: elementwise numpy runs on one thread, so a fit does not
slow down (or get slowed down by) other jobs on a shared machine the way torch's thread pool
does under load.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# fun(x[rows], rows) -> (objective per row [r], gradient per row [r, p]).
Objective = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class BatchedResult:
    """Final point, objective and iteration count per row; `converged` is False for rows
    that hit `max_iter`."""

    x: np.ndarray
    fun: np.ndarray
    n_iter: np.ndarray
    converged: np.ndarray


def _value_and_grad(fun: Objective, x: np.ndarray, rows: np.ndarray):
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        f, g = fun(x, rows)
    bad = ~(np.isfinite(f) & np.all(np.isfinite(g), axis=1))
    return np.where(bad, np.inf, f), np.where(bad[:, None], 0.0, g)


def _direction(g: np.ndarray, s: np.ndarray, y: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """Two-loop recursion; empty history slots have rho = 0 and contribute nothing."""
    m = s.shape[1]
    q = g.copy()
    alphas = [np.zeros_like(rho[:, 0])] * m
    for i in reversed(range(m)):
        alphas[i] = rho[:, i] * (s[:, i] * q).sum(1)
        q -= alphas[i][:, None] * y[:, i]
    sy, yy = (s[:, -1] * y[:, -1]).sum(1), (y[:, -1] * y[:, -1]).sum(1)
    first = 1.0 / np.maximum(np.linalg.norm(g, axis=1), 1.0)
    gamma = np.where(rho[:, -1] > 0, sy / np.maximum(yy, 1e-300), first)
    r = gamma[:, None] * q
    for i in range(m):
        beta = rho[:, i] * (y[:, i] * r).sum(1)
        r += s[:, i] * (alphas[i] - beta)[:, None]
    return -r


def minimize_batched(
    fun: Objective,
    x0: np.ndarray,
    *,
    max_iter: int = 1000,
    history: int = 10,
    ftol: float = 2.2e-9,
    gtol: float = 1e-5,
    max_backtracks: int = 40,
) -> BatchedResult:
    """Minimise each row of `x0` independently; stopping rules follow scipy's L-BFGS-B
    (relative decrease below `ftol`, or largest |gradient| below `gtol`)."""
    x = np.array(x0, dtype=np.float64)
    n, p = x.shape
    f, g = _value_and_grad(fun, x, np.arange(n))
    s_hist = np.zeros((n, history, p))
    y_hist = np.zeros((n, history, p))
    rho = np.zeros((n, history))
    n_iter = np.zeros(n, dtype=np.int64)
    active = np.abs(g).max(1) > gtol
    for _ in range(max_iter):
        rows = np.flatnonzero(active)
        if rows.size == 0:
            break
        d = _direction(g[rows], s_hist[rows], y_hist[rows], rho[rows])
        gd = (g[rows] * d).sum(1)
        uphill = gd >= 0  # lost curvature information: restart from steepest descent
        if uphill.any():
            gu = g[rows[uphill]]
            d[uphill] = -gu / np.maximum(np.linalg.norm(gu, axis=1, keepdims=True), 1.0)
            gd = (g[rows] * d).sum(1)
            rho[rows[uphill]] = 0.0
        t = np.ones(rows.size)
        f_new = np.full(rows.size, np.inf)
        g_new = np.zeros_like(d)
        pending = np.ones(rows.size, dtype=bool)
        for _ in range(max_backtracks):
            idx = np.flatnonzero(pending)
            if idx.size == 0:
                break
            ft, gt = _value_and_grad(fun, x[rows[idx]] + t[idx, None] * d[idx], rows[idx])
            ok = ft <= f[rows[idx]] + 1e-4 * t[idx] * gd[idx]
            f_new[idx[ok]], g_new[idx[ok]] = ft[ok], gt[ok]
            pending[idx[ok]] = False
            t[idx[~ok]] *= 0.5
        moved = ~pending
        step = t[:, None] * d
        mrows = rows[moved]
        s_k, y_k = step[moved], g_new[moved] - g[mrows]
        sy = (s_k * y_k).sum(1)
        keep = sy > 1e-10 * (y_k * y_k).sum(1)
        krows = mrows[keep]
        s_hist[krows] = np.concatenate([s_hist[krows, 1:], s_k[keep, None]], 1)
        y_hist[krows] = np.concatenate([y_hist[krows, 1:], y_k[keep, None]], 1)
        rho[krows] = np.concatenate([rho[krows, 1:], (1.0 / sy[keep])[:, None]], 1)
        f_old = f[mrows]
        x[mrows] += step[moved]
        f[mrows], g[mrows] = f_new[moved], g_new[moved]
        n_iter[rows] += 1
        scale = np.maximum(np.maximum(np.abs(f_old), np.abs(f[mrows])), 1.0)
        done = ((f_old - f[mrows]) <= ftol * scale) | (np.abs(g[mrows]).max(1) <= gtol)
        active[mrows[done]] = False
        # No decrease along this direction: drop the curvature history and retry from
        # steepest descent (as scipy does); a row with no history left is stuck: stop it.
        stuck = rows[pending]
        fresh = (rho[stuck] > 0).any(1)
        rho[stuck[fresh]] = 0.0
        s_hist[stuck[fresh]] = 0.0
        y_hist[stuck[fresh]] = 0.0
        active[stuck[~fresh]] = False
    return BatchedResult(x=x, fun=f, n_iter=n_iter, converged=~active)
