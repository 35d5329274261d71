"""The page of `scalelab validate`: verdicts first, then every source of d beside the observed
exponents, the scaling plots, d along the sweep, the validation curves and the tables.

It reads only the files the validation wrote (fits.json, d/*/source.json, along/along.json,
the sweeps' runs.csv and run folders), so `scalelab validate` on a finished folder rebuilds it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from scalelab.io import provenance, read_json
from scalelab.laws.compare.baselines import KAPLAN_ALPHA_D
from scalelab.laws.fit.fitted import PowerLawFit
from scalelab.laws.regime.excess import BOUND_FRACTION
from scalelab.laws.theory import d_from_alpha_D, d_from_alpha_N
from scalelab.report.document import Report
from scalelab.report.regime import loss_figure, regime_sentence, regime_words, slopes_figure
from scalelab.report.validate_figures import along_figure, curves_figure, scaling_sources_figure
from scalelab.runs import outdir

SIDES = {
    "data": ("sweep", "check", "train_tokens", "alpha_D", "training tokens"),
    "model": (
        "model-sweep",
        "check",
        "params_non_embedding",
        "alpha_N",
        "non-embedding parameters",
    ),
}


def _ci(pair: Any) -> str:
    if not pair or any(v is None or not math.isfinite(v) for v in pair):
        return ""
    return f"[{pair[0]:.3f}, {pair[1]:.3f}]"


def _fit(doc: dict[str, Any] | None) -> PowerLawFit | None:
    if not doc:
        return None
    d = dict(doc)
    d.pop("difference_observed_minus_predicted", None)
    d["exponent_ci95"] = tuple(d["exponent_ci95"])
    return PowerLawFit(**{k: v for k, v in d.items() if k in PowerLawFit.__dataclass_fields__})


def _estimable(E: float, min_loss: float) -> bool:
    """E strictly inside its bounds, as `laws.regime.excess` decides it for the regime's excess
    fit."""
    return BOUND_FRACTION < E / min_loss < 1.0 - BOUND_FRACTION


def _implied(key: str, a: float) -> float | None:
    if key == "alpha_D":
        return float(d_from_alpha_D(a)) if 0 < a < 1 else None
    return float(d_from_alpha_N(a)) if a > 0 else None


def _stop_counts(table: pd.DataFrame) -> str:
    n = int((table["stop_reason"] == "patience").sum())
    return f"{n} of {len(table)} runs stopped by patience"


OWN_CAVEAT = (
    "from a tiny model trained here: not a good instrument for d (it reads a much lower d "
    "than a pretrained model on the same text); its prediction checks the pipeline, not the "
    "theory"
)
GIVE_REFERENCE = "; give a pretrained model with --reference-model"  # where none was given


def glance_rows(fits: dict[str, Any]) -> list[dict[str, str]]:
    """The verdict in a few short rows (question, answer), narrow enough for any page: the
    regime, the observed slope, the closest prediction against the constant, the check, and
    the caveat on the own model's d."""
    regime = fits["data"].get("regime")
    rows = [
        {
            "question": "Is the data curve a power law over its fit range?",
            "answer": regime_sentence(regime),
        }
    ]
    fit = fits["data"].get("power")
    if fit:
        lo, hi = fits["data"].get("x_range") or (None, None)
        over = f" over {lo:,.0f} … {hi:,.0f} tokens" if lo and hi else ""
        rng = (regime or {}).get("fit_range") or {}
        if rng and lo and (lo, hi) != (rng["x_lo"], rng["x_hi"]):  # the fit is not the range's
            held = (
                f"{rng['x_lo']:,.0f} … {rng['x_hi']:,.0f} holds {rng['n_points']}"
                if rng["n_points"]
                else "is empty"
            )
            over += f" (every size: the fit range {held}, too few to fit)"
        name = "exponent" if regime and regime.get("power_law") else "slope (not an exponent)"
        value = f"{fit['exponent']:.3f} {_ci(fit['exponent_ci95'])}{over}"
        rows.append({"question": f"Observed data {name}", "answer": value})
    ranked = [r for r in baseline_rows(fits) if r["beats the constant"] is not None]
    if ranked:
        best = min(ranked, key=lambda r: r["miss = abs(pred - obs)"])
        const = abs(KAPLAN_ALPHA_D - fit["exponent"])  # type: ignore[index]
        rows.append(
            {
                "question": "Closest prediction from d, beside the constant 0.095",
                "answer": f"{best['predictor']}: {best['alpha_D']:.3f}, misses by "
                f"{best['miss = abs(pred - obs)']:.3f} (the constant by {const:.3f})",
            }
        )
    for side, check in fits["convergence"].items():
        if check is not None:
            labels = ", ".join(check.get("labels") or []) or "converged within the check"
            rows.append({"question": f"Convergence check ({side} sweep)", "answer": labels})
    given = any(not str(s["label"]).startswith("own") for s in fits["sources"])
    for s in fits["sources"]:
        if str(s["label"]).startswith("own"):
            caveat = OWN_CAVEAT + ("" if given else GIVE_REFERENCE)
            rows.append(
                {"question": f"d of {s['label']}", "answer": f"{s['dimension']:.2f}, {caveat}"}
            )
    return rows


