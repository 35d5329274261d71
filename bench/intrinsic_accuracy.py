"""Accuracy of intrinsic-dimension estimators on scikit-dimension's BenchmarkManifolds.

Mean relative error |d̂ − d| / d over the 24 manifolds (n = 4096 points each, K = 20 for the
MLE as in the paper's code), for scalelab's MLE (mean and harmonic), TwoNN and CalibratedMLE,
beside scikit-dimension's MLE, TwoNN and DANCo (its precomputed-calibration variant) run on
the same points in the same process. Prints the per-manifold table, the error ratios against
skdim's estimators, and wall/CPU seconds per estimator (the machine is shared: CPU seconds are
the steadier figure).

    python bench/intrinsic_accuracy.py                        # random_state 0, about 1-2 min
    python bench/intrinsic_accuracy.py --random-states 0 1 2  # robustness to the sample
    python bench/intrinsic_accuracy.py --json out.json        # also save every estimate
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable

import numpy as np
import torch

from scalelab.intrinsic.calibrated import CalibratedMLE
from scalelab.intrinsic.mle import MLE, TwoNN
from scalelab.io import atomic_write_json, provenance

Estimator = Callable[[np.ndarray], float]


def estimators(k: int) -> dict[str, Estimator]:
    """Name -> function of the points returning a dimension; skdim imported lazily."""
    import skdim

    return {
        "scalelab MLE": lambda x: MLE(k=k).fit(x).dimension_,
        "scalelab MLE harmonic": lambda x: MLE(k=k, aggregate="harmonic").fit(x).dimension_,
        "scalelab TwoNN": lambda x: TwoNN().fit(x).dimension_,
        f"scalelab CalibratedMLE k={k}": lambda x: CalibratedMLE(k=k).fit(x).dimension_,
        "scalelab CalibratedMLE": lambda x: CalibratedMLE().fit(x).dimension_,
        "skdim MLE": lambda x: skdim.id.MLE().fit_transform(x, n_neighbors=k),
        "skdim MLE harmonic": lambda x: skdim.id.MLE().fit(x, n_neighbors=k).dimension_,
        "skdim TwoNN": lambda x: skdim.id.TwoNN().fit(x).dimension_,
        "skdim DANCoFit k=10": lambda x: (
            skdim.id.DANCo(k=10, ver="DANCoFit", random_state=0).fit(x).dimension_
        ),
    }


def run(n: int, k: int, random_state: int) -> dict:
    """Every estimator on every manifold of one BenchmarkManifolds draw."""
    import skdim

    bm = skdim.datasets.BenchmarkManifolds(random_state=random_state)
    data = bm.generate(n=n)
    truth = {name: int(bm.truth.loc[name, "Intrinsic Dimension"]) for name in data}
    estimates: dict[str, dict[str, float]] = {}
    seconds: dict[str, tuple[float, float]] = {}
    for est_name, fn in estimators(k).items():
        wall, cpu = time.perf_counter(), time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            estimates[est_name] = {m: float(fn(np.asarray(x))) for m, x in data.items()}
        seconds[est_name] = (time.perf_counter() - wall, time.process_time() - cpu)
        print(f"  {est_name:30s} {seconds[est_name][0]:6.1f} s wall", flush=True)
    errors = {
        e: float(np.mean([abs(v[m] - truth[m]) / truth[m] for m in data]))
        for e, v in estimates.items()
    }
    return {
        "random_state": random_state,
        "truth": truth,
        "estimates": estimates,
        "mean_relative_error": errors,
        "seconds_wall_cpu": seconds,
    }


def print_tables(res: dict) -> None:
    """Per-manifold table (Markdown), then the summary with ratios against skdim."""
    names = list(res["estimates"])
    short = [n.replace("scalelab ", "").replace("skdim ", "sk ") for n in names]
    print(f"\n### random_state = {res['random_state']}\n")
    print("| manifold | d | " + " | ".join(short) + " |")
    print("|---|---:|" + "---:|" * len(names))
    for m, d in res["truth"].items():
        row = " | ".join(f"{res['estimates'][e][m]:.2f}" for e in names)
        print(f"| {m} | {d} | {row} |")
    err = res["mean_relative_error"]
    print("| **mean rel. error** | | " + " | ".join(f"**{err[e]:.4f}**" for e in names) + " |")
    print("\n| estimator | mean rel. error | ÷ skdim MLE | ÷ skdim TwoNN | wall s | CPU s |")
    print("|---|---:|---:|---:|---:|---:|")
    for e in names:
        wall, cpu = res["seconds_wall_cpu"][e]
        print(
            f"| {e} | {err[e]:.4f} | {err[e] / err['skdim MLE']:.3f} "
            f"| {err[e] / err['skdim TwoNN']:.3f} | {wall:.1f} | {cpu:.1f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=4096, help="points per manifold")
    parser.add_argument("--k", type=int, default=20, help="K of the MLE estimators")
    parser.add_argument("--random-states", type=int, nargs="+", default=[0])
    parser.add_argument("--threads", type=int, default=1, help="torch/BLAS threads")
    parser.add_argument("--json", help="also write every estimate to this JSON file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    t0, c0 = time.perf_counter(), time.process_time()
    results = []
    for rs in args.random_states:
        print(f"random_state {rs}: n = {args.n}, K = {args.k}", flush=True)
        results.append(run(args.n, args.k, rs))
        print_tables(results[-1])
    if len(results) > 1:
        print("\n| estimator | mean rel. error per random_state | average |")
        print("|---|---|---:|")
        for e in results[0]["mean_relative_error"]:
            errs = [r["mean_relative_error"][e] for r in results]
            print(f"| {e} | {', '.join(f'{v:.4f}' for v in errs)} | {np.mean(errs):.4f} |")
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"\ntotal: {wall:.0f} s wall, {cpu:.0f} s CPU, {args.threads} thread(s)")
    if args.json:
        atomic_write_json(
            args.json, {"args": vars(args), "results": results, "provenance": provenance()}
        )


if __name__ == "__main__":
    main()
