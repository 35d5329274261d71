"""`scalelab train`: train a GPT on a token store (resumes an unfinished --out folder)."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import typer

from scalelab.cli.common import (
    JSON,
    QUIET,
    as_options,
    configured,
    either,
    print_json,
    print_table,
    renamed_option,
    set_threads,
    threads_option,
)
from scalelab.config import Record
from scalelab.lm.config import MODEL_PRESETS, configs_for_preset


def _opt(flag: str, help_text: str) -> typer.models.OptionInfo:
    """An optional override: `None` keeps the preset's value."""
    return typer.Option(None, flag, help=help_text)


def train_command(
    data: Path = typer.Option(..., "--data", help="Token store from `scalelab corpus prepare`."),
    preset: str = typer.Option(..., "--preset", help=f"Model preset: {', '.join(MODEL_PRESETS)}."),
    out: Path = typer.Option(..., "--out", help="Run folder (created, or resumed if unfinished)."),
    token_budget: int | None = _opt("--token-budget", "Stop after this many training tokens."),
    max_steps: int | None = _opt("--max-steps", "Optimizer steps (the cosine schedule's length)."),
    seed: int | None = _opt("--seed", "Seed for weights and data order (default 0)."),
    lr: float | None = _opt("--lr", "Peak learning rate (0 < lr <= 1)."),
    min_lr: float | None = _opt("--min-lr", "Learning rate at the end of the cosine decay."),
    warmup_steps: int | None = _opt("--warmup-steps", "Linear warm-up steps."),
    batch_size: int | None = _opt("--batch-size", "Windows per micro-batch."),
    grad_accum: int | None = _opt(
        "--grad-accum", "Micro-batches per optimizer step (shared over torchrun processes)."
    ),
    block_size: int | None = _opt("--block-size", "Context length in tokens (the model's)."),
    retired_block_size: int | None = renamed_option("--context-len", "--block-size"),
    train_tokens: int | None = _opt(
        "--train-tokens", "Train on the first N tokens of the train split only."
    ),
    patience: int | None = _opt(
        "--patience", "Stop after N validations without improvement (best weights are kept)."
    ),
    eval_interval: int | None = _opt("--eval-interval", "Steps between validations/checkpoints."),
    eval_batches: int | None = _opt("--eval-batches", "Validation batches per evaluation."),
    test_tokens: int | None = _opt("--test-tokens", "Score at most N test tokens (default all)."),
    dtype: str | None = _opt("--dtype", "auto, float32 or bfloat16 (autocast)."),
    dropout: float | None = _opt("--dropout", "Dropout rate (default 0)."),
    device: str | None = typer.Option(None, "--device", help="cpu, cuda, cuda:1 (default auto)."),
    threads: int | None = threads_option(),
    quiet: bool = QUIET,
    json_out: bool = JSON,
) -> None:
    """Train a GPT on a prepared token store. Re-running the same command on an unfinished
    --out folder continues it exactly; a finished one just prints its result.
    Under `torchrun --nproc_per_node=N -m scalelab train ...` it trains data-parallel."""
    set_threads(threads)
    overrides = dict(
        token_budget=token_budget,
        max_steps=max_steps,
        seed=seed,
        lr=lr,
        min_lr=min_lr,
        warmup_steps=warmup_steps,
        batch_size=batch_size,
        grad_accum=grad_accum,
        block_size=either(block_size, retired_block_size),
        train_tokens=train_tokens,
        patience=patience,
        eval_interval=eval_interval,
        eval_batches=eval_batches,
        test_tokens=test_tokens,
        dtype=dtype,
        dropout=dropout,
    )
    make = functools.partial(configs_for_preset, preset, data)
    model_cfg, train_cfg = configured(make, as_options(overrides), **overrides)
    from scalelab.lm.distributed import shutdown_distributed  # torch: once the options are sound
    from scalelab.lm.train import train

    try:
        result = train(model_cfg, train_cfg, data, out, quiet=quiet, device=device, log=sys.stderr)
    finally:
        shutdown_distributed()
    if os.environ.get("RANK", "0") != "0":  # under torchrun only rank 0 prints
        return
    flat = {k: v for k, v in result.items() if not isinstance(v, dict | list | Record)}
    if json_out:
        print_json(flat)
    else:
        print_table(f"run {out}", [{"field": k, "value": v} for k, v in flat.items()])


def register(app: typer.Typer) -> None:
    """Add `scalelab train` to the top-level app."""
    app.command("train")(train_command)
