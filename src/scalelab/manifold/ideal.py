"""The ideal learner on a run's own sample: the exact posterior mean of the Gaussian field
given the run's n noisy labels (it knows the prior), and its excess risk on the capped field.

Why: one sample's excess risk scatters around `TorusField.bayes_risk(n)`, the average over
samples, most at small d, where few modes are resolved. A trained model's error on the same
sample shares that luck. Dividing it out leaves the estimator's own part:
- the paired ratio, model / ideal on the same sample, is the Bayes ratio without the sample's
  luck;
- the paired curve err(n, s) · exp(E log ideal(n)) / ideal(n, s) is a control variate: its
  expected log error is the raw curve's (E log ideal(n) is known, by Monte Carlo over fresh
  samples), with less seed noise wherever the two errors move together.

The excess risk is exact: under uniform angles the modes' cosines and sines are orthogonal
with mean square 1/2, so ‖f̂ − f‖² = ½ Σ (ŵ − w)² over the coefficients; no test sample.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scalelab import seeds
from scalelab.io import atomic_write
from scalelab.manifold.field import TorusField
from scalelab.manifold.plan import ManifoldSweepConfig, run_rng
from scalelab.manifold.problem import Problem
from scalelab.progress import progress

#: Monte Carlo draws of E log ideal(n): until its standard error is at most SE_TARGET,
#: between MIN_DRAWS and MAX_DRAWS (a rule of counts, not of time, so it is reproducible).
SE_TARGET = 0.01
MIN_DRAWS = 8
MAX_DRAWS = 256
RUNS_FILE = "ideal_runs.csv"
EXPECTED_FILE = "ideal_expected.csv"


def coefficients(field: TorusField) -> np.ndarray:
    """The field's coefficients on [cos <k, θ>, sin <k, θ>] per mode [2M]: f = Φ w."""
    return np.concatenate(
        [field.amplitude * np.cos(field.phase), -field.amplitude * np.sin(field.phase)]
    )


def features(field: TorusField, x: np.ndarray) -> np.ndarray:
    """Φ [n, 2M]: every mode's cosine and sine at the rows of x."""
    z = field.angles(x) @ field.modes.T.astype(np.float64)
    return np.concatenate([np.cos(z), np.sin(z)], axis=1)


def posterior_mean(field: TorusField, x: np.ndarray, y: np.ndarray, noise_std: float) -> np.ndarray:
    """The posterior mean of w given y = Φ w + σ ε, w ~ N(0, diag(v, v)): primal or dual
    normal equations, whichever system is smaller."""
    phi = features(field, x)
    v = np.concatenate([field.variance, field.variance])
    s2 = noise_std**2
    n, p = phi.shape
    if n >= p:
        a = phi.T @ phi
        a[np.diag_indices(p)] += s2 / v
        return np.linalg.solve(a, phi.T @ y)
    k = (phi * v) @ phi.T
    k[np.diag_indices(n)] += s2
    return v * (phi.T @ np.linalg.solve(k, y))


def posterior_risk(field: TorusField, x: np.ndarray, y: np.ndarray, noise_std: float) -> float:
    """‖E[f | x, y] − f‖² under uniform angles (exact, from the coefficients)."""
    w = posterior_mean(field, x, y, noise_std)
    return 0.5 * float(np.sum((w - coefficients(field)) ** 2))


def run_risk(cfg: ManifoldSweepConfig, problem: Problem, n: int, seed: int) -> float:
    """The ideal learner's excess risk on the training sample the sweep drew for (n, seed)."""
    d, beta = problem.cfg.d, problem.cfg.beta
    sample = problem.sample(n, run_rng(cfg, d, beta, n, seed))
    return posterior_risk(problem.target, sample.x, sample.y, problem.label_noise_std)


