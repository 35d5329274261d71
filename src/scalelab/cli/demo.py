"""CLI: `scalelab demo`: the dimension of a built-in curved manifold by the paper's protocol,
and the scaling exponents it predicts (a placeholder for the full pipeline)."""

from __future__ import annotations

from pathlib import Path

import typer

from scalelab.cli.common import JSON, QUIET, SEED, print_json, print_table
from scalelab.errors import ConfigError
from scalelab.intrinsic.mle import MLE
from scalelab.intrinsic.protocol import estimate_in_batches
from scalelab.intrinsic.synthetic import curved_manifold
from scalelab.io import atomic_write_json, provenance
from scalelab.laws.theory import predict_exponents


def demo_command(
    out: Path = typer.Option(Path("demo-out"), help="Folder for result.json."),
    d: int = typer.Option(8, help="True dimension of the built-in curved manifold."),
    n: int = typer.Option(8192, help="Number of points (batches of 4096)."),
    seed: int = SEED,
    json_out: bool = JSON,
    quiet: bool = QUIET,
) -> None:
    """Estimate the dimension of a curved d-manifold in R^768 and predict α_D, α_N from it."""
    if d < 1 or n < 100:
        raise ConfigError(f"--d {d} --n {n}: use d >= 1 and n >= 100")
    points = curved_manifold(n, d, 768, seed=seed)
    result = estimate_in_batches(points, MLE(k=20), batch_size=4096, seed=seed, quiet=quiet)
    se = result.dimension_se if result.dimension_se == result.dimension_se else 0.0
    row = {
        "manifold": f"curved S^{d} in R^768",
        "true_dimension": d,
        **result.to_dict(),
        "predicted": predict_exponents(result.dimension, se),
    }
    atomic_write_json(out / "result.json", {**row, "provenance": provenance()})
    if json_out:
        print_json(row)
        return
    pred = row["predicted"]
    print_table(
        f"demo: {row['manifold']}, {n} points",
        [
            {
                "true d": d,
                "estimated d": f"{result.dimension:.3f} ± {se:.3f}",
                "alpha_D = 2/(2+d)": pred["alpha_D"],
                "alpha_N = 2/d": pred["alpha_N"],
            }
        ],
    )
    typer.echo(f"wrote {out / 'result.json'}")


def register(app: typer.Typer) -> None:
    """Add this module's commands to the top-level app."""
    app.command("demo")(demo_command)
