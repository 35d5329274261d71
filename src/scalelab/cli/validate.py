"""`scalelab validate` (any corpus) and `scalelab demo` (`make demo`: validate on the built-in
default corpus into demo-out/)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

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
    renamed_option,
    set_threads,
    shown,
    threads_option,
)
from scalelab.io import format_interval
from scalelab.pipeline.config import FLAT, PipelineConfig, flat_defaults
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
    ctx: typer.Context,
    out: Path,
    references: list[str],
    pool: tuple[int, int | None, str, str | None, int, float],
    preset: str | None,
    json_out: bool,
    quiet: bool,
) -> None:
    """Build the config from the command's config options (`ctx.params` whose names are
    `FLAT`'s; its own validation refuses bad values), then run. With a preset, only the
    options given on the command line override its values."""
    workers, threads, backend, ray_address, run_cpus, run_gpus = pool
    set_threads(threads, workers=workers)
    where = backend_from(backend, ray_address, run_cpus, run_gpus)
    given = {k: v for k, v in ctx.params.items() if k in FLAT}
    given["model_sweep"] = tuple(m.strip() for m in given["model_sweep"].split(",") if m.strip())
    explicit = _explicit(ctx)
    if ctx.params.get("retired_id_dtype") is not None:  # --id-precision, the retired spelling
        given["id_dtype"] = ctx.params["retired_id_dtype"]
        explicit |= {"id_dtype"}
    if preset is None:
        cfg = PipelineConfig.from_options(**given)
    else:
        cfg = PipelineConfig.from_preset(preset, **{k: given[k] for k in explicit & set(given)})
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


def _opt(name: str, help_text: str) -> Any:
    """An option whose default is PipelineConfig's (one default, one place: `flat_defaults`
    reads it from the config part the option's name points to)."""
    return typer.Option(_D[name.removeprefix("--").replace("-", "_")], name, help=help_text)


_REFS = typer.Option(
    [],
    "--reference-model",
    help="Another model that measures d (repeatable): a scalelab run folder, a local Hugging "
    "Face folder, or a .gguf file (its folder holds the tokenizer).",
)
_VOCAB = _opt("--vocab-size", "BPE vocabulary (ignored for a token store).")
_SPLIT_ON = _opt("--split-on", "Text files: documents end at 'blank' lines or each 'line'.")
_GLOB = _opt("--glob", "Folders: files to read.")
_FIELD = _opt("--text-field", "JSONL field / Parquet column holding the text.")
_MODEL = _opt("--model", "The data sweep's model shape LAYERSxWIDTH[xHEADS].")
_MIN = _opt("--min-tokens", "Smallest training set (tokens).")
_MAX = _opt("--max-tokens", "Largest training set (tokens); also the model sweep's data.")
_POINTS = _opt("--points", "Sizes in the data sweep's geometric grid.")
_SEEDS = _opt(
    "--seeds-per-size",
    "Data-sweep runs per size (seeds seed, seed + 1, ...; the same nested subset): the "
    "regime test reads their scatter as the noise.",
)
_MODELS = typer.Option(
    ",".join(_D["model_sweep"]),
    "--model-sweep",
    help="Model-size sweep shapes LAYERSxWIDTH, comma-separated ('' for none).",
)
_WORKERS = typer.Option(WORKERS, "--workers", help="Runs in parallel (one torch thread each).")
_THREADS = threads_option(help="Torch threads of the main process.")
_IDB = _opt("--id-batch-size", "Points per MLE batch.")
_IDP = _opt("--id-per-doc", "Positions per test document for d.")
_IDREF = _opt(
    "--id-reference-documents",
    "Test documents (a seeded subset) each given reference model reads for d (the cpu-hour "
    "preset: every one).",
)
_CHECKL = _opt("--check-largest", "Convergence check: perturb this many largest runs per sweep.")
_CHECKF = _opt("--check-factor", "Convergence check: the stricter stopping rule's factor.")
_CHECKS = _opt(
    "--check-smallest", "Convergence check: perturb this many smallest runs too (both ends)."
)
_CHECKW = _opt(
    "--check-width-factor",
    "Convergence check: train the data sweep's largest size with a model this many times "
    "wider (is it model-limited?).",
)
_IDDTYPE = _opt(
    "--id-dtype", "Forward-pass dtype of the models that measure d: auto|float32|bfloat16."
)
_RETIRED_IDDTYPE = renamed_option("--id-precision", "--id-dtype")


