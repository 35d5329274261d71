"""Report section for language-model sweeps (sweep.json kind "data" or "model").

It puts the observed exponent next to the one predicted from the intrinsic dimension, as
Havrilla & Liao do: test loss against data size with the log-log fit, its 95% band and the
slope 2/(2+d̂) anchored at the same point (their Figure 2); loss against non-embedding
parameters with 2/d̂ (Figure 3); the ID ablations (Figure 4); and, so that a flattened slope
cannot pass unnoticed, how each run stopped. Both fit forms are always shown and named.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from scalelab.io import format_interval, read_json
from scalelab.laws.theory import d_from_alpha_D, d_from_alpha_N
from scalelab.report.document import Report
from scalelab.report.plots import PredictedSlope, dimension_figure, scaling_figure

if TYPE_CHECKING:
    from scalelab.laws.fit.fitted import PowerLawFit
    from scalelab.laws.fit.power_law import Extrapolation
    from scalelab.probe.result import EstimateResult
    from scalelab.sweeps.analysis import SweepAnalysis

RUN_COLUMNS = (
    "run",
    "label",
    "train_tokens",
    "params_non_embedding",
    "test_loss_nats",
    "best_val_loss_nats",
    "steps",
    "max_steps",
    "stop_reason",
    "tokens_seen",
    "wall_time_s",
)


def _predicted(est: EstimateResult, kind: str) -> tuple[float, tuple[float, float] | None]:
    """The exponent `est` predicts for a `kind` sweep and its 95% interval."""
    if kind == "data":
        return est.alpha_D, est.alpha_D_ci95
    return est.alpha_N, est.alpha_N_ci95


def _exponent_rows(
    kind: str, fits: list[PowerLawFit], est: EstimateResult | None
) -> list[dict[str, Any]]:
    key = "alpha_D" if kind == "data" else "alpha_N"
    rows = []
    if est is not None:
        value, ci = _predicted(est, kind)
        rows.append(
            {
                "quantity": f"predicted {key}",
                "source": f"d̂ = {est.dimension:.3f} ({'2/(2+d)' if kind == 'data' else '2/d'})",
                "value": value,
                "ci95": _interval(ci),
                "d implied": est.dimension,
                "observed − predicted": None,
            }
        )
    to_d = d_from_alpha_D if kind == "data" else d_from_alpha_N
    for fit in fits:
        implied = None
        valid = 0 < fit.exponent < 1 if kind == "data" else fit.exponent > 0
        if valid:
            implied = float(to_d(fit.exponent))
        row = {
            "quantity": f"observed {key}",
            "source": "log-log fit, no E (the paper's)"
            if fit.form == "power"
            else f"fit L = E + A·n^-α (E = {fit.E:.3g})",
            "value": fit.exponent,
            "ci95": _interval(fit.exponent_ci95),
            "d implied": implied,
            "observed − predicted": None,
        }
        if est is not None:
            row["observed − predicted"] = fit.exponent - _predicted(est, kind)[0]
        rows.append(row)
    return rows


def _stopping(table: pd.DataFrame, schedule: dict[str, Any] | None) -> list[str]:
    """Sentences on how runs ended: under 'converge', a run stopped by its step budget was
    still improving and biases the slope."""
    if "stop_reason" not in table:
        return ["runs.csv has no stop_reason column: convergence of the runs is unknown."]
    counts = table["stop_reason"].fillna("unknown").value_counts().to_dict()
    text = ", ".join(f"{n} by {r}" for r, n in counts.items())
    out = [f"Runs ended: {text}."]
    policy = (schedule or {}).get("policy")
    if policy == "converge":
        capped = table.loc[table["stop_reason"] != "patience", "run"].tolist()
        if capped:
            out.append(
                f"WARNING: {len(capped)} run(s) ({', '.join(map(str, capped))}) ended without "
                "early stopping (step budget reached), so they may not have converged: their "
                "losses may be too high, which biases the fitted slope (flatter when the "
                "large runs are the capped ones)."
            )
        else:
            out.append("Every run stopped by patience (early stopping on validation loss).")
    return out


def _policy_text(schedule: dict[str, Any] | None) -> str:
    if not schedule:
        return "Training-length policy: not recorded in sweep.json."
    p = schedule.get("policy")
    if p == "converge":
        return (
            "Training-length policy: converge. Early stopping on validation loss "
            f"(patience {schedule.get('patience')} validations, best weights tested) within a "
            f"budget of {schedule.get('max_epochs')} passes over each run's tokens, clamped to "
            f"[{schedule.get('min_steps')}, {schedule.get('step_cap')}] steps."
        )
    if p == "epochs":
        return f"Training-length policy: epochs ({schedule.get('epochs')} passes per run)."
    if p == "tokens":
        return f"Training-length policy: tokens ({schedule.get('token_budget')} per run)."
    return f"Training-length policy: {p}."


def _holdout_rows(holdout: list[tuple[str, Extrapolation]]) -> list[dict[str, Any]]:
    return [
        {
            "form": form,
            "fitted on": f"{h.n_fit} smallest",
            "held-out size": h.x_heldout[0],
            "observed": h.observed[0],
            "predicted": h.predicted[0],
            "relative error": h.rel_error[0],
            "exponent (fit without it)": h.fit.exponent,
        }
        for form, h in holdout
    ]


def _estimate_section(report: Report, est: EstimateResult) -> None:
    report.heading("Intrinsic dimension")
    inner = est.estimate
    report.table(
        [
            {
                "d̂": est.dimension,
                "SE": est.dimension_se,
                "layer": est.layer_name,
                "estimator": inner.estimator,
                "K": inner.k,
                "metric": inner.metric,
                "batch": inner.batch_size,
                "points": inner.n_points,
                "duplicates removed": inner.n_duplicates_removed,
            }
        ],
        caption="estimate.json (SE: spread over MLE batches)",
    )


def _ablations(report: Report, sweep_dir: Path) -> None:
    files = sorted((sweep_dir / "ablations").glob("*.json"))
    if not files:
        return
    report.heading("Intrinsic-dimension ablations (the paper's Figure 4)")
    for path in files:
        try:
            doc = read_json(path)
            rows = doc["rows"]
        except (OSError, ValueError, KeyError, TypeError):
            report.paragraph(f"{path.name}: unreadable ablation file, skipped.")
            continue
        rows = [r for r in rows if r.get("dimension") is not None]
        if not rows:
            continue
        setting = next(k for k in rows[0] if k not in ("dimension", "dimension_se"))
        xs = [r[setting] for r in rows]
        numeric = all(isinstance(v, int | float) for v in xs)
        name = doc.get("ablation", path.stem)
        fig = dimension_figure(
            xs if numeric else list(range(len(xs))),
            [r["dimension"] for r in rows],
            [r.get("dimension_se") for r in rows],
            xlabel=setting,
            title=f"d̂ vs {name}",
            log_x=numeric and name in ("batch_size", "models"),
        )
        report.figure(fig, f"Estimated d against {setting} ({path.name}); bars ±1 SE")
        report.table(rows, caption=f"ablation {name}")


def draw(a: SweepAnalysis, report: Report, sweep_dir: Path) -> None:
    """The section for an analysed sweep (`sweeps.analysis`); `sweep_dir` holds its ablations."""
    kind, table, est, fits = a.kind, a.table, a.estimate, a.fits
    what = "data size (training tokens)" if kind == "data" else "non-embedding parameters"
    report.heading(f"Test loss against {what}")
    report.paragraph(
        f"{len(a.runs)} finished run(s) of {len(table)} rows. Observed exponents come from two "
        "fits, always named: the log-log least-squares fit with no irreducible term (the "
        "paper's), and L = E + A·n^-α (weakly constrained with few points). Intervals are "
        f"95% bootstrap intervals ({a.n_boot} resamples, seed {a.seed}; residual bootstrap over "
        "the fixed size grid)."
    )
    report.paragraph(_policy_text(a.config.get("schedule")))
    for note in a.notes:
        report.paragraph(note)
    predicted = None
    if est is not None:
        formula = "2/(2+d̂)" if kind == "data" else "2/d̂"
        value, ci = _predicted(est, kind)
        predicted = PredictedSlope(
            float(value),
            f"predicted {formula} = {value:.3f} (d̂ = {est.dimension:.2f})",
            tuple(ci) if ci else None,
        )
    else:
        report.paragraph(
            "No estimate.json in the sweep folder, so no predicted exponent: run "
            "`scalelab estimate` with --out SWEEP_DIR to add it."
        )
    if fits:
        fig_no = "Figure 2" if kind == "data" else "Figure 3"
        report.figure(
            scaling_figure(
                a.x,
                a.y,
                fits,
                predicted=predicted,
                xlabel=what,
                ylabel="test loss (nats/token)",
                title=f"test loss vs {what} (cf. the paper's {fig_no})",
            ),
            f"Test loss vs {what}, log-log. Solid: log-log fit with its 95% exponent band; "
            "dashed: fit with an irreducible term E; dotted red: predicted slope anchored at "
            "the log-log fit's value at the geometric-mean size.",
        )
        report.table(
            _exponent_rows(kind, fits, est),
            caption="Predicted vs observed exponents (d implied: the d that would give it)",
        )
        if a.holdout:
            report.table(
                _holdout_rows(a.holdout),
                caption="Extrapolation check: fit without the largest size, predict it",
            )
    report.heading("Runs")
    for sentence in _stopping(table, a.config.get("schedule")):
        report.paragraph(sentence)
    cols = [c for c in RUN_COLUMNS if c in table.columns]
    report.table(table[cols].to_dict("records"), caption="runs.csv (one row per finished run)")
    if est is not None:
        _estimate_section(report, est)
    _ablations(report, sweep_dir)


def _interval(pair: Any) -> str:
    return format_interval(pair, ".3f", "")
