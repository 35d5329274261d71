"""One command that runs scalelab's GPU paths and prints each figure:

1. `scalelab train`: 50 steps of the `small` preset on CUDA in bfloat16 (tokens/s, loss);
2. with >= 2 GPUs, the same under `torchrun` (one process a GPU, nccl);
3. `scalelab id` on 100,000 x 768 points (a 16-dimensional manifold) with the k-NN search on
   the GPU against the CPU search: the paper's protocol (batches of 4096) on both, and one
   batch of all 100,000 points on the GPU (and on the CPU with --full-cpu: minutes);
4. `scalelab estimate` with the trained model on the GPU against the same on the CPU.

Usage: python bench/gpu_check.py [--work .bench-out/gpu_check] [--full-cpu]
Without CUDA it says so and exits 0 having checked nothing. `--smoke` runs the same steps on
the CPU at toy sizes, to check this script itself on a machine without a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch


def scalelab(*args: str, torchrun: int = 0) -> tuple[dict, float]:
    """Run a scalelab command with --json; (its JSON output, wall seconds)."""
    head = [sys.executable, "-m", "scalelab"]
    if torchrun:
        head = [
            sys.executable, "-m", "torch.distributed.run", "--standalone",
            f"--nproc_per_node={torchrun}", "-m", "scalelab",
        ]  # fmt: skip
    t0 = time.perf_counter()
    done = subprocess.run([*head, *args, "--json"], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"FAILED: scalelab {' '.join(args)}\n{done.stderr[-3000:]}")
    return json.loads(done.stdout), wall


def manifold_points(path: Path, n: int, dim: int, d: int = 16) -> None:
    """n points of a smooth d-dimensional manifold in R^dim (tanh of a random linear map)."""
    rng = np.random.default_rng(0)
    z = rng.standard_normal((n, d))
    a = rng.standard_normal((d, dim)) / np.sqrt(d)
    np.save(path, np.tanh(z @ a).astype(np.float32))


def train_figures(work: Path, sizes: dict, device: str, gpus: int) -> Path:
    run = work / "train-small"
    common = ["--data", str(work / "data"), "--preset", sizes["preset"], "--max-steps", "50"]
    common += ["--eval-interval", "25", "--dtype", sizes["dtype"]]
    res, wall = scalelab("train", *common, "--out", str(run), "--device", device)
    print(
        f"train {sizes['preset']} 50 steps on {res['device']} ({res['dtype']}): "
        f"{res['tokens_per_s']:,.0f} tokens/s, test loss {res['test_loss_nats']:.4f} nats, "
        f"wall {wall:.1f} s"
    )
    if gpus >= 2:
        ddp, wall = scalelab("train", *common, "--out", str(work / "train-ddp"), torchrun=gpus)
        print(
            f"torchrun nccl x{ddp['world_size']}: {ddp['tokens_per_s']:,.0f} tokens/s "
            f"({ddp['tokens_per_s'] / res['tokens_per_s']:.2f}x one GPU), test loss "
            f"{ddp['test_loss_nats']:.4f} nats, wall {wall:.1f} s"
        )
    else:
        print(f"torchrun nccl: skipped ({gpus} GPU; needs >= 2)")
    return run


def id_figures(work: Path, sizes: dict, device: str, full_cpu: bool) -> None:
    points = work / f"points-{sizes['n']}x768.npy"
    if not points.exists():
        manifold_points(points, sizes["n"], 768)
    base = [str(points), "--quiet"]
    gpu, t_gpu = scalelab("id", *base, "--device", device)
    cpu, t_cpu = scalelab("id", *base)
    print(
        f"id {sizes['n']}x768, batches of 4096: {device} d = {gpu['dimension']:.6f} "
        f"({t_gpu:.1f} s), CPU d = {cpu['dimension']:.6f} ({t_cpu:.1f} s), "
        f"|diff| = {abs(gpu['dimension'] - cpu['dimension']):.2e}"
    )
    one = [*base, "--batch-size", str(sizes["n"])]
    gpu1, t_gpu1 = scalelab("id", *one, "--device", device)
    line = f"id {sizes['n']}x768, one batch: {device} d = {gpu1['dimension']:.6f} ({t_gpu1:.1f} s)"
    if full_cpu:
        cpu1, t_cpu1 = scalelab("id", *one)
        line += f", CPU d = {cpu1['dimension']:.6f} ({t_cpu1:.1f} s)"
    print(line)


def estimate_figures(work: Path, run: Path, device: str) -> None:
    args = ["estimate", "--model", str(run), "--max-docs", "200", "--quiet"]
    gpu, t_gpu = scalelab(*args, "--device", device, "--out", str(work / "est-gpu"))
    cpu, t_cpu = scalelab(*args, "--device", "cpu", "--out", str(work / "est-cpu"))
    d_gpu, d_cpu = gpu["dimension"], cpu["dimension"]
    points = gpu.get("estimate", {}).get("n_points", "?")
    print(
        f"estimate (trained model, {points} points): {device} "
        f"d = {d_gpu:.4f} ({t_gpu:.1f} s), CPU d = {d_cpu:.4f} ({t_cpu:.1f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path(".bench-out/gpu_check"))
    parser.add_argument("--full-cpu", action="store_true", help="Also one CPU batch of 100k.")
    parser.add_argument("--smoke", action="store_true", help="CPU, toy sizes: test the script.")
    opts = parser.parse_args()
    if opts.smoke:
        device, gpus = "cpu", 0
        sizes = {"preset": "tiny", "dtype": "float32", "n": 5000}
    elif not torch.cuda.is_available():
        print(
            f"no CUDA device (torch {torch.__version__}, CUDA build {torch.version.cuda}): "
            "the GPU check did not run. Run it on a machine with an NVIDIA GPU."
        )
        return
    else:
        device, gpus = "cuda", torch.cuda.device_count()
        sizes = {"preset": "small", "dtype": "bfloat16", "n": 100_000}
        print(f"{gpus} x {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    work = opts.work
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if not (work / "data" / "meta.json").exists():
        scalelab("corpus", "prepare", "shakespeare", "--out", str(work / "data"), "--quiet")
    run = train_figures(work, sizes, device, gpus)
    id_figures(work, sizes, device, opts.full_cpu)
    estimate_figures(work, run, device)


if __name__ == "__main__":
    main()
