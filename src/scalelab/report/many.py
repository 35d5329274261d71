"""The `validate-many` report, to be taken in at a glance: first one small table per kind of
corpus (all, real, synthetic) with a row per source — MAE and its interval, the margin over
the best baseline that ignores d and its interval, rho, the verdict — then the rule in words,
the margins against every baseline, predicted against observed per kind (identity line,
intervals on both axes), the verdict sentences, the table, and how the second theory's
statistics were measured. Every table is narrow enough for a 1280-pixel page (the full table
is table.csv)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from scalelab.laws.compare.baselines import (
    BASELINES,
    CONSTANT,
    KINDS,
    LOO,
    LOO_KIND,
    LOO_MEDIAN,
    fmt_interval,
    judged,
)
from scalelab.report.document import Report
from scalelab.report.plots import new_figure

SHORT = {CONSTANT: "constant", LOO: "LOO mean", LOO_KIND: "LOO mean in kind",
         LOO_MEDIAN: "LOO median"}  # fmt: skip
TITLES = {"all": "all corpora", "real": "real corpora", "synthetic": "synthetic corpora"}
ON = {"all": "all corpora", "real": "the real corpora", "synthetic": "the synthetic corpora"}


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
    ax.set_ylabel("observed (plain log-log slope; the excess exponent for counts)")
    ax.legend(fontsize=7, loc="best")
    return fig


def glance_rows(scores: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per source: MAE and interval, margin over the best baseline and interval,
    rho and interval, the verdict."""
    return [
        {
            "source": source,
            "n": s["n"],
            "MAE [95%]": f"{s['mae']:.3f} {fmt_interval(s['mae_ci95'])}",
            "best baseline": SHORT[s["best_baseline"]],
            "margin [95%]": f"{s['margin']:+.3f} {fmt_interval(s['margin_ci95'], sign=True)}",
            "rho [95%]": f"{s['rho']:.2f} {fmt_interval(s['rho_ci95'], 2)}"
            if s["rho"] is not None
            else "n/a",
            "verdict": judged(s),
        }
        for source, s in scores.items()
    ]


def margin_rows(scores: dict[str, Any]) -> list[dict[str, Any]]:
    """Every source against every baseline: its MAE and the paired margin."""
    rows = []
    for source, s in scores.items():
        for b in BASELINES:
            m = s["baselines"][b]["margin"]
            rows.append(
                {
                    "source": source,
                    "baseline": SHORT[b],
                    "baseline MAE": s["baselines"][b]["mae"],
                    "margin [95%]": f"{m['margin']:+.3f} {fmt_interval(m['ci95'], sign=True)}",
                    "P(margin ≤ 0)": m["p_not_above_0"],
                }
            )
    return rows


def _table_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The per-corpus table, its intervals folded into one cell each."""

    def cell(v: float | None, lo: float | None, hi: float | None) -> str:
        if v is None:
            return ""
        ends = "" if lo is None or hi is None else f" [{lo:.3f}, {hi:.3f}]"
        return f"{v:.3f}{ends}"

    return [
        {
            "corpus": r["corpus"],
            "source": r["source"],
            "d": r["d"],
            "predicted": cell(r["predicted_alpha_D"], r["predicted_lo"], r["predicted_hi"]),
            "observed": cell(r["observed_alpha_D"], r["observed_lo"], r["observed_hi"]),
            "excluded": r["excluded"],
        }
        for r in rows
    ]


def _statistics_rows(measured: dict[str, Any]) -> list[dict[str, Any]]:
    """The earlier instrument per corpus: β from counts, γ from the own model's loss."""
    rows = []
    for corpus, st in measured.items():
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


def _second_theory_rows(measured: dict[str, Any]) -> list[dict[str, Any]]:
    """The counts-based instruments per corpus: the horizon at the sweep's largest budget,
    β over the lags it resolves, γ from the resolved H_n below it, or why not measured."""
    rows = []
    for corpus, st in measured.items():
        st = st or {}
        hz = (st.get("horizon") or {}).get("horizon")
        beta, gamma = st.get("beta"), st.get("gamma")
        rows.append(
            {
                "corpus": corpus,
                "horizon n*": hz,
                "beta [95%]": None if beta is None else
                f"{beta['beta']:.3f} {fmt_interval(beta['beta_ci95'])}",
                "gamma [95%]": None if gamma is None else
                f"{gamma['gamma']:.3f} {fmt_interval(gamma['gamma_ci95'])}",
                "gamma/(2 beta)": st.get("alpha_D"),
                "note": st.get("error", ""),
            }
        )  # fmt: skip
    return rows


#: The instruments of each predictor measured per corpus (`pipeline.predictors`: its `key` in
#: scores.json's details), one table each, in this order; a predictor without instruments
#: worth a table has no line.
SECTIONS = (
    (
        "second_theory",
        "Second theory: its authors' instruments, scored on the excess exponent",
        "β from the operator norm of the lagged one-hot covariance at the lags the sweep's "
        "largest budget resolves (up to the horizon n*), γ from plug-in n-gram entropies H_n "
        "of the train split over 1 ≤ n ≤ n*; γ/(2β) is scored against the exponent of the "
        "excess loss L − E over the fit range",
        _second_theory_rows,
    ),
    (
        "statistics",
        "Second theory: the earlier instrument (not the declared verdict)",
        "β from token counts (Frobenius norm), γ from the own model's loss vs context, "
        "scored against the plain slope",
        _statistics_rows,
    ),
)


