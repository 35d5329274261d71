"""`scalelab train`: train a GPT on a token store (resumes an unfinished --out folder)."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import typer

from scalelab.cli.common import JSON, QUIET, print_json, print_table, set_threads, threads_option
from scalelab.cli.options import From, Given, derive
from scalelab.lm.config import MODEL_PRESETS, GPTConfig, TrainConfig, configs_for_preset
from scalelab.lm.stopping import StopRule

#: The options that change the preset's model or training (None: the preset's value).
TRAINING = From(
    TrainConfig,
    GPTConfig,
    StopRule,
    only=(
        "token_budget",
        "max_steps",
        "seed",
        "lr",
        "min_lr",
        "warmup_steps",
        "batch_size",
        "grad_accum",
        "block_size",
        "train_tokens",
        "patience",
        "eval_interval",
        "eval_batches",
        "test_tokens",
        "dtype",
        "dropout",
    ),
    overrides=True,
)


def train_command(
    data: Path = typer.Option(..., "--data", help="Token store from `scalelab corpus prepare`."),
    preset: str = typer.Option(..., "--preset", help=f"Model preset: {', '.join(MODEL_PRESETS)}."),
    out: Path = typer.Option(..., "--out", help="Run folder (created, or resumed if unfinished)."),
    given: Given = TRAINING,
    device: str | None = typer.Option(None, "--device", help="cpu, cuda, cuda:1 (default auto)."),
    threads: int | None = threads_option(),
    quiet: bool = QUIET,
    json_out: bool = JSON,
) -> None:
    """Train a GPT on a prepared token store. Re-running the same command on an unfinished
    --out folder continues it exactly; a finished one just prints its result.
    Under `torchrun --nproc_per_node=N -m scalelab train ...` it trains data-parallel.
    With --config, a run's config.json (or its keys) sets the options it holds."""
    set_threads(threads)
    given.values.pop("vocab_size", None)  # a saved run's: the vocabulary is the store's
    model_cfg, train_cfg = given.apply(functools.partial(configs_for_preset, preset, data))
    from scalelab.lm.distributed import shutdown_distributed  # torch: once the options are sound
    from scalelab.lm.train import train

    try:
        result = train(model_cfg, train_cfg, data, out, quiet=quiet, device=device, log=sys.stderr)
    finally:
        shutdown_distributed()
    if os.environ.get("RANK", "0") != "0":  # under torchrun only rank 0 prints
        return
    flat = result.scalars()
    if json_out:
        print_json(flat)
    else:
        print_table(f"run {out}", [{"field": k, "value": v} for k, v in flat.items()])


def register(app: typer.Typer) -> None:
    """Add `scalelab train` to the top-level app."""
    app.command("train")(derive(train_command))
