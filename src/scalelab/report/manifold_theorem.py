"""Report section for a `theorem` sweep: α_D and α_N against d beside 2β/(2β+d) and 2β/d,
the per-(d, β) table (outcome, power, range, α̂, predictions, checks), the intrinsic
dimension of inputs and hidden states, and the verdict against predictors that ignore d.
It draws `manifold.theorem.TheoremSummary`; every number comes from there."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from scalelab.manifold.theorem import ExponentCheck, TheoremSummary
from scalelab.report.document import Report


def _errorbar(
    ax: Any, checks: list[ExponentCheck], color: str, label: str, dx: float = 0.0
) -> None:
    for c in checks:
        if c.exponent is None:
            continue
        lo, hi = c.ci95 or (c.exponent, c.exponent)
        marker = "o" if c.outcome == "POWER LAW" else "s"
        face = color if c.outcome == "POWER LAW" else "white"
        ax.errorbar(
            c.d + dx, c.exponent, yerr=[[c.exponent - lo], [hi - c.exponent]], fmt=marker,
            color=color, mfc=face, capsize=3, label=label,
        )  # fmt: skip
        label = "_nolegend_"


def exponent_figure(summary: TheoremSummary) -> Figure:
    """Left: α̂_D vs d with 2β/(2β+d); right: α̂_N vs d with 2β/d (filled: the regime test
    said POWER LAW; open squares: it did not)."""
    fig = Figure(figsize=(11, 4.3))
    ax_d, ax_n = fig.subplots(1, 2)
    dims = np.linspace(0.8, 8.5, 200)
    decided = summary.paired or summary.data
    for i, beta in enumerate(sorted({c.beta for c in decided}, reverse=True)):
        color = f"C{i}"
        ax_d.plot(dims, 2 * beta / (2 * beta + dims), "-", color=color, lw=1,
                  label=f"2β/(2β+d), β={beta:g}")  # fmt: skip
        mine = [c for c in decided if c.beta == beta]
        _errorbar(ax_d, mine, color, f"observed α̂_D, β={beta:g}", dx=0.1 * i)
        ideal = [(c.d, c.predicted_ideal) for c in mine if c.predicted_ideal is not None]
        if ideal:
            xs, ys = zip(*ideal, strict=True)
            ax_d.plot(xs, ys, "x", color=color, label=f"ideal learner, β={beta:g}")
    ax_d.set_xlabel("intrinsic dimension d")
    ax_d.set_ylabel("data exponent α_D")
    ax_d.set_title("Data scaling (fit over the regime test's range)")
    for i, beta in enumerate(sorted({c.beta for c in summary.online}, reverse=True)):
        color = f"C{i}"
        ax_n.plot(dims, 2 * beta / dims, "-", color=color, lw=1, label=f"2β/d, β={beta:g}")
        _errorbar(ax_n, [c for c in summary.online if c.beta == beta], color, "observed α̂_N")
    ax_n.set_xlabel("intrinsic dimension d")
    ax_n.set_ylabel("model exponent α_N")
    low = min([0.0] + [c.exponent or 0.0 for c in summary.online])
    ax_n.set_ylim(bottom=low - 0.05, top=2.1)
    ax_n.set_title("Model scaling, fresh noise-free samples (infinite data)")
    for ax, kind in ((ax_d, "data"), (ax_n, "model")):
        ax.grid(True, alpha=0.3)
        _legend(ax, f"no {kind}-scaling runs in this sweep")
    return fig


def curves_figure(summary: TheoremSummary) -> Figure:
    """Error vs n per (d, β) (geometric mean over seeds), with the fit range marked."""
    fig = Figure(figsize=(11, 4.3))
    ax_d, ax_n = fig.subplots(1, 2)
    for i, c in enumerate(summary.data):
        ax_d.plot(c.sizes, c.errors, "o-", color=f"C{i}", ms=4, lw=1, label=c.label)
    for i, c in enumerate(summary.online):
        ax_n.plot(c.sizes, c.errors, "o-", color=f"C{i}", ms=4, lw=1, label=c.label)
    ax_d.set_xlabel("training samples n")
    ax_d.set_ylabel("excess risk (incl. the field's tail)")
    ax_n.set_xlabel("parameters")
    ax_n.set_ylabel("approximation error, capped field")
    for ax, kind in ((ax_d, "data"), (ax_n, "model")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
        _legend(ax, f"no {kind}-scaling runs in this sweep")
    return fig


def _legend(ax: Any, empty: str) -> None:
    """The panel's legend; a panel with nothing drawn (a sweep without that side) says so
    instead of showing empty axes."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    else:
        ax.text(0.5, 0.5, empty, transform=ax.transAxes, ha="center", va="center", fontsize=9)


