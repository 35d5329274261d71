"""Observed vs predicted exponents from a manifold sweep's runs table.

Data scaling: for each (d, β), fit error ∝ n^-α to the geometric mean over seeds of the
excess test error at each n, and set α̂ beside α_D = 2β/(2β+d) (and beside the α_D that
the *estimated* d̂ of the inputs predicts). Model scaling: the same against the number of
parameters, beside α_N = 2β/d.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from scalelab.laws.fit.power_law import fit_power_law
from scalelab.laws.theory import predict_exponents

TOLERANCE = 0.03


def _rows(table: pd.DataFrame, task: str) -> pd.DataFrame:
    if "task" not in table:
        return table.iloc[0:0]
    return table[table["task"] == task]


def id_estimates(table: pd.DataFrame) -> dict[int, dict[str, Any]]:
    """d -> {d_hat, d_hat_se, estimator, points} from the `id` runs."""
    out = {}
    for _, r in _rows(table, "id").iterrows():
        se = r.get("d_hat_se")
        out[int(r["d"])] = {
            "d_hat": float(r["d_hat"]),
            "d_hat_se": float(se) if pd.notna(se) else 0.0,
            "estimator": r.get("id_estimator"),
            "points": int(r["id_points"]),
        }
    return out


def _fit(x: np.ndarray, y: np.ndarray, seed: int) -> dict[str, Any] | None:
    if len(x) < 3 or np.any(y <= 0):
        return None
    f = fit_power_law(x, y, form="power", n_boot=1000, seed=seed)
    return {"exponent": f.exponent, "ci95": list(f.exponent_ci95), "A": f.A}


def _geo_means(rows: pd.DataFrame, by: str) -> tuple[np.ndarray, np.ndarray]:
    g = rows.groupby(by)["test_mse"].apply(lambda v: float(np.exp(np.mean(np.log(v)))))
    return g.index.to_numpy(dtype=float), g.to_numpy(dtype=float)


def data_exponents(table: pd.DataFrame, seed: int = 0) -> list[dict[str, Any]]:
    """One row per (d, β): observed α̂ with its 95% CI next to 2β/(2β+d) (and from d̂)."""
    rows = _rows(table, "data")
    ids = id_estimates(table)
    out = []
    for (d, beta), grp in rows.groupby(["d", "beta"]):
        n, err = _geo_means(grp, "n")
        fit = _fit(n, err, seed)
        pred = 2 * beta / (2 * beta + d)
        row: dict[str, Any] = {
            "d": int(d),
            "beta": float(beta),
            "n_range": f"{int(n.min())}-{int(n.max())}",
            "decades": float(np.log10(n.max() / n.min())),
            "runs": len(grp),
            "alpha_D_pred": pred,
        }
        if fit:
            row |= {
                "alpha_D_obs": fit["exponent"],
                "fit_A": fit["A"],
                "ci95_low": fit["ci95"][0],
                "ci95_high": fit["ci95"][1],
                "obs_minus_pred": fit["exponent"] - pred,
                "within_0.03": abs(fit["exponent"] - pred) <= TOLERANCE,
            }
        if int(d) in ids:
            est = ids[int(d)]
            row["d_hat"] = est["d_hat"]
            row["alpha_D_from_d_hat"] = predict_exponents(
                est["d_hat"], est["d_hat_se"], float(beta)
            ).alpha_D
        row["stopped_by_patience"] = f"{int((grp['stop_reason'] == 'patience').sum())}/{len(grp)}"
        out.append(row)
    return out


def model_exponents(table: pd.DataFrame, seed: int = 0) -> list[dict[str, Any]]:
    """One row per (d, β) of the model-size runs: α̂_N vs params next to 2β/d."""
    rows = _rows(table, "model")
    out = []
    for (d, beta), grp in rows.groupby(["d", "beta"]):
        p, err = _geo_means(grp, "params")
        fit = _fit(p, err, seed)
        row: dict[str, Any] = {
            "d": int(d),
            "beta": float(beta),
            "n": int(grp["n"].iloc[0]),
            "params_range": f"{int(p.min())}-{int(p.max())}",
            "alpha_N_pred": 2 * beta / d,
        }
        if fit:
            row |= {
                "alpha_N_obs": fit["exponent"],
                "fit_A": fit["A"],
                "ci95_low": fit["ci95"][0],
                "ci95_high": fit["ci95"][1],
            }
        out.append(row)
    return out


def timing(table: pd.DataFrame) -> dict[str, float]:
    """Summed per-run wall and CPU seconds (the sweep's own wall time is in invocations)."""
    return {
        "runs": len(table),
        "sum_run_wall_s": float(table["wall_time_s"].sum()),
        "sum_run_cpu_s": float(table["cpu_time_s"].sum()),
    }
