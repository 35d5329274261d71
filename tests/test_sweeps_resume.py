"""A data sweep killed mid-way (a real `scalelab sweep data` process, SIGKILL) resumes: the
finished run is not redone, the killed run continues from its checkpoint, runs.csv gets one
row per run, and the numbers equal those of an uninterrupted sweep."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import torch
from test_sweeps_data import make_store

from scalelab.sweeps import data as data_sweep

SINGLE_THREAD = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
SIZES = (1000, 2000, 4000)  # 4 epochs each: 32, 63 and 125 steps; run longest first


def sweep_args(store: Path, out: Path) -> list[str]:
    return [
        "sweep", "data", "--data", str(store), "--out", str(out), "--model", "1x32x1",
        "--block-size", "32", "--batch-size", "4", "--eval-batches", "2", "--eval-interval",
        "5", "--test-tokens", "1024", "--policy", "epochs", "--epochs", "4", "--sizes",
        ",".join(map(str, SIZES)), "--threads", "1", "--quiet",
    ]  # fmt: skip


def n_lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_killed_sweep_resumes_without_redoing_or_duplicating(tmp_path: Path, run_cli) -> None:
    store = make_store(tmp_path / "store")
    out = tmp_path / "killed"
    first, second = (out / "runs" / data_sweep.run_name(n) for n in (4000, 2000))
    proc = subprocess.Popen(
        [sys.executable, "-m", "scalelab", *sweep_args(store, out)],
        env=SINGLE_THREAD,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if (first / "result.json").exists() and n_lines(second / "metrics.jsonl") >= 2:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL, proc.stderr.read().decode()
    assert not (second / "result.json").exists(), "the second run finished before the kill"
    killed_table = pd.read_csv(out / "runs.csv")
    assert list(killed_table["train_tokens"]) == [4000]  # only the finished run, once
    finished = (first / "result.json").read_bytes(), (first / "metrics.jsonl").read_bytes()
    mtime = (first / "result.json").stat().st_mtime_ns

    again = run_cli(*sweep_args(store, out))  # the rerun: main() in this process, one thread
    assert again.returncode == 0, again.stderr
    assert (
        (first / "result.json").read_bytes(),
        (first / "metrics.jsonl").read_bytes(),
    ) == finished
    assert (first / "result.json").stat().st_mtime_ns == mtime  # not redone
    assert "resuming" in (second / "train.log").read_text()  # continued, not restarted
    table = pd.read_csv(out / "runs.csv")
    assert list(table["train_tokens"]) == list(SIZES) and table["run"].is_unique
    assert list(table["train_tokens_available"]) == list(SIZES)  # nested prefixes used
    assert list(table["steps"]) == [32, 63, 125]

    # The same sweep, never interrupted, in-process: identical losses, bit for bit.
    torch.set_num_threads(1)
    cfg = data_sweep.DataSweepConfig.from_dict(
        json.loads((out / "sweep.json").read_text())["config"]
    )
    ref = data_sweep.data_sweep(tmp_path / "ref", cfg, quiet=True)
    for col in ("test_loss_nats", "best_val_loss_nats", "best_step"):
        assert list(ref[col]) == list(table[col]), col


@pytest.fixture(autouse=True)
def restore_threads() -> object:
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)
