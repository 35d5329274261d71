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
    backend_from,
    parse_list,
    print_json,
    print_table,
    set_threads,
    threads_option,
)
from scalelab.cli.options import From, Given, derive
from scalelab.errors import ConfigError
from scalelab.lm.config import MODEL_PRESETS, GPTConfig, TrainConfig, configs_for_preset
from scalelab.sweeps import data as data_sweep
from scalelab.sweeps import model as model_sweep
from scalelab.sweeps.data import SizeGrid
from scalelab.sweeps.schedule import EVAL_INTERVAL, Schedule

if TYPE_CHECKING:
    import pandas as pd

sweep_app = typer.Typer(
    help="Data-size and model-size sweeps (resumable; one `scalelab train` run folder each).",
    no_args_is_help=True,
)

DATA = typer.Option(..., "--data", help="Token store from `scalelab corpus prepare`.")
OUT = typer.Option(..., "--out", help="Sweep folder (created, or resumed with the same options).")
PRESET = typer.Option(
    "tiny", "--preset", help=f"Model + training defaults: {', '.join(MODEL_PRESETS)}."
)
# How long each run trains: the schedule's fields (its stopping rule's too); --config reads
# them, as sweep.json's "schedule" holds them.
SCHEDULE = From(Schedule)
# The preset's training and model settings the sweep sets (None: the preset's).
TRAINING = From(
    TrainConfig,
    GPTConfig,
    only=(
        "eval_interval",
        "eval_batches",
        "block_size",
        "batch_size",
        "lr",
        "test_tokens",
        "dtype",
        "seed",
    ),
    helps={"seed": "Training seed of every run (weights, data order)."},
    overrides=True,
    defaults={
        "eval_interval": EVAL_INTERVAL,
        "eval_batches": TrainConfig().eval_batches,
        "seed": 0,
    },
    file=False,
)
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
    data: Path = DATA,
    out: Path = OUT,
    preset: str = PRESET,
    model: str | None = SHAPE,
    sizes: str | None = typer.Option(
        None, "--sizes", help="Comma-separated training-token counts, strictly increasing."
    ),
    grid: SizeGrid = From(SizeGrid, file=False),
    schedule: Schedule = SCHEDULE,
    training: Given = TRAINING,
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
    model_cfg, train_cfg = training.apply(functools.partial(configs_for_preset, preset, data))
    if model is not None:
        model_cfg = model_sweep.parse_model(model, model_cfg)[1]
    if sizes is not None:
        chosen = parse_list(sizes, lambda s: int(float(s)), "--sizes", "integers")
    else:
        chosen = grid.sizes(data)
    cfg = data_sweep.make_config(data, model_cfg, train_cfg, schedule, chosen)
    if plan:
        _plan(data_sweep.specs(cfg), json_out)
        return
    table = data_sweep.data_sweep(out, cfg, workers=workers, backend=where, only=only, quiet=quiet)
    _show(out, table, json_out, ["train_tokens"])


def model_command(
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
    schedule: Schedule = SCHEDULE,
    training: Given = TRAINING,
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
    base, train_cfg = training.apply(functools.partial(configs_for_preset, preset, data))
    names = parse_list(models, str, "--models")
    if schedule.cooldown_fraction is not None:
        raise ConfigError(
            f"--cooldown-fraction {schedule.cooldown_fraction}: annealing is implemented for "
            "data sweeps only; drop it here, or use `scalelab sweep data`"
        )
    cfg = model_sweep.make_config(data, names, base, train_cfg, schedule, train_tokens)
    if plan:
        _plan(model_sweep.specs(cfg), json_out)
        return
    table = model_sweep.model_sweep(
        out, cfg, workers=workers, backend=where, only=only, quiet=quiet
    )
    _show(out, table, json_out, ["label", "params_non_embedding"])


def register(app: typer.Typer) -> None:
    """Add `scalelab sweep data|model` to the top-level app."""
    sweep_app.command("data")(derive(data_command))
    sweep_app.command("model")(derive(model_command))
    app.add_typer(sweep_app, name="sweep")
