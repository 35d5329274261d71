"""`scalelab report`: the HTML/Markdown report of a sweep folder."""

from __future__ import annotations

from pathlib import Path

import typer

from scalelab.cli.common import JSON, print_json


def report_command(
    sweep_dir: Path = typer.Argument(
        ..., help="A sweep folder (it holds sweep.json) or an experiment's (experiment.json)."
    ),
    out: Path | None = typer.Option(
        None, "--out", help="Folder for report.html and report.md (default SWEEP_DIR/report)."
    ),
    json_out: bool = JSON,
) -> None:
    """Write a self-contained HTML report (figures embedded) and its Markdown twin for a
    data, model, manifold or induction sweep, or an experiment's folder; prints where they
    are."""
    from scalelab.pipeline.report import report_sweep  # matplotlib, pandas: not for --help

    html_path, md_path = report_sweep(sweep_dir, out)
    if json_out:
        print_json({"html": str(html_path), "markdown": str(md_path)})
    else:
        typer.echo(f"wrote {html_path} and {md_path}")


def register(app: typer.Typer) -> None:
    """Add `scalelab report` to the top-level app."""
    app.command("report")(report_command)
