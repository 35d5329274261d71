"""A resumable sweep: one run folder per configuration, finished runs never redone.

A run is finished when its folder holds `result.json` (written last, atomically). The tidy
table `runs.csv` is rebuilt from those files after every finished run, so a sweep killed at
any moment leaves one row per finished run and none twice. Runs go to this process, to local
worker processes, or to a Ray cluster (`Backend(kind="ray")`, one Ray task per run; see
`scalelab.runs.ray_backend`): the folder, the resume rule and the table are the same for all three.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scalelab.config import Config
from scalelab.errors import ConfigError, ScalelabError
from scalelab.io import atomic_write, atomic_write_json, provenance, read_json
from scalelab.progress import progress
from scalelab.runs.migrate import renamed
from scalelab.runs.outdir import Saved, claim, claimed
from scalelab.runs.ray_backend import run_on_ray

if TYPE_CHECKING:  # pandas only once a table is written: the CLI reads `WORKERS` without it
    import pandas as pd

Worker = Callable[[Any, Path], dict[str, Any]]
BACKENDS = ("local", "ray")


@dataclass(frozen=True)
class Backend(Config):
    """Where a sweep's runs execute: `local` (this process, or `workers` processes) or `ray`
    (one task per run on the cluster at `address`, or on a local Ray instance started for the
    sweep when None), each task asking for `num_cpus` CPUs (its torch threads) and
    `num_gpus` GPUs."""

    kind: str = "local"
    address: str | None = None
    num_cpus: int = 1
    num_gpus: float = 0.0

    def validate(self) -> None:
        if self.kind not in BACKENDS:
            raise ConfigError(f"backend {self.kind!r} is not one of {BACKENDS}; pick one")
        if not isinstance(self.num_cpus, int) or self.num_cpus < 1:
            raise ConfigError(f"CPUs per run must be an integer >= 1, got {self.num_cpus!r}")
        if not self.num_gpus >= 0:
            raise ConfigError(f"GPUs per run must be >= 0, got {self.num_gpus!r}")
        if self.kind == "local" and (self.address is not None or self.num_gpus):
            raise ConfigError("--ray-address and --run-gpus need --backend ray; add it")


BROKEN_POOL = (
    "a worker process of the sweep ended abruptly. Most likely a script started the sweep with "
    'workers > 1 without `if __name__ == "__main__":` around its code (workers are spawned and '
    "import the main module: docs/python.md); else it was killed (memory?): rerun to resume"
)
# Local processes for the runs of validate, the demo and validate-many (one torch thread each):
# two, for the 2-core machine they were sized on (docs/sweeps.md). One default, one place.
WORKERS = 2


@dataclass(frozen=True)
class Pool:
    """Where the runs of a command go: `workers` local processes, or `backend` when given."""

    workers: int = WORKERS
    backend: Backend | None = None


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep: a folder name and its JSON-able parameters (the scalar ones become
    runs.csv columns). `work()` is what the worker is given: a copy of the parameters here; a
    subclass that carries config objects hands over itself (`sweeps.worker.LMRun`)."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)

    def work(self) -> Any:
        return dict(self.params)


def open_sweep(sweep_dir: str | Path, kind: str, config: Saved) -> Path:
    """Create the sweep folder, or check that an existing one was made with this config;
    either way lock it for this process (`scalelab.runs.outdir`) until `outdir.release`.
    A library call uses `opened_sweep`, which releases the lock when the call ends."""
    extra = {"provenance": provenance()}
    return claim(sweep_dir, "sweep.json", config, kind=kind, extra=extra)


@contextlib.contextmanager
def opened_sweep(sweep_dir: str | Path, kind: str, config: Saved) -> Iterator[Path]:
    """`open_sweep` for a `with` block: the lock is released when the block ends, normally
    or by an exception (unless this process held it before), so a later process, or a
    notebook's next call, can resume the folder."""
    extra = {"provenance": provenance()}
    with claimed(sweep_dir, "sweep.json", config, kind=kind, extra=extra) as path:
        yield path


def run_one(worker: Worker, spec: RunSpec, run_dir: Path, threads: int) -> dict[str, Any]:
    """Run one spec in this process (with `threads` torch threads when > 0); result.json last."""
    if threads:
        import torch

        torch.set_num_threads(threads)
    run_dir.mkdir(parents=True, exist_ok=True)
    row = worker(spec.work(), run_dir)
    result = run_dir / "result.json"
    if not result.exists():
        atomic_write_json(result, row)
    return row


