"""Training throughput of each validate preset's data-sweep model against this CPU's own
matmul rate, measured in the same run.

Every token a CPU-minute trains extends the range a 25-minute protocol can sweep, so this is
the budget of `--preset cpu-regime`. Per preset: the real trainer (one thread, as each of a
sweep's two workers runs) on the preset's own model, vocabulary and batch; tokens per second
and per CPU second; model FLOP/s (6N + 12LTd per token) against two matmul rates measured
here: a 1024² square matmul (the machine's practical peak) and the model's own largest matmul
shape (batch·context × width × 4·width, what its layers can reach at best). Then where a step's
CPU time goes (torch's profiler, top operators by self time).

    python bench/presets.py                       # cpu-regime and the demo's defaults
    python bench/presets.py --presets cpu-regime,cpu-hour --steps 300
    SCALELAB_CPU_BF16=0 python bench/presets.py   # the float32 path, as on AVX2-only CPUs
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import tempfile
import time
from pathlib import Path

import torch

from scalelab.lm.model import GPT, GPTConfig
from scalelab.lm.stopping import StopRule
from scalelab.lm.train import train
from scalelab.pipeline.config import PipelineConfig
from scalelab.pipeline.steps import base_configs
from scalelab.text.corpora import load_corpus
from scalelab.text.store import prepare_corpus


def matmul_rate(m: int, k: int, n: int, seconds: float = 1.5) -> float:
    """GFLOP/s per CPU second of an (m×k)·(k×n) float32 matmul on this thread count."""
    a, b = torch.randn(m, k), torch.randn(k, n)
    a @ b
    reps, start, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        a @ b
        reps += 1
    return 2 * m * k * n * reps / 1e9 / (time.process_time() - cpu)


def store(cache: Path, vocab: int) -> Path:
    out = cache / f"shakespeare-{vocab}"
    if not (out / "meta.json").exists():
        prepare_corpus(load_corpus("shakespeare"), out, vocab_size=vocab, quiet=True)
    return out


def profile_top(model_cfg: GPTConfig, batch: int, steps: int = 10, top: int = 6) -> str:
    """The operators that take most of a training step's CPU time, as shares."""
    model = GPT(model_cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randint(0, model_cfg.vocab_size, (batch, model_cfg.block_size + 1))
    for _ in range(3):
        model(x[:, :-1], x[:, 1:])[1].backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            model(x[:, :-1], x[:, 1:])[1].backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
    events = [e for e in prof.key_averages() if e.self_cpu_time_total > 0]
    total = sum(e.self_cpu_time_total for e in events)
    events.sort(key=lambda e: -e.self_cpu_time_total)
    return ", ".join(f"{e.key} {e.self_cpu_time_total / total:.0%}" for e in events[:top])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", default="cpu-regime,demo", help="preset names; demo: defaults")
    ap.add_argument("--steps", type=int, default=200, help="timed training steps per preset")
    ap.add_argument("--cache", type=Path, default=Path(".bench-out"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; one torch thread")
    square = matmul_rate(1024, 1024, 1024)
    print(f"matmul 1024x1024x1024 float32: {square:.1f} GFLOP/s per CPU second")
    for name in args.presets.split(","):
        cfg = PipelineConfig() if name == "demo" else PipelineConfig.from_preset(name)
        data = store(args.cache, cfg.vocab_size)
        model_cfg, train_cfg = base_configs(cfg, data)
        tcfg = train_cfg.replace(
            max_steps=args.steps, eval_interval=args.steps, stop=StopRule(), test_tokens=1024
        )
        with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stderr(io.StringIO()):
            r = train(model_cfg, tcfg, data, Path(tmp) / "run", quiet=True)
        rows = tcfg.batch_size * model_cfg.block_size
        own = matmul_rate(rows, model_cfg.n_embd, 4 * model_cfg.n_embd)
        achieved = model_cfg.train_flops_per_token * r.tokens_per_cpu_s / 1e9
        print(
            f"{name:11} {cfg.model} vocab {cfg.vocab_size} batch {tcfg.batch_size}x"
            f"{model_cfg.block_size} ({r['dtype']}): {r['tokens_per_s']:,.0f} tokens/s, "
            f"{r['tokens_per_cpu_s']:,.0f} per CPU-s; {achieved:.2f} GFLOP/s per CPU-s = "
            f"{achieved / square:.1%} of the square matmul, {achieved / own:.1%} of its own "
            f"largest matmul shape {rows}x{model_cfg.n_embd}x{4 * model_cfg.n_embd} "
            f"({own:.1f} GFLOP/s)"
        )
        print(f"{'':11} CPU time by operator: {profile_top(model_cfg, tcfg.batch_size)}")


if __name__ == "__main__":
    main()
