"""L-BFGS run on many independent small problems at once (one row of `x` per problem).

Scaling-law fits are tiny (3-5 parameters) but need thousands of starts and bootstrap
resamples; a Python loop over scipy calls costs seconds to minutes, while one batched
iteration over all rows costs about as much as a single objective evaluation. Each row keeps
its own curvature history, step length and stopping test, so every row follows the same path
as a per-problem L-BFGS with a backtracking (Armijo) line search would.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

# fun(x[rows], rows) -> objective per row; must be differentiable in x.
Objective = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class BatchedResult:
    """Final point, objective and iteration count per row; `converged` is False for rows
    that hit `max_iter`."""

    x: torch.Tensor
    fun: torch.Tensor
    n_iter: torch.Tensor
    converged: torch.Tensor


def _value_and_grad(fun: Objective, x: torch.Tensor, rows: torch.Tensor):
    x = x.detach().requires_grad_(True)
    with torch.enable_grad():
        f = fun(x, rows)
        (g,) = torch.autograd.grad(f.sum(), x)
    f = f.detach()
    bad = ~torch.isfinite(f)
    return f.masked_fill(bad, float("inf")), g.masked_fill(bad[:, None], 0.0)


def _direction(g: torch.Tensor, s: torch.Tensor, y: torch.Tensor, rho: torch.Tensor):
    """Two-loop recursion; empty history slots have rho = 0 and contribute nothing."""
    m = s.shape[1]
    q = g.clone()
    alphas = [torch.zeros_like(rho[:, 0])] * m
    for i in reversed(range(m)):
        alphas[i] = rho[:, i] * (s[:, i] * q).sum(1)
        q -= alphas[i][:, None] * y[:, i]
    sy, yy = (s[:, -1] * y[:, -1]).sum(1), (y[:, -1] * y[:, -1]).sum(1)
    first = 1.0 / g.norm(dim=1).clamp_min(1.0)
    gamma = torch.where(rho[:, -1] > 0, sy / yy.clamp_min(1e-300), first)
    r = gamma[:, None] * q
    for i in range(m):
        beta = rho[:, i] * (y[:, i] * r).sum(1)
        r += s[:, i] * (alphas[i] - beta)[:, None]
    return -r


def minimize_batched(
    fun: Objective,
    x0: torch.Tensor,
    *,
    max_iter: int = 1000,
    history: int = 10,
    ftol: float = 2.2e-9,
    gtol: float = 1e-5,
    max_backtracks: int = 40,
) -> BatchedResult:
    """Minimise each row of `x0` independently; stopping rules follow scipy's L-BFGS-B
    (relative decrease below `ftol`, or largest |gradient| below `gtol`)."""
    x = x0.detach().clone()
    n, p = x.shape
    all_rows = torch.arange(n)
    f, g = _value_and_grad(fun, x, all_rows)
    s_hist = x.new_zeros(n, history, p)
    y_hist = x.new_zeros(n, history, p)
    rho = x.new_zeros(n, history)
    n_iter = torch.zeros(n, dtype=torch.long)
    active = g.abs().amax(1) > gtol
    for _ in range(max_iter):
        rows = active.nonzero().squeeze(1)
        if rows.numel() == 0:
            break
        d = _direction(g[rows], s_hist[rows], y_hist[rows], rho[rows])
        gd = (g[rows] * d).sum(1)
        uphill = gd >= 0  # lost curvature information: restart from steepest descent
        if uphill.any():
            d[uphill] = -g[rows][uphill] / g[rows][uphill].norm(dim=1, keepdim=True).clamp_min(1)
            gd = (g[rows] * d).sum(1)
            rho[rows[uphill]] = 0.0
        t = torch.ones(rows.numel(), dtype=x.dtype)
        f_new = torch.full_like(t, float("inf"))
        g_new = torch.zeros_like(d)
        pending = torch.ones(rows.numel(), dtype=torch.bool)
        for _ in range(max_backtracks):
            idx = pending.nonzero().squeeze(1)
            if idx.numel() == 0:
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
        s_hist[krows] = torch.cat([s_hist[krows, 1:], s_k[keep, None]], 1)
        y_hist[krows] = torch.cat([y_hist[krows, 1:], y_k[keep, None]], 1)
        rho[krows] = torch.cat([rho[krows, 1:], (1.0 / sy[keep])[:, None]], 1)
        f_old = f[mrows]
        x[mrows] += step[moved]
        f[mrows], g[mrows] = f_new[moved], g_new[moved]
        n_iter[rows] += 1
        scale = torch.maximum(torch.maximum(f_old.abs(), f[mrows].abs()), torch.ones_like(f_old))
        done = ((f_old - f[mrows]) <= ftol * scale) | (g[mrows].abs().amax(1) <= gtol)
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
