"""The `validate-many` report: the verdict per source first, then the scores beside the two
baselines, predicted against observed alpha_D (identity line, intervals on both axes), the
table, and how the second theory's statistics were measured."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from scalelab.laws.score import BASELINES
from scalelab.report.document import Report
from scalelab.report.plots import new_figure


def _err(values: list[float], lo: list[float | None], hi: list[float | None]) -> np.ndarray:
    """Asymmetric error bars (0 where an end is unknown)."""
    v = np.asarray(values, float)
    low = np.array([x - a if a is not None else 0.0 for x, a in zip(v, lo, strict=True)])
    high = np.array([b - x if b is not None else 0.0 for x, b in zip(v, hi, strict=True)])
    return np.vstack([np.clip(low, 0, None), np.clip(high, 0, None)])


def predicted_vs_observed(rows: list[dict[str, Any]]) -> Figure:
    """One marker per corpus and source: x = predicted (interval: the d range of batch sizes
    and K, or the γ/β intervals), y = observed (bootstrap 95% interval); identity line."""
    fig, ax = new_figure(6.4, 5.2)
    sources = list(dict.fromkeys(r["source"] for r in rows))
    markers = "osD^v<>pP*hX"
    for i, s in enumerate(sources):
        sub = [r for r in rows if r["source"] == s]
        x = [r["predicted_alpha_D"] for r in sub]
        y = [r["observed_alpha_D"] for r in sub]
        ax.errorbar(
            x,
            y,
            xerr=_err(x, [r["predicted_lo"] for r in sub], [r["predicted_hi"] for r in sub]),
            yerr=_err(y, [r["observed_lo"] for r in sub], [r["observed_hi"] for r in sub]),
            fmt=markers[i % len(markers)],
            capsize=2,
            label=s,
            alpha=0.8,
        )
    vals = [r[k] for r in rows for k in ("predicted_alpha_D", "observed_alpha_D")]
    lo, hi = min(vals) * 0.9, max(vals) * 1.1
    ax.plot([lo, hi], [lo, hi], color="k", lw=0.8, ls="--", label="identity")
    ax.set_xlabel("predicted alpha_D")
    ax.set_ylabel("observed alpha_D (log-log fit of the data sweep)")
    ax.legend(fontsize=7, loc="best")
    return fig


def _score_rows(scores: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for source, s in scores.items():
        for name, v in [(source, s), *((b, s["baselines"][b]) for b in BASELINES)]:
            rows.append(
                {
                    "source": source,
                    "predictor": name,
                    "corpora": v["n"],
                    "MAE": v["mae"],
                    "slope": v["slope"],
                    "Spearman rho": v["rho"],
                    "within band": v["within"],
                    "informative": s["informative"] if name == source else "",
                }
            )
    return rows


def _statistics_rows(details: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for corpus, d in details.items():
        st = d["statistics"]
        if "error" in st:
            rows.append({"corpus": corpus, "beta": None, "gamma": None, "note": st["error"]})
            continue
        rows.append(
            {
                "corpus": corpus,
                "beta": st["beta"]["beta"],
                "beta 95%": str([round(v, 3) for v in st["beta"]["beta_ci95"]]),
                "gamma": st["gamma"]["gamma"],
                "L_inf": st["gamma"]["loss_inf"],
                "alpha_D = gamma/(2 beta)": st["alpha_D"],
                "note": f"{len(st['beta']['distances_used'])} distances above noise",
            }
        )
    return rows


def build_many_report(out: Path, rows: list[dict[str, Any]], result: dict) -> tuple[Path, Path]:
    """report/report.html and report.md under `out`."""
    rep = Report("Predicted vs observed alpha_D across corpora")
    primary = result.get("primary")
    if primary:
        row = result["scores"].get(primary)
        state = (
            "no prediction"
            if row is None
            else ("informative" if row["informative"] else "not informative")
        )
        rep.paragraph(f"Declared primary source of d: {primary} ({state} by the declared rule).")
    rep.paragraph(result["verdict"])
    left_out = result.get("left_out") or {}
    if left_out:
        listed = "; ".join(f"{name} ({why})" for name, why in left_out.items())
        rep.paragraph(
            f"Left out of every score, never replaced ({len(left_out)}): {listed}. Their "
            "observed exponents are in the table below, marked `excluded`."
        )
    rules = result.get("rules", {})
    for key in ("scoring", "decision"):
        if rules.get(key):
            rep.paragraph(f"{key.capitalize()} (declared): {rules[key]}")
    rep.heading("Scores beside the two baselines that ignore d")
    rep.table(_score_rows(result["scores"]), f"band ±{result['band']:g}")
    rep.figure(
        predicted_vs_observed(rows),
        "Predicted against observed alpha_D, one marker per corpus and source; the dashed "
        "line is identity. Horizontal bars: the batch-size/K range of d (or the γ and β "
        "intervals); vertical bars: the bootstrap 95% interval of the observed exponent.",
    )
    rep.heading("Table")
    rep.table(rows, "one row per corpus and source (table.csv)")
    rep.heading("Second theory: statistics per corpus")
    rep.table(_statistics_rows(result["details"]), "β from token counts, γ from loss vs context")
    return rep.write(Path(out) / "report")
