"""TensorBoard scalars beside a run's metrics.jsonl, so `tensorboard --logdir SWEEP` shows
every run of a sweep. Optional: without the `tensorboard` package (`pip install
'scalelab[tensorboard]'`) every call is a no-op and metrics.jsonl stays the record.

Event files follow the run folder's resume rule: a run restarted from step 0 deletes its old
event files; a run resumed after step k purges the events logged after k (TensorBoard's
`purge_step`), so the replayed steps are not drawn twice. TensorBoard reads a folder's event
files in name order, and a name starts with its writer's creation second, then the host and
pid: a resumed writer therefore starts after the second of the newest old file, else a rerun
within that second from a lower pid would be read first and its steps purged by the old ones.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from types import TracebackType
from typing import Any

EVENTS_GLOB = "events.out.tfevents.*"


class Scalars:
    """`log(step, {tag: value})` into `run_dir` (None: log nothing)."""

    def __init__(self, run_dir: str | Path | None, *, resume_step: int = 0) -> None:
        self._writer: Any = None
        if run_dir is None:
            return
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:
            return
        run_dir = Path(run_dir)
        if resume_step == 0:
            for old in run_dir.glob(EVENTS_GLOB):
                old.unlink()
        purge = resume_step + 1 if resume_step else None
        _after_newest(run_dir)
        self._writer = SummaryWriter(str(run_dir), purge_step=purge, flush_secs=10)

    @property
    def enabled(self) -> bool:
        return self._writer is not None

    def log(self, step: int, values: dict[str, float | None]) -> None:
        """Write the finite values as scalars at `step` (None and NaN are skipped)."""
        if self._writer is None:
            return
        for tag, value in values.items():
            if value is not None and math.isfinite(value):
                self._writer.add_scalar(tag, float(value), step)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def __enter__(self) -> Scalars:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _after_newest(run_dir: Path) -> None:
    """Wait until the clock is past the creation second of the newest event file in `run_dir`
    (at most about a second), so that a new file sorts after it (module docstring)."""
    stamps = [int(p.name.split(".")[3]) for p in run_dir.glob(EVENTS_GLOB)]
    while stamps and int(time.time()) <= max(stamps):
        time.sleep(0.05)
