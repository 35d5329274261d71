"""`scalelab sweep data|model`: resumable data-size and model-size sweeps of `scalelab train`
runs, one row per finished run in OUT/runs.csv (read by `scalelab report OUT`)."""

from __future__ import annotations

import functools
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
    as_options,
    backend_from,
    configured,
    either,
    parse_list,
    print_json,
    print_table,
    renamed_option,
    set_threads,
    threads_option,
)
from scalelab.errors import ConfigError
from scalelab.lm.config import MODEL_PRESETS, GPTConfig, TrainConfig, configs_for_preset
from scalelab.sweeps import data as data_sweep
from scalelab.sweeps import model as model_sweep
from scalelab.sweeps.schedule import EVAL_INTERVAL, Schedule

if TYPE_CHECKING:
    import pandas as pd

sweep_app = typer.Typer(
    help="Data-size and model-size sweeps (resumable; one `scalelab train` run folder each).",
    no_args_is_help=True,
)

DATA = typer.Option(..., "--data", help="Token store from `scalelab corpus prepare`.")
OUT = typer.Option(..., "--out", help="Sweep folder (created, or resumed with the same options).")
_S = Schedule()  # the CLI's defaults are the configs'
_G = data_sweep.SizeGrid()
_T = TrainConfig()
PRESET = typer.Option(
    "tiny", "--preset", help=f"Model + training defaults: {', '.join(MODEL_PRESETS)}."
)
POLICY = typer.Option(
    _S.policy,
    "--policy",
    help="Training length: converge (early stopping on validation loss, step budget growing "
    "with data), epochs (fixed passes over each run's data), tokens (fixed token budget).",
)
PATIENCE = typer.Option(
    _S.stop.patience, "--patience", help="converge: validations without improvement."
)
PATIENCE_FRACTION = typer.Option(
    _S.stop.patience_fraction,
    "--patience-fraction",
    help="converge: or this share of the validations so far, whichever is longer (a wait "
    "that grows with the run, so slow late progress is not cut off by noise).",
)
MIN_DELTA_SD = typer.Option(
    _S.stop.min_delta_sd,
    "--min-delta-sd",
    help="converge: an improvement resets the patience only when larger than this many "
    "validation standard errors.",
)
MAX_EPOCHS = typer.Option(
    _S.max_epochs, "--max-epochs", help="converge: step budget as passes over the run's tokens."
)
MIN_STEPS = typer.Option(_S.min_steps, "--min-steps", help="converge: smallest step budget.")
STEP_CAP = typer.Option(_S.step_cap, "--step-cap", help="converge: largest step budget.")
DECAY_EPOCHS = typer.Option(
    _S.decay_epochs,
    "--decay-epochs",
    help="converge: learning-rate decay over this many passes, then flat (default: over the "
    "step budget). Makes the schedule independent of the budget.",
)
EPOCHS = typer.Option(_S.epochs, "--epochs", help="epochs: passes over each run's tokens.")
COOLDOWN = typer.Option(
    _S.cooldown_fraction,
    "--cooldown-fraction",
    help="converge: after each run stops, anneal from its best step to lr 0 over this share "
    "of the steps to it, and test that (default: off; docs/sweeps.md).",
)
TOKEN_BUDGET = typer.Option(
    _S.token_budget, "--token-budget", help="tokens: training tokens per run."
)
EVAL_EVERY = typer.Option(EVAL_INTERVAL, "--eval-interval", help="Steps between validations.")
EVAL_BATCHES = typer.Option(
    _T.eval_batches, "--eval-batches", help="Validation batches per evaluation."
)
CONTEXT = typer.Option(None, "--block-size", help="Context length (default: the preset's).")
RETIRED_CONTEXT = renamed_option("--context-len", "--block-size")
BATCH = typer.Option(None, "--batch-size", help="Windows per step (default: the preset's).")
LR = typer.Option(None, "--lr", help="Peak learning rate (default: the preset's).")
TEST_TOKENS = typer.Option(None, "--test-tokens", help="Score at most N test tokens (all).")
DTYPE = typer.Option(None, "--dtype", help="auto, float32 or bfloat16 (default auto).")
SEED = typer.Option(_T.seed, "--seed", help="Training seed of every run (weights, data order).")
WORKERS = typer.Option(1, "--workers", help="Runs in parallel (processes; threads split).")
THREADS = threads_option(help="Torch CPU threads when --workers is 1.")
ONLY = typer.Option(
    None,
    "--only",
    help="Run only this run name (repeatable): one scheduler task per run; the table still "
    "covers every finished run.",
)
SHAPE = typer.Option(
    None, "--model", help="Shape LAYERSxWIDTH[xHEADS] instead of the preset's, e.g. 4x128."
)
PLAN = typer.Option(False, "--plan", help="Print the runs (name, tokens, step budget) and stop.")


