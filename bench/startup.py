"""Whole-process start-up of the CLI, and the per-batch speed of `scalelab id` through it.

    python bench/startup.py            # 7 runs of each command (median)
    python bench/startup.py --runs 3   # quicker
    python bench/startup.py --src OTHER/src   # another checkout's code, e.g. an older one

Each command runs as a fresh process (`python -m scalelab ...`), several times, interleaved,
and the median wall time is printed beside two references measured in the same run:
`python -c pass` (the interpreter alone) and `python -c "import torch"`. Commands:
`scalelab --help`, `scalelab exponents --d 8`, `scalelab validate --help` (its options'
defaults come from the pipeline's configs), `scalelab induction --help` (the group lists its
torch experiments without importing them), `scalelab id` on 8192 x 768 points.

Per-batch time of `scalelab id` (4096 x 768 batches, duplicate removal on, as by default):
the median of (time on 12 batches - time on 2 batches) / 10, so start-up cancels; against
scikit-dimension's `MLE().fit_transform(batch, n_neighbors=20)` on the same 12 batches (the
paper's code), timed in one process after a warm-up batch. The 1-minute load average is
printed before and after: on a loaded machine read the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SRC = Path(__file__).resolve().parents[1] / "src"
PY = sys.executable
SKDIM = """
import sys, time
import numpy as np
import skdim
x = np.load(sys.argv[1])
batches = np.array_split(np.random.default_rng(0).permutation(len(x)), len(x) // 4096)
skdim.id.MLE().fit_transform(x[batches[0]], n_neighbors=20)  # warm-up
times = []
for b in batches:
    t0 = time.perf_counter()
    skdim.id.MLE().fit_transform(x[b], n_neighbors=20)
    times.append(time.perf_counter() - t0)
print(sorted(times)[len(times) // 2])
"""


def wall(cmd: list[str], src: Path = SRC) -> float:
    env = {**os.environ, "PYTHONPATH": str(src)}
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t0


def points(path: Path, n: int) -> Path:
    """n points of a curved 16-manifold in R^768 (float32), saved as .npy."""
    from scalelab.intrinsic.synthetic import curved_manifold

    np.save(path, curved_manifold(n, 16, 768, seed=0).astype(np.float32))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="runs per command (median)")
    parser.add_argument("--src", type=Path, default=SRC, help="the src/ folder to measure")
    args = parser.parse_args()
    src = args.src.resolve()
    # The CLI sets these for itself; the reference gets the same OpenMP waiting policy,
    # OpenBLAS spin time and BLAS thread count (one thread when the machine is busy at the
    # start; every process of the run inherits the decision).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "16")
    sys.path.insert(0, str(SRC))
    from scalelab.cli import blas_threads_for_load

    blas_threads_for_load()
    print(
        f"load average before: {os.getloadavg()[0]:.2f}; python {sys.version.split()[0]}; "
        f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '(default)')}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        x8k = points(Path(tmp) / "x8k.npy", 8192)
        x2 = points(Path(tmp) / "x2.npy", 2 * 4096)
        x12 = points(Path(tmp) / "x12.npy", 12 * 4096)
        scalelab = [PY, "-m", "scalelab"]
        commands = {
            "python -c pass": [PY, "-c", "pass"],
            'python -c "import torch"': [PY, "-c", "import torch"],
            "scalelab --help": [*scalelab, "--help"],
            "scalelab exponents --d 8": [*scalelab, "exponents", "--d", "8"],
            "scalelab validate --help": [*scalelab, "validate", "--help"],
            "scalelab induction --help": [*scalelab, "induction", "--help"],
            "scalelab id (8192 x 768)": [*scalelab, "id", str(x8k), "--quiet", "--json"],
            "scalelab id (2 batches)": [*scalelab, "id", str(x2), "--quiet", "--json"],
            "scalelab id (12 batches)": [*scalelab, "id", str(x12), "--quiet", "--json"],
        }
        wall(commands["scalelab id (2 batches)"], src)  # warm the numba cache and the page cache
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):  # interleaved, so a load change hits every command alike
            for name, cmd in commands.items():
                times[name].append(wall(cmd, src))
        ref = subprocess.run(
            [PY, "-c", SKDIM, str(x12)], check=True, capture_output=True, text=True
        )
        skdim_batch = float(ref.stdout)
    med = {name: statistics.median(t) for name, t in times.items()}
    base, torch_s = med["python -c pass"], med['python -c "import torch"']
    print(f"{'command':<28} {'median s':>9} {'min s':>7} {'/ pass':>7} {'/ torch':>8}")
    for name in list(commands)[:7]:
        print(
            f"{name:<28} {med[name]:9.3f} {min(times[name]):7.3f} {med[name] / base:7.1f} "
            f"{med[name] / torch_s:8.2f}"
        )
    two, twelve = times["scalelab id (2 batches)"], times["scalelab id (12 batches)"]
    per_batch = [(b - a) / 10 for a, b in zip(two, twelve, strict=True)]
    cli_batch = statistics.median(per_batch)
    print(
        f"per 4096 x 768 batch: scalelab id (CLI) {cli_batch * 1e3:.0f} ms, "
        f"skdim MLE {skdim_batch * 1e3:.0f} ms: {skdim_batch / cli_batch:.2f}x faster"
    )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
