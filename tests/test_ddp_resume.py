"""Data-parallel training out of the box: `torchrun --nproc_per_node=2 -m scalelab train` with
default options (grad_accum 1) works, and a DDP run with dropout killed mid-way resumes to the
same weights, bit for bit, as an uninterrupted one: every rank gets back its own RNG state."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from test_sweeps_data import make_store

SINGLE_THREAD = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_store(tmp_path_factory.mktemp("ddp") / "store")


def _torchrun(store: Path, out: Path) -> subprocess.Popen:
    args = [
        "train", "--data", store, "--preset", "tiny", "--out", out, "--block-size", "32",
        "--batch-size", "4", "--eval-batches", "2", "--test-tokens", "1024", "--warmup-steps",
        "2", "--max-steps", "16", "--eval-interval", "4", "--dropout", "0.2", "--dtype",
        "float32", "--threads", "1", "--device", "cpu", "--quiet",
    ]  # fmt: skip
    return subprocess.Popen(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
         "-m", "scalelab", *map(str, args)],
        env=SINGLE_THREAD, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip


def test_ddp_defaults_and_dropout_resume_bit_exact(store: Path, tmp_path: Path) -> None:
    ref_dir, run_dir = tmp_path / "ref", tmp_path / "killed"
    ref = _torchrun(store, ref_dir)
    proc = _torchrun(store, run_dir)
    deadline = time.monotonic() + 240
    state = run_dir / "state.pt"
    while time.monotonic() < deadline and proc.poll() is None:
        metrics = run_dir / "metrics.jsonl"
        if metrics.exists() and len(metrics.read_text().splitlines()) >= 2:
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert state.exists() and not (run_dir / "result.json").exists(), "killed too late"
    saved = torch.load(state, weights_only=True)
    ranks = saved["torch_rng_ranks"]
    assert len(ranks) == 2 and not torch.equal(ranks[0], ranks[1])  # each rank's own state
    again = _torchrun(store, run_dir)
    assert again.wait(timeout=300) == 0, again.stderr.read().decode()[-2000:]
    assert ref.wait(timeout=300) == 0, ref.stderr.read().decode()[-2000:]
    a, b = (load_file(str(d / "checkpoint.safetensors")) for d in (ref_dir, run_dir))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    ra, rb = (json.loads((d / "result.json").read_text()) for d in (ref_dir, run_dir))
    assert ra["world_size"] == rb["world_size"] == 2 and ra["steps"] == rb["steps"] == 16
    assert ra["test_loss_nats"] == rb["test_loss_nats"]
    assert ra["model"]["dropout"] == 0.2