def _schedule(ctx: typer.Context) -> Schedule:
    """The Schedule the command's options describe (they carry its field names)."""
    return Schedule.from_dict({name: ctx.params[name] for name in Schedule().to_dict()})


def _configs(ctx: typer.Context) -> tuple[GPTConfig, TrainConfig]:
    """The preset's model and training configs with the command's training options on top
    (None: the preset's), the same for both sweep commands."""
    o = ctx.params
    names = ("block_size", "batch_size", "lr", "seed", "eval_interval", "eval_batches")
    overrides = {k: o[k] for k in (*names, "test_tokens", "dtype")}
    overrides["block_size"] = either(o["block_size"], o["retired_block_size"])
    make = functools.partial(configs_for_preset, o["preset"], o["data"])
    return configured(make, as_options(overrides), **overrides)


def _plan(specs: list, json_out: bool) -> None:
    rows = [
        {
            "run": s.name,
            "train_tokens": s.params["train_tokens"],
            "max_steps": s.params["max_steps"],
            "patience": s.params["patience"],
            **({"label": s.params["label"]} if "label" in s.params else {}),
        }
        for s in specs
    ]
    if json_out:
        print_json(rows)
    else:
        print_table("planned runs", rows)


def _show(out: Path, table: pd.DataFrame, json_out: bool, extra: list[str]) -> None:
    cols = ["run", *extra, "steps", "stop_reason", "best_val_loss_nats", "test_loss_nats"]
    rows = table[[c for c in cols if c in table.columns]].to_dict("records") if len(table) else []
    if json_out:
        print_json({"sweep_dir": str(out), "runs": rows})
        return
    print_table(f"sweep {out}: {len(rows)} finished runs", rows)
    typer.echo(f"table: {out / 'runs.csv'}; report: scalelab report {out}")


def data_command(
    ctx: typer.Context,
    data: Path = DATA,
    out: Path = OUT,
    preset: str = PRESET,
    model: str | None = SHAPE,
    sizes: str | None = typer.Option(
        None, "--sizes", help="Comma-separated training-token counts, strictly increasing."
    ),
    min_tokens: int | None = typer.Option(
        None, "--min-tokens", help="Smallest size (default: largest / 100, two decades)."
    ),
    max_tokens: int | None = typer.Option(
        None, "--max-tokens", help="Largest size (default: the whole train split)."
    ),
    points: int = typer.Option(_G.points, "--points", help="Sizes in the geometric grid."),
    policy: str = POLICY,
    patience: int = PATIENCE,
    patience_fraction: float = PATIENCE_FRACTION,
    min_delta_sd: float = MIN_DELTA_SD,
    max_epochs: float = MAX_EPOCHS,
    min_steps: int = MIN_STEPS,
    step_cap: int = STEP_CAP,
    decay_epochs: float | None = DECAY_EPOCHS,
    epochs: float = EPOCHS,
    token_budget: int | None = TOKEN_BUDGET,
    cooldown_fraction: float | None = COOLDOWN,
    eval_interval: int = EVAL_EVERY,
    eval_batches: int = EVAL_BATCHES,
    block_size: int | None = CONTEXT,
    retired_block_size: int | None = RETIRED_CONTEXT,
    batch_size: int | None = BATCH,
    lr: float | None = LR,
    test_tokens: int | None = TEST_TOKENS,
    dtype: str | None = DTYPE,
    seed: int = SEED,
    workers: int = WORKERS,
    threads: int | None = THREADS,
    backend: str = BACKEND,
    ray_address: str | None = RAY_ADDRESS,
    run_cpus: int = RUN_CPUS,
    run_gpus: float = RUN_GPUS,
    only: list[str] | None = ONLY,
    plan: bool = PLAN,
    quiet: bool = QUIET,
    json_out: bool = JSON,
) -> None:
    """Train one model on nested prefixes of the train split (a geometric grid of sizes, or
    --sizes), each evaluated on the same test split. Re-running resumes; finished runs are
    never redone. Example: scalelab sweep data --data data/shk --out sweeps/shk --points 7"""
    set_threads(threads, workers=workers)
    where = backend_from(backend, ray_address, run_cpus, run_gpus)
    model_cfg, train_cfg = _configs(ctx)
    if model is not None:
        model_cfg = model_sweep.parse_model(model, model_cfg)[1]
    if sizes is not None:
        grid = parse_list(sizes, lambda s: int(float(s)), "--sizes", "integers")
    else:
        grid_options = as_options(("points", "min_tokens", "max_tokens"))
        size_grid = configured(
            data_sweep.SizeGrid, grid_options, points=points, min_tokens=min_tokens,
            max_tokens=max_tokens,
        )  # fmt: skip
        grid = size_grid.sizes(data)
    cfg = data_sweep.make_config(data, model_cfg, train_cfg, _schedule(ctx), grid)
    if plan:
        _plan(data_sweep.specs(cfg), json_out)
        return
    table = data_sweep.data_sweep(out, cfg, workers=workers, backend=where, only=only, quiet=quiet)
    _show(out, table, json_out, ["train_tokens"])


