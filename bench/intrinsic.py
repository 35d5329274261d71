"""Speed and agreement of the intrinsic-dimension protocol against scikit-dimension's MLE.

On a curved 16-dimensional manifold in R^768 (float32), in one run:
  (a) scalelab: `estimate_in_batches(X, MLE(k=20), batch_size=4096)` (the paper protocol);
  (b) reference: `skdim.id.MLE().fit_transform(batch, n_neighbors=20)` on the very same
      batches (what the paper's code ran),
and prints wall time, CPU time and points per CPU-second for both, the speed ratio (target
>= 2.5x), the time share of the Gram products in scalelab's neighbour search (measured in
an instrumented second pass), how many rows needed the float32 fallback, and the largest
relative disagreement between the per-batch estimates (must be <= 1e-6).

    python bench/intrinsic.py                 # 100,000 points (24 batches)
    python bench/intrinsic.py --n 20480       # quicker: 5 batches
    python bench/intrinsic.py --threads 1     # both sides single-threaded
    python bench/intrinsic.py --precision bf16   # scalelab's torch bf16 search instead
    OMP_WAIT_POLICY=ACTIVE python bench/intrinsic.py   # OpenMP's default spinning

Timings on a shared machine are noisy: read the ratio and the per-CPU-second figures.
"""

from __future__ import annotations

import os

# Threads that finish a parallel region wait passively instead of spinning: on a shared
# machine spinning OpenMP threads (torch's and numba's runtimes) steal the CPU the other side
# of a barrier needs. Read once, when the OpenMP runtime loads, so it must precede the
# imports below; both scalelab and skdim run under it. Override by setting it yourself.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "16")  # as the CLI: OpenBLAS spins briefly

import argparse
import time

import numpy as np
import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="number of points")
    parser.add_argument("--d", type=int, default=16, help="manifold dimension")
    parser.add_argument("--batch-size", type=int, default=4096)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--threads", type=int, default=None, help="torch/BLAS threads")
    parser.add_argument(
        "--precision", default="auto", help="scalelab's CPU search: auto (torch-free) or bf16"
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
        from threadpoolctl import threadpool_limits

        threadpool_limits(args.threads)
        os.environ["NUMBA_NUM_THREADS"] = str(args.threads)

    import skdim

    from scalelab.intrinsic.mle import MLE, local_mle
    from scalelab.intrinsic.neighbors import SearchStats, knn
    from scalelab.intrinsic.protocol import batch_indices, estimate_in_batches
    from scalelab.intrinsic.synthetic import curved_manifold

    x = curved_manifold(args.n, args.d, 768, seed=0)
    batches = batch_indices(len(x), args.batch_size, seed=0)
    print(
        f"{args.n} x 768 float32, curved S^{args.d}, {len(batches)} batches of "
        f">= {args.batch_size}, k = {args.k}, torch threads {torch.get_num_threads()}, "
        f"OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}"
    )
    mle = MLE(k=args.k, precision=args.precision)
    mle.fit(x[:500])  # compile/load the numba kernels outside the timing

    t0, c0 = time.perf_counter(), time.process_time()
    ours = estimate_in_batches(x, mle, batch_size=args.batch_size, seed=0)
    ours_wall, ours_cpu = time.perf_counter() - t0, time.process_time() - c0

    t0, c0 = time.perf_counter(), time.process_time()
    ref = [skdim.id.MLE().fit_transform(x[b], n_neighbors=args.k) for b in batches]
    ref_wall, ref_cpu = time.perf_counter() - t0, time.process_time() - c0

    stats = SearchStats()
    t0 = time.perf_counter()
    for b in batches:
        dist, _ = knn(x[b], args.k, precision=args.precision, stats=stats)
        local_mle(dist)
    pass_wall = time.perf_counter() - t0

    rel = np.abs(np.asarray(ours.batch_dimensions) / np.asarray(ref) - 1)
    rows = [
        ("scalelab MLE (protocol)", ours_wall, ours_cpu),
        ("skdim MLE, same batches", ref_wall, ref_cpu),
    ]
    print(f"{'':26s} {'wall s':>8s} {'CPU s':>8s} {'points/CPU-s':>13s}")
    for name, wall, cpu in rows:
        print(f"{name:26s} {wall:8.2f} {cpu:8.2f} {args.n / cpu:13.0f}")
    print(f"speed ratio (wall)             {ref_wall / ours_wall:6.2f}x   (target >= 2.5x)")
    print(f"speed ratio (CPU time)         {ref_cpu / ours_cpu:6.2f}x")
    print(f"Gram product share of search   {stats.gram_seconds / pass_wall:6.1%}")
    print(
        f"rows needing the fallback      {stats.n_fallback} of {stats.n_rows} "
        f"({stats.n_candidates} candidates per row, ended in {stats.precision})"
    )
    print(f"dimension: scalelab {ours.dimension:.6f}, skdim {np.mean(ref):.6f}")
    print(f"largest per-batch disagreement {rel.max():.2e} relative (must be <= 1e-6)")
    if rel.max() > 1e-6:
        raise SystemExit("disagreement above 1e-6")


if __name__ == "__main__":
    main()
