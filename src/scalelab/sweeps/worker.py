"""The run worker data and model sweeps share, and the sweep-wide step progress bar.

A sweep run is an ordinary `scalelab train` run folder (config.json, metrics.jsonl, weights,
state.pt, result.json) under `SWEEP/runs/<name>/`, made by `scalelab.lm.train.train`, so
it resumes exactly after a kill and can be run by any scheduler. How long each run trains is
`scalelab.sweeps.schedule`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from scalelab.errors import ConfigError
from scalelab.lm.config import GPTConfig, TrainConfig
from scalelab.lm.result import TrainResult
from scalelab.lm.train import train
from scalelab.progress import progress
from scalelab.runs.outdir import LOCK
from scalelab.runs.sweep import Backend, RunSpec, run_sweep, write_table

LOG = "train.log"
POLL_S = 2.0  # seconds between progress polls of the run folders


@dataclasses.dataclass(frozen=True, kw_only=True)
class LMRun(RunSpec):
    """One language-model run of a sweep: its model and training configs as objects (the
    worker trains them; they become dicts only in the run folder's config.json) and
    `params`, the scalars that become its runs.csv columns (`lm_run`)."""

    model: GPTConfig
    train: TrainConfig
    data_dir: Path

    def work(self) -> LMRun:
        return self

    def with_train(self, train: TrainConfig) -> LMRun:
        """The same run trained by `train` (its `max_steps` column follows)."""
        params = {**self.params, "max_steps": train.max_steps}
        return dataclasses.replace(self, train=train, params=params)

    @property
    def tokens_per_step(self) -> int:
        return self.train.windows_per_step * self.model.block_size


def lm_run(
    name: str, model: GPTConfig, train_cfg: TrainConfig, data_dir: Path, **scalars: Any
) -> LMRun:
    """A run with its runs.csv columns: the store, the step budget, the patience (0: none)
    and `scalars`, beside the run's result."""
    patience = train_cfg.stop.patience
    params = {
        "data_dir": str(data_dir),
        "max_steps": train_cfg.max_steps,
        "patience": patience if patience is not None else 0,
        **scalars,
    }
    return LMRun(name, params, model=model, train=train_cfg, data_dir=Path(data_dir))


def train_worker(run: LMRun, run_dir: Path, *, quiet: bool = True) -> TrainResult:
    """Train one run (or resume it, or read its finished result). Quiet: the trainer's log
    lines go to `run_dir/train.log` (parallel workers would interleave them); otherwise they
    go to stderr with its progress bar, as `scalelab train` shows them."""
    args = (run.model, run.train, str(run.data_dir), run_dir)
    if not quiet:
        return train(*args, quiet=False)
    run_dir.mkdir(parents=True, exist_ok=True)
    with open(run_dir / LOG, "a", encoding="utf-8") as log, contextlib.redirect_stderr(log):
        return train(*args, quiet=True, log=log)


def run_specs(
    sweep_dir: Path,
    all_specs: list[LMRun],
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
    chosen = sorted(chosen, key=lambda s: -planned_flops(s))
    with _step_progress(sweep_dir, chosen, quiet):
        run_sweep(sweep_dir, chosen, train_worker, workers=workers, backend=backend, quiet=True)
    return write_table(sweep_dir, all_specs)


def planned_flops(run: LMRun) -> float:
    """Rough training cost of a run's step budget: 6 · (12 L d²) FLOPs per token."""
    tokens = run.train.max_steps * run.tokens_per_step
    return 6.0 * 12 * run.model.n_layer * run.model.n_embd**2 * tokens


def reuse_runs(
    src_dir: Path, src_specs: Sequence[LMRun], dst_dir: Path, specs: Sequence[LMRun]
) -> int:
    """Copy each finished run of `src_specs` (under the sweep folder `src_dir`) into the sweep
    folder `dst_dir` as every run of `specs` with exactly the same configuration (shape, data,
    budget): training it again would repeat the same steps. Returns the runs matched."""
    matched = 0
    for src_spec in src_specs:
        src = src_dir / "runs" / src_spec.name
        if not (src / "result.json").exists():
            continue
        for spec in specs:
            if (spec.model, spec.train) != (src_spec.model, src_spec.train):
                continue
            matched += 1
            dst = dst_dir / "runs" / spec.name
            if not dst.exists():
                tmp = dst.with_name(f".{dst.name}.tmp")
                shutil.rmtree(tmp, ignore_errors=True)
                shutil.copytree(src, tmp, ignore=shutil.ignore_patterns(LOCK))
                tmp.rename(dst)
    return matched


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