def model_command(
    ctx: typer.Context,
    data: Path = DATA,
    out: Path = OUT,
    models: str = typer.Option(
        ...,
        "--models",
        help="Comma-separated presets or shapes LAYERSxWIDTH[xHEADS] (heads default "
        "width/32), e.g. 2x64,4x96,4x128,6x192.",
    ),
    preset: str = PRESET,
    train_tokens: int | None = typer.Option(
        None, "--train-tokens", help="Training tokens for every model (default: all)."
    ),
    policy: str = POLICY,
    patience: int = PATIENCE,
    patience_fraction: float = PATIENCE_FRACTION,
    min_delta_sd: float = MIN_DELTA_SD,
    max_epochs: float = MAX_EPOCHS,
    min_steps: int = MIN_STEPS,
    step_cap: int = STEP_CAP,
    decay_epochs: float | None = DECAY_EPOCHS,
    epochs: float = EPOCHS,
    token_budget: int | None = TOKEN_BUDGET,
    cooldown_fraction: float | None = COOLDOWN,
    eval_interval: int = EVAL_EVERY,
    eval_batches: int = EVAL_BATCHES,
    block_size: int | None = CONTEXT,
    retired_block_size: int | None = RETIRED_CONTEXT,
    batch_size: int | None = BATCH,
    lr: float | None = LR,
    test_tokens: int | None = TEST_TOKENS,
    dtype: str | None = DTYPE,
    seed: int = SEED,
    workers: int = WORKERS,
    threads: int | None = THREADS,
    backend: str = BACKEND,
    ray_address: str | None = RAY_ADDRESS,
    run_cpus: int = RUN_CPUS,
    run_gpus: float = RUN_GPUS,
    only: list[str] | None = ONLY,
    plan: bool = PLAN,
    quiet: bool = QUIET,
    json_out: bool = JSON,
) -> None:
    """Train several model shapes on the same data with the same training config; runs.csv
    records each model's non-embedding parameters. Re-running resumes.
    Example: scalelab sweep model --data data/shk --out sweeps/shk-models --models 2x64,4x128"""
    set_threads(threads, workers=workers)
    where = backend_from(backend, ray_address, run_cpus, run_gpus)
    base, train_cfg = _configs(ctx)
    names = parse_list(models, str, "--models")
    if cooldown_fraction is not None:
        raise ConfigError(
            f"--cooldown-fraction {cooldown_fraction}: annealing is implemented for data sweeps "
            "only; drop it here, or use `scalelab sweep data`"
        )
    cfg = model_sweep.make_config(data, names, base, train_cfg, _schedule(ctx), train_tokens)
    if plan:
        _plan(model_sweep.specs(cfg), json_out)
        return
    table = model_sweep.model_sweep(
        out, cfg, workers=workers, backend=where, only=only, quiet=quiet
    )
    _show(out, table, json_out, ["label", "params_non_embedding"])


def register(app: typer.Typer) -> None:
    """Add `scalelab sweep data|model` to the top-level app."""
    sweep_app.command("data")(data_command)
    sweep_app.command("model")(model_command)
    app.add_typer(sweep_app, name="sweep")
