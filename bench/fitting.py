"""Benchmark the scaling-law fits against per-problem scipy loops measured in the same run.

1. Joint Chinchilla fit on Epoch's data (240 points): scalelab's batched L-BFGS over all
   4500 grid starts vs scipy's L-BFGS-B started from a seeded random subset of the same grid,
   one start at a time (as Epoch's code does), with an analytic gradient. Reports starts per
   CPU-second, the projected time for the whole grid, and whether both reach the same best.
2. power+E bootstrap: scalelab's batched Levenberg-Marquardt over 1000 resamples x 16 starts
   vs scipy.optimize.least_squares per (resample, start).

Run: `python bench/fitting.py` (quick, ~1-3 min) or `python bench/fitting.py --full` (scipy
on all 4500 starts). Both sides run single-threaded numpy; timings are noisy on a shared
machine, so CPU time (time.process_time) is printed beside wall time.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import optimize
from scipy.special import huber, logsumexp

from scalelab.laws.fit import chinchilla, power_law

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "epoch_chinchilla.csv"


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def epoch_data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    df = pd.read_csv(DATA).sort_values("loss").iloc[:-5]
    n = df["Model Size"].to_numpy()
    return n, df["Training FLOP"].to_numpy() / (6 * n), df["loss"].to_numpy()


def scipy_objective(theta, ln, ld, ll, delta=1e-3):
    """Epoch's objective and its analytic gradient (numpy)."""
    a, b, e, alpha, beta = theta
    terms = np.stack([a - alpha * ln, b - beta * ld, np.full_like(ln, e)])
    lse = logsumexp(terms, axis=0)
    r = ll - lse
    w = np.exp(terms - lse)
    dh = -np.clip(r, -delta, delta)  # d huber / d lse
    grad = np.array([dh @ w[0], dh @ w[1], dh @ w[2], -(dh * ln) @ w[0], -(dh * ld) @ w[1]])
    return float(huber(delta, r).sum()), grad


def bench_chinchilla(n_scipy: int) -> None:
    n, d, loss = epoch_data()
    ln, ld, ll = np.log(n), np.log(d), np.log(loss)
    starts = chinchilla.epoch_starts()
    fit, w_ours, c_ours = timed(lambda: chinchilla.fit_chinchilla(n, d, loss))
    pick = np.random.default_rng(0).choice(
        len(starts), size=min(n_scipy, len(starts)), replace=False
    )

    def run_scipy():
        return [
            optimize.minimize(scipy_objective, s, args=(ln, ld, ll), jac=True, method="L-BFGS-B")
            for s in starts[pick]
        ]

    res, w_sp, c_sp = timed(run_scipy)
    best_sp = min(res, key=lambda r: r.fun)
    ours_sub, w_sub, c_sub = timed(
        lambda: chinchilla._chinchilla_solve(ln, ld, ll, np.ones((1, ln.size)), starts[pick], 1e-3)
    )
    sp_f = np.array([r.fun for r in res])
    same = np.mean(np.abs(ours_sub[1][0] - sp_f) < 1e-7)
    print("== joint Chinchilla fit, Epoch data (240 points) ==")
    print(
        f"scalelab, all {len(starts)} starts: wall {w_ours:.2f} s, CPU {c_ours:.2f} s, "
        f"{len(starts) / c_ours:.0f} starts/CPU-s; best objective {fit.objective:.8f}"
    )
    print(
        f"  A={fit.A:.2f} B={fit.B:.2f} E={fit.E:.4f} alpha={fit.alpha:.5f} "
        f"beta={fit.beta:.5f}  (Epoch: 477.84 2143.86 1.8172 0.34731 0.36718, 0.00101827)"
    )
    print(f"scalelab, the {len(pick)} sampled starts: wall {w_sub:.2f} s, CPU {c_sub:.2f} s")
    print(
        f"scipy L-BFGS-B, {len(pick)} starts one by one: wall {w_sp:.2f} s, CPU {c_sp:.2f} s, "
        f"{len(pick) / c_sp:.0f} starts/CPU-s; best objective {best_sp.fun:.8f}"
    )
    per_start = c_sp / len(pick)
    print(
        f"projected scipy CPU for all {len(starts)} starts: {per_start * len(starts):.1f} s "
        f"-> speed-up {per_start * len(starts) / c_ours:.1f}x (CPU), "
        f"{w_sp / len(pick) * len(starts) / w_ours:.1f}x (wall)"
    )
    print(f"same final objective (|diff| < 1e-7) per start, ours vs scipy: {same:.1%}")


def bench_power_e(n_boot: int, n_scipy: int) -> None:
    rng = np.random.default_rng(1)
    x = np.geomspace(1e4, 1e7, 8)
    y = 2.0 + 30 * x**-0.3 * np.exp(rng.normal(0, 0.01, x.size))
    fit, w_ours, c_ours = timed(
        lambda: power_law.fit_power_law(x, y, form="power+E", n_boot=n_boot)
    )
    lx, ly = np.log(x), np.log(y)
    log_m = float(ly.min())
    theta = np.array([np.log(fit.A), np.log(fit.E / (np.exp(log_m) - fit.E)), fit.exponent])
    fitted = power_law._pe_pred_jac(theta[None], lx, log_m)[0][0]
    resid = ly - fitted
    adj = (resid - resid.mean()) * np.sqrt(x.size / (x.size - 3))
    ystar = fitted + adj[rng.integers(0, x.size, size=(n_scipy, x.size))]
    starts = np.vstack(
        [
            theta[None],
            power_law._pe_starts(lx, ly, power_law._PE_BOOT_ALPHAS, power_law._PE_BOOT_FRACTIONS),
        ]
    )

    def run_scipy():
        out = []
        for row in ystar:
            best = min(
                (
                    optimize.least_squares(
                        lambda t, row=row: row - power_law._pe_pred_jac(t[None], lx, log_m)[0][0],
                        s,
                        method="lm",
                    )
                    for s in starts
                ),
                key=lambda r: r.cost,
            )
            out.append(best.x[2])
        return np.array(out)

    sp, w_sp, c_sp = timed(run_scipy)
    ours = power_law._pe_solve(lx, ystar, starts, log_m)[0][:, 2]
    print(f"== power+E bootstrap (8 points, {len(starts)} starts per resample) ==")
    print(
        f"scalelab: fit + {n_boot} resamples: wall {w_ours:.2f} s, CPU {c_ours:.2f} s, "
        f"{n_boot / c_ours:.0f} resamples/CPU-s; alpha {fit.exponent:.4f} "
        f"CI {fit.exponent_ci95[0]:.4f}..{fit.exponent_ci95[1]:.4f}"
    )
    print(
        f"scipy least_squares(lm), {n_scipy} resamples one problem at a time: wall "
        f"{w_sp:.2f} s, CPU {c_sp:.2f} s, {n_scipy / c_sp:.0f} resamples/CPU-s "
        f"-> speed-up {(c_sp / n_scipy) / (c_ours / n_boot):.1f}x (CPU)"
    )
    print(f"same resample exponents, ours vs scipy: max |diff| {np.max(np.abs(ours - sp)):.2e}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="scipy on all 4500 starts")
    ap.add_argument("--scipy-starts", type=int, default=300)
    args = ap.parse_args()
    bench_chinchilla(4500 if args.full else args.scipy_starts)
    bench_power_e(1000, 100)


if __name__ == "__main__":
    main()
