"""Training-engine benchmark: scalelab's trainer against a plain fp32 eager GPT of identical
shape, measured in the same run on the same batches from the same initial weights.

Prints, per preset (small, medium): tokens/s and tokens per CPU-second of both, their ratio
(target >= 1.5x), the mean training loss of both over the same tokens (must agree), and
model-FLOPs utilisation against this machine's matmul throughput measured here too. Then a
longer fp32-vs-bf16 loss curve of the real trainer (the check behind `dtype="auto"`).

    python bench/train.py                  # quick default (a few minutes on 2 quiet cores)
    python bench/train.py --steps 30 --curve-steps 400 --threads 2
    python bench/train.py --plot-run RUN_DIR --plot-out curve.png   # a run's loss curve
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from scalelab.lm.config import GPTConfig, TrainConfig, lr_at, preset_config
from scalelab.lm.data import WindowSampler, spaced_starts, windows
from scalelab.lm.model import GPT
from scalelab.lm.train import train
from scalelab.text.corpora import load_corpus
from scalelab.text.store import TokenStore, prepare_corpus


class PlainAttention(nn.Module):
    """Textbook causal attention: explicit scores, mask, softmax (no fused kernel)."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.n_head = cfg.n_head
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd, bias=cfg.bias)
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=cfg.bias)
        mask = torch.tril(torch.ones(cfg.block_size, cfg.block_size, dtype=torch.bool))
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        att = att.masked_fill(~self.mask[:t, :t], float("-inf")).softmax(dim=-1)
        return self.c_proj((att @ v).transpose(1, 2).contiguous().view(b, t, c))


