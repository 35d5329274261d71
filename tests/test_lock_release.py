"""Library calls that lock a folder release the lock when they return or raise: after the
call, another process (a real subprocess, as a second `scalelab` command would be) can take
the lock on the same folder. While a call holds it, the other process is refused."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_sweeps_data import make_store

from scalelab.induction.compare_depth import DepthConfig, compare_depth
from scalelab.induction.config import InductionConfig, InductionTrainConfig
from scalelab.induction.separation import SeparationConfig, run_separation
from scalelab.induction.train import train_induction
from scalelab.lm.config import GPTConfig, TrainConfig
from scalelab.runs import outdir
from scalelab.runs.sweep import RunSpec, opened_sweep, run_sweep
from scalelab.sweeps import data as data_sweep
from scalelab.sweeps.schedule import Schedule

TAKE = "import sys; from scalelab.runs import outdir; outdir.lock(sys.argv[1])"


def other_process_can_lock(folder: Path) -> bool:
    """Whether a fresh Python process can take `folder`'s lock (it exits, releasing it)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run(
        [sys.executable, "-c", TAKE, str(folder)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0 or "in use by another scalelab process" in done.stderr
    return done.returncode == 0


def _ok(params: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    return {"value": params["x"] * 2}


def _fails(params: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    raise RuntimeError("worker failed")


def test_the_check_sees_a_held_lock(tmp_path: Path) -> None:
    """The probe itself can fail: a lock this process holds refuses the subprocess."""
    with outdir.locked(tmp_path / "held"):
        assert not other_process_can_lock(tmp_path / "held")
    assert other_process_can_lock(tmp_path / "held")


def test_opened_sweep_releases_on_return_and_on_error(tmp_path: Path) -> None:
    with opened_sweep(tmp_path / "ok", "toy", {"a": 1}) as folder:
        run_sweep(folder, [RunSpec("r0", {"x": 2})], _ok, quiet=True)
        assert not other_process_can_lock(folder)
    assert other_process_can_lock(tmp_path / "ok")
    with (
        pytest.raises(RuntimeError, match="worker failed"),
        opened_sweep(tmp_path / "bad", "toy", {"a": 1}) as folder,
    ):
        run_sweep(folder, [RunSpec("r0", {"x": 2})], _fails, quiet=True)
    assert other_process_can_lock(tmp_path / "bad")


def test_data_sweep_releases_its_folder(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    model = GPTConfig(vocab_size=384, block_size=32, n_layer=1, n_head=1, n_embd=16)
    train = TrainConfig(batch_size=4, eval_interval=2, eval_batches=1, test_tokens=256)
    sched = Schedule(policy="tokens", token_budget=4 * 32 * 2)
    cfg = data_sweep.make_config(store, model, train, sched, [1000, 2000])
    table = data_sweep.data_sweep(tmp_path / "sweep", cfg, quiet=True)
    assert list(table["steps"]) == [2, 2]
    assert other_process_can_lock(tmp_path / "sweep")
    # The depth comparison locks its folder the same way (and its two training runs).
    depth = DepthConfig(
        block_size=16, n_embd=8, n_head=2, max_steps=2, eval_interval=2, batch_size=2,
        n_sequences=1, icl_windows=1,
    )  # fmt: skip
    compare_depth(store, tmp_path / "depth", depth, quiet=True)
    for folder in ("depth", "depth/runs/L1", "depth/runs/L2"):
        assert other_process_can_lock(tmp_path / folder), folder


def test_induction_runs_release_their_folders(tmp_path: Path) -> None:
    mcfg = InductionConfig(alphabet_size=3, max_len=9, n_layer=1, n_head=1, n_embd=4)
    tcfg = InductionTrainConfig(n=9, max_steps=2, eval_interval=2, eval_samples=8)
    train_induction(mcfg, tcfg, tmp_path / "run")
    assert other_process_can_lock(tmp_path / "run")
    with pytest.raises(Exception, match="max_len"):  # refused after the folder check
        train_induction(mcfg, tcfg.replace(n=17), tmp_path / "run")
    assert other_process_can_lock(tmp_path / "run")
    tiny = SeparationConfig(steps=2, eval_instances=8).quick()
    rows = run_separation(tiny.replace(two_layer_ns=(17,)), tmp_path / "sep")
    assert {r["kind"] for r in rows} == {"construction", "trained"}
    assert other_process_can_lock(tmp_path / "sep")