def expected_log_risk(cfg: ManifoldSweepConfig, problem: Problem, n: int) -> dict[str, Any]:
    """E log ideal(n) over fresh samples (a stream of its own): mean, standard error, draws."""
    d, beta = problem.cfg.d, problem.cfg.beta
    logs: list[float] = []
    while len(logs) < MAX_DRAWS:
        rng = np.random.default_rng(
            [cfg.problem_seed, d, int(beta * 1000), n, seeds.MANIFOLD_IDEAL, len(logs)]
        )
        s = problem.sample(n, rng)
        logs.append(math.log(posterior_risk(problem.target, s.x, s.y, problem.label_noise_std)))
        if len(logs) >= MIN_DRAWS and np.std(logs, ddof=1) / math.sqrt(len(logs)) <= SE_TARGET:
            break
    arr = np.asarray(logs)
    return {
        "mean_log": float(arr.mean()),
        "se": float(arr.std(ddof=1) / math.sqrt(len(arr))),
        "sd": float(arr.std(ddof=1)),
        "draws": len(arr),
    }


def _read(path: Path) -> pd.DataFrame | None:
    return pd.read_csv(path) if path.exists() else None


def _write(path: Path, frame: pd.DataFrame) -> None:
    atomic_write(path, lambda p: frame.to_csv(p, index=False))


def paired_with_ideal(
    table: pd.DataFrame, cfg: ManifoldSweepConfig, folder: str | Path, *, quiet: bool = False
) -> pd.DataFrame:
    """Per `data` run of a field sweep: the ideal learner's risk on its sample (`ideal_mse`)
    and E log ideal at its n (`ideal_mean_log`, `ideal_se`). Cached in the sweep folder
    (RUNS_FILE, EXPECTED_FILE) and extended as runs finish; written after every entry, so an
    interrupted analysis resumes."""
    folder = Path(folder)
    data = table[table["task"] == "data"]
    runs = _read(folder / RUNS_FILE)
    expected = _read(folder / EXPECTED_FILE)
    run_rows = {} if runs is None else {r["run"]: r for r in runs.to_dict("records")}
    exp_rows = {} if expected is None else {
        (int(r["d"]), float(r["beta"]), int(r["n"])): r for r in expected.to_dict("records")
    }  # fmt: skip
    todo_runs = [r for r in data.to_dict("records") if r["run"] not in run_rows]
    keys = {(int(r["d"]), float(r["beta"]), int(r["n"])) for r in data.to_dict("records")}
    todo_exp = sorted(keys - set(exp_rows))
    problems: dict[tuple[int, float], Problem] = {}

    def problem(d: int, beta: float) -> Problem:
        if (d, beta) not in problems:
            problems[d, beta] = Problem(cfg.problem(d, beta))
        return problems[d, beta]

    with progress("ideal learner", len(todo_runs) + len(todo_exp), quiet=quiet) as advance:
        for r in todo_runs:
            p = problem(int(r["d"]), float(r["beta"]))
            risk = run_risk(cfg, p, int(r["n"]), int(r["seed"]))
            run_rows[r["run"]] = {"run": r["run"], "ideal_mse": risk}
            _write(folder / RUNS_FILE, pd.DataFrame(list(run_rows.values())))
            advance(1, info=r["run"])
        for d, beta, n in todo_exp:
            exp_rows[d, beta, n] = {"d": d, "beta": beta, "n": n,
                                    **expected_log_risk(cfg, problem(d, beta), n)}  # fmt: skip
            _write(folder / EXPECTED_FILE, pd.DataFrame(list(exp_rows.values())))
            advance(1, info=f"E log ideal d={d} n={n}")
    out = data[["run", "d", "beta", "n"]].copy()
    out["ideal_mse"] = [run_rows[r]["ideal_mse"] for r in out["run"]]
    for col in ("mean_log", "se"):
        out[f"ideal_{col}"] = [
            exp_rows[int(d), float(b), int(n)][col]
            for d, b, n in zip(out["d"], out["beta"], out["n"], strict=True)
        ]
    return out