def verdicts(report: Report, fits: dict[str, Any], tables: dict[str, pd.DataFrame]) -> None:
    report.heading("Verdict")
    report.table(
        glance_rows(fits), caption="At a glance (details below).", wrap=("question", "answer")
    )
    report.paragraph(regime_words(fits["data"].get("regime")))
    for side, check in fits["convergence"].items():
        if check is None:
            continue
        name = "Data sweep" if side == "data" else "Model-size sweep"
        report.paragraph(f"{name}: {_stop_counts(tables[side])}. {check['text']}")
    if "model" in tables:
        report.paragraph(data_limit(tables["model"]))


def baseline_rows(fits: dict[str, Any]) -> list[dict[str, Any]]:
    """Each source's predicted alpha_D beside a predictor that ignores d, the constant 0.095
    (Kaplan et al. 2020): its miss of the observed exponent against the constant's. One corpus
    cannot show that d predicts which corpus scales faster; `scalelab validate-many` scores
    that across corpora (with the leave-one-out baseline, which needs several)."""
    fit = (fits.get("data") or {}).get("power")
    if not fit:
        return []
    observed = float(fit["exponent"])
    const = abs(KAPLAN_ALPHA_D - observed)
    rows = [
        {
            "predictor": s["label"] + " (2/(2+d))",
            "alpha_D": round(float(s["alpha_D"]), 4),
            "miss = abs(pred - obs)": round(abs(float(s["alpha_D"]) - observed), 4),
            "beats the constant": abs(float(s["alpha_D"]) - observed) < const,
        }
        for s in fits["sources"]
    ]
    rows.append(
        {
            "predictor": f"constant {KAPLAN_ALPHA_D} (ignores d)",
            "alpha_D": KAPLAN_ALPHA_D,
            "miss = abs(pred - obs)": round(const, 4),
            "beats the constant": None,
        }
    )
    return rows


def baselines(report: Report, fits: dict[str, Any]) -> None:
    rows = baseline_rows(fits)
    if not rows:
        return
    observed = fits["data"]["power"]["exponent"]
    beat = [r["predictor"] for r in rows if r["beats the constant"]]
    report.paragraph(
        f"Against a baseline that ignores d (observed alpha_D {observed:.3f}): "
        + (f"closer than the constant {KAPLAN_ALPHA_D}: {', '.join(beat)}." if beat else
           f"no source of d is closer than the constant {KAPLAN_ALPHA_D}.")
        + " One corpus cannot show that d predicts which corpus scales faster: "
        "`scalelab validate-many` scores that across corpora."
    )  # fmt: skip
    report.table(rows, caption="Each prediction's miss of the observed alpha_D, beside the "
                 "constant 0.095's (Kaplan et al. 2020), which ignores d.")  # fmt: skip


def data_limit(table: pd.DataFrame) -> str:
    """Whether the model sweep's largest model was limited by its data: how many passes over
    its tokens it had made at its best step, and whether it stopped by patience (validation
    loss rising or flat while it trained on repeated data)."""
    big = table.sort_values("params_non_embedding").iloc[-1]
    passes = big["best_step"] / max(big["steps"], 1) * big["tokens_seen"] / big["train_tokens"]
    text = (
        f"Data limit: the largest model ({big['label']}, {int(big['params_non_embedding']):,} "
        f"non-embedding parameters) had made {passes:.1f} passes over its "
        f"{int(big['train_tokens']):,} training tokens at its best step"
    )
    if big["stop_reason"] == "patience":
        return text + (
            "; it stopped by patience on repeated data, so more data would likely lower its "
            "loss: the largest models may be data-limited, which flattens alpha_N."
        )
    return text + "; it ended at its budget, not by patience, so repeated data had not stopped it."


