"""What data and model sweeps share: the training-length policy and the run worker.

A sweep run is an ordinary `scalelab train` run folder (config.json, metrics.jsonl, weights,
state.pt, result.json) under `SWEEP/runs/<name>/`, made by `scalelab.lm.train.train`, so
it resumes exactly after a kill and can be run by any scheduler.

Training-length policies (runs capped before convergence flatten the slope, see
docs/background.md):
- `converge` (default): early stopping on validation loss (`patience` validations without
  improvement; the best weights are tested) inside a step budget that grows with the data:
  `max_epochs` passes over the run's tokens, clamped to [`min_steps`, `step_cap`]. A run
  that ends by its budget, not by patience, did not converge; the table says which. With
  `decay_epochs` set, the learning rate decays over that many passes (clamped to
  [`min_steps`, budget]) and stays at its floor afterwards, so the schedule does not depend
  on the budget: a run given twice the budget replays the same steps (`convergence.py`);
  the budget is then rounded up to whole validation intervals.
- `epochs`: a fixed number of passes over each run's own tokens, no early stopping.
- `tokens`: the same number of training tokens for every run, no early stopping.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from scalelab.config import Config
from scalelab.errors import ConfigError
from scalelab.lm.config import GPTConfig, TrainConfig
from scalelab.lm.train import train
from scalelab.progress import progress
from scalelab.runner import Backend, RunSpec, run_sweep, write_table
from scalelab.validate import choice, positive_int

POLICIES = ("converge", "epochs", "tokens")
LOG = "train.log"
POLL_S = 2.0  # seconds between progress polls of the run folders


@dataclasses.dataclass(frozen=True)
class Schedule(Config):
    """How long each run of a sweep trains (see the module docstring)."""

    policy: str = "converge"
    patience: int = 4  # converge: validations without improvement before stopping
    max_epochs: float = 40.0  # converge: step budget in passes over the run's tokens
    min_steps: int = 200  # converge: step budget floor (tiny data sets)
    step_cap: int = 20_000  # converge: step budget ceiling (a run hitting it is flagged)
    decay_epochs: float | None = None  # converge: LR decay length in passes (None: budget)
    epochs: float = 1.0  # epochs: passes over each run's tokens
    token_budget: int | None = None  # tokens: training tokens per run

    def validate(self) -> None:
        choice(self.policy, "policy", POLICIES)
        for name in ("patience", "min_steps", "step_cap"):
            positive_int(getattr(self, name), name)
        if self.min_steps > self.step_cap:
            raise ConfigError(f"min_steps {self.min_steps} exceeds step_cap {self.step_cap}")
        for name in ("max_epochs", "epochs", "decay_epochs"):
            value = getattr(self, name)
            if value is None and name == "decay_epochs":
                continue
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ConfigError(f"{name} must be a positive number, got {value!r}")
        if self.policy == "tokens" and self.token_budget is None:
            raise ConfigError("policy 'tokens' needs a token budget: pass --token-budget N")
        positive_int(self.token_budget, "token_budget", optional=True)

    def train_config(self, base: TrainConfig, n_tokens: int, block_size: int) -> TrainConfig:
        """`base` with the length fields this policy sets for a run on `n_tokens` tokens."""
        per_step = base.windows_per_step * block_size
        decay: int | None = None
        if self.policy == "converge":
            steps = math.ceil(self.max_epochs * n_tokens / per_step)
            steps = min(max(steps, self.min_steps), self.step_cap)
            patience: int | None = self.patience
            if self.decay_epochs is not None:
                # Whole validation intervals: the budget's last checkpoint is then a regular
                # one, so a longer budget can continue from it (sweeps/convergence.py).
                steps = -(-steps // base.eval_interval) * base.eval_interval
                decay = math.ceil(self.decay_epochs * n_tokens / per_step)
                decay = min(max(decay, self.min_steps), steps)
        elif self.policy == "epochs":
            steps, patience = max(1, math.ceil(self.epochs * n_tokens / per_step)), None
        else:
            steps, patience = max(1, math.ceil(self.token_budget / per_step)), None
        return base.replace(
            train_tokens=n_tokens,
            max_steps=steps,
            max_tokens=None,
            patience=patience,
            decay_steps=decay,
            warmup_steps=min(base.warmup_steps, max((decay or steps) // 10, 1)),
        )


def run_params(
    model: GPTConfig, train_cfg: TrainConfig, data_dir: Path, **scalars: Any
) -> dict[str, Any]:
    """A spec's params: the full configs (dicts, left out of runs.csv) and the scalars that
    become runs.csv columns beside the run's result."""
    return {
        "model": model.to_dict(),
        "train": train_cfg.to_dict(),
        "data_dir": str(data_dir),
        "max_steps": train_cfg.max_steps,
        "patience": train_cfg.patience if train_cfg.patience is not None else 0,
        **scalars,
    }