def _f(v: float | None, digits: int = 3) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def check_rows(checks: list[ExponentCheck]) -> list[dict[str, Any]]:
    """The per-(d, β) table, as text cells."""
    rows = []
    for c in checks:
        ci = "n/a" if c.ci95 is None else f"[{c.ci95[0]:.3f}, {c.ci95[1]:.3f}]"
        limited = {True: "model-limited", False: "not limited", None: "n/a"}[c.model_limited]
        rows.append({
            "d": c.d, "β": f"{c.beta:g}", "outcome": c.outcome, "power": _f(c.power, 2),
            "range": f"{c.x_range[0]:,.0f}–{c.x_range[1]:,.0f} ({c.decades:.1f} dec)",
            "α̂ [95%]": f"{_f(c.exponent)} {ci}", "pred (d)": _f(c.predicted),
            "pred (d̂ inputs)": _f(c.predicted_d_hat), "pred (d̂ hidden)": _f(c.predicted_hidden),
            "ideal learner": _f(c.predicted_ideal),
            **({"ideal on samples": _f(c.sample_ideal)} if c.kind == "paired" else {}),
            "seed sd (log)": _f(c.noise_log, 2),
            **({"luck b": _f(c.luck_coefficient, 2)} if c.luck_coefficient is not None else {}),
            "wide/base": f"{_f(c.wide_ratio, 2)} {limited}", "best at end": c.best_at_end,
            "train/noise": _f(c.train_over_noise, 2),
            "local slopes": ", ".join(f"{s:.2f}" for s in c.local_slopes),
            **_ratio_cells(c),
            **_steps_cells(c),
        })  # fmt: skip
    return rows


def _ratio_cells(c: ExponentCheck) -> dict[str, str]:
    """The Bayes ratio's range, drift and slope, the stops at the cap, the cause or plan and
    the CPU time (data curves of a field sweep; none for the online ones)."""
    if not c.bayes_ratios:
        return {}
    return {
        "Bayes ratio": f"{min(c.bayes_ratios):.2f}–{max(c.bayes_ratios):.2f}",
        "drift (last/first)": _f(c.ratio_drift, 2),
        "ratio slope": _f(c.ratio_slope, 3),
        "at step cap": c.at_cap or "n/a",
        "cause or plan": c.cause or c.plan or "",
        "CPU min": _f(c.cpu_minutes, 1),
    }


def ratio_rows(summary: TheoremSummary) -> list[dict[str, str]]:
    """Per curve and size, the Bayes ratio (geometric mean over seeds): paired (model / ideal
    on the same sample) where the sweep has it, and raw (model / `bayes_risk(n)`)."""
    rows, sizes = [], set()
    for kind, checks in (("paired", summary.paired), ("raw", summary.data)):
        for c in checks:
            if not c.bayes_ratios:
                continue
            ratios = dict(zip(c.sizes, c.bayes_ratios, strict=False))
            sizes |= set(ratios)
            rows.append(({"curve": c.label, "ratio": kind}, ratios))
    columns = sorted(sizes)  # every curve's sizes: curves may span different ranges
    table = [
        {**head, **{f"{n:,.0f}": f"{r[n]:.2f}" if n in r else "" for n in columns}}
        for head, r in rows
    ]
    return sorted(table, key=lambda r: (r["curve"], r["ratio"]))


def _steps_cells(c: ExponentCheck) -> dict[str, str]:
    """An online curve's tripled-steps check (none without `online_long` runs)."""
    if not c.steps_check:
        return {}
    widths = ", ".join(str(w) for w in c.approx_limited or []) or "none"
    return {"more steps (log change)": c.steps_check, "approximation-limited widths": widths,
            "cause": c.cause}  # fmt: skip


def build(summary: TheoremSummary, report: Report) -> None:
    """Add the theorem section to `report`."""
    report.heading("Theorem 1 where d is known (Gaussian field on T^d)")
    report.figure(
        exponent_figure(summary),
        "Observed exponents against d (the paired curves where the sweep has them). Error "
        "bars: 95% bootstrap intervals over the fit range; filled circles: the regime test "
        "said POWER LAW, open squares: it did not; crosses: the ideal learner's exponent on "
        "the same field and sizes.",
    )
    report.figure(curves_figure(summary), "Error curves (geometric mean over seeds).")
    if summary.paired:
        report.table(
            check_rows(summary.paired),
            "Data scaling per (d, β), paired with the ideal learner on each run's own sample "
            "(these decide): error × (exp(E log ideal(n)) / ideal(n, s))^b, b the share of the "
            "sample's luck the model shares (pooled within-size regression, in [0, 1]); Bayes "
            "ratio = model / ideal on the same sample; ideal learner: the sequence model's "
            "exponent (`bayes_risk` plus the tail, its large-n limit), ideal on samples: the "
            "posterior mean's on random samples of these sizes (exp(E log ideal(n)) plus the "
            "tail), the curve a model that keeps a flat ratio follows",
            wrap=("local slopes", "cause or plan"),
        )
    report.table(
        check_rows(summary.data),
        "Data scaling per (d, β), raw" + (" (Bayes ratio against bayes_risk(n))"
                                           if summary.paired else ""),
        wrap=("local slopes", "cause or plan"),
    )  # fmt: skip
    ratios = ratio_rows(summary)
    if ratios:
        report.table(ratios, "Bayes ratio per size n (geometric mean over seeds)")
    if summary.online:
        report.table(
            check_rows(summary.online), "Model scaling, infinite data (α_N = 2β/d)",
            wrap=("more steps (log change)", "cause"),
        )  # fmt: skip
    if summary.hidden:
        hidden = [{k: _f(v, 2) if isinstance(v, float) else v for k, v in r.items()}
                  for r in summary.hidden]  # fmt: skip
        report.table(hidden, "d̂ (MLE) of the inputs and of the trained models' hidden states")
    for title, scores in (
        ("Verdict on the curves the regime test called POWER LAW", summary.scores_power_law),
        ("The same on every curve (slopes read as exponents whatever the test said)",
         summary.scores_all),
    ):  # fmt: skip
        report.heading(title, level=3)
        report.paragraph(f"Curves: {', '.join(scores['curves']) or 'none'}. {scores['verdict']}")
