"""Plotting helpers shared by report sections: log-log scaling plots with fitted laws, their
exponent intervals, and a predicted slope anchored where the observed fit passes.

Figures are `matplotlib.figure.Figure` objects (no pyplot state), ready for `Report.figure`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import LogFormatter

from scalelab.io import format_interval
from scalelab.laws.fit.fitted import PowerLawFit

FIT_STYLE = {"power": ("C0", "-"), "power+E": ("C2", "--")}


@dataclass(frozen=True)
class PredictedSlope:
    """A theory exponent to draw as a line of slope `-exponent` (with optional interval)."""

    exponent: float
    label: str
    ci95: tuple[float, float] | None = None


def new_figure(width: float = 6.0, height: float = 4.2) -> tuple[Figure, Axes]:
    fig = Figure(figsize=(width, height), layout="constrained")
    return fig, fig.subplots()


def fit_label(fit: PowerLawFit) -> str:
    name = "log-log fit (no E)" if fit.form == "power" else f"fit with E = {fit.E:.3g}"
    return f"{name}: α = {fit.exponent:.3f} {format_interval(fit.exponent_ci95)}"


def draw_fit(ax: Axes, fit: PowerLawFit, x: np.ndarray, *, band: bool = True) -> None:
    """The fitted law over the data's range; for the log-log form also its 95% exponent band,
    pivoting at the data's centroid in log space (where an OLS line is best determined)."""
    color, style = FIT_STYLE.get(fit.form, ("C3", "-"))
    grid = np.geomspace(x.min(), x.max(), 100)
    ax.plot(grid, fit.predict(grid), color=color, linestyle=style, label=fit_label(fit))
    if band and fit.form == "power":
        x0 = float(np.exp(np.mean(np.log(x))))
        y0 = float(fit.predict(x0))
        lines = [y0 * (grid / x0) ** (-a) for a in fit.exponent_ci95]
        ax.fill_between(grid, np.minimum(*lines), np.maximum(*lines), color=color, alpha=0.15)


def draw_predicted(
    ax: Axes, pred: PredictedSlope, x: np.ndarray, anchor: tuple[float, float]
) -> None:
    """A line of slope `-pred.exponent` through `anchor` (and a dotted band for its CI)."""
    grid = np.geomspace(x.min(), x.max(), 100)
    x0, y0 = anchor
    ax.plot(
        grid,
        y0 * (grid / x0) ** (-pred.exponent),
        color="C3",
        linestyle=":",
        lw=2,
        label=pred.label,
    )
    if pred.ci95 is not None and all(np.isfinite(pred.ci95)):
        lines = [y0 * (grid / x0) ** (-a) for a in pred.ci95]
        ax.fill_between(grid, np.minimum(*lines), np.maximum(*lines), color="C3", alpha=0.08)


def scaling_figure(
    x: np.ndarray,
    y: np.ndarray,
    fits: Sequence[PowerLawFit],
    *,
    predicted: PredictedSlope | None = None,
    xlabel: str,
    ylabel: str,
    title: str,
    marker_colors: Sequence[str] | None = None,
) -> Figure:
    """Log-log scatter of (x, y), each fit, and the predicted slope anchored on the first
    fit at the geometric-mean x (so only the slopes are compared, as in the paper)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    fig, ax = new_figure()
    ax.scatter(x, y, c=list(marker_colors) if marker_colors else "k", zorder=3, s=28, label="runs")
    for fit in fits:
        draw_fit(ax, fit, x)
    if predicted is not None and fits:
        x0 = float(np.exp(np.mean(np.log(x))))
        draw_predicted(ax, predicted, x, (x0, float(fits[0].predict(x0))))
    ax.set_xscale("log")
    ax.set_yscale("log")
    # Losses span less than a decade: label the y ticks with plain numbers, not 3×10⁰.
    ax.yaxis.set_major_formatter(LogFormatter(labelOnlyBase=False))
    ax.yaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 1)))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def dimension_figure(
    x: Sequence,
    d: Sequence[float],
    d_se: Sequence[float | None],
    *,
    xlabel: str,
    title: str,
    log_x: bool = False,
) -> Figure:
    """Estimated intrinsic dimension against a setting, with ±1 SE error bars."""
    fig, ax = new_figure(5.5, 3.8)
    se = [0.0 if s is None or not np.isfinite(s) else float(s) for s in d_se]
    ax.errorbar(list(x), list(d), yerr=se, marker="o", capsize=3)
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("estimated intrinsic dimension d")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    return fig


def legend_outside(ax: Axes) -> None:
    """The legend to the right of the axes, off the data (pages save with a tight box)."""
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
