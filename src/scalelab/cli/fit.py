"""`scalelab fit`: fit a scaling law to two (or three) columns of a results table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from scalelab.cli.common import JSON, SEED, parse_list, print_json, print_table
from scalelab.runs.outdir import check_file


def fit_command(
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
    json_out: bool = JSON,
) -> None:
    """Fit a scaling law to a table, with bootstrap 95% intervals. The printed form is
    always named: 'power' has no irreducible term, 'power+E' and 'chinchilla' do."""
    from scalelab.io import atomic_write_json, provenance
    from scalelab.laws.table import fit_table, read_table

    check_file(out)
    budgets = parse_list(compute, float, "--compute") if compute else None
    df = read_table(table)
    result = fit_table(
        df,
        y,
        form=form,
        x=x,
        n_col=n_col,
        d_col=d_col,
        c_col=c_col,
        holdout=holdout,
        compute=budgets,
        n_boot=n_boot,
        seed=seed,
        name=str(table),
    )
    if out is not None:
        atomic_write_json(out, {**result, "provenance": provenance()})
    if json_out:
        print_json(result)
        return
    _print(result, y, x, len(df), n_boot, holdout)


def _rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The fitted parameters with their intervals, as table rows."""
    from scalelab.io import format_interval

    fit = result["fit"]
    if result["form"] == "chinchilla":
        return [
            {"param": k, "value": fit[k], "ci95": format_interval(fit["ci95"].get(k), ".4g", "")}
            for k in ("A", "B", "E", "alpha", "beta")
        ]
    rows = [
        {
            "param": "exponent",
            "value": fit["exponent"],
            "ci95": format_interval(fit["exponent_ci95"], ".4g", ""),
        },
        {"param": "A", "value": fit["A"], "ci95": ""},
    ]
    if fit["E"] is not None:
        rows.append({"param": "E", "value": fit["E"], "ci95": ""})
    return rows


def _print(
    result: dict[str, Any], y: str, x: str | None, n_rows: int, n_boot: int, holdout: int
) -> None:
    form = result["form"]
    print_table(f"{form} fit of {y} ({n_rows} rows, {n_boot} bootstrap resamples)", _rows(result))
    if "compute_optimal" in result:
        print_table("compute-optimal allocation (C = 6·N·D)", result["compute_optimal"])
    if "holdout" in result:
        h = result["holdout"]
        print_table(
            f"held out the {holdout} largest ({'6·N·D' if form == 'chinchilla' else x}); "
            f"fitted on {h['n_fit']}",
            [
                {"observed": o, "predicted": p, "rel_error": r}
                for o, p, r in zip(h["observed"], h["predicted"], h["rel_error"], strict=True)
            ],
        )


def register(app: typer.Typer) -> None:
    """Add `scalelab fit` to the top-level app."""
    app.command("fit")(fit_command)
