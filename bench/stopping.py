"""How noisy is the validation loss at validate's defaults, and which stopping rule ignores it?

    python bench/stopping.py [--sizes 250000 116040] [--model 2x48] [--out .bench-out/stopping]

Trains the demo's data-sweep model (`PipelineConfig` defaults) at the given training-set sizes
with early stopping off, for the whole step cap, validating at the default interval; then
measures two noises of the validation loss and replays candidate stopping rules on the
recorded curves. What it prints is what the stopping rule was chosen by (docs/sweeps.md):
stop steps and the loss each rule leaves on the table, never a fitted exponent.

- sampling noise: the standard error of one validation (per-window losses of the validation
  windows at the best weights, std / sqrt(windows));
- step noise: the spread of successive validations around a smooth curve (residuals of a
  running median over 9 validations in the last half of the run).

A rule's "left" is its tested-weights validation loss minus the curve's best smoothed value
over the whole cap: the improvement it gave up by stopping early.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

from scalelab.lm.checkpoint import load_model
from scalelab.lm.data import tiling_starts, windows
from scalelab.lm.stopping import StopRule, replay
from scalelab.lm.train import train
from scalelab.pipeline.config import PipelineConfig
from scalelab.pipeline.steps import base_configs
from scalelab.text.store import TokenStore, prepare_corpus


def _store(out: Path, cfg: PipelineConfig) -> Path:
    from scalelab.text.corpora import load_corpus

    data = out / "data"
    if not (data / "meta.json").exists():
        prepare_corpus(load_corpus(cfg.corpus), data, vocab_size=cfg.vocab_size, quiet=True)
    return data


def _configs(cfg: PipelineConfig, data: Path, model: str, size: int):
    model_cfg, base = base_configs(dataclasses.replace(cfg, model=model), data)
    schedule = cfg.schedule
    train_cfg = schedule.train_config(base, size, model_cfg.block_size)
    cap = schedule.step_cap
    return model_cfg, train_cfg.replace(max_steps=cap, stop=StopRule(), decay_steps=None)


def _sampling_se(run: Path, data: Path, train_cfg) -> float:
    model, _ = load_model(run)
    val = TokenStore(data, "val").tokens
    block = model.config.block_size
    starts = tiling_starts(len(val), block, train_cfg.eval_batches * train_cfg.batch_size * block)
    losses = []
    with torch.no_grad():
        for i in range(0, len(starts), 32):
            x, y = windows(val, starts[i : i + 32], block)
            logits, _ = model(x, y)
            nll = torch.nn.functional.cross_entropy(
                logits.flatten(0, 1).float(), y.flatten(), reduction="none"
            )
            losses.append(nll.view(len(x), -1).mean(1).double().numpy())
    per_window = np.concatenate(losses)
    return float(per_window.std(ddof=1) / np.sqrt(len(per_window)))


def _step_noise(val: np.ndarray) -> float:
    half = val[len(val) // 2 :]
    smooth = np.array([np.median(half[max(0, i - 4) : i + 5]) for i in range(len(half))])
    return float(np.std(half - smooth, ddof=1))


RULES = {
    "patience 4 (before)": StopRule(patience=4),
    "patience 12 (x3)": StopRule(patience=12),
    "patience 25% of steps, min 4": StopRule(patience=4, patience_fraction=0.25),
    "patience 4, min delta 2 sd": StopRule(patience=4, min_delta_sd=2.0),
    "patience 25%, min 4, delta 1 sd": StopRule(
        patience=4, patience_fraction=0.25, min_delta_sd=1.0
    ),
}


def _one(out: Path, size: int, model: str) -> dict:
    cfg = PipelineConfig()
    data = _store(out, cfg)
    model_cfg, train_cfg = _configs(cfg, data, model, size)
    run = out / f"{model}-n{size}"
    t0 = time.perf_counter()
    result = train(model_cfg, train_cfg, data, run, quiet=True)
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    steps = np.array([r["step"] for r in rows])
    val = np.array([r["val_loss_nats"] for r in rows])
    se = _sampling_se(run, data, train_cfg)
    noise = _step_noise(val)
    smooth = np.array([np.median(val[max(0, i - 4) : i + 5]) for i in range(len(val))])
    floor = float(smooth.min())
    rules = {}
    for name, rule in RULES.items():
        stop, best = replay(val, rule, se)
        rules[name] = {
            "stop_step": int(steps[stop]),
            "tested_step": int(steps[best]),
            "left_nats": round(float(val[best]) - floor, 4),
        }
    return {
        "size": size,
        "model": model,
        "steps": result.steps,
        "passes_at_cap": round(result.tokens_seen / size, 1),
        "best_smoothed_step": int(steps[int(np.argmin(smooth))]),
        "best_smoothed_val": round(floor, 4),
        "sampling_se_nats": round(se, 5),
        "step_noise_sd_nats": round(noise, 5),
        "rules": rules,
        "wall_s": round(time.perf_counter() - t0, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[250_000, 116_040])
    ap.add_argument("--model", default="2x48")
    ap.add_argument("--out", type=Path, default=Path(".bench-out/stopping"))
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # worker: one size
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.one:
        torch.set_num_threads(1)
        print(json.dumps(_one(args.out, args.one, args.model)))
        return
    _store(args.out, PipelineConfig())
    load = os.getloadavg()[0]
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--one", str(n), "--model", args.model, "--out", args.out],
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in args.sizes
    ]
    for p in procs:
        row = json.loads(p.communicate()[0].strip().splitlines()[-1])
        print(json.dumps(row, indent=1))
    print(f"load average {load:.2f} -> {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
