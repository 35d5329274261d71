"""Data-size sweep: one model trained on nested prefixes of the shuffled train split.

The token store's train split is stored in a seeded document shuffle, so its first n tokens
for growing n are nested subsets; the validation and test splits never change. Each size is
one run folder `runs/n<tokens>`; `runs.csv` gets one row per finished run with the columns
the report reads (`train_tokens`, `test_loss_nats`, `best_val_loss_nats`, `stop_reason`,
`params_non_embedding`, ...).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scalelab.config import Config
from scalelab.errors import ConfigError
from scalelab.fields import positive_int
from scalelab.lm.config import GPTConfig, TrainConfig
from scalelab.runs.sweep import Backend, RunSpec, opened_sweep
from scalelab.sweeps.schedule import Schedule
from scalelab.sweeps.worker import run_params, run_specs
from scalelab.text.store import TokenStore

KIND = "data"


def geometric_grid(lo: int, hi: int, points: int) -> list[int]:
    """`points` integer sizes from `lo` to `hi`, evenly spaced in log (both ends included)."""
    if not (isinstance(points, int) and points >= 2):
        raise ConfigError(f"a grid needs at least 2 points, got {points!r}")
    if not 0 < lo < hi:
        raise ConfigError(f"grid ends must satisfy 0 < min < max, got {lo} and {hi}")
    sizes = [int(v) for v in np.round(np.geomspace(lo, hi, points))]
    if len(set(sizes)) != len(sizes):
        raise ConfigError(f"{points} points between {lo} and {hi} repeat sizes; use fewer")
    return sizes


@dataclasses.dataclass(frozen=True)
class SizeGrid(Config):
    """The default sizes of a data sweep: `points` sizes evenly spaced in log from
    `min_tokens` (default `max_tokens` / 100: two decades) to `max_tokens` (default the whole
    train split)."""

    points: int = 7
    min_tokens: int | None = None
    max_tokens: int | None = None

    def validate(self) -> None:
        if not (isinstance(self.points, int) and self.points >= 2):
            raise ConfigError(f"a grid needs at least 2 points, got {self.points!r}")
        positive_int(self.min_tokens, "min_tokens", optional=True)
        positive_int(self.max_tokens, "max_tokens", optional=True)

    def sizes(self, data_dir: str | Path) -> list[int]:
        """The grid's training-token counts on the token store at `data_dir`."""
        hi = self.max_tokens
        if hi is None:
            hi = TokenStore(data_dir, "train").n_tokens
        lo = self.min_tokens if self.min_tokens is not None else max(hi // 100, 1)
        return geometric_grid(lo, hi, self.points)


def check_sizes(sizes: Sequence[int], available: int, block_size: int) -> list[int]:
    """The sizes as ints, refused unless strictly increasing and within the train split."""
    sizes = [int(s) for s in sizes]
    if len(sizes) < 2:
        raise ConfigError("a data sweep needs at least 2 sizes; pass more --sizes")
    if any(b <= a for a, b in itertools.pairwise(sizes)):
        raise ConfigError(f"sizes {sizes} are not strictly increasing; sort them, no repeats")
    if sizes[0] <= block_size:
        raise ConfigError(
            f"smallest size {sizes[0]} must exceed the context length {block_size}; "
            "raise --min-tokens"
        )
    if sizes[-1] > available:
        raise ConfigError(
            f"largest size {sizes[-1]} exceeds the {available} training tokens of the store; "
            f"use --max-tokens {available} or less"
        )
    return sizes


@dataclasses.dataclass(frozen=True)
class DataSweepConfig(Config):
    """Everything that defines a data sweep (saved in sweep.json, checked on resume)."""

    data_dir: str
    sizes: tuple[int, ...]
    model: dict[str, Any]
    train: dict[str, Any]
    schedule: dict[str, Any]

    def validate(self) -> None:
        model = GPTConfig.from_dict(self.model)
        TrainConfig.from_dict(self.train)
        Schedule.from_dict(self.schedule)
        check_sizes(self.sizes, TokenStore(self.data_dir, "train").n_tokens, model.block_size)

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "sizes": list(self.sizes)}


def make_config(
    data_dir: str | Path,
    model: GPTConfig,
    train: TrainConfig,
    schedule: Schedule,
    sizes: Sequence[int],
) -> DataSweepConfig:
    return DataSweepConfig(
        data_dir=str(Path(data_dir).resolve()),
        sizes=tuple(int(s) for s in sizes),
        model=model.to_dict(),
        train=train.to_dict(),
        schedule=schedule.to_dict(),
    )


def run_name(n_tokens: int) -> str:
    return f"n{n_tokens:010d}"


def specs(cfg: DataSweepConfig) -> list[RunSpec]:
    """One run per size, smallest first."""
    model = GPTConfig.from_dict(cfg.model)
    base = TrainConfig.from_dict(cfg.train)
    schedule = Schedule.from_dict(cfg.schedule)
    out = []
    for n in cfg.sizes:
        run_cfg = schedule.train_config(base, n, model.block_size)
        params = run_params(
            model, run_cfg, Path(cfg.data_dir), train_tokens=n, policy=schedule.policy
        )
        out.append(RunSpec(run_name(n), params))
    return out


def data_sweep(
    sweep_dir: str | Path,
    cfg: DataSweepConfig,
    *,
    workers: int = 1,
    backend: Backend | None = None,
    only: Sequence[str] | None = None,
    quiet: bool = False,
) -> pd.DataFrame:
    """Run (or resume) the sweep; `only` runs just the named runs (one scheduler task each),
    but the table always covers every finished run. The folder is locked until return."""
    with opened_sweep(sweep_dir, KIND, cfg.to_dict()) as folder:
        return run_specs(
            folder, specs(cfg), workers=workers, backend=backend, only=only, quiet=quiet
        )
