"""A resumable sweep: one run folder per configuration, finished runs never redone.

A run is finished when its folder holds `result.json` (written last, atomically). The tidy
table `runs.csv` is rebuilt from those files after every finished run, so a sweep killed at
any moment leaves one row per finished run and none twice. Runs can go to worker processes.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from scalelab.config import check_same_config
from scalelab.errors import ConfigError
from scalelab.io import atomic_write, atomic_write_json, provenance, read_json
from scalelab.progress import progress

Worker = Callable[[dict[str, Any], Path], dict[str, Any]]


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep: a folder name and the JSON-able parameters given to the worker."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)


def open_sweep(sweep_dir: str | Path, kind: str, config: dict[str, Any]) -> Path:
    """Create the sweep folder, or check that an existing one was made with this config."""
    sweep_dir = Path(sweep_dir)
    meta = sweep_dir / "sweep.json"
    if meta.exists():
        saved = read_json(meta)
        if saved.get("kind") != kind:
            raise ConfigError(
                f"{sweep_dir} holds a {saved.get('kind')!r} sweep, not {kind!r}; use a new --out"
            )
        check_same_config(saved["config"], config, sweep_dir)
    else:
        atomic_write_json(meta, {"kind": kind, "config": config, "provenance": provenance()})
    return sweep_dir


def _run_one(worker: Worker, spec: RunSpec, run_dir: Path, threads: int) -> dict[str, Any]:
    if threads:
        import torch

        torch.set_num_threads(threads)
    run_dir.mkdir(parents=True, exist_ok=True)
    row = worker(dict(spec.params), run_dir)
    result = run_dir / "result.json"
    if not result.exists():
        atomic_write_json(result, row)
    return row


def finished_rows(sweep_dir: Path, specs: Sequence[RunSpec]) -> list[dict[str, Any]]:
    """One row per finished run, in spec order: the run's scalar params, then its result."""
    rows = []
    for spec in specs:
        result = sweep_dir / "runs" / spec.name / "result.json"
        if result.exists():
            scalars = {k: v for k, v in spec.params.items() if isinstance(v, str | int | float)}
            flat = {k: v for k, v in read_json(result).items() if not isinstance(v, dict | list)}
            rows.append({"run": spec.name, **scalars, **flat})
    return rows


def write_table(sweep_dir: Path, specs: Sequence[RunSpec]) -> pd.DataFrame:
    table = pd.DataFrame(finished_rows(sweep_dir, specs))
    atomic_write(sweep_dir / "runs.csv", lambda p: table.to_csv(p, index=False))
    return table


def run_sweep(
    sweep_dir: str | Path,
    specs: Sequence[RunSpec],
    worker: Worker,
    *,
    workers: int = 1,
    quiet: bool = False,
    description: str = "sweep",
) -> pd.DataFrame:
    """Run every unfinished spec (in `workers` processes when > 1) and return the table.

    `worker(params, run_dir)` must be a module-level function (it is pickled to a spawned
    process); it returns a flat dict of results and may write more files into `run_dir`.
    Call `open_sweep` first.
    """
    sweep_dir = Path(sweep_dir)
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ConfigError("sweep run names must be unique; two specs share a name")
    todo = [s for s in specs if not (sweep_dir / "runs" / s.name / "result.json").exists()]
    with progress(description, total=len(specs), quiet=quiet) as advance:
        advance(len(specs) - len(todo), info="resumed" if len(todo) < len(specs) else "")
        if workers <= 1:
            for spec in todo:
                _run_one(worker, spec, sweep_dir / "runs" / spec.name, 0)
                write_table(sweep_dir, specs)
                advance(1, info=spec.name)
        else:
            threads = max(1, (os.cpu_count() or 1) // workers)
            ctx = mp.get_context("spawn")
            with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
                futures = {
                    pool.submit(_run_one, worker, s, sweep_dir / "runs" / s.name, threads): s
                    for s in todo
                }
                for fut in as_completed(futures):
                    fut.result()
                    write_table(sweep_dir, specs)
                    advance(1, info=futures[fut].name)
    return write_table(sweep_dir, specs)
