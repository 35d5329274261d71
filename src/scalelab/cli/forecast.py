"""`scalelab forecast`: forecast larger runs' losses from small ones, data needed for a loss,
the compute-optimal split for a budget, and held-out scoring of the forecast methods."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from scalelab.cli.common import JSON, SEED, parse_list, print_json, print_table
from scalelab.laws.forecast.config import ForecastConfig

_C = ForecastConfig()  # the CLI's defaults are the config's


def forecast_command(
    inputs: list[Path] = typer.Argument(
        ..., help="Sweep folders, validate folders, or tables of sizes and losses (one or more)."
    ),
    alpha: float | None = typer.Option(None, "--alpha", help="Fix the exponent at this value."),
    d: float | None = typer.Option(None, "--d", help="Fix the exponent from d: 2/(2+d)."),
    source: str | None = typer.Option(
        None, "--source", help="Fix the exponent from this d source of a validate folder's d/."
    ),
    no_floor: bool = typer.Option(
        False, "--no-floor", help="With a fixed exponent fit L = A·n^-α (no E term)."
    ),
    fit_upto: float | None = typer.Option(
        None, "--fit-upto", help="Fit on the runs up to this size (default: all)."
    ),
    k: int | None = typer.Option(None, "--k", help="Fit on the K smallest runs."),
    at: str | None = typer.Option(
        None, "--at", help="Comma-separated sizes to forecast (default: the runs not fitted)."
    ),
    loss: float | None = typer.Option(None, "--loss", help="Also: data needed to reach this loss."),
    budget: str | None = typer.Option(
        None, "--budget", help="Comma-separated FLOP budgets C: compute-optimal N, D (C = 6ND)."
    ),
    grid: Path | None = typer.Option(
        None, "--grid", help="Data × model table for --budget (default: the input)."
    ),
    n_col: str = typer.Option("params_non_embedding", "--n-col", help="Grid: parameters column."),
    d_col: str = typer.Option("train_tokens", "--d-col", help="Grid: tokens column."),
    c_col: str | None = typer.Option(
        None, "--c-col", help="Grid: training-FLOP column instead of --d-col (D = C / 6N)."
    ),
    corpus: str | None = typer.Option(
        None, "--corpus", help="Forecast only this corpus of a table with a corpus column."
    ),
    x: str = typer.Option("train_tokens", "--x", help="Size column of a table."),
    y: str = typer.Option("test_loss_nats", "--y", help="Loss column."),
    score: bool = typer.Option(
        False, "--score", help="Score every method on held-out runs (fit on k = 3, 4, 5 smallest)."
    ),
    constant: float = typer.Option(
        _C.constant_alpha, "--constant", help="The constant exponent scored as a baseline."
    ),
    n_boot: int = typer.Option(
        _C.n_boot, "--n-boot", min=0, help="Bootstrap resamples for intervals."
    ),
    seed: int = SEED,
    out: Path | None = typer.Option(
        None, "--out", help="Folder for forecast.json (and with --score the report)."
    ),
    json_out: bool = JSON,
) -> None:
    """Forecast larger runs' losses from small ones, with the exponent fixed (from d or a
    number) or free; data needed for a loss; the compute-optimal split for a budget; with
    --score, every method scored on held-out runs."""
    from scalelab.laws.forecast.run import ExponentChoice, run_forecast

    cfg = ForecastConfig(constant_alpha=constant, n_boot=n_boot, seed=seed)
    result = run_forecast(
        list(inputs),
        ExponentChoice(alpha=alpha, d=d, source=source, floor=not no_floor),
        cfg,
        x=x,
        y=y,
        fit_upto=fit_upto,
        k=k,
        at=parse_list(at, float, "--at") if at else None,
        loss=loss,
        budgets=parse_list(budget, float, "--budget") if budget else None,
        grid=grid,
        grid_cols={"n_col": n_col, "d_col": d_col, "c_col": c_col},
        score=score,
        corpus=corpus,
        out=out,
        draw=_report_writer(score, out),
    )
    if json_out:
        print_json(result)
        return
    _print(result)


def _report_writer(score: bool, out: Path | None) -> Callable | None:
    """The report's writer where a report is written (only then is matplotlib imported)."""
    if not score or out is None:
        return None
    from scalelab.report.forecast import write_forecast_report

    return write_forecast_report


def _print(result: dict[str, Any]) -> None:
    for f in result["forecasts"]:
        fc = f["forecast"]
        e = "" if fc["method"] in ("log-log", "fixed, E=0") else f"{fc['E']:.4g} + "
        print_table(
            f"{f['corpus']}: L = {e}{fc['A']:.4g}·n^-{fc['alpha']:.4f} ({fc['label']}, "
            f"fitted on {fc['n_fit']} runs up to {fc['x_range'][1]:,.0f})",
            f["at"],
        )
        if "data_needed" in f:
            dn = f["data_needed"]
            lo, hi = dn["interval"]
            row = {"loss": dn["loss"], "n": dn["n"], "lo": lo, "hi": hi, "level": dn["level"]}
            print_table(f"{f['corpus']}: data needed", [row])
    if "joint" in result:
        j = result["joint"]["fit"]
        typer.echo(
            f"joint law ({j['method']}, {j['n_points']} runs): L = {j['E']:.4g} + "
            f"{j['A']:.4g}·N^-{j['a']:.4f} + {j['B']:.4g}·D^-{j['b']:.4f}"
        )
        print_table("compute-optimal split (C = 6·N·D)", result["joint"]["compute_optimal"])
    if "score" in result:
        s = result["score"]
        for name, rows in s["tables"].items():
            print_table(f"{name}: held-out ARE", rows)
        print_table("summary: mean ARE on the largest run", s["summary"])
    if "report" in result:
        typer.echo(f"wrote {result['report']['html']} and {result['report']['md']}")


def register(app: typer.Typer) -> None:
    """Add `scalelab forecast` to the top-level app."""
    app.command("forecast")(forecast_command)
