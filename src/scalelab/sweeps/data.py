"""Data-size sweep: one model trained on nested prefixes of the shuffled train split.

The token store's train split is stored in a seeded document shuffle, so its first n tokens
for growing n are nested subsets; the validation and test splits never change. Each size is
one run folder `runs/n<tokens>`; `runs.csv` gets one row per finished run with the columns
the report reads (`train_tokens`, `test_loss_nats`, `best_val_loss_nats`, `stop_reason`,
`params_non_embedding`, ...).

Seeds (`seeds` > 1): every size is trained `seeds` times, `runs/n<tokens>` with the sweep's
seed and `runs/n<tokens>-s<j>` with seed + j (initialisation and data order); all seeds of a
size read the same nested subset. The regime test reads them as repeated sizes.

Annealing (the schedule's `cooldown_fraction`): once a run has stopped, its cooldown
`runs/<name>-cool` continues from its tested weights with the rate decaying to zero
(`sweeps.schedule.cooled`). Its test loss is the run's `test_loss_nats`; the constant-rate
loss stays beside it as `test_loss_constant_lr_nats` (the convergence check reads that one).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from scalelab.config import Config, option
from scalelab.errors import ConfigError
from scalelab.fields import positive_int
from scalelab.io import atomic_write, read_json
from scalelab.lm.config import GPTConfig, TrainConfig
from scalelab.runs.sweep import Backend, finished_rows, opened_sweep
from scalelab.sweeps.schedule import Schedule, cooled
from scalelab.text.store import TokenStore

if TYPE_CHECKING:  # torch and pandas come with these: the CLI reads `SizeGrid` without them
    import pandas as pd

    from scalelab.sweeps.worker import LMRun

KIND = "data"
COOL = "-cool"  # the suffix of a run's cooldown folder


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

    points: int = option(7, "Sizes in the geometric grid.")
    min_tokens: int | None = option(None, "Smallest size (default: largest / 100, two decades).")
    max_tokens: int | None = option(None, "Largest size (default: the whole train split).")

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
    model: GPTConfig
    train: TrainConfig
    schedule: Schedule
    seeds: int = 1  # runs per size (seed, seed + 1, ...)

    def validate(self) -> None:
        for name, kind in (("model", GPTConfig), ("train", TrainConfig), ("schedule", Schedule)):
            if not isinstance(getattr(self, name), kind):
                raise ConfigError(
                    f"{name} must be a {kind.__name__}; use DataSweepConfig.from_dict"
                )
        positive_int(self.seeds, "seeds")
        available = TokenStore(self.data_dir, "train").n_tokens
        check_sizes(self.sizes, available, self.model.block_size)


def make_config(
    data_dir: str | Path,
    model: GPTConfig,
    train: TrainConfig,
    schedule: Schedule,
    sizes: Sequence[int],
    seeds: int = 1,
) -> DataSweepConfig:
    return DataSweepConfig(
        data_dir=str(Path(data_dir).resolve()),
        sizes=tuple(int(s) for s in sizes),
        model=model,
        train=train,
        schedule=schedule,
        seeds=seeds,
    )


def run_name(n_tokens: int, seed_offset: int = 0) -> str:
    return f"n{n_tokens:010d}" + (f"-s{seed_offset}" if seed_offset else "")


def specs(cfg: DataSweepConfig) -> list[LMRun]:
    """`cfg.seeds` runs per size, smallest size first."""
    from scalelab.sweeps.worker import lm_run

    model, base, schedule = cfg.model, cfg.train, cfg.schedule
    out = []
    for n in cfg.sizes:
        for j in range(cfg.seeds):
            run_cfg = schedule.train_config(base.replace(seed=base.seed + j), n, model.block_size)
            where = Path(cfg.data_dir)
            name = run_name(n, j)
            out.append(lm_run(name, model, run_cfg, where, train_tokens=n, policy=schedule.policy))
    return out


def cooldown_specs(sweep_dir: Path, runs: Sequence[LMRun], fraction: float) -> list[LMRun]:
    """The cooldown of every finished run of `runs` (module docstring)."""
    out = []
    for spec in runs:
        run_dir = sweep_dir / "runs" / spec.name
        if not (run_dir / "result.json").exists():
            continue
        best = int(read_json(run_dir / "result.json")["best_step"])
        cool = spec.with_train(cooled(spec.train, best, run_dir, fraction))
        out.append(dataclasses.replace(cool, name=f"{spec.name}{COOL}"))
    return out


def annealed_table(sweep_dir: Path, runs: Sequence[LMRun], cool: Sequence[LMRun]) -> pd.DataFrame:
    """runs.csv of an annealed sweep: one row per run whose cooldown has finished, its test
    loss the cooldown's, the constant-rate loss beside it, and the cooldown's steps."""
    import pandas as pd

    from scalelab.sweeps.result import CONSTANT_LR

    done = {r["run"]: r for r in finished_rows(sweep_dir, cool)}
    rows = []
    for row in finished_rows(sweep_dir, runs):
        after = done.get(row["run"] + COOL)
        if after is not None:
            rows.append(
                {
                    **row,
                    CONSTANT_LR: row["test_loss_nats"],
                    "test_loss_nats": after["test_loss_nats"],
                    "cooldown_steps": after["steps"],
                    "cooldown_cpu_time_s": after.get("train_cpu_time_s"),
                }
            )
    table = pd.DataFrame(rows)
    atomic_write(sweep_dir / "runs.csv", lambda p: table.to_csv(p, index=False))
    return table


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
    from scalelab.sweeps.worker import run_specs

    with opened_sweep(sweep_dir, KIND, cfg) as folder:
        runs = specs(cfg)
        table = run_specs(folder, runs, workers=workers, backend=backend, only=only, quiet=quiet)
        fraction = cfg.schedule.cooldown_fraction
        if fraction is None:
            return table
        cool = cooldown_specs(folder, runs, fraction)
        chosen = [c for c in cool if not only or c.name.removesuffix(COOL) in set(only)]
        if chosen:
            names = [c.name for c in chosen]
            run_specs(folder, cool, workers=workers, backend=backend, only=names, quiet=quiet)
        return annealed_table(folder, runs, cool)
