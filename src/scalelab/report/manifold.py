"""Report section for a manifold sweep: error vs n per d with fitted and predicted slopes,
the predicted-vs-observed exponent tables, intrinsic-dimension recovery, model scaling,
and what the sweep cost."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from scalelab.report import manifold_theorem
from scalelab.report.document import Report

if TYPE_CHECKING:
    from pathlib import Path

    from scalelab.manifold.results import ManifoldAnalysis


def _scaling_figure(
    rows: pd.DataFrame, fits: list[dict], x: str, xlabel: str, pred_key: str
) -> Figure:
    fig = Figure(figsize=(6.5, 4.5))
    ax = fig.subplots()
    for i, fit in enumerate(fits):
        grp = rows[(rows["d"] == fit["d"]) & (rows["beta"] == fit["beta"])]
        color = f"C{i}"
        ax.scatter(grp[x], grp["test_mse"], s=12, alpha=0.45, color=color)
        g = grp.groupby(x)["test_mse"].apply(lambda v: float(np.exp(np.mean(np.log(v)))))
        label = f"d={fit['d']}, β={fit['beta']:g}"
        ax.plot(g.index, g.to_numpy(), "o", color=color, label=label)
        xs = np.geomspace(g.index.min(), g.index.max(), 20)
        obs_key = pred_key.replace("pred", "obs")
        if obs_key in fit:
            ax.plot(xs, fit["fit_A"] * xs ** -fit[obs_key], "-", color=color, lw=1)
        # predicted slope, anchored at the geometric centre of the measured points
        x0, y0 = np.exp(np.mean(np.log(g.index))), np.exp(np.mean(np.log(g.to_numpy())))
        ax.plot(xs, y0 * (xs / x0) ** -fit[pred_key], "--", color=color, lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("excess test error ‖T̂ − f‖² (L2(Q))")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def _rounded(rows: list[dict]) -> list[dict]:
    return [{k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()} for r in rows]


#: What each `ProblemConfig.target` is, in the report's words.
_TARGETS = {
    "waves": "a random multi-scale β-Hölder target (plane waves)",
    "field": "the Gaussian random field of smoothness β (`manifold.field.TorusField`)",
}


def _validation(cfg: dict) -> str:
    """The validation set as configured: a fixed size at every n, or a share of n."""
    if cfg.get("val_size"):
        return f"{cfg['val_size']} points at every n"
    return f"{cfg['val_fraction']:g}·n points"


def draw(a: ManifoldAnalysis, report: Report, sweep_dir: Path) -> None:
    """The section for an analysed manifold sweep (`manifold.results.analyse_sweep`; the
    folder itself is not read here)."""
    cfg, table = a.config, a.table
    report.heading("Known-dimension benchmark (Theorem 1 on manifolds)")
    report.paragraph(
        f"Regression of {_TARGETS.get(cfg.get('target'), 'a β-Hölder target')} on a "
        f"{cfg['manifold']} of known "
        f"dimension d embedded in R^{cfg['D']}, label noise σ = {cfg['noise_std']}, learned by "
        f"the Definition-1 transformer ({cfg['n_layer']} blocks, {cfg['n_head']} heads, "
        f"width {cfg['n_embd']}, FFN {cfg['ffn_depth']}×{cfg['ffn_width']}, "
        f"{cfg['attention']} attention) with early stopping on a validation set of "
        f"{_validation(cfg)}. Error = excess risk against the noiseless "
        f"target on {cfg['n_test']} fresh test points. Predicted: α_D = 2β/(2β+d)."
    )
    if a.sources is not None and any(s.get("chosen") for s in a.sources):
        report.table(
            a.sources,
            "A validation-selected table (`scalelab manifold select`): each run from the "
            "candidate sweep whose model had the lowest validation MSE on the same sample (the "
            "model described above is the first candidate's); per curve the candidates, how "
            "many runs each gave, and the runs' CPU summed over the candidates",
        )
    elif a.sources is not None:
        report.table(
            a.sources,
            "A combined table (`scalelab manifold combine`): each curve from the sweep that "
            "decides it, with its runs, seeds, sizes, field cap and git revision",
        )
    if a.theorem is not None:
        manifold_theorem.build(a.theorem, report)
    data = a.data
    if data:
        rows = table[table["task"] == "data"]
        report.figure(
            _scaling_figure(rows, data, "n", "training samples n", "alpha_D_pred"),
            "Excess test error vs n (dots: seeds; circles: geometric mean; solid: fit; "
            "dashed: predicted slope 2β/(2β+d)).",
        )
        shown = [{k: v for k, v in r.items() if k != "fit_A"} for r in data]
        report.table(_rounded(shown), "Data-scaling exponents: observed vs predicted")
    ids = a.ids
    if ids:
        report.table(
            _rounded([{"d": d, **v} for d, v in sorted(ids.items())]),
            "Intrinsic dimension of the sampled inputs (the ID engine, known d)",
        )
    model = a.model
    if model:
        rows = table[table["task"] == "model"]
        report.figure(
            _scaling_figure(rows, model, "params", "parameters", "alpha_N_pred"),
            "Excess test error vs model size at the largest n (dashed: slope 2β/d).",
        )
        shown = [{k: v for k, v in r.items() if k != "fit_A"} for r in model]
        report.table(_rounded(shown), "Model-scaling exponents: observed vs predicted")
    report.table(_rounded([a.cost]), "Cost (seconds; run sums count each worker's time)")
    cols = ["run", "n", "d", "beta", "params", "test_mse", "train_mse", "val_mse", "steps"]
    cols += ["stop_reason", "wall_time_s", "cpu_time_s"]
    runs = table[table["task"] != "id"]
    if len(runs):
        report.table(_rounded(runs[[c for c in cols if c in runs]].to_dict("records")), "All runs")