def unscored_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Where nothing could be scored: one row per source, how many corpora it predicts and
    how many of those were left out."""
    out = []
    for source in dict.fromkeys(r["source"] for r in rows):
        sub = [r for r in rows if r["source"] == source]
        left = sum(bool(r["excluded"]) for r in sub)
        out.append({"source": source, "predicted on": len(sub), "left out": left,
                    "verdict": "not scored"})  # fmt: skip
    return out


def _primary(result: dict, rows: list[dict[str, Any]]) -> str | None:
    primary = result.get("primary")
    if not primary:
        return None
    row = result["scores"].get(primary)
    if row is None:
        mine = [r for r in rows if r["source"] == primary]
        if not mine:
            return f"Declared primary source of d: {primary} (no prediction)."
        left = sum(bool(r["excluded"]) for r in mine)
        return (
            f"Declared primary source of d: {primary}: not scored. It predicts {len(mine)} "
            f"corpora and {left} of them are left out (listed below with the reason); the "
            "verdict needs at least 2 scored corpora."
        )
    return (
        f"Declared primary source of d: {primary}: {judged(row)} by the declared interval "
        f"rule; margin {row['margin']:+.4f} over the {row['best_baseline']}, 95% interval "
        f"{fmt_interval(row['margin_ci95'], 4, sign=True)}."
    )


_FIGURE = (
    "predicted against observed alpha_D on the {kind} corpora, one marker per corpus and "
    "source; the dashed line is identity. Horizontal bars: the batch-size/K range of d (or "
    "the γ and β intervals); vertical bars: the bootstrap 95% interval of the observed "
    "exponent."
)


def _glance(rep: Report, result: dict, rows: list[dict[str, Any]]) -> None:
    by_kind = result.get("scores_by_kind") or {"all": result["scores"]}
    n_boot = result.get("n_boot")
    for kind in ("all", *KINDS):
        if by_kind.get(kind):
            rep.table(
                glance_rows(by_kind[kind]),
                f"{TITLES[kind]}: paired bootstrap over corpora ({n_boot} resamples)",
                wrap=("source", "verdict"),
            )
    if not any(by_kind.values()):
        rep.table(
            unscored_rows(rows),
            "nothing scored: every observation is left out (the reasons are listed below)",
            wrap=("source",),
        )
    rep.paragraph(
        "How to read it: the margin is the best baseline's MAE minus the source's (above 0: "
        "the source is better); the best baseline is the predictor that ignores d with the "
        "lowest MAE on the same corpora. A source is informative only where the 95% interval "
        "of that margin lies entirely above 0; where the interval reaches 0 or below, it is "
        "not informative, whatever the sign of the margin itself."
    )


def build_many_report(out: Path, rows: list[dict[str, Any]], result: dict) -> tuple[Path, Path]:
    """report/report.html and report.md under `out`."""
    rep = Report("Predicted vs observed alpha_D across corpora")
    primary = _primary(result, rows)
    if primary:
        rep.paragraph(primary)
    _glance(rep, result, rows)
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
    if result["scores"]:
        rep.heading("Margins against every baseline that ignores d (all corpora)")
        rep.table(margin_rows(result["scores"]), f"band ±{result['band']:g}", wrap=("source",))
    for kind in KINDS:
        sub = [r for r in rows if r["kind"] == kind and r["observed_alpha_D"] is not None]
        scored = [r for r in sub if not r["excluded"]]
        if scored:
            rep.figure(predicted_vs_observed(scored), f"Scored: {_FIGURE.format(kind=kind)}")
            continue
        shown = [r for r in sub if r["predicted_alpha_D"] <= 1.0]
        if shown:  # nothing of this kind is scored: shown for reading, never judged
            off = len(sub) - len(shown)
            rep.figure(
                predicted_vs_observed(shown),
                f"Left out of every score, shown and not judged: {_FIGURE.format(kind=kind)}"
                + (f" {off} prediction(s) above 1 are off the chart." if off else ""),
            )
    rep.heading("The verdict in words")
    for kind, text in (result.get("verdict_by_kind") or {"all": result["verdict"]}).items():
        rep.paragraph(f"On {ON[kind]}: {text}")
    rep.heading("Table")
    rep.table(
        _table_rows(rows),
        "one row per corpus and source (all columns: table.csv)",
        wrap=("corpus", "source", "excluded"),
    )
    for key, heading, caption, table_rows in SECTIONS:
        rep.heading(heading)
        measured = {corpus: d.get(key) for corpus, d in result["details"].items()}
        rep.table(table_rows(measured), caption, wrap=("note",))
    return rep.write(Path(out) / "report")
