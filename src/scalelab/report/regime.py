"""The two figures of the regime analysis (`scalelab.laws.observe.analyse_regime`), drawn
from its `to_dict()` (so a saved `--json` result draws the same): the loss curve with the
unigram entropy and E and the fitted range shaded, and the local slopes against size with
their bands and each prediction as a horizontal line. Drawing only: nothing is fitted here.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import LogFormatter

from scalelab.io import atomic_write
from scalelab.laws.excess import ESTIMATED
from scalelab.laws.observe import outcome_of
from scalelab.report.plots import legend_outside, new_figure


def _shade_range(ax: Any, regime: dict[str, Any]) -> None:
    rng = regime["fit_range"]
    if rng["n_points"] > 0:
        verdict = outcome_of(regime)
        if regime.get("excess_curvature"):
            verdict = f"L: {verdict}; L − E: {outcome_of(regime, excess=True)}"
        label = f"fitted range ({verdict})"
        ax.axvspan(
            rng["x_lo"],
            rng["x_hi"],
            color="C2" if regime["power_law"] else "C1",
            alpha=0.12,
            label=label,
        )


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def loss_figure(regime: dict[str, Any], *, title: str, xlabel: str = "training tokens") -> Figure:
    """Test loss against size (log-log), the unigram entropy and E as horizontal lines."""
    fig, ax = new_figure()
    x, y = np.asarray(regime["sizes"]), np.asarray(regime["losses"])
    _shade_range(ax, regime)
    ax.plot(x, y, "o-", color="k", ms=5, lw=1, label="test loss", zorder=3)
    entropy = regime["fit_range"].get("unigram_entropy")
    if _finite(entropy):
        margin = regime["config"]["unigram_margin"]
        ax.axhline(entropy, color="C0", ls="--", lw=1.2, label=f"unigram entropy {entropy:.3f}")
        ax.axhline(
            entropy - margin,
            color="C0",
            ls=":",
            lw=1,
            label=f"entropy − {margin:g} (lower-end rule)",
        )
    excess = regime.get("excess")
    if excess and _finite(excess.get("E")):
        kind = "E (given)" if excess["E_source"] != ESTIMATED else "E (power+E fit)"
        if excess["estimable"]:
            ax.axhline(excess["E"], color="C3", ls="-.", lw=1.2, label=f"{kind} {excess['E']:.3g}")
        else:  # at its bound: a line at ~0 or at min L would only squash the axis
            ax.plot([], [], " ", label=f"{kind} at its bound ({excess['E']:.2g}): not drawn")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(LogFormatter(labelOnlyBase=False))
    ax.yaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 1)))
    ax.set_xlabel(xlabel)
    ax.set_ylabel("test loss (nats/token)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    legend_outside(ax)
    return fig


def slopes_figure(regime: dict[str, Any], *, title: str, xlabel: str = "training tokens") -> Figure:
    """Local slopes at the geometric midpoint of each neighbouring pair, with their bands;
    the plain and excess exponents over the range and each prediction as horizontal lines."""
    fig, ax = new_figure()
    s = regime["local_slopes"]
    mid = np.sqrt(np.asarray(s["x_lo"]) * np.asarray(s["x_hi"]))
    slope = np.asarray(s["slope"], dtype=float)
    lo = np.asarray([np.nan if v is None else v for v in s["lo"]], dtype=float)
    hi = np.asarray([np.nan if v is None else v for v in s["hi"]], dtype=float)
    _shade_range(ax, regime)
    has_band = np.isfinite(lo) & np.isfinite(hi)
    err = np.vstack([slope - lo, hi - slope])[:, has_band]
    ax.errorbar(
        mid[has_band],
        slope[has_band],
        yerr=err,
        fmt="o",
        color="k",
        capsize=3,
        label=f"local slope ({s['level']:.0%} band)",
        zorder=3,
    )
    ax.plot(mid[~has_band], slope[~has_band], "o", color="k", zorder=3)
    ex = regime.get("excess_slopes")
    if ex:
        ex_mid = np.sqrt(np.asarray(ex["x_lo"]) * np.asarray(ex["x_hi"]))
        ex_slope = np.asarray(ex["slope"], dtype=float)
        ex_lo = np.asarray([np.nan if v is None else v for v in ex["lo"]], dtype=float)
        ex_hi = np.asarray([np.nan if v is None else v for v in ex["hi"]], dtype=float)
        err = np.nan_to_num(np.vstack([ex_slope - ex_lo, ex_hi - ex_slope]))
        ax.errorbar(
            ex_mid,
            ex_slope,
            yerr=err,
            fmt="s",
            mfc="none",
            color="C3",
            capsize=3,
            label="local slope of L − E",
            zorder=3,
        )
    lines = []
    if regime.get("plain"):
        lines.append(("observed, plain log-log", regime["plain"]["exponent"], "C0", "-"))
    excess = regime.get("excess")
    if excess and excess["estimable"]:
        lines.append(("observed, excess L − E", excess["exponent"], "C3", "-"))
    for i, (label, value) in enumerate(regime.get("predictions", {}).items()):
        lines.append((f"predicted: {label}", value, f"C{4 + i}", "--"))
    for label, value, color, style in lines:
        if _finite(value):
            ax.axhline(value, color=color, ls=style, lw=1.3, label=f"{label} {value:.3f}")
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("local slope −Δlog L / Δlog n")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    legend_outside(ax)
    return fig


def write_regime_figures(
    regime: dict[str, Any], out_dir: str | Path, stem: str, *, title: str
) -> dict[str, str]:
    """`stem-loss.png` and `stem-slopes.png` in `out_dir` (written atomically)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for kind, draw in (("loss", loss_figure), ("slopes", slopes_figure)):
        fig = draw(regime, title=title)
        path = out / f"{stem}-{kind}.png"
        atomic_write(path, lambda p, fig=fig: fig.savefig(p, format="png", dpi=110))
        paths[kind] = str(path)
    return paths
