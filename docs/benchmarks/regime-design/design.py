"""A data-sweep protocol designed by power: which sizes, seeds and model the regime test needs
to say POWER LAW with >= 80% probability on an exact power law, and what that costs here.

    python docs/benchmarks/regime-design/design.py [--noise 0.005,0.01] [--out DIR]

Inputs, each measured and none taken from any corpus's exponent:
- where the fit range may start: above the learning transition at 15-24k tokens (BPE 320,
  docs/benchmarks/scaling.md#the-jump-at-1524k-tokens-one-setting-at-a-time); 25,000 here;
- the per-run noise sigma of log test loss: `--noise` (seed-to-seed sd from
  docs/benchmarks/regime-noise; the default brackets it);
- steps per training token at the top: the committed cpu-regime runs at 64,000 tokens
  (docs/benchmarks/cpu-regime/*/summary.json: steps / train_tokens, patience tail included);
- the tokens per parameter where the model stops keeping up: 2x32 at 64,000 tokens (1.6
  tokens per parameter) is model-limited by the convergence check in 2 of 6 cpu-regime
  corpora, so the design's model has at most that many tokens per parameter at its top;
- throughput: one-thread training steps/s of depth-2 models measured in this run, and their
  FLOPs per token (`GPTConfig.train_flops_per_token`); wider models by FLOPs at the
  measured FLOP rate of the widest measured.

Power: `laws.regime.power.regime_power` (the test itself, simulated, 100 draws) at exponents 0.05,
0.10 and 0.15 (the committed sweeps' range), so the design does not rest on one corpus's
slope. Power falls with the exponent: the tolerance is relative to it.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import time
from pathlib import Path

import numpy as np
import torch

from scalelab.io import atomic_write_json
from scalelab.laws.regime.power import regime_power
from scalelab.lm.config import GPTConfig
from scalelab.lm.model import GPT

START = 25_000  # tokens: above the transition
VOCAB, BLOCK, BATCH = 320, 128, 16  # the cpu-regime preset's shape
TOKENS_PER_PARAM = 1.6  # 2x32 at 64,000 tokens: model-limited in 2 of 6 corpora
EXPONENTS = (0.05, 0.10, 0.15)
H200_FLOPS = 0.10 * 790e12  # bench/gpu_validate.py's assumed 10% of nominal dense bf16


def steps_per_token() -> float:
    """Steps / train tokens of the committed cpu-regime runs at their largest size (median)."""
    ratios = []
    for path in sorted(glob.glob("docs/benchmarks/cpu-regime/*/summary.json")):
        top = max(json.loads(Path(path).read_text())["runs"], key=lambda r: r["train_tokens"])
        ratios.append(top["steps"] / top["train_tokens"])
    return float(np.median(ratios))


def throughput(widths: tuple[int, ...]) -> dict[int, float]:
    """One-thread training steps/s of 2 x width models at the preset's shape."""
    torch.manual_seed(0)
    out = {}
    for width in widths:
        cfg = GPTConfig(vocab_size=VOCAB, block_size=BLOCK, n_layer=2, n_head=4, n_embd=width)
        model = GPT(cfg)
        opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
        x = torch.randint(0, VOCAB, (BATCH, BLOCK))
        for i in range(25):
            if i == 5:
                start = time.perf_counter()
            _, loss = model(x, x)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        out[width] = 20 / (time.perf_counter() - start)
    return out


def model_for(top_tokens: float) -> GPTConfig:
    """The narrowest depth-2 model (width a multiple of 32) with >= top / TOKENS_PER_PARAM
    parameters."""
    width = 32
    while True:
        cfg = GPTConfig(vocab_size=VOCAB, block_size=BLOCK, n_layer=2, n_head=4, n_embd=width)
        if GPT(cfg).num_params(non_embedding=False) >= top_tokens / TOKENS_PER_PARAM:
            return cfg
        width += 32


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--noise", default="0.0015,0.005,0.0075,0.01")
    ap.add_argument("--out", default="docs/benchmarks/regime-design")
    args = ap.parse_args()
    torch.set_num_threads(1)
    load = os.getloadavg()
    spt = steps_per_token()
    rates = throughput((32, 64, 128))
    flop_rate = max(
        r
        * BATCH
        * BLOCK
        * GPTConfig(
            vocab_size=VOCAB, block_size=BLOCK, n_layer=2, n_head=4, n_embd=w
        ).train_flops_per_token
        for w, r in rates.items()
    )
    rows = []
    for noise in (float(s) for s in args.noise.split(",")):
        for decades in (1.5, 2.0):
            for sizes in (5, 9):
                for seeds in (1, 2, 3):
                    grid = np.geomspace(START, START * 10**decades, sizes)
                    power = {
                        f"{a:.2f}": regime_power(grid, seeds, a, noise, n_sim=100).power
                        for a in EXPONENTS
                    }
                    cfg = model_for(grid[-1])
                    params = GPT(cfg).num_params(non_embedding=False)
                    flops = sum(spt * n * BATCH * BLOCK * cfg.train_flops_per_token for n in grid)
                    # + the convergence check: the top run at twice the width (about 4x)
                    flops = seeds * flops + 4 * spt * grid[-1] * BATCH * BLOCK * (
                        cfg.train_flops_per_token
                    )
                    rows.append(
                        {
                            "noise": noise,
                            "decades": decades,
                            "sizes": sizes,
                            "seeds": seeds,
                            "power": power,
                            "top_tokens": int(grid[-1]),
                            "model": f"2x{cfg.n_embd}",
                            "params": params,
                            "cpu_hours_2cores": flops / flop_rate / 3600 / 2,
                            "h200_minutes": flops / H200_FLOPS / 60,
                        }
                    )
    result = {
        "load_average": load,
        "steps_per_token": spt,
        "one_thread_steps_per_s": rates,
        "flop_rate_one_thread": flop_rate,
        "start_tokens": START,
        "tokens_per_param": TOKENS_PER_PARAM,
        "rows": rows,
    }
    atomic_write_json(Path(args.out) / "design.json", result)
    print(
        f"load {load[0]:.2f}; steps/token at the top {spt:.3f}; "
        f"one-thread steps/s { ({w: round(r, 1) for w, r in rates.items()}) }"
    )
    alphas = " / ".join(f"{a:.2f}" for a in EXPONENTS)
    print(
        f"| sigma | decades | sizes | seeds | power at alpha {alphas} | top tokens | model "
        "| 2-core hours | H200 min |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        power = " / ".join(f"{p:.2f}" for p in r["power"].values())
        print(
            f"| {r['noise']} | {r['decades']} | {r['sizes']} | {r['seeds']} | {power} | "
            f"{r['top_tokens']:,} | {r['model']} | {r['cpu_hours_2cores']:.0f} | "
            f"{r['h200_minutes']:.1f} |"
        )


if __name__ == "__main__":
    main()
