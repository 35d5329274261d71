"""Figures of the validation report: scaling with every source's predicted slope, d along the
sweep, and the validation curves of every run as small multiples."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from scalelab.laws.fit.fitted import PowerLawFit
from scalelab.report.plots import draw_fit, legend_outside, new_figure


def scaling_sources_figure(
    x: np.ndarray,
    y: np.ndarray,
    fits: list[PowerLawFit],
    slopes: list[tuple[str, float]],
    *,
    xlabel: str,
    title: str,
) -> Figure:
    """Log-log runs and fits; each source's predicted slope as a dotted line anchored on the
    log-log fit at the geometric-mean size (only slopes are compared)."""
    fig, ax = new_figure(6.4, 4.4)
    ax.scatter(x, y, c="k", zorder=3, s=28, label="runs")
    for fit in fits:
        draw_fit(ax, fit, x)
    if fits:
        x0 = float(np.exp(np.mean(np.log(x))))
        y0 = float(fits[0].predict(x0))
        grid = np.geomspace(x.min(), x.max(), 50)
        for i, (label, a) in enumerate(slopes):
            ax.plot(grid, y0 * (grid / x0) ** (-a), ":", lw=2, color=f"C{3 + i}", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("test loss (nats/token)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    legend_outside(ax)
    return fig


def along_figure(along: dict[str, Any]) -> Figure:
    """d (±1 SE) against training tokens (with the named trend fit) and against test loss."""
    rows = along["rows"]
    n = np.array([r["train_tokens"] for r in rows], float)
    d = np.array([r["dimension"] for r in rows], float)
    se = np.array([r["dimension_se"] or 0.0 for r in rows], float)
    loss = np.array([r["test_loss_nats"] for r in rows], float)
    fig = Figure(figsize=(10, 3.8), layout="constrained")
    ax_n, ax_l = fig.subplots(1, 2)
    ax_n.errorbar(n, d, yerr=se, marker="o", capsize=3, label="d of each run (same positions)")
    t = along.get("trend")
    if t:
        grid = np.geomspace(n.min(), n.max(), 50)
        ax_n.plot(
            grid,
            t["a"] + t["b_per_decade"] * np.log10(grid),
            "--",
            color="C1",
            label=f"trend fit d = a + b·log10 n, b = {t['b_per_decade']:+.2f} ± "
            f"{t['b_se']:.2f}/decade (shown, not used)",
        )
    ax_n.set_xscale("log")
    ax_n.set_xlabel("training tokens of the run")
    ax_n.set_ylabel("estimated intrinsic dimension d")
    ax_n.legend(fontsize=7)
    ax_l.errorbar(loss, d, yerr=se, marker="o", capsize=3)
    for x_, y_, r in zip(loss, d, rows, strict=True):
        ax_l.annotate(
            f"{r['train_tokens']:,}",
            (x_, y_),
            fontsize=6,
            xytext=(3, 3),
            textcoords="offset points",
        )
    ax_l.set_xlabel("test loss of the run (nats/token)")
    ax_l.invert_xaxis()
    for ax in (ax_n, ax_l):
        ax.grid(alpha=0.3)
    fig.suptitle("d along the data sweep (every model on the same test positions)")
    return fig


def read_curve(run_dir: Path) -> tuple[list[int], list[float]]:
    steps, vals = [], []
    path = run_dir / "metrics.jsonl"
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            steps.append(int(row["step"]))
            vals.append(float(row["val_loss_nats"]))
    return steps, vals


def curves_figure(panels: list[dict[str, Any]], title: str) -> Figure:
    """One small panel per run: validation loss against step; the best step marked; the
    title says how the run stopped; a longer-budget run of the check overlaid in grey."""
    cols = min(4, max(1, len(panels)))
    nrows = math.ceil(len(panels) / cols)
    fig = Figure(figsize=(2.6 * cols, 2.1 * nrows + 0.4), layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrows, cols, squeeze=False)).ravel()
    for ax, p in zip(axes, panels, strict=False):
        if p.get("longer_dir"):
            s2, v2 = read_curve(Path(p["longer_dir"]))
            ax.plot(s2, v2, color="0.6", lw=1, label="longer budget")
        steps, vals = read_curve(Path(p["run_dir"]))
        ax.plot(steps, vals, color="C0", lw=1.2)
        if vals:
            i = int(np.argmin(vals))
            ax.plot(steps[i], vals[i], "o", color="C3", ms=4)
            lo, hi = min(vals), np.percentile(vals, 90)
            ax.set_ylim(lo - 0.05 * (hi - lo + 1e-9), hi)
        ax.set_title(f"{p['label']}\n{p['stop']}", fontsize=7)
        ax.tick_params(labelsize=6)
        ax.grid(alpha=0.3)
    for ax in axes[len(panels) :]:
        ax.set_visible(False)
    fig.suptitle(title, fontsize=9)
    return fig