def train_worker(params: dict[str, Any], run_dir: Path, *, quiet: bool = True) -> dict[str, Any]:
    """Train one run (or resume it, or read its finished result). Quiet: the trainer's log
    lines go to `run_dir/train.log` (parallel workers would interleave them); otherwise they
    go to stderr with its progress bar, as `scalelab train` shows them."""
    args = (
        GPTConfig.from_dict(params["model"]),
        TrainConfig.from_dict(params["train"]),
        params["data_dir"],
        run_dir,
    )
    if not quiet:
        return train(*args, quiet=False)
    run_dir.mkdir(parents=True, exist_ok=True)
    with open(run_dir / LOG, "a", encoding="utf-8") as log, contextlib.redirect_stderr(log):
        return train(*args, quiet=True)


def run_specs(
    sweep_dir: Path,
    all_specs: list[RunSpec],
    *,
    workers: int,
    only: Sequence[str] | None,
    quiet: bool,
    backend: Backend | None = None,
) -> pd.DataFrame:
    """Run `only` (or all) of `all_specs` and rebuild runs.csv over all of them, with a
    progress bar in optimizer steps over all runs (runs take minutes each)."""
    chosen = all_specs
    if only:
        names = {s.name for s in all_specs}
        unknown = sorted(set(only) - names)
        if unknown:
            raise ConfigError(f"no run named {unknown} in this sweep; runs are {sorted(names)}")
        chosen = [s for s in all_specs if s.name in set(only)]
    # Longest runs first: with parallel workers the sweep then ends when the total work
    # allows, not when the biggest run, started last, does.
    chosen = sorted(chosen, key=lambda s: -planned_flops(s.params))
    with _step_progress(sweep_dir, chosen, quiet):
        run_sweep(sweep_dir, chosen, train_worker, workers=workers, backend=backend, quiet=True)
    return write_table(sweep_dir, all_specs)


def planned_flops(params: dict[str, Any]) -> float:
    """Rough training cost of a run's step budget: 6 · (12 L d²) FLOPs per token."""
    m, t = params["model"], params["train"]
    tokens = params["max_steps"] * t["batch_size"] * t["grad_accum"] * m["block_size"]
    return 6.0 * 12 * m["n_layer"] * m["n_embd"] ** 2 * tokens


def steps_done(run_dir: Path, budget: int) -> int:
    """Steps a run has checkpointed (its whole budget once finished: early stopping
    ends it)."""
    if (run_dir / "result.json").exists():
        return budget
    try:
        lines = (run_dir / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
        return int(json.loads(lines[-1])["step"]) if lines else 0
    except (OSError, ValueError, KeyError, TypeError):
        return 0  # not started, or a line being written: counted at the next poll


@contextlib.contextmanager
def _step_progress(sweep_dir: Path, specs: Sequence[RunSpec], quiet: bool) -> Iterator[None]:
    """A bar of validated steps over the runs' step budgets, polled from the run folders
    (workers may be other processes)."""
    budgets = {sweep_dir / "runs" / s.name: int(s.params["max_steps"]) for s in specs}
    with progress("sweep steps", sum(budgets.values()), quiet=quiet) as advance:
        stop = threading.Event()
        shown = [0]

        def update() -> None:
            done = sum(steps_done(d, b) for d, b in budgets.items())
            finished = sum((d / "result.json").exists() for d in budgets)
            advance(done - shown[0], info=f"{finished}/{len(budgets)} runs")
            shown[0] = done

        def poll() -> None:
            while not stop.wait(POLL_S):
                update()

        update()
        thread = threading.Thread(target=poll, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            update()
