"""The run worker data and model sweeps share, and the sweep-wide step progress bar.

A sweep run is an ordinary `scalelab train` run folder (config.json, metrics.jsonl, weights,
state.pt, result.json) under `SWEEP/runs/<name>/`, made by `scalelab.lm.train.train`, so
it resumes exactly after a kill and can be run by any scheduler. How long each run trains is
`scalelab.sweeps.schedule`.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from scalelab.errors import ConfigError
from scalelab.lm.config import GPTConfig, TrainConfig
from scalelab.lm.train import train
from scalelab.progress import progress
from scalelab.runs.sweep import Backend, RunSpec, run_sweep, write_table

LOG = "train.log"
# Sweep runs validate every 50 steps, twice as often as a single run by default
# (TrainConfig.eval_interval): a converge budget can be as small as Schedule.min_steps, and
# patience counts validations. The sweep command's --eval-interval default.
EVAL_INTERVAL = 50
POLL_S = 2.0  # seconds between progress polls of the run folders


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
        "patience": train_cfg.stop.patience if train_cfg.stop.patience is not None else 0,
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
        return train(*args, quiet=True, log=log)


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
