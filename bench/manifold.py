"""Benchmark the manifold benchmark's hot paths, against references measured in the same run.

1. Target evaluation: the chunked matmul in `HolderTarget.__call__` vs a per-point loop.
2. Swiss-roll sampling: vectorised Newton inversion vs scipy root finding per point.
3. Training throughput of the regressor (samples per CPU-second), ReLU vs softmax attention.

    python bench/manifold.py            # quick default, well under a minute of CPU
    python bench/manifold.py --points 20000 --steps 200
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one BLAS thread: fair CPU-time ratios

import argparse
import time

import numpy as np
import torch
from scipy import optimize

from scalelab.manifold.config import RegressorConfig
from scalelab.manifold.geometry import SwissRoll
from scalelab.manifold.model import TransformerRegressor
from scalelab.manifold.problem import Problem, ProblemConfig


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def bench_target(points: int) -> None:
    problem = Problem(ProblemConfig(d=4))
    x = problem.points(points, np.random.default_rng(0))
    t = problem.target
    fast, w_fast, c_fast = timed(lambda: t(x))
    ref_n = min(points, 500)
    slow, w_slow, c_slow = timed(
        lambda: np.array([np.sum(t.amplitude * np.cos(t.omega @ xi + t.phase)) for xi in x[:ref_n]])
    )
    assert np.allclose(fast[:ref_n], slow)
    rate_fast, rate_slow = points / c_fast, ref_n / c_slow
    print(
        f"target eval: {rate_fast:,.0f} points/CPU-s vectorised vs {rate_slow:,.0f} per-point "
        f"loop -> {rate_fast / rate_slow:.1f}x (wall {points / w_fast:,.0f} vs "
        f"{ref_n / w_slow:,.0f} points/s)"
    )


def bench_roll(points: int) -> None:
    roll = SwissRoll(2)
    s = np.random.default_rng(0).uniform(roll.arc_length(roll.t0), roll.arc_length(roll.t1), points)
    fast, _, c_fast = timed(lambda: roll.t_from_arc_length(s))
    ref_n = min(points, 500)

    def per_point() -> np.ndarray:
        def root(si: float) -> float:
            return optimize.brentq(lambda t: roll.arc_length(t) - si, 0.0, 20.0)

        return np.array([root(si) for si in s[:ref_n]])

    slow, _, c_slow = timed(per_point)
    assert np.allclose(fast[:ref_n], slow, atol=1e-9)
    ratio = (points / c_fast) / (ref_n / c_slow)
    print(f"swiss-roll inversion: vectorised Newton {ratio:.0f}x scipy brentq per point (CPU)")


def bench_train(steps: int, batch: int) -> None:
    x = torch.randn(batch, 32)
    y = torch.randn(batch)
    for attention in ("softmax", "relu"):
        model = TransformerRegressor(RegressorConfig(attention=attention))
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)

        def loop(model=model, opt=opt) -> None:
            for _ in range(steps):
                loss = torch.mean((model(x) - y) ** 2)
                opt.zero_grad()
                loss.backward()
                opt.step()

        _, wall, cpu = timed(loop)
        print(
            f"train step ({attention:7s}, {model.num_params()} params, batch {batch}): "
            f"{steps * batch / cpu:,.0f} samples/CPU-s, {steps * batch / wall:,.0f} samples/s wall"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--points", type=int, default=8192)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--batch", type=int, default=128)
    args = ap.parse_args()
    torch.set_num_threads(1)
    print(f"torch threads: {torch.get_num_threads()}; CPU-time rates are the fair comparison")
    bench_target(args.points)
    bench_roll(args.points)
    bench_train(args.steps, args.batch)


if __name__ == "__main__":
    main()
