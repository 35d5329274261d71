"""`scalelab validate-many`: each source of d (and the second theory) scored as a predictor
of alpha_D across corpora, beside baselines that ignore d, with paired bootstrap intervals."""

from __future__ import annotations

from pathlib import Path

import typer

from scalelab.cli.common import JSON, print_json, print_table, set_threads, shown, threads_option
from scalelab.runs.sweep import WORKERS


def validate_many_command(
    inputs: list[str] = typer.Argument(
        None, help="Corpora (as for validate --corpus) or validate output folders."
    ),
    out: Path = typer.Option(..., "--out", help="Folder for the table, scores and report."),
    declaration: Path | None = typer.Option(
        None,
        "--declaration",
        help="A declaration file (TOML or JSON): corpora, reference models, primary source, "
        "rules (e.g. docs/benchmarks/declared-corpora.toml). Replaces INPUTS.",
    ),
    references: list[str] = typer.Option(
        [], "--reference-model", help="With INPUTS: a model validate measures d with."
    ),
    run: bool = typer.Option(
        True, "--run/--no-run", help="Run validate where a folder has no summary.json."
    ),
    workers: int = typer.Option(WORKERS, "--workers", help="Sweep runs in parallel."),
    threads: int | None = threads_option(),
    json_out: bool = JSON,
) -> None:
    """Each source of d (and the second theory) scored as a predictor of alpha_D across
    corpora, beside baselines that ignore d (paired bootstrap intervals); writes a table,
    figures and a report."""
    from scalelab.laws.compare.baselines import fmt_interval
    from scalelab.pipeline.many import validate_many

    set_threads(threads, workers=workers)
    result = validate_many(
        out,
        declaration=declaration,
        inputs=list(inputs or []),
        reference_models=references,
        run=run,
        workers=workers,
        say=(lambda _m: None) if json_out else typer.echo,
    )
    if json_out:
        print_json({k: result[k] for k in ("primary", "verdict", "scores", "report_html")})
        return
    rows = [
        {"source": s, "MAE": v["mae"], "best baseline": v["best_baseline"],
         "margin": v["margin"], "margin 95%": fmt_interval(v["margin_ci95"], sign=True),
         "rho": v["rho"], "informative": v["informative"]}
        for s, v in result["scores"].items()
    ]  # fmt: skip
    print_table(f"scores (band ±{result['band']:g})", rows)
    typer.echo(result["verdict"])
    typer.echo(f"report: {shown(result['report_html'])}")


def register(app: typer.Typer) -> None:
    """Add `validate-many` to the top-level app."""
    app.command("validate-many")(validate_many_command)
