"""Sweep runs as Ray tasks: one task per run, each with its CPU and GPU request.

A task runs the same `run_one` as the local backend, so a run folder, its resume and its
`result.json` are identical whichever backend made them. The driver only collects results
and rewrites `runs.csv`; killing it leaves finished runs finished and unfinished folders to
be resumed by the next invocation (local or Ray).

Run folders must live on a filesystem every Ray node mounts at the same path. Each task
checks this before it starts: the driver writes a fresh token into the sweep folder and a
task that cannot read the same token there raises a `ConfigError` naming the fix.

Ray is an optional dependency (`pip install 'scalelab[ray]'`), imported only here.
"""

from __future__ import annotations

import logging
import socket
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from scalelab.errors import ConfigError, ScalelabError
from scalelab.io import atomic_write_text
from scalelab.runner import Backend, RunSpec, Worker, run_one

MARKER = ".ray-sweep-token"


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "--backend ray needs Ray: pip install 'scalelab[ray]' (or use --backend local)"
        ) from None
    return ray


def connect(address: str | None) -> bool:
    """Join the Ray cluster at `address`, or start a local instance when None; reuse a
    connection this process already has. Returns True when this call made the connection
    (the caller then shuts it down)."""
    ray = _ray()
    if ray.is_initialized():
        return False
    try:
        ray.init(
            address=address,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.WARNING,
        )
    except ConnectionError as err:
        raise ConfigError(
            f"cannot join the Ray cluster at {address!r} ({err}); start it with "
            "`ray start --head` and pass its address (HOST:6379) to --ray-address"
        ) from None
    return True


def check_visible(sweep_dir: Path, token: str) -> None:
    """Raise `ConfigError` unless this process sees the driver's sweep folder (same token)."""
    marker = sweep_dir / MARKER
    try:
        seen = marker.read_text(encoding="utf-8")
    except OSError:
        seen = None
    if seen != token:
        what = "is missing" if seen is None else "holds another sweep's token"
        raise ConfigError(
            f"Ray worker on {socket.gethostname()} cannot see the sweep folder {sweep_dir} "
            f"({MARKER} {what}): put --out on a filesystem every Ray node mounts at the same "
            "path (NFS or similar; an absolute path), or use --backend local"
        )


def _task(worker: Worker, spec: RunSpec, run_dir: str, token: str, threads: int) -> str:
    run_path = Path(run_dir)
    check_visible(run_path.parent.parent, token)
    run_one(worker, spec, run_path, threads)
    return spec.name


def run_on_ray(
    sweep_dir: Path, specs: Sequence[RunSpec], worker: Worker, backend: Backend
) -> Iterator[str]:
    """Submit one task per spec and yield each run's name as it finishes. On a failed run,
    cancel the others (their folders resume next time) and raise its error."""
    ray = _ray()
    sweep_dir = sweep_dir.resolve()
    token = uuid.uuid4().hex
    atomic_write_text(sweep_dir / MARKER, token)
    started = connect(backend.address)
    try:
        remote = ray.remote(_task).options(
            num_cpus=backend.num_cpus, num_gpus=backend.num_gpus, max_retries=1
        )
        pending = [
            remote.remote(worker, s, str(sweep_dir / "runs" / s.name), token, backend.num_cpus)
            for s in specs
        ]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            try:
                yield ray.get(done[0])
            except ray.exceptions.RayTaskError as err:
                for ref in pending:
                    ray.cancel(ref, force=True)
                if isinstance(err.cause, ScalelabError):
                    raise err.cause from None
                raise
    finally:
        if started:
            ray.shutdown()
