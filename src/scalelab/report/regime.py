"""The regime analysis (`scalelab.laws.regime.analysis.analyse_regime`) for a reader, from its
`to_dict()` (so a saved `--json` result reads the same): two figures (the loss curve with the
unigram entropy and E and the fitted range shaded; the local slopes against size with their
bands and each prediction as a horizontal line) and its words (the verdict paragraph, and the
sentence with the rerun that would decide it). Nothing is fitted here.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import LogFormatter

from scalelab.io import atomic_write
from scalelab.laws.regime.analysis import outcome_of, power_words
from scalelab.laws.regime.excess import ESTIMATED
from scalelab.laws.regime.rules import CURVED, MIN_POINTS, POWER_LAW, UNDECIDED
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


def regime_words(regime: dict[str, Any] | None) -> str:
    """The data side's regime verdict as one paragraph: is there a power law to read?"""
    if regime is None:
        return "Regime: not tested (this folder predates the regime test)."
    outcome = outcome_of(regime)
    heads = {
        POWER_LAW: "A power-law regime was reached: the plain slope below is an exponent",
        CURVED: "The curve is CURVED over the fit range: the exponent changes by more than the "
        "tolerance, so the plain slope below describes the range and is not an exponent",
        UNDECIDED: "UNDECIDED: the sweep cannot tell a power law from a curve at its noise, so "
        "the plain slope below is not yet an exponent (the verdict says what would decide it)",
    }
    head = heads.get(outcome, f"{outcome}: the plain slope below is not read as an exponent")
    rng = regime["fit_range"]
    ends = f"Fit range: {rng['lower_reason']}; {rng['upper_reason']}."
    floor = regime.get("floor_nats")
    e_text = (
        f"E = {floor:.4f} nats ({regime['floor_source']})"
        if floor is not None
        else f"E from {regime['floor_source']}"
    )
    detail = regime["verdict"][:1].upper() + regime["verdict"][1:]
    return (
        f"Regime (data sweep): {head}. {detail}. {ends} Unigram entropy of the "
        f"scored test tokens {regime['unigram_entropy_nats']:.4f} nats; {e_text}."
        + capacity_words(regime.get("capacity"))
    )


# the power preset's cost, as sized (docs/benchmarks/scaling.md): where to go past a CPU plan
POWER_PRESET = (
    "--preset power (designed for power ≥ 0.8; 60–150 hours of 2 CPU cores per corpus: GPU or "
    "cluster work)"
)


def regime_sentence(regime: dict[str, Any] | None) -> str:
    """The regime's outcome as a sentence a newcomer can act on: the outcome over which sizes,
    the test's power, and for UNDECIDED the rerun that would decide it (the options of the
    regime test's plan, `laws.regime.power.decision_plan`, as validate options)."""
    if regime is None:
        return "not tested (this folder predates the regime test)"
    if not regime.get("outcome") and not regime.get("power_law"):  # before the three outcomes
        return f"not shown: {(regime.get('curvature') or {}).get('reason') or regime['verdict']}"
    outcome, rng = outcome_of(regime), regime["fit_range"]
    if not rng["n_points"]:
        return f"{outcome}: no fit range ({rng['lower_reason']}). To go on: {POWER_PRESET}."
    over = (
        f"over {rng['n_points']} sizes, {rng['x_lo']:,.0f} … {rng['x_hi']:,.0f} tokens "
        f"({rng['decades']:.2f} decades)"
    )
    power = power_words(regime)
    head = f"{outcome} {over}" + (f", {power}" if power else "")
    if outcome == POWER_LAW:
        return f"{head}: the observed slope is an exponent."
    if outcome == CURVED:
        return f"{head}: the slope changes across the range, so it is not an exponent."
    if (regime.get("curvature") or {}).get("n_points", 0) < MIN_POINTS:  # too few sizes
        more = _points_for_test(regime["sizes"], rng["x_lo"], rng["x_hi"])
        return (
            f"{head}: the test needs {MIN_POINTS} sizes in the fit range. To decide: rerun with "
            f"--points {more} (the same sweep, {MIN_POINTS} of its sizes in this range), or "
            f"{POWER_PRESET}."
        )
    plan = regime.get("plan") or {}
    chosen = plan.get("chosen")
    if not chosen:
        target = plan.get("target", 0.8)
        return f"{head}: no CPU rerun tried reaches power {target:.0%}; {POWER_PRESET}."
    added = len(chosen["sizes"]) - rng["n_points"]
    seeds_now = min((regime.get("curvature") or {}).get("runs_per_size") or [1])
    flags = [f"--seeds-per-size {chosen['seeds']}"] if chosen["seeds"] != seeds_now else []
    if added:
        flags.append(f"--max-tokens {chosen['sizes'][-1]:.0f}")
        flags.append(f"--points {len(regime['sizes']) + added}")
    cost = chosen.get("added_cpu_s")
    cost_words = ""
    if cost is not None:
        minutes = round(cost / 60)
        amount = (
            f"{cost / 3600:.1f} CPU-hours"
            if cost >= 3600
            else f"{minutes} CPU-minute{'' if minutes == 1 else 's'}"
        )
        cost_words = f", ≈ {amount} more here"
    return (
        f"{head}: the sweep cannot yet tell a power law from a curve. To decide: rerun with "
        f"{' '.join(flags)} ({chosen['seeds']} seed(s) per size, {len(chosen['sizes'])} sizes "
        "up to "
        f"{chosen['sizes'][-1]:,.0f} tokens: power {chosen['power']:.2f}{cost_words}), "
        f"or {POWER_PRESET}."
    )


def _points_for_test(sizes: list[float], lo: float, hi: float) -> int:
    """The fewest --points whose grid over the sweep's ends puts MIN_POINTS sizes in [lo, hi]
    (validate's grid: `sweeps.data.geometric_grid`, evenly spaced in log)."""
    points = len(sizes)
    while True:
        points += 1
        grid = np.round(np.geomspace(sizes[0], sizes[-1], points))
        if ((grid >= lo) & (grid <= hi)).sum() >= MIN_POINTS:
            return points


def capacity_words(cap: dict[str, Any] | None) -> str:
    """Can the model at the fit range's top hold the facts the ideal learner memorises?"""
    if cap is None:
        return ""
    verdict = (
        "it can hold them"
        if cap["holds"]
        else "it cannot hold them, so the ideal learner is not a fair prediction there"
    )
    return (
        f" Capacity at {cap['train_tokens']:,.0f} tokens: the ideal learner holds "
        f"{cap['distinct_facts']:,.0f} distinct facts ({cap['bits_needed']:,.0f} bits), "
        f"{cap['bits_per_param_needed']:.2f} bits per parameter of the {cap['params']:,}-"
        f"parameter model against the {cap['bits_per_param_available']:g} a language model "
        f"stores (Allen-Zhu & Li 2024): {verdict}."
    )