def _explicit(ctx: typer.Context) -> frozenset[str]:
    """The parameters given on the command line (or by environment), not left at default."""
    defaults = ("DEFAULT", "DEFAULT_MAP")  # by name: Typer may bring its own click's enum
    return frozenset(n for n in ctx.params if ctx.get_parameter_source(n).name not in defaults)


_PRESET = typer.Option(
    None,
    "--preset",
    help="Named sizes (times on 2 CPU cores): quick (a first try: 5 sizes of 500-5,000 tokens, "
    "no model sweep; 136 CPU-seconds on shakespeare, about 2 minutes of 2 free cores; needs "
    "5,000 train tokens and 32 test documents of 128+ tokens, about 320 documents), "
    "cpu-regime (a data sweep over two decades sized to reach a power-law regime; 3-17.5 "
    "minutes per corpus), cpu-hour (25 minutes on shakespeare, one hour at worst), model-side "
    "(a model sweep of 5.2k-300k non-embedding parameters, none data-limited; 65 minutes on "
    "shakespeare), power (designed by the regime test's power: 25k-2.5M tokens, 5 sizes x 2 "
    "seeds, annealed; 60-150 hours of 2 cores per corpus, not yet run) or gpu (one "
    "H200-class GPU, 4.9M-85M parameters, 10M-100M tokens; not yet run). Options given here "
    "override its values (docs/sweeps.md#presets).",
)


def validate_command(
    ctx: typer.Context,
    corpus: str = typer.Option(
        ...,
        "--corpus",
        help="A built-in name, a text file, a folder, a .jsonl/.parquet file "
        "or a prepared token store.",
    ),
    out: Path = typer.Option(..., "--out", help="Folder for everything."),
    preset: str | None = _PRESET,
    references: list[str] = _REFS,
    vocab_size: int = _VOCAB,
    split_on: str = _SPLIT_ON,
    glob: str = _GLOB,
    text_field: str = _FIELD,
    model: str = _MODEL,
    min_tokens: int = _MIN,
    max_tokens: int = _MAX,
    points: int = _POINTS,
    seeds_per_size: int = _SEEDS,
    model_sweep: str = _MODELS,
    workers: int = _WORKERS,
    threads: int | None = _THREADS,
    id_batch_size: int = _IDB,
    id_per_doc: int = _IDP,
    id_dtype: str = _IDDTYPE,
    retired_id_dtype: str | None = _RETIRED_IDDTYPE,
    id_reference_documents: int | None = _IDREF,
    check_largest: int = _CHECKL,
    check_factor: int = _CHECKF,
    check_smallest: int = _CHECKS,
    check_width_factor: int | None = _CHECKW,
    seed: int = SEED,
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
    _run(ctx, out, references, pool, preset, json_out, quiet)


def demo_command(
    ctx: typer.Context,
    out: Path = typer.Option(Path("demo-out"), "--out", help="Folder for everything."),
    corpus: str = typer.Option(_D["corpus"], "--corpus", help="Corpus (as for validate)."),
    references: list[str] = _REFS,
    min_tokens: int = _MIN,
    max_tokens: int = _MAX,
    points: int = _POINTS,
    model_sweep: str = _MODELS,
    workers: int = _WORKERS,
    threads: int | None = _THREADS,
    id_batch_size: int = _IDB,
    id_reference_documents: int | None = _IDREF,
    check_largest: int = _CHECKL,
    seed: int = SEED,
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
    _run(ctx, out, references, pool, None, json_out, quiet)


def register(app: typer.Typer) -> None:
    """Add `validate` and `demo` to the top-level app."""
    app.command("validate")(validate_command)
    app.command("demo")(demo_command)
