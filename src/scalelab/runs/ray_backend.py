"""Sweep runs as Ray tasks: one task per run, each with its CPU and GPU request.

`scalelab.runs.sweep` hands each run over as a call of its own `run_one`, so a run folder, its
resume and its `result.json` are identical whichever backend made them. The driver only
collects results and rewrites `runs.csv`; killing it leaves finished runs finished and
unfinished folders to be resumed by the next invocation (local or Ray).

Run folders must live on a filesystem every Ray node mounts at the same path. Each task
checks this before it starts: the driver writes a fresh token into the sweep folder and a
task that cannot read the same token there raises a `ConfigError` naming the fix.

Ray is an optional dependency (`pip install 'scalelab[ray]'`), imported only here and only
when a sweep uses it.
"""

from __future__ import annotations

import logging
import socket
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from scalelab.errors import ConfigError, ScalelabError
from scalelab.io import atomic_write_text

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


def _task(call: Callable[..., Any], args: tuple, name: str, sweep_dir: str, token: str) -> str:
    check_visible(Path(sweep_dir), token)
    call(*args)
    return name


def run_on_ray(
    sweep_dir: Path,
    jobs: Sequence[tuple[str, tuple]],
    call: Callable[..., Any],
    *,
    address: str | None,
    num_cpus: int,
    num_gpus: float,
) -> Iterator[str]:
    """Run `call(*args)` for each `(name, args)` of `jobs` as one Ray task asking for
    `num_cpus` CPUs and `num_gpus` GPUs, and yield each name as its task finishes. On a
    failed task, cancel the others (their run folders resume next time) and raise its error.
    `call` must be a module-level function (Ray pickles it by reference)."""
    ray = _ray()
    sweep_dir = sweep_dir.resolve()
    token = uuid.uuid4().hex
    atomic_write_text(sweep_dir / MARKER, token)
    started = connect(address)
    try:
        remote = ray.remote(_task).options(num_cpus=num_cpus, num_gpus=num_gpus, max_retries=1)
        pending = [remote.remote(call, args, name, str(sweep_dir), token) for name, args in jobs]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            try:
                name = ray.get(done[0])
            except ray.exceptions.RayError as err:  # a failed run, or a lost worker or node
                for ref in pending:
                    ray.cancel(ref, force=True)
                cause = getattr(err, "cause", None)
                if isinstance(cause, ScalelabError):
                    raise cause from None
                raise
            yield name
    finally:
        if started:
            ray.shutdown()
