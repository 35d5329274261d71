"""The same data sweep of 8 small runs on the local backend (2 worker processes) and on Ray
(a local instance of 2 CPUs, one task a run), in this process, one after the other.

Prints the wall time of each, their ratio (Ray / local), Ray's start-up overhead (ray.init
plus one empty task, measured separately), whether the two runs.csv hold the same losses (they
must: the runs are the same code), and the load average before and after.

    python bench/ray_sweep.py [--work .bench-out/ray_sweep] [--epochs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import textwrap
import time
from pathlib import Path

import torch

from scalelab.lm.config import GPTConfig, TrainConfig
from scalelab.runs.sweep import Backend
from scalelab.sweeps import data as data_sweep
from scalelab.sweeps.schedule import Schedule
from scalelab.text.corpora import Corpus, Document
from scalelab.text.store import prepare_corpus

LOSSES = ["test_loss_nats", "best_val_loss_nats", "best_step", "steps"]


def small_store(out: Path) -> Path:
    """A real token store (~40k tokens): paragraphs of a few standard-library modules."""
    if (out / "meta.json").exists():
        return out
    paragraphs = []
    for mod in (argparse, json.decoder, json.encoder, textwrap):
        text = Path(mod.__file__).read_text(encoding="utf-8")
        paragraphs += [p for p in text.split("\n\n") if p.strip()]
    docs = tuple(Document(f"p{i}", p) for i, p in enumerate(paragraphs))
    corpus = Corpus("stdlib-mini", "PSF-2.0", "bench", docs)
    return prepare_corpus(corpus, out, vocab_size=384, seed=0, test_fraction=0.1, quiet=True)


def sweep_config(store: Path, epochs: float) -> data_sweep.DataSweepConfig:
    model = GPTConfig(vocab_size=384, block_size=32, n_layer=1, n_head=1, n_embd=32)
    train = TrainConfig(batch_size=4, eval_interval=10, eval_batches=2, test_tokens=1024)
    sizes = data_sweep.geometric_grid(2000, 16000, 8)
    return data_sweep.make_config(store, model, train, Schedule("epochs", epochs=epochs), sizes)


def ray_startup_s() -> float:
    """ray.init with 2 CPUs and one empty task's round trip (the Ray instance stays up)."""
    import ray

    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    ray.get(ray.remote(lambda: None).remote())
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path(".bench-out/ray_sweep"))
    parser.add_argument("--epochs", type=float, default=2.0)
    opts = parser.parse_args()
    torch.set_num_threads(1)
    opts.work.mkdir(parents=True, exist_ok=True)
    for old in ("local", "ray"):
        shutil.rmtree(opts.work / old, ignore_errors=True)
    cfg = sweep_config(small_store(opts.work / "store"), opts.epochs)
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    local = data_sweep.data_sweep(opts.work / "local", cfg, workers=2, quiet=True)
    local_s = time.perf_counter() - t0
    start_s = ray_startup_s()
    t0 = time.perf_counter()
    remote = data_sweep.data_sweep(opts.work / "ray", cfg, backend=Backend("ray"), quiet=True)
    ray_s = time.perf_counter() - t0
    load1 = os.getloadavg()
    same = all(list(local[c]) == list(remote[c]) for c in LOSSES)
    steps = int(local["steps"].sum())
    print(f"8 runs, {steps} optimizer steps in all (1x32 GPT, context 32, batch 4)")
    print(f"local backend, 2 worker processes: {local_s:.1f} s")
    print(f"Ray, local instance of 2 CPUs:     {ray_s:.1f} s (+ {start_s:.1f} s start-up)")
    with_start = (ray_s + start_s) / local_s
    print(f"ratio Ray / local: {ray_s / local_s:.2f} ({with_start:.2f} with start-up)")
    print(f"same losses in both runs.csv: {same}")
    print(f"load average before {load0[0]:.2f}, after {load1[0]:.2f}")


if __name__ == "__main__":
    main()
