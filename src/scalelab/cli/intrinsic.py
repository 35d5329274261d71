"""CLI: `scalelab id PATH` (intrinsic dimension by the paper's protocol) and
`scalelab exponents` (scaling exponents from d, or from one exponent to the other)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from scalelab.cli.common import JSON, QUIET, print_json, print_table
from scalelab.cli.options import From, derive
from scalelab.errors import ConfigError
from scalelab.intrinsic.arrays import FORMATS
from scalelab.intrinsic.config import IdConfig
from scalelab.laws import theory
from scalelab.runs.outdir import check_file


def id_command(
    path: Path = typer.Argument(..., help=f"Points [n, features]: {', '.join(FORMATS)}."),
    cfg: IdConfig = From(IdConfig),
    key: str | None = typer.Option(None, help="Array name/column in a multi-array file."),
    out: Path | None = typer.Option(None, help="Also save the result + provenance as JSON."),
    json_out: bool = JSON,
    quiet: bool = QUIET,
) -> None:
    """Estimate the intrinsic dimension of a point cloud and the exponents it predicts."""
    from scalelab.intrinsic.arrays import load_points
    from scalelab.io import atomic_write_json, provenance
    from scalelab.probe.dimension import dimension_and_exponents

    est = cfg.make()
    check_file(out)
    points = load_points(path, key=key)
    result = dimension_and_exponents(
        points, est, batch_size=cfg.batch_size, seed=cfg.seed, beta=cfg.beta, quiet=quiet
    )
    row = {"input": str(path), **result.to_dict(), "beta": cfg.beta}
    if out is not None:
        atomic_write_json(out, {**row, "provenance": provenance()})
    if json_out:
        print_json(row)
        return
    print_table(f"intrinsic dimension of {path}", _summary(row))


def _summary(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The result as (quantity, value) rows: narrow enough for any terminal."""
    from scalelab.intrinsic.protocol import describe_batches

    se = row["dimension_se"]
    pairs = {
        "dimension": f"{row['dimension']:.4f}" + ("" if se is None else f" ± {se:.4f} (SE)"),
        **({} if se is not None else {"standard error": _no_se(row)}),
        "batches": describe_batches(row["n_batches"], row["batch_size"], row["n_points_left_out"]),
        "points": f"{row['n_points']:,} ({row['n_duplicates_removed']:,} duplicates removed)",
        "estimator": f"{row['estimator']}, k = {row['k']}, metric {row['metric']}",
        "alpha_D = 2β/(2β+d)": f"{row['alpha_D']:.4f}",
        "alpha_N = 2β/d": f"{row['alpha_N']:.4f}",
        "beta": row["beta"],
    }
    return [{"quantity": k, "value": v} for k, v in pairs.items()]


def _no_se(row: dict[str, Any]) -> str:
    """Why a result has no standard error: it comes from the spread over batches."""
    if row["n_batches"] >= 2:
        return "none"
    half = row["n_points_used"] // 2  # two batches of it, each above k
    smaller = f" or --batch-size {half} or less (above k = {row['k']})" if half > row["k"] else ""
    return (
        "none: one batch (the SE is the spread over batches); give at least "
        f"{2 * row['batch_size']} points{smaller}"
    )


def exponents_command(
    req: theory.ExponentsRequest = From(theory.ExponentsRequest), json_out: bool = JSON
) -> None:
    """Predicted exponents from d (α_D = 2β/(2β+d), α_N = 2β/d), or convert one exponent.

    The conversions α_D = α_N/(α_N+1) and α_N = α_D/(1−α_D) need neither d nor β; the d shown
    for them is the one the formulas imply at the given β.
    """
    if sum(v is not None for v in (req.d, req.alpha_n, req.alpha_d)) != 1:
        raise ConfigError("give exactly one of --d, --alpha-n, --alpha-d")
    if req.d is None and req.d_se:
        raise ConfigError("--d-se goes with --d only")
    row = req.row()
    if json_out:
        print_json(row)
        return
    print_table("exponents", [{k: v for k, v in row.items() if not isinstance(v, list)}])


def register(app: typer.Typer) -> None:
    """Add this module's commands to the top-level app."""
    app.command("id")(derive(id_command))
    app.command("exponents")(derive(exponents_command))
