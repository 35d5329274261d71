"""The paired table of the noise study (noise.py in this folder): per corpus, the seed-to-seed
sd of log test loss per variant, the paired effect of annealing and of 32 validation batches,
local slopes, and CPU time.

    python docs/benchmarks/regime-noise/table.py OUT [--json PATH]   (default: noise.json here)

Variants, all from the same runs or the same seeds (paired):
- `constant`: base's runs at the constant rate (runs.csv `test_loss_constant_lr_nats`);
- `annealed`: the same runs after their cooldown (runs.csv `test_loss_nats`);
- `eval-32`: the same seeds with early stopping on 32 validation batches, constant rate.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
from pathlib import Path

import numpy as np
from scipy.stats import t as student_t

from scalelab.io import atomic_write_json

#: Which CPU-time columns each variant costs (the annealed runs: their cooldowns on top).
COST = {
    "constant": "train_cpu_time_s",
    "annealed": "cooldown_cpu_time_s",
    "eval-32": "train_cpu_time_s",
}


def rows(folder: Path) -> list[dict]:
    """A variant's runs: its runs.csv once the sweep has finished, else the finished runs'
    result.json (an interrupted sweep: the rows so far, said so in the table)."""
    table = folder / "runs.csv"
    if table.exists():
        return list(csv.DictReader(table.open()))
    out = []
    for result in sorted((folder / "sweep" / "runs").glob("n*/result.json")):
        name = result.parent.name
        if not name.endswith("-cool"):
            tokens = int(name.split("-")[0][1:])
            out.append({**json.loads(result.read_text()), "run": name, "train_tokens": tokens})
    return out


def read(table: list[dict], column: str) -> dict[tuple[int, int], float]:
    """(tokens, seed offset) → log of `column`."""
    out = {}
    for row in table:
        seed = int(row["run"].split("-s")[1]) if "-s" in row["run"] else 0
        out[(int(row["train_tokens"]), seed)] = math.log(float(row[column]))
    return out


def cpu_s(table: list[dict], column: str) -> float:
    return sum(float(r[column]) for r in table if r.get(column)) if table else math.nan


def paired(a: dict, b: dict) -> dict:
    """Mean of b − a (log loss) over the runs both hold, with its t 95% interval."""
    d = np.array([b[k] - a[k] for k in sorted(set(a) & set(b))])
    if d.size < 2:
        return {"n": int(d.size)}
    half = float(student_t.ppf(0.975, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size))
    mean = float(d.mean())
    return {"n": int(d.size), "mean": mean, "lo": mean - half, "hi": mean + half}


def summary(runs: dict) -> dict:
    """Per size: mean and seed sd of log loss; the pooled sd; local slopes of the means."""
    sizes = sorted({n for n, _ in runs})
    values = [np.array([v for (n, _), v in runs.items() if n == size]) for size in sizes]
    means = [float(v.mean()) for v in values]
    sds = [float(v.std(ddof=1)) if v.size > 1 else math.nan for v in values]
    slopes = [
        -(means[i + 1] - means[i]) / math.log(sizes[i + 1] / sizes[i])
        for i in range(len(sizes) - 1)
    ]
    return {
        "sizes": sizes,
        "mean_log": means,
        "seed_sd_log": sds,
        "pooled_sd_log": float(np.sqrt(np.nanmean(np.square(sds)))),
        "local_slopes": slopes,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--json", type=Path, default=Path("docs/benchmarks/regime-noise/noise.json"))
    args = ap.parse_args()
    result = {}
    for corpus in sorted(p.name for p in args.out.iterdir() if p.is_dir()):
        base, e32 = rows(args.out / corpus / "base"), rows(args.out / corpus / "eval-32")
        files = {"constant": base, "annealed": base, "eval-32": e32}
        v = {
            "constant": read(base, "test_loss_constant_lr_nats"),
            "annealed": read(base, "test_loss_nats"),
            "eval-32": read(e32, "test_loss_nats"),
        }
        result[corpus] = {
            "variants": {k: summary(r) for k, r in v.items() if r},
            "annealed_minus_constant": paired(v["constant"], v["annealed"]),
            "eval32_minus_constant": paired(v["constant"], v["eval-32"]),
            "cpu_s": {k: cpu_s(files[k], COST[k]) for k in v},
        }
    atomic_write_json(args.json, result)
    print("| corpus | variant | seed sd of log loss per size | pooled | local slopes | CPU-s |")
    print("|---|---|---|---|---|---|")
    for corpus, r in result.items():
        for name, s in r["variants"].items():
            sds = ", ".join(f"{x:.4f}" for x in s["seed_sd_log"])
            slopes = ", ".join(f"{x:.3f}" for x in s["local_slopes"])
            print(
                f"| {corpus} | {name} | {sds} | {s['pooled_sd_log']:.4f} | {slopes} | "
                f"{r['cpu_s'][name]:.0f} |"
            )
    print("\n| corpus | paired effect on log loss | runs | mean [95%] |\n|---|---|---|---|")
    for corpus, r in result.items():
        for name in ("annealed_minus_constant", "eval32_minus_constant"):
            p = r[name]
            if "mean" in p:
                print(
                    f"| {corpus} | {name.replace('_', ' ')} | {p['n']} | "
                    f"{p['mean']:+.4f} [{p['lo']:+.4f}, {p['hi']:+.4f}] |"
                )


if __name__ == "__main__":
    main()
