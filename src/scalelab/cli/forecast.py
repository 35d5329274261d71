"""`scalelab forecast`: forecast larger runs' losses from small ones, data needed for a loss,
the compute-optimal split for a budget, and held-out scoring of the forecast methods."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from scalelab.cli.common import JSON, print_json, print_table
from scalelab.cli.options import From, derive
from scalelab.laws.forecast.config import ForecastConfig, ForecastRequest

if TYPE_CHECKING:  # annotations only: the command imports numpy and pandas when it runs
    from scalelab.laws.forecast.run import ForecastResult


def forecast_command(
    inputs: list[Path] = typer.Argument(
        ..., help="Sweep folders, validate folders, or tables of sizes and losses (one or more)."
    ),
    request: ForecastRequest = From(ForecastRequest),
    cfg: ForecastConfig = From(
        ForecastConfig, only=("constant_alpha", "n_boot", "seed"), file=False
    ),
    out: Path | None = typer.Option(
        None, "--out", help="Folder for forecast.json (and with --score the report)."
    ),
    json_out: bool = JSON,
) -> None:
    """Forecast larger runs' losses from small ones, with the exponent fixed (from d or a
    number) or free; data needed for a loss; the compute-optimal split for a budget; with
    --score, every method scored on held-out runs. --config reads the keys of
    `ForecastRequest`."""
    from scalelab.laws.forecast.run import run_forecast

    result = run_forecast(
        list(inputs), request, cfg, out=out, draw=_report_writer(request.score, out)
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


def _print(result: ForecastResult) -> None:
    for f in result.forecasts:
        fc = f.forecast  # the fitted law as saved (PowerForecast.to_dict)
        e = "" if fc["method"] in ("log-log", "fixed, E=0") else f"{fc['E']:.4g} + "
        print_table(
            f"{f.corpus}: L = {e}{fc['A']:.4g}·n^-{fc['alpha']:.4f} ({fc['label']}, "
            f"fitted on {fc['n_fit']} runs up to {fc['x_range'][1]:,.0f})",
            f.at,
        )
        if f.data_needed is not None:
            dn = f.data_needed
            lo, hi = dn["interval"]
            row = {"loss": dn["loss"], "n": dn["n"], "lo": lo, "hi": hi, "level": dn["level"]}
            print_table(f"{f.corpus}: data needed", [row])
    if result.joint is not None:
        j = result.joint.fit
        typer.echo(
            f"joint law ({j.method}, {j.n_points} runs): L = {j.E:.4g} + "
            f"{j.A:.4g}·N^-{j.a:.4f} + {j.B:.4g}·D^-{j.b:.4f}"
        )
        print_table("compute-optimal split (C = 6·N·D)", result.joint.compute_optimal)
    if result.score is not None:
        for name, rows in result.score.tables().items():
            print_table(f"{name}: held-out ARE", rows)
        print_table("summary: mean ARE on the largest run", result.score.summary)
    if result.report is not None:
        typer.echo(f"wrote {result.report['html']} and {result.report['md']}")


def register(app: typer.Typer) -> None:
    """Add `scalelab forecast` to the top-level app."""
    app.command("forecast")(derive(forecast_command))
