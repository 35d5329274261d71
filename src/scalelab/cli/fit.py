"""`scalelab fit`: fit a scaling law to two (or three) columns of a results table."""

from __future__ import annotations

from pathlib import Path

import typer

from scalelab.cli.common import JSON, SEED, print_json, print_table
from scalelab.errors import InputError
from scalelab.io import atomic_write_json, provenance
from scalelab.laws.fit import (
    chinchilla_extrapolation_check,
    extrapolation_check,
    fit_chinchilla,
    fit_power_law,
)
from scalelab.laws.table import numeric_columns, read_table
from scalelab.outdir import check_file

FORMS = ("power", "power+E", "chinchilla")


def fit_cmd(
    table: Path = typer.Argument(..., help="Results table: .csv, .tsv, .parquet or .jsonl."),
    x: str | None = typer.Option(None, "--x", help="Size column (power, power+E)."),
    y: str = typer.Option(..., "--y", help="Loss column (positive)."),
    form: str = typer.Option(
        "power",
        "--form",
        help="power: log-log least squares (the paper's fit); power+E: y = E + A·x^-α; "
        "chinchilla: L = E + A/N^α + B/D^β.",
    ),
    n_col: str | None = typer.Option(None, "--n-col", help="Parameters column (chinchilla)."),
    d_col: str | None = typer.Option(None, "--d-col", help="Tokens column (chinchilla)."),
    c_col: str | None = typer.Option(
        None, "--c-col", help="Training-FLOP column instead of --d-col: D = C / (6 N)."
    ),
    holdout: int = typer.Option(
        0, "--holdout", help="Also fit without the K largest sizes and report their error."
    ),
    compute: str | None = typer.Option(
        None,
        "--compute",
        help="chinchilla: comma-separated FLOP budgets C; prints N_opt, D_opt for C = 6ND.",
    ),
    n_boot: int = typer.Option(
        1000, "--n-boot", help="Bootstrap resamples for the intervals (0: none)."
    ),
    seed: int = SEED,
    out: Path | None = typer.Option(None, "--out", help="Also write the result as JSON here."),
    as_json: bool = JSON,
) -> None:
    """Fit a scaling law to a table, with bootstrap 95% intervals. The printed form is
    always named: 'power' has no irreducible term, 'power+E' and 'chinchilla' do."""
    if compute and form != "chinchilla":
        raise InputError("--compute needs --form chinchilla (the joint fit gives N_opt, D_opt)")
    if form not in FORMS:
        raise InputError(f"unknown --form {form!r}; choose one of {', '.join(FORMS)}")
    check_file(out)
    if holdout < 0:
        raise InputError(f"--holdout must be >= 0, got {holdout}")
    df = read_table(table)
    result: dict = {"table": str(table), "form": form}
    if form == "chinchilla":
        if n_col is None or (d_col is None) == (c_col is None):
            raise InputError("--form chinchilla needs --n-col and one of --d-col or --c-col")
        cols = numeric_columns(df, [y, n_col, d_col or c_col], str(table))
        n = cols[n_col]
        d = cols[d_col] if d_col else cols[c_col] / (6.0 * n)
        fit = fit_chinchilla(n, d, cols[y], n_boot=n_boot, seed=seed)
        result["fit"] = fit.to_dict()
        rows = [
            {"param": k, "value": getattr(fit, k), "ci95": _ci(fit.ci95.get(k))}
            for k in ("A", "B", "E", "alpha", "beta")
        ]
        if compute:
            budgets = _floats(compute, "--compute")
            n_opt, d_opt = fit.compute_optimal(budgets)
            result["compute_optimal"] = [
                {"C": c, "N_opt": float(a), "D_opt": float(b), "tokens_per_param": float(b / a)}
                for c, a, b in zip(budgets, n_opt, d_opt, strict=True)
            ]
        if holdout:
            result["holdout"] = chinchilla_extrapolation_check(n, d, cols[y], holdout=holdout)
    else:
        if x is None:
            raise InputError(f"--form {form} needs --x COLUMN (the size column)")
        cols = numeric_columns(df, [x, y], str(table))
        fit = fit_power_law(cols[x], cols[y], form=form, n_boot=n_boot, seed=seed)
        result["fit"] = fit.to_dict()
        rows = [
            {"param": "exponent", "value": fit.exponent, "ci95": _ci(fit.exponent_ci95)},
            {"param": "A", "value": fit.A, "ci95": ""},
        ]
        if fit.E is not None:
            rows.append({"param": "E", "value": fit.E, "ci95": ""})
        if holdout:
            result["holdout"] = extrapolation_check(
                cols[x], cols[y], form=form, holdout=holdout, n_boot=0
            )
    if out is not None:
        atomic_write_json(out, {**result, "provenance": provenance()})
    if as_json:
        print_json(result)
        return
    print_table(f"{form} fit of {y} ({len(df)} rows, {n_boot} bootstrap resamples)", rows)
    if "compute_optimal" in result:
        print_table("compute-optimal allocation (C = 6·N·D)", result["compute_optimal"])
    if holdout:
        h = result["holdout"]
        print_table(
            f"held out the {holdout} largest ({'6·N·D' if form == 'chinchilla' else x}); "
            f"fitted on {h['n_fit']}",
            [
                {"observed": o, "predicted": p, "rel_error": r}
                for o, p, r in zip(h["observed"], h["predicted"], h["rel_error"], strict=True)
            ],
        )


def _floats(text: str, flag: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise InputError(f"{flag} takes comma-separated numbers, got {text!r}") from None
    if not values or any(not v > 0 for v in values):
        raise InputError(f"{flag} values must be positive numbers, got {text!r}")
    return values


def _ci(pair) -> str:
    return f"[{pair[0]:.4g}, {pair[1]:.4g}]" if pair else ""


def register(app: typer.Typer) -> None:
    """Add `scalelab fit` to the top-level app."""
    app.command("fit")(fit_cmd)