def sources_table(report: Report, fits: dict[str, Any]) -> None:
    """Every source's d and the exponents it predicts, beside the observed ones and the d they
    imply: one table per exponent, each narrow enough for a laptop page."""
    d_rows = []
    for s in fits["sources"]:
        se = s.get("dimension_se")
        lo, hi = s["dimension_range"]
        d_rows.append(
            {
                "source of d": s["label"],
                "d ± SE": f"{s['dimension']:.2f}" + (f" ± {se:.2f}" if se is not None else ""),
                "MLE batches": s.get("batches") or "not recorded",
                "d batch/K range": f"[{lo:.2f}, {hi:.2f}]",
            }
        )
    report.table(
        d_rows,
        caption="Sources of d: d at the protocol's MLE batch size and K ± the SE over batches; "
        "the range is d's min–max over batch sizes 2048/4096/8192 and K 10/20/40, which the SE "
        "does not include.",
        wrap=("source of d", "MLE batches"),
    )
    for side, formula in (("data", "2/(2+d)"), ("model", "2/d")):
        key = SIDES[side][3]
        rows = [
            {
                "source": s["label"],
                f"{key} = {formula}": f"{s[key]:.3f}",
                "95% interval": _ci(s.get(f"{key}_ci95")),
                "over d's range": _ci(s[f"{key}_range"]),
            }
            for s in fits["sources"]
        ]
        fit = (fits.get(side) or {}).get("power")
        if fit:
            implied = _implied(key, fit["exponent"])
            rows.append(
                {
                    "source": f"OBSERVED ({side} sweep, log-log fit{_over(fits[side])}; "
                    + (f"implied d = {implied:.2f})" if implied else "implied d: none)"),
                    f"{key} = {formula}": f"{fit['exponent']:.3f}",
                    "95% interval": _ci(fit["exponent_ci95"]) + " (bootstrap)",
                    "over d's range": _ci(
                        (fits.get("convergence", {}).get(side) or {}).get("systematic_interval")
                    )
                    + " (systematic: convergence check)",
                }
            )
        if side == "data" or fit:
            report.table(
                rows,
                caption=f"{key} predicted from each d (interval: ±1.96 SE of d), beside the "
                f"observed {key}",
                wrap=("source", "95% interval", "over d's range"),
            )


def _over(side_fits: dict[str, Any]) -> str:
    """' over A … B' where the fit covers a range (the data side's fit range by rule)."""
    lo, hi = side_fits.get("x_range") or (None, None)
    return "" if lo is None else f" over {lo:,.0f} … {hi:,.0f}"


def _side_figure(report: Report, side: str, fits: dict[str, Any], table: pd.DataFrame) -> None:
    _, _, size, key, what = SIDES[side]
    t = table.sort_values(size)
    x, y = t[size].to_numpy(float), t["test_loss_nats"].to_numpy(float)
    fitted = [f for f in (_fit(fits[side].get(form)) for form in ("power", "power+E")) if f]
    # a power+E fit with E at its bound shows no floor: not drawn (`laws.regime.excess`'s rule)
    dropped = [f for f in fitted if f.E is not None and not _estimable(f.E, float(y.min()))]
    fitted = [f for f in fitted if f not in dropped]
    formula = "2/(2+d)" if key == "alpha_D" else "2/d"
    slopes = [(f"{s['label']}: {formula} = {s[key]:.3f}", s[key]) for s in fits["sources"]]
    fig_no = "Figure 2" if side == "data" else "Figure 3"
    report.figure(
        scaling_sources_figure(
            x,
            y,
            fitted,
            slopes,
            xlabel=what,
            title=f"test loss vs {what} (cf. the paper's {fig_no})",
        ),
        f"Test loss vs {what}, log-log: fits (solid: no E, with its 95% band; dashed: with "
        "E) and each source's predicted slope (dotted), anchored where the log-log fit passes "
        "the geometric-mean size."
        + (
            f" The power+E fit is not drawn: its E = {dropped[0].E:.3g} lies at a bound (0 or "
            "the smallest loss), so the curve shows no floor and E is not estimable."
            if dropped
            else ""
        ),
    )


def _curves(report: Report, out: Path, side: str, table: pd.DataFrame, fits: dict) -> None:
    sweep, check, size, _, _ = SIDES[side]
    rows = (fits["convergence"].get(side) or {}).get("runs", [])
    stricter = {r["run"]: r["check_run"] for r in rows if r["perturbation"] == "stricter"}
    panels = []
    for row in table.sort_values(size).itertuples():
        longer = out / check / "runs" / stricter.get(row.run, "")
        label = row.label if side == "model" else f"{row.train_tokens:,} tokens"
        panels.append(
            {
                "label": label,
                "run_dir": out / sweep / "runs" / row.run,
                "stop": f"{row.stop_reason} at {row.steps}/{row.max_steps}",
                "longer_dir": longer if row.run in stricter and longer.exists() else None,
            }
        )
    name = "data sweep" if side == "data" else "model-size sweep"
    report.figure(
        curves_figure(panels, f"validation loss vs step, {name}"),
        f"Validation curves of every {name} run (red dot: best step, whose weights are "
        "tested; grey: the convergence check's run under the stricter stopping rule).",
    )


