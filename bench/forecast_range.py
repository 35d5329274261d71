"""Forecasts over more than 1.5 decades: finished validations' data sweeps, extended, checked.

    python bench/forecast_range.py VALIDATE_DIR... [--extra 107722 232079] \
        [--out .bench-out/forecast-range] [--csv docs/benchmarks/forecast/range.csv]
    scalelab forecast docs/benchmarks/forecast/range.csv --score --out OUT

For each finished `scalelab validate` folder: its own data sweep (the config in its
pipeline.json: model, schedule, seed, token store) continued to the larger sizes `--extra`,
then validate's three-way convergence check of the new largest run. The runs the validation
already finished are copied, not retrained (same config, so the same steps). Writes one table
(sizes, test losses, stop reasons, each folder's sources of d) that `scalelab forecast --score`
reads, and the check verdicts beside it (`.check.json`). Resumable: a rerun skips finished
runs and checks.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from scalelab.io import atomic_write_json, provenance, read_json
from scalelab.pipeline.config import PipelineConfig
from scalelab.pipeline.steps import CONFIG, base_configs
from scalelab.runs import outdir
from scalelab.runs.outdir import read_meta
from scalelab.runs.sweep import open_sweep
from scalelab.sweeps import data as data_sweep
from scalelab.sweeps.check import CheckConfig, check_sweep
from scalelab.sweeps.result import SweepResult
from scalelab.sweeps.worker import reuse_runs, run_specs


def _config(folder: Path) -> PipelineConfig:
    saved = read_meta(folder / CONFIG)
    return PipelineConfig.from_dict({k: v for k, v in saved.items() if k != "references"})


def _specs(cfg: PipelineConfig, data: Path, sizes: list[int]) -> list:
    model_cfg, train_cfg = base_configs(cfg, data)
    schedule = cfg.schedule
    return data_sweep.specs(data_sweep.make_config(data, model_cfg, train_cfg, schedule, sizes))


def _sources(folder: Path) -> dict[str, float]:
    """`d:KEY`, `d_lo:KEY`, `d_hi:KEY` for each source of d of the validation (KEY: the folder
    name without its number, e.g. `own`)."""
    out = {}
    for path in sorted((folder / "d").glob("*/source.json")):
        row = read_json(path)
        key = path.parent.name.split("-", 1)[1]
        lo, hi = row["dimension_range"]
        out |= {f"d:{key}": row["dimension"], f"d_lo:{key}": lo, f"d_hi:{key}": hi}
    return out


def extend(folder: Path, extra: list[int], out: Path, workers: int) -> tuple[pd.DataFrame, dict]:
    cfg = _config(folder)
    data = (folder / "data").resolve()
    old = data_sweep.geometric_grid(cfg.min_tokens, cfg.max_tokens, cfg.points)
    sizes = sorted({*old, *extra})
    specs = _specs(cfg, data, sizes)
    sweep_dir = open_sweep(
        out / "sweep", data_sweep.KIND, {"validate": cfg.to_dict(), "sizes": sizes}
    )
    try:
        copied = reuse_runs(folder / "sweep", _specs(cfg, data, old), sweep_dir, specs)
        print(f"{folder.name}: {copied} run(s) reused, {len(specs) - copied} to train", flush=True)
        table = run_specs(sweep_dir, specs, workers=workers, only=None, quiet=True)
        result = SweepResult(sweep_dir, tuple(specs), table, "train_tokens")
        rule = CheckConfig(largest=1, factor=cfg.check.factor, smallest=0, width_factor=None)
        check = check_sweep(result, out / "check", rule, workers=workers)
    finally:
        outdir.release_under(out)
    cols = ["train_tokens", "test_loss_nats", "stop_reason", "steps", "max_steps"]
    rows = table.set_index("run").loc[[s.name for s in specs], cols].reset_index(drop=True)
    rows.insert(0, "corpus", folder.name)
    for k, v in _sources(folder).items():
        rows[k] = v
    return rows, check


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", type=Path, help="finished validate folders")
    ap.add_argument("--extra", nargs="+", type=int, default=[107_722, 232_079])
    ap.add_argument("--out", type=Path, default=Path(".bench-out/forecast-range"))
    ap.add_argument("--csv", type=Path, default=Path("docs/benchmarks/forecast/range.csv"))
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    frames, checks, t0 = [], {}, time.perf_counter()
    for folder in args.folders:
        rows, check = extend(folder, args.extra, args.out / folder.name, args.workers)
        frames.append(rows)
        checks[folder.name] = check
        print(f"  {check['text']}", flush=True)
        for r in rows.itertuples():
            print(
                f"  {r.train_tokens:>9,} tokens: {r.test_loss_nats:.4f} ({r.stop_reason}, "
                f"{r.steps}/{r.max_steps} steps)",
                flush=True,
            )
    table = pd.concat(frames, ignore_index=True)
    args.csv.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.csv.with_name(f".{args.csv.name}.tmp")
    table.to_csv(tmp, index=False)
    tmp.replace(args.csv)
    atomic_write_json(
        args.csv.with_suffix(".check.json"),
        {
            "checks": checks,
            "extra": args.extra,
            "wall_s": round(time.perf_counter() - t0, 1),
            "provenance": provenance(),
        },
    )
    print(f"wrote {args.csv} and {args.csv.with_suffix('.check.json')}")


if __name__ == "__main__":
    main()
