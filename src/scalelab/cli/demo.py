"""`scalelab demo` (`make demo`): the seed paper's data-scaling experiment end to end on a
built-in corpus (prepare → reference model → d → predicted alpha_D → data sweep → fit →
report), resumable, sized for a 2-core CPU, after a one-line synthetic sanity check."""

from __future__ import annotations

from pathlib import Path

import typer

from scalelab.cli.common import (
    BACKEND,
    JSON,
    QUIET,
    RAY_ADDRESS,
    RUN_CPUS,
    RUN_GPUS,
    SEED,
    backend_from,
    print_json,
    print_table,
    set_threads,
    threads_option,
)
from scalelab.io import format_interval
from scalelab.pipeline import PipelineConfig, check_corpus, run_pipeline

_DEFAULT = PipelineConfig()


def print_summary(summary: dict) -> None:
    """The runs, predicted vs observed alpha_D (both fit forms), timings, the report path."""
    runs = [
        {
            "train tokens": r["train_tokens"],
            "steps": r["steps"],
            "stopped by": r["stop_reason"],
            "best val loss": r["best_val_loss_nats"],
            "test loss": r["test_loss_nats"],
        }
        for r in summary["runs"]
    ]
    print_table("data sweep (nats/token; the same test split for every size)", runs)
    fits = summary["fits"]
    rows = [
        {
            "alpha_D": "predicted 2/(2+d)",
            "value": f"{fits['predicted_alpha_D']:.4f}",
            "95% CI": format_interval(fits["predicted_alpha_D_ci95"]),
            "observed - predicted": "",
        }
    ]
    for form, label in (("power", "observed, L = A n^-a"), ("power+E", "observed, L = E + A n^-a")):
        f = fits[form]
        if f is None:
            continue
        rows.append(
            {
                "alpha_D": label,
                "value": f"{f['exponent']:.4f}",
                "95% CI": format_interval(f["exponent_ci95"]),
                "observed - predicted": f"{f['difference_observed_minus_predicted']:+.4f}",
            }
        )
    print_table(f"d = {summary['dimension']:.3f}: predicted vs observed", rows)
    typer.echo(
        f"this invocation: {summary['wall_s']:.0f} s wall, {summary['cpu_s']:.0f} CPU-s "
        f"(stages, wall s: {summary['stage_wall_s']})"
    )
    typer.echo(f"report: {summary['report_html']}")


def demo_command(
    out: Path = typer.Option(Path("demo-out"), "--out", help="Folder for everything."),
    corpus: str = typer.Option(
        _DEFAULT.corpus, "--corpus", help="Built-in corpus: shakespeare or python-stdlib."
    ),
    min_tokens: int = typer.Option(
        _DEFAULT.min_tokens, "--min-tokens", help="Smallest training set (tokens)."
    ),
    max_tokens: int = typer.Option(
        _DEFAULT.max_tokens, "--max-tokens", help="Largest training set = the reference model's."
    ),
    points: int = typer.Option(_DEFAULT.points, "--points", help="Sizes in the geometric grid."),
    workers: int = typer.Option(
        2, "--workers", help="Sweep runs in parallel (processes of one torch thread each)."
    ),
    threads: int | None = threads_option(
        help="Torch threads of the main process (estimate, one worker)."
    ),
    id_batch_size: int = typer.Option(
        _DEFAULT.id_batch_size,
        "--id-batch-size",
        help="Points per MLE batch (python-stdlib's 79 test files give ≈ 2.5k points: use 2048).",
    ),
    seed: int = SEED,
    backend: str = BACKEND,
    ray_address: str | None = RAY_ADDRESS,
    run_cpus: int = RUN_CPUS,
    run_gpus: float = RUN_GPUS,
    json_out: bool = JSON,
    quiet: bool = QUIET,
) -> None:
    """Run the whole pipeline: prepare the corpus, train the data sweep (its largest run is
    the reference model), estimate the intrinsic dimension d with the reference model,
    predict alpha_D = 2/(2+d), fit the observed exponent, write the report. Re-running
    skips every finished stage and continues an interrupted run."""
    set_threads(threads, workers=workers)
    where = backend_from(backend, ray_address, run_cpus, run_gpus)
    cfg = PipelineConfig(
        corpus=corpus,
        min_tokens=min_tokens,
        max_tokens=max_tokens,
        points=points,
        id_batch_size=id_batch_size,
        seed=seed,
    )
    check_corpus(corpus)
    say = (lambda _msg: None) if json_out else typer.echo
    quiet = quiet or json_out
    summary = run_pipeline(out, cfg, workers=workers, backend=where, quiet=quiet, say=say)
    if json_out:
        print_json(summary)
        return
    print_summary(summary)


def register(app: typer.Typer) -> None:
    """Add this module's commands to the top-level app."""
    app.command("demo")(demo_command)
