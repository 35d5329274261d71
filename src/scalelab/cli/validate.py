"""`scalelab validate` (any corpus) and `scalelab demo` (`make demo`: validate on the built-in
default corpus into demo-out/)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from scalelab.cli.common import (
    BACKEND,
    JSON,
    QUIET,
    RAY_ADDRESS,
    RUN_CPUS,
    RUN_GPUS,
    backend_from,
    print_json,
    print_table,
    set_threads,
    shown,
    threads_option,
)
from scalelab.cli.options import FromFlat, derive
from scalelab.io import format_interval
from scalelab.pipeline.config import FLAT, VALIDATE_PRESETS, PipelineConfig, flat_defaults
from scalelab.runs.sweep import WORKERS

if TYPE_CHECKING:
    from scalelab.pipeline.results import Summary

_D = flat_defaults()


def _ci(pair: list | None) -> str:
    return format_interval(pair, missing="")


def _runs_tables(summary: Summary) -> None:
    along = {r["run"]: r["dimension"] for r in summary.along}
    print_table(
        "data sweep (test loss in nats/token; d of each run on the same test positions)",
        [
            {
                "train tokens": r["train_tokens"],
                "steps/budget": f"{r['steps']}/{r['max_steps']}",
                "stopped by": r["stop_reason"],
                "test loss": r["test_loss_nats"],
                "d": along.get(r["run"]),
            }
            for r in summary.runs
        ],
    )
    if summary.model_runs:
        print_table(
            "model-size sweep",
            [
                {
                    "model": r["label"],
                    "non-emb. params": r["params_non_embedding"],
                    "steps/budget": f"{r['steps']}/{r['max_steps']}",
                    "stopped by": r["stop_reason"],
                    "test loss": r["test_loss_nats"],
                }
                for r in summary.model_runs
            ],
        )


def print_summary(summary: Summary) -> None:
    """The runs, every source of d with its predictions, the observed exponents, the
    convergence verdicts, timings."""
    _runs_tables(summary)
    rows = []
    for s in summary.references:
        lo, hi = s["dimension_range"]
        se = s["dimension_se"]
        rows.append(
            {
                "source of d": s["label"],
                "d ± SE": f"{s['dimension']:.2f}" + (f" ± {se:.2f}" if se is not None else ""),
                "d range (batch, K)": f"[{lo:.2f}, {hi:.2f}]",
                "alpha_D": f"{s['alpha_D']:.3f} {_ci(s['alpha_D_range'])}",
                "alpha_N": f"{s['alpha_N']:.3f} {_ci(s['alpha_N_range'])}",
            }
        )
    for side, key in (("data", "alpha_D"), ("model", "alpha_N")):
        fit = (summary.fits.get(side) or {}).get("power")
        if fit:
            value = f"{fit['exponent']:.3f} {_ci(fit['exponent_ci95'])}"
            row = dict.fromkeys(rows[0], "")
            row.update({"source of d": f"observed ({side} sweep, log-log)", key: value})
            rows.append(row)
    print_table(
        "alpha: predicted with its range over MLE batch sizes and K; observed with its 95% CI", rows
    )
    for side, check in summary.checks.items():
        if check:
            typer.echo(f"{side} sweep: {check['text']}")
    from scalelab.report.regime import regime_sentence

    typer.echo(f"Regime (data sweep): {regime_sentence(summary.fits['data'].get('regime'))}")
    typer.echo(
        f"this invocation: {summary.wall_s:.0f} s wall, {summary.cpu_s:.0f} CPU-s "
        f"(stages, wall s: {summary.stage_wall_s})"
    )
    typer.echo(f"report: {shown(summary.report_html)}")


def _run(
    out: Path,
    cfg: PipelineConfig,
    references: list[str],
    pool: tuple[int, int | None, str, str | None, int, float],
    json_out: bool,
    quiet: bool,
) -> None:
    """Run the validation `cfg` describes (built from the options: `cli.options.FromFlat`)."""
    workers, threads, backend, ray_address, run_cpus, run_gpus = pool
    set_threads(threads, workers=workers)
    where = backend_from(backend, ray_address, run_cpus, run_gpus)
    from scalelab.pipeline.run import run_pipeline  # torch: only once the options are sound

    say = (lambda _msg: None) if json_out else typer.echo
    summary = run_pipeline(
        out,
        cfg,
        references=references,
        workers=workers,
        backend=where,
        quiet=quiet or json_out,
        say=say,
    )
    if json_out:
        print_json(summary.to_dict())
    else:
        print_summary(summary)


_REFS = typer.Option(
    [],
    "--reference-model",
    help="Another model that measures d (repeatable): a scalelab run folder, a local Hugging "
    "Face folder, or a .gguf file (its folder holds the tokenizer).",
)
_WORKERS = typer.Option(WORKERS, "--workers", help="Runs in parallel (one torch thread each).")
_THREADS = threads_option(help="Torch threads of the main process.")
_PRESET_HELP = (
    "Named sizes (times on 2 CPU cores): quick (a first try: 5 sizes of 500-5,000 tokens, "
    "no model sweep; 136 CPU-seconds on shakespeare, about 2 minutes of 2 free cores; needs "
    "5,000 train tokens and 32 test documents of 128+ tokens, about 320 documents), "
    "cpu-regime (a data sweep over two decades sized to reach a power-law regime; 3-17.5 "
    "minutes per corpus), cpu-hour (25 minutes on shakespeare, one hour at worst), model-side "
    "(a model sweep of 5.2k-300k non-embedding parameters, none data-limited; 65 minutes on "
    "shakespeare), power (designed by the regime test's power: 25k-2.5M tokens, 5 sizes x 2 "
    "seeds, annealed; 60-150 hours of 2 cores per corpus, not yet run) or gpu (one "
    "H200-class GPU, 4.9M-85M parameters, 10M-100M tokens; not yet run). Options given here "
    "override its values (docs/sweeps.md#presets)."
)
# validate's options: flat names of PipelineConfig's fields and its parts' (FLAT).
_SHAPE = ("model", "min_tokens", "max_tokens", "points")
_CHECK = ("check_largest", "check_factor", "check_smallest", "check_width_factor")
VALIDATE = FromFlat(
    PipelineConfig,
    FLAT,
    _D,
    only=(
        "corpus",
        "vocab_size",
        "split_on",
        "glob",
        "text_field",
        *_SHAPE,
        "seeds_per_size",
        "model_sweep",
        "id_batch_size",
        "id_per_doc",
        "id_dtype",
        "id_reference_documents",
        *_CHECK,
        "seed",
    ),
    required=("corpus",),
    presets=VALIDATE_PRESETS,
    preset_help=_PRESET_HELP,
)
# demo: validate's options on the built-in default corpus, fewer of them.
DEMO = FromFlat(
    PipelineConfig,
    FLAT,
    _D,
    only=(
        "corpus",
        "min_tokens",
        "max_tokens",
        "points",
        "model_sweep",
        "id_batch_size",
        "id_reference_documents",
        "check_largest",
        "seed",
    ),
    helps={"corpus": "Corpus (as for validate)."},
)


def validate_command(
    out: Path = typer.Option(..., "--out", help="Folder for everything."),
    cfg: PipelineConfig = VALIDATE,
    references: list[str] = _REFS,
    workers: int = _WORKERS,
    threads: int | None = _THREADS,
    backend: str = BACKEND,
    ray_address: str | None = RAY_ADDRESS,
    run_cpus: int = RUN_CPUS,
    run_gpus: float = RUN_GPUS,
    json_out: bool = JSON,
    quiet: bool = QUIET,
) -> None:
    """Will this corpus scale as its intrinsic dimension predicts? d from each reference
    model (before training), a data sweep and a model-size sweep trained to convergence
    (checked by perturbing the largest runs), d along the sweep, fits, and a report.
    Re-running resumes."""
    pool = (workers, threads, backend, ray_address, run_cpus, run_gpus)
    _run(out, cfg, references, pool, json_out, quiet)


def demo_command(
    out: Path = typer.Option(Path("demo-out"), "--out", help="Folder for everything."),
    cfg: PipelineConfig = DEMO,
    references: list[str] = _REFS,
    workers: int = _WORKERS,
    threads: int | None = _THREADS,
    backend: str = BACKEND,
    ray_address: str | None = RAY_ADDRESS,
    run_cpus: int = RUN_CPUS,
    run_gpus: float = RUN_GPUS,
    json_out: bool = JSON,
    quiet: bool = QUIET,
) -> None:
    """`scalelab validate` on the built-in default corpus, into demo-out/. Re-running skips
    every finished stage."""
    pool = (workers, threads, backend, ray_address, run_cpus, run_gpus)
    _run(out, cfg, references, pool, json_out, quiet)


def register(app: typer.Typer) -> None:
    """Add `validate` and `demo` to the top-level app."""
    app.command("validate")(derive(validate_command))
    app.command("demo")(derive(demo_command))
