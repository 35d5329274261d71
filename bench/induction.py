"""Benchmarks for scalelab.induction, each against a reference measured in the same run.

    python bench/induction.py                 # quick (about 1-3 minutes on a loaded machine)
    python bench/induction.py --time-to-99    # also: time for 2 layers to reach 99% at n = 32

Reports wall time and CPU time (time.process_time) beside each figure, since the machine
is shared: work per CPU-second is the comparable number.

1. Solver: vectorised `solve` (stable radix sort) vs the reference Python loop, tokens/s.
2. Attention: the fused scaled_dot_product_attention path of the model vs an explicit
   softmax(QK^T + mask) V in float64, the construction at n = 1024 (same answers checked).
3. Training throughput of a 2-layer, width-64 model at n = 32 (tokens/CPU-second).
4. (--time-to-99) steps, wall and CPU seconds until all-position accuracy >= 0.99, n = 32.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from scalelab.induction.config import InductionConfig, InductionTrainConfig
from scalelab.induction.construction import evaluation_instances, two_layer_construction
from scalelab.induction.task import solve, solve_reference, uniform_instances
from scalelab.induction.train import train_induction


def timed(fn, repeat: int = 1):
    """(result, wall seconds, CPU seconds) of the best of `repeat` calls."""
    best = (None, float("inf"), float("inf"))
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        dw, dc = time.perf_counter() - w, time.process_time() - c
        if dw < best[1]:
            best = (out, dw, dc)
    return best


def line(label: str, wall: float, cpu: float, tokens: int) -> None:
    """One result line: wall and CPU seconds and tokens per CPU-second."""
    print(f"  {label:<17}: {wall:7.3f} s wall {cpu:7.3f} s CPU {tokens / cpu:12.0f} tok/CPU-s")


def bench_solver(rng: np.random.Generator) -> None:
    seqs = uniform_instances(1000, 1024, 16, rng)
    ref, w_ref, c_ref = timed(lambda: np.stack([solve_reference(s) for s in seqs]))
    vec, w_vec, c_vec = timed(lambda: solve(seqs), repeat=3)
    assert np.array_equal(ref, vec)
    tokens = seqs.size
    print("solver  1000 x 1024 tokens, |Σ| = 16")
    line("reference loop", w_ref, c_ref, tokens)
    line("vectorised", w_vec, c_vec, tokens)
    print(f"  speed-up (CPU)   : {c_ref / c_vec:7.1f}x   (identical outputs)")


def _explicit_forward(model, seqs: torch.Tensor) -> torch.Tensor:
    """The same model with the attention written out (softmax of masked scores)."""
    x = model.embed(model.with_bos(seqs))
    t = x.shape[1]
    mask = torch.ones(t, t, dtype=torch.bool).triu(1)
    for block in model.blocks:
        q, k, v = block.attn.project(block.ln1(x))
        att = torch.softmax(block.attn.scores(q, k).masked_fill(mask, float("-inf")), -1)
        x = block.after_attention(x + block.attn.output(att @ v))
    return model.readout(x)[:, 1:].argmax(-1)


def bench_attention() -> None:
    model = two_layer_construction(3, 1024)
    seqs = torch.from_numpy(evaluation_instances(1024, 3, 16, 16, 0))
    with torch.no_grad():
        ref, w_ref, c_ref = timed(lambda: _explicit_forward(model, seqs))
        fused, w_f, c_f = timed(lambda: model(seqs).argmax(-1), repeat=2)
    assert torch.equal(ref, fused)
    tokens = seqs.numel()
    print("construction forward, 32 x 1024 tokens, float64")
    line("explicit softmax", w_ref, c_ref, tokens)
    line("fused sdpa", w_f, c_f, tokens)
    print(f"  speed-up (CPU)   : {c_ref / c_f:6.1f}x   (identical answers)")


def bench_training(time_to_99: bool) -> None:
    mcfg = InductionConfig(alphabet_size=8, max_len=32, n_layer=2, n_head=2, d_model=64)
    steps = 400 if time_to_99 else 60
    tcfg = InductionTrainConfig(
        n=32, max_steps=steps, target_acc=0.99 if time_to_99 else None, eval_interval=25
    )
    (_, res), wall, cpu = timed(lambda: train_induction(mcfg, tcfg, quiet=True))
    tokens = res["steps"] * tcfg.batch_size * tcfg.n
    print("training 2 layers, m = 64, h = 2, n = 32, |Σ| = 8, batch 64 (incl. evaluations)")
    print(
        f"  {res['steps']} steps: {wall:6.1f} s wall {cpu:6.1f} s CPU {tokens / cpu:9.0f} tok/CPU-s"
    )
    if time_to_99:
        print(
            f"  reached acc_all = {res['acc_all']:.4f} (hard {res['acc_hard']:.3f}, last "
            f"{res['acc_last']:.3f}) -> stop: {res['stop_reason']}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-to-99", action="store_true", help="train to 99% at n = 32")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    print(f"torch threads: {args.threads}; load average: {load}")
    bench_solver(np.random.default_rng(0))
    bench_attention()
    bench_training(args.time_to_99)


if __name__ == "__main__":
    main()
