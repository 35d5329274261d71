"""TensorBoard scalars: read back with TensorBoard's own EventAccumulator, they equal the run's
metrics.jsonl (train/val loss, learning rate, tokens/s); a resumed run has each step once; a
missing tensorboard package turns logging off without an error."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from scalelab.scalars import Scalars

pytest.importorskip("tensorboard", reason="needs the extra: pip install '.[tensorboard]'")


def read_scalars(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar series of `run_dir` as TensorBoard reads it (all event files, purges)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def metrics_series(run_dir: Path, key: str) -> list[tuple[int, float]]:
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [(r["step"], r[key]) for r in rows]


def test_lm_run_scalars_equal_metrics_jsonl(tmp_path: Path, run_cli) -> None:
    from test_lm_train import _train_args
    from test_sweeps_data import make_store

    store = make_store(tmp_path / "store")
    out = tmp_path / "run"
    assert (
        run_cli(*_train_args(store, out, "--max-steps", "12", "--eval-interval", "4")).returncode
        == 0
    )
    got = read_scalars(out)
    pairs = {
        "loss/train_nats": "train_loss_nats",
        "loss/val_nats": "val_loss_nats",
        "lr": "lr",
        "throughput/tokens_per_s": "tokens_per_s",
    }
    for tag, key in pairs.items():
        want = metrics_series(out, key)
        assert [s for s, _ in got[tag]] == [4, 8, 12]
        assert [v for _, v in got[tag]] == pytest.approx([v for _, v in want], rel=1e-6), tag


def test_resumed_run_draws_each_step_once(tmp_path: Path) -> None:
    with Scalars(tmp_path) as tb:
        for step in range(1, 6):
            tb.log(step, {"loss": float(step)})
    with Scalars(tmp_path, resume_step=3) as tb:  # killed after the checkpoint at step 3
        for step in range(4, 7):
            tb.log(step, {"loss": 10.0 * step, "skipped": float("nan")})
    assert read_scalars(tmp_path) == {
        "loss": [(1, 1.0), (2, 2.0), (3, 3.0), (4, 40.0), (5, 50.0), (6, 60.0)]
    }
    with Scalars(tmp_path) as tb:  # restarted from step 0: the old events are gone
        tb.log(1, {"loss": 7.0})
    assert read_scalars(tmp_path) == {"loss": [(1, 7.0)]}


def test_without_tensorboard_logging_is_off(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # import fails
    with Scalars(tmp_path) as tb:
        tb.log(1, {"loss": 1.0})
        assert not tb.enabled
    assert list(tmp_path.iterdir()) == []


def test_a_resume_within_the_same_second_from_a_lower_pid_keeps_every_step(
    tmp_path: Path,
) -> None:
    """The old run's file is named as a writer of this second from a higher pid would name it;
    the resumed writer's file must still be read after it, or TensorBoard purges its steps."""
    import socket
    import time

    run = tmp_path / "run"
    with Scalars(run) as first:
        for step in (1, 2, 3):
            first.log(step, {"loss": float(step)})
    (old,) = run.glob("events.out.tfevents.*")
    stamp = int(time.time())
    old.rename(run / f"events.out.tfevents.{stamp}.{socket.gethostname()}.99999999.0")
    with Scalars(run, resume_step=2) as again:
        for step in (3, 4):
            again.log(step, {"loss": 10.0 * step})
    assert read_scalars(run)["loss"] == [(1, 1.0), (2, 2.0), (3, 30.0), (4, 40.0)]