def _check_table(report: Report, side: str, check: dict[str, Any] | None) -> None:
    if check is None:
        return
    shifts = ", ".join(f"{p} {v:+.4f}" for p, v in check["shifts"].items())
    lo, hi = check["systematic_interval"]
    rows = [
        {
            "run": r["run"],
            "perturbation": r["key"],
            "how": r["how"],
            "steps": f"{r['steps']} → {r['steps_perturbed']}",
            "stopped by": f"{r['stop_reason']} → {r['stop_reason_perturbed']}",
            "test loss (nats)": f"{r['test_loss_nats']:.4f} → {r['test_loss_nats_perturbed']:.4f}",
        }
        for r in check["runs"]
    ]
    report.table(
        rows,
        caption=f"Convergence check ({side} sweep): exponent {check['exponent']:.4f}; shifts "
        f"{shifts} (threshold {check['threshold']}); systematic interval [{lo:.4f}, {hi:.4f}]. "
        "stricter: the stopping rule and budget made stricter, continued from the run's last "
        "checkpoint where that is exact, else trained again; cooldown: from the tested "
        "weights, the learning rate decayed to zero; seed: trained again with the next seed.",
    )


def _run_rows(side: str, table: pd.DataFrame) -> list[dict[str, Any]]:
    """Each run's size, how long it trained and why it stopped, and its test loss: a page-wide
    table (runs.csv holds some 25 columns)."""
    size = SIDES[side][2]
    rows = []
    for r in table.sort_values(size).to_dict("records"):
        se = r.get("test_loss_se_nats")
        rows.append(
            {
                "run": r["run"],
                size.replace("_", " "): f"{int(r[size]):,}",
                "steps (best)": f"{r['steps']}/{r['max_steps']} ({r['best_step']})",
                "stopped by": r["stop_reason"],
                "test loss (nats)": f"{r['test_loss_nats']:.4f}"
                + (f" ± {se:.4f}" if isinstance(se, float) and math.isfinite(se) else ""),
                "CPU s": f"{r['train_cpu_time_s']:.1f}" if "train_cpu_time_s" in r else "",
            }
        )
    return rows


def build_validate_report(out: str | Path) -> tuple[Path, Path]:
    """Write `OUT/report/report.html` and `report.md` from a validation folder."""
    out = Path(out)
    cfg = outdir.read_meta(out / "pipeline.json")
    fits = read_json(out / "fits.json")
    tables = {"data": pd.read_csv(out / "sweep" / "runs.csv")}
    if (out / "model-sweep" / "runs.csv").is_file() and fits.get("model"):
        tables["model"] = pd.read_csv(out / "model-sweep" / "runs.csv")
    report = Report(f"scalelab validate: {Path(str(cfg['corpus'])).name}")
    verdicts(report, fits, tables)
    report.heading("Predicted and observed exponents")
    sources_table(report, fits)
    baselines(report, fits)
    regime = fits["data"].get("regime")
    if regime is not None:
        name = Path(str(cfg["corpus"])).name
        report.figure(
            loss_figure(regime, title=f"{name}: test loss, unigram entropy and E"),
            "Test loss of every data-sweep run against its training tokens, with the "
            "unigram entropy of the scored test tokens and the floor E; the fitted range "
            "(by rule) is shaded.",
        )
        report.figure(
            slopes_figure(regime, title=f"{name}: local slopes"),
            "The slope between neighbouring sizes with its bootstrap band, and each "
            "prediction as a horizontal line: a power law is a flat band.",
        )
    for side, table in tables.items():
        _side_figure(report, side, fits, table)
    report.heading("d along the data sweep")
    along = read_json(out / "along" / "along.json")
    report.figure(
        along_figure(along),
        "Each data-sweep model's d on the same sampled test "
        "positions (bars ±1 SE); the dashed trend is a named fit, not a prediction.",
    )
    report.table(
        [
            {
                "run": r["run"],
                "train tokens": f"{r['train_tokens']:,}",
                "test loss (nats)": f"{r['test_loss_nats']:.4f}",
                "d ± SE": f"{r['dimension']:.3f}"
                + (f" ± {r['dimension_se']:.3f}" if r.get("dimension_se") is not None else ""),
                "points": f"{r['n_points']:,}",
            }
            for r in along["rows"]
        ],
        caption=f"d along the sweep (positions sha256 "
        f"{along['positions_sha256'][:12]}…, {along['n_points_sampled']} points)",
    )
    report.heading("Validation curves and convergence")
    for side, table in tables.items():
        _curves(report, out, side, table, fits)
        _check_table(report, side, fits["convergence"].get(side))
    report.heading("Sensitivity of d to the MLE batch size and K")
    for s in fits["sources"]:
        report.table(s["sensitivity"], caption=f"{s['label']}: {s['shown']}")
    report.heading("Runs")
    for side, table in tables.items():
        report.table(
            _run_rows(side, table),
            caption=f"{SIDES[side][0]}/runs.csv (the main columns; the file has every one)",
        )
    report.heading("Configuration and provenance")
    report.json(cfg)
    report.json(provenance())
    return report.write(out / "report")