class PlainBlock(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.attn = PlainAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.mlp = nn.ModuleDict(
            {
                "c_fc": nn.Linear(cfg.n_embd, 4 * cfg.n_embd, bias=cfg.bias),
                "c_proj": nn.Linear(4 * cfg.n_embd, cfg.n_embd, bias=cfg.bias),
            }
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp["c_proj"](F.gelu(self.mlp["c_fc"](self.ln_2(x))))


class PlainGPT(nn.Module):
    """The reference: same parameters and names as `scalelab.lm.model.GPT`, plain fp32 eager."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.config = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.blocks = nn.ModuleList(PlainBlock(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


def matmul_peak(dtype: torch.dtype, n: int = 1024, seconds: float = 2.0) -> tuple[float, float]:
    """GFLOP/s of an n x n matmul in `dtype` per wall second and per CPU second (the machine's
    practical peak; the CPU-second figure holds up when other processes load the machine)."""
    a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
    a @ b
    reps, start, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        a @ b
        reps += 1
    flops = 2 * n**3 * reps / 1e9
    return flops / (time.perf_counter() - start), flops / (time.process_time() - cpu)


def plain_run(cfg: GPTConfig, tcfg: TrainConfig, train_tokens, val_tokens) -> dict:
    """The reference loop: same init, batches, schedule, clipping; fp32, unfused AdamW."""
    model = PlainGPT(cfg)
    model.load_state_dict(GPT(cfg, seed=tcfg.seed).state_dict(), strict=False)
    params = list(model.parameters())
    opt = torch.optim.AdamW(
        [
            {"params": [p for p in params if p.ndim >= 2], "weight_decay": tcfg.weight_decay},
            {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0},
        ],
        lr=tcfg.lr,
        betas=(tcfg.beta1, tcfg.beta2),
        foreach=False,
    )
    sampler = WindowSampler(train_tokens, cfg.block_size, seed=tcfg.seed)
    losses, wall, cpu = [], 0.0, 0.0
    for step in range(tcfg.max_steps):
        t0, c0 = time.perf_counter(), time.process_time()
        for g in opt.param_groups:
            g["lr"] = lr_at(step, tcfg, tcfg.max_steps)
        x, y = sampler.sample(tcfg.batch_size)
        loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, tcfg.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        wall += time.perf_counter() - t0
        cpu += time.process_time() - c0
    starts = spaced_starts(len(val_tokens), cfg.block_size, tcfg.eval_batches * tcfg.batch_size)
    with torch.no_grad():
        val = [model(*windows(val_tokens, starts[i : i + 8], cfg.block_size)).item()
               for i in range(0, len(starts), 8)]  # fmt: skip
    tokens = tcfg.max_steps * tcfg.batch_size * cfg.block_size
    return {
        "tokens_per_s": tokens / wall,
        "tokens_per_cpu_s": tokens / cpu,
        "train_loss": sum(losses) / len(losses),
        "val_loss": sum(val) / len(val),
    }


def ours_run(cfg: GPTConfig, tcfg: TrainConfig, data: Path, out: Path) -> dict:
    r = quiet_train(cfg, tcfg, data, out)
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return {
        "tokens_per_s": r["tokens_per_s"],
        "tokens_per_cpu_s": r["tokens_per_cpu_s"],
        "train_loss": rows[-1]["train_loss_nats"],
        "val_loss": rows[-1]["val_loss_nats"],
        "dtype": r["dtype"],
    }


def store_dir(cache: Path) -> Path:
    """A shakespeare token store (BPE 4096), prepared once and cached."""
    out = cache / "shakespeare-4096"
    if not (out / "meta.json").exists():
        prepare_corpus(load_corpus("shakespeare"), out, vocab_size=4096, quiet=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=12, help="timed steps per model")
    ap.add_argument("--presets", default="small,medium")
    ap.add_argument("--curve-steps", type=int, default=200, help="0 to skip the bf16 curve")
    ap.add_argument(
        "--threads", type=int, default=1, help="torch threads (1: robust on a busy box)"
    )
    ap.add_argument("--cache", type=Path, default=Path(".bench-out"))
    ap.add_argument("--plot-run", type=Path, help="plot this run folder's curve and stop")
    ap.add_argument("--plot-out", type=Path, default=Path("curve.png"))
    args = ap.parse_args()
    if args.plot_run:
        plot_run(args.plot_run, args.plot_out)
        return
    torch.set_num_threads(args.threads)
    data = store_dir(args.cache)
    train_tokens, val_tokens = TokenStore(data, "train").tokens, TokenStore(data, "val").tokens
    vocab = TokenStore(data, "train").vocab_size
    print(f"threads {args.threads}; MFU = model FLOPs (6N + 12LTd per token) / matmul peak "
          "of the engine's dtype, per wall second and per CPU second")  # fmt: skip
    print(f"{'preset':8} {'engine':18} {'tok/s':>7} {'tok/cpu-s':>9} {'train':>8} {'val':>8} "
          f"{'MFU':>6} {'MFU-cpu':>7}")  # fmt: skip
    ratios, cpu_ratios = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.presets.split(","):
            cfg = preset_config(name, vocab)
            tcfg = TrainConfig(
                batch_size=8, max_steps=args.steps, warmup_steps=args.steps // 2,
                eval_interval=args.steps, eval_batches=2, test_tokens=cfg.block_size, lr=1e-3,
            )  # fmt: skip
            fpt = cfg.train_flops_per_token
            # Peaks measured beside each pair of runs: the machine's load drifts.
            peaks = {"float32": matmul_peak(torch.float32)}
            plain = plain_run(cfg, tcfg, train_tokens, val_tokens)
            ours = ours_run(cfg, tcfg, data, Path(tmp) / name)
            # The same engine in fp32 separates the bf16 gain from SDPA + fused AdamW.
            ours32 = ours_run(cfg, tcfg.replace(dtype="float32"), data, Path(tmp) / f"{name}32")
            peaks["bfloat16"] = matmul_peak(torch.bfloat16)
            for label, r, dt in (("plain fp32", plain, "float32"),
                                 ("scalelab float32", ours32, "float32"),
                                 (f"scalelab {ours['dtype']}", ours, ours["dtype"])):  # fmt: skip
                mfu = fpt * r["tokens_per_s"] / (peaks[dt][0] * 1e9)
                mfu_cpu = fpt * r["tokens_per_cpu_s"] / (peaks[dt][1] * 1e9)
                speed = f"{r['tokens_per_s']:7.0f} {r['tokens_per_cpu_s']:9.0f}"
                loss = f"{r['train_loss']:8.5f} {r['val_loss']:8.5f}"
                print(f"{name:8} {label:18} {speed} {loss} {mfu:6.1%} {mfu_cpu:7.1%}")
            ratios.append(ours["tokens_per_s"] / plain["tokens_per_s"])
            cpu_ratios.append(ours["tokens_per_cpu_s"] / plain["tokens_per_cpu_s"])
            dloss = ours["train_loss"] / plain["train_loss"] - 1
            bf16_gain = ours["tokens_per_cpu_s"] / ours32["tokens_per_cpu_s"]
            print(f"{name:8} of which bf16 autocast {bf16_gain:.2f}x per CPU second "
                  f"(scalelab fp32 vs plain: "
                  f"{ours32['tokens_per_cpu_s'] / plain['tokens_per_cpu_s']:.2f}x)")  # fmt: skip
            print(f"{name:8} speed-up {ratios[-1]:.2f}x wall, {cpu_ratios[-1]:.2f}x per CPU "
                  f"second; train-loss difference {dloss:+.3%} after {args.steps} steps; "
                  f"matmul GFLOP/s per CPU-s fp32 {peaks['float32'][1]:.0f}, "
                  f"bf16 {peaks['bfloat16'][1]:.0f}")  # fmt: skip
        if args.curve_steps:
            curve(data, vocab, args.curve_steps, Path(tmp))
    met = min(cpu_ratios) >= 1.5
    print(f"target >= 1.5x per CPU second: {'met' if met else 'NOT met'} "
          f"(min {min(cpu_ratios):.2f}x; wall min {min(ratios):.2f}x)")  # fmt: skip


def curve(data: Path, vocab: int, steps: int, tmp: Path) -> None:
    """fp32 vs bf16 autocast validation-loss curves of the real trainer (tiny preset)."""
    cfg = preset_config("tiny", vocab)
    every = max(steps // 5, 1)
    curves = {}
    for dtype in ("float32", "bfloat16"):
        tcfg = TrainConfig(batch_size=16, lr=2e-3, min_lr=2e-4, warmup_steps=steps // 10,
                           max_steps=steps, eval_interval=every, eval_batches=8,
                           test_tokens=cfg.block_size, dtype=dtype)  # fmt: skip
        r = quiet_train(cfg, tcfg, data, tmp / f"curve-{dtype}")
        rows = (tmp / f"curve-{dtype}" / "metrics.jsonl").read_text().splitlines()
        vals = [json.loads(x)["val_loss_nats"] for x in rows]
        curves[dtype] = (vals, r["tokens_per_s"], r["tokens_per_cpu_s"], r["test_loss_nats"])
    print(f"tiny, {steps} steps: val loss at steps {list(range(every, steps + 1, every))}")
    for dtype, (vals, tps, tpc, test) in curves.items():
        print(f"  {dtype:9} {' '.join(f'{v:.4f}' for v in vals)}  test {test:.4f}  "
              f"({tps:.0f} tok/s, {tpc:.0f} tok/cpu-s)")  # fmt: skip
    diff = max(abs(a - b) for a, b in zip(*(c[0] for c in curves.values()), strict=True))
    f32, b16 = curves["float32"], curves["bfloat16"]
    print(f"  max |bf16 - fp32| val = {diff:.4f} nats; bf16 speed-up {b16[1] / f32[1]:.2f}x wall, "
          f"{b16[2] / f32[2]:.2f}x per CPU second")  # fmt: skip


def quiet_train(cfg: GPTConfig, tcfg: TrainConfig, data: Path, out: Path) -> dict:
    """The real trainer with its log lines swallowed (the bench prints its own table)."""
    with contextlib.redirect_stderr(io.StringIO()):
        return train(cfg, tcfg, data, out, quiet=True)


def plot_run(run: Path, out: Path) -> None:
    """Training and validation loss against tokens, with the run's unigram baseline."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    res = json.loads((run / "result.json").read_text())
    tokens = [r["tokens"] / 1e3 for r in rows]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.plot(
        tokens, [r["train_loss_nats"] for r in rows], "o-", label="train (mean since last eval)"
    )
    ax.plot(tokens, [r["val_loss_nats"] for r in rows], "s-", label="validation")
    ax.axhline(res["unigram_val_loss_nats"], color="gray", ls="--", label="unigram model (val)")
    ax.set_xlabel("training tokens (thousands)")
    ax.set_ylabel("loss (nats/token)")
    m = res["model"]
    ax.set_title(f"{m['n_layer']}x{m['n_embd']} GPT, {res['params'] / 1e6:.1f}M params")
    ax.legend()
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    sys.exit(main())