def die_with_parent(parent: int, poll_s: float = 0.5) -> None:
    """Pool-worker initializer: end this worker as soon as `parent` is gone.

    A worker whose sweep process was killed (SIGKILL, or a SIGTERM it did not pass on) would
    otherwise keep training orphaned, holding a run folder's lock against the rerun. SIGKILL
    mid-run is safe: every file is written atomically and the run resumes from its last
    checkpoint."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="die-with-parent", daemon=True).start()


def stop_pool(pool: ProcessPoolExecutor) -> None:
    """Ctrl-C: end the workers now instead of letting the pool start its queued runs (leaving
    the `with` block would wait for them). A run stopped mid-way resumes from its checkpoint."""
    pool.shutdown(wait=False, cancel_futures=True)
    processes = getattr(pool, "_processes", None) or {}  # private, but no public way in 3.11
    for process in list(processes.values()):
        process.kill()


def finished_rows(sweep_dir: Path, specs: Sequence[RunSpec]) -> list[dict[str, Any]]:
    """One row per finished run, in spec order: the run's scalar params, then its result."""
    rows = []
    for spec in specs:
        result = sweep_dir / "runs" / spec.name / "result.json"
        if result.exists():
            scalars = {k: v for k, v in spec.params.items() if isinstance(v, str | int | float)}
            saved = renamed(read_json(result))  # a row of any version, in this one's names
            flat = {k: v for k, v in saved.items() if not isinstance(v, dict | list)}
            rows.append({"run": spec.name, **scalars, **flat})
    return rows


def write_table(sweep_dir: Path, specs: Sequence[RunSpec]) -> pd.DataFrame:
    import pandas as pd

    table = pd.DataFrame(finished_rows(sweep_dir, specs))
    atomic_write(sweep_dir / "runs.csv", lambda p: table.to_csv(p, index=False))
    return table


def run_sweep(
    sweep_dir: str | Path,
    specs: Sequence[RunSpec],
    worker: Worker,
    *,
    workers: int = 1,
    backend: Backend | None = None,
    quiet: bool = False,
    description: str = "sweep",
) -> pd.DataFrame:
    """Run every unfinished spec (in `workers` processes when > 1, or as Ray tasks with a
    ray `backend`) and return the table.

    `worker(params, run_dir)` must be a module-level function (it is pickled to a spawned
    process or a Ray worker); it returns a flat dict of results and may write more files into
    `run_dir`. Call `open_sweep` first.
    """
    sweep_dir = Path(sweep_dir)
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ConfigError("sweep run names must be unique; two specs share a name")
    todo = [s for s in specs if not (sweep_dir / "runs" / s.name / "result.json").exists()]
    with progress(description, total=len(specs), quiet=quiet) as advance:
        advance(len(specs) - len(todo), info="resumed" if len(todo) < len(specs) else "")
        if backend is not None and backend.kind == "ray":
            root = sweep_dir.resolve()
            jobs = [(s.name, (worker, s, root / "runs" / s.name, backend.num_cpus)) for s in todo]
            where = {"address": backend.address, "num_cpus": backend.num_cpus}
            for name in run_on_ray(root, jobs, run_one, num_gpus=backend.num_gpus, **where):
                write_table(sweep_dir, specs)
                advance(1, info=name)
        elif workers <= 1:
            for spec in todo:
                run_one(worker, spec, sweep_dir / "runs" / spec.name, 0)
                write_table(sweep_dir, specs)
                advance(1, info=spec.name)
        else:
            threads = max(1, (os.cpu_count() or 1) // workers)
            ctx = mp.get_context("spawn")
            with ProcessPoolExecutor(
                max_workers=workers,
                mp_context=ctx,
                initializer=die_with_parent,
                initargs=(os.getpid(),),
            ) as pool:
                futures = {
                    pool.submit(run_one, worker, s, sweep_dir / "runs" / s.name, threads): s
                    for s in todo
                }
                try:
                    for fut in as_completed(futures):
                        try:
                            fut.result()
                        except BrokenProcessPool:
                            raise ScalelabError(BROKEN_POOL) from None
                        write_table(sweep_dir, specs)
                        advance(1, info=futures[fut].name)
                except KeyboardInterrupt:
                    stop_pool(pool)
                    raise
    return write_table(sweep_dir, specs)
