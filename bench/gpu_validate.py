"""The `gpu` validate preset's data sweep on one GPU, and d of its largest model, in one command.

What it does, in order (each step prints one line; everything lands in OUT/gpu_validate.json):
1. a corpus: every distinct `.py` file of this interpreter's stdlib and site-packages, one
   JSONL document each (deduplicated by content: vendored copies would leak into the test
   split), unless `--corpus` names another; the preset's token store (BPE 4096) from it;
2. the preset's checks (a train split smaller than the largest size is refused in one line,
   exit 2), then the plan: each run's step budget, its FLOPs (6·N·D, with the head and the
   attention scores counted) and the time they take at an assumed 10% of the H200's nominal
   790 TFLOP/s dense bf16 (`ASSUMED_MFU`; the whole sweep is sized to fit 8 minutes with
   2x margin, and still fits at 5%);
3. the reference, measured in the same run: bf16 matmul throughput of this GPU (fp32 on
   the CPU with --toy);
4. the data sweep (`scalelab.sweeps`, the pipeline's own code), then d of its largest model
   (`scalelab estimate`'s protocol on the test split, on the GPU) and the fitted alpha_D
   beside 2/(2+d);
5. per run: tokens/s, achieved TFLOP/s and its ratio to the measured matmul throughput.

Usage: python bench/gpu_validate.py [--out .bench-out/gpu_validate] [--corpus PATH]
       [--max-tokens N] [--min-tokens N]
Without CUDA it says so and exits 0 having run nothing. `--toy` runs the same code path on
the CPU at toy size (a few stdlib packages, a 1-layer model, three sizes) in seconds: the
test suite runs it (tests/test_gpu_validate.py).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import sysconfig
import time
from pathlib import Path

import torch

from scalelab.errors import ScalelabError
from scalelab.io import atomic_write_json, provenance
from scalelab.lm.stopping import StopRule
from scalelab.pipeline import steps
from scalelab.pipeline.config import PipelineConfig
from scalelab.runs.sweep import Pool
from scalelab.sweeps.schedule import Schedule

NOMINAL_BF16_FLOPS = 790e12  # H200 dense bf16 peak (NVIDIA's figure, without sparsity)
ASSUMED_MFU = 0.10  # small models (4.9M parameters) keep far below peak; sized for this
BUDGET_S = 480.0  # the data sweep must fit 8 minutes on one H200-class GPU
TOY = {
    "vocab_size": 512,
    "model": "1x32x1",
    "train_block_size": 32,
    "train_batch_size": 8,
    "train_lr": 2e-3,
    "train_min_lr": 2e-3,
    "min_tokens": 1_000,
    "max_tokens": 4_000,
    "points": 3,
    "train_eval_interval": 20,
    "train_eval_batches": 2,
    "train_test_tokens": 4_000,
    "schedule": Schedule(
        stop=StopRule(2, 0.25), max_epochs=2.0, decay_epochs=2.0, min_steps=20, step_cap=40
    ),
    "model_sweep": (),
    "id_per_doc": 64,
    "id_max_documents": 100,
    "id_batch_size": 128,
    "n_boot": 200,
}
TOY_PACKAGES = ("json", "email", "logging", "xml", "asyncio", "unittest")  # ~1.5 MB


def python_code_corpus(dest: Path, roots: list[Path]) -> Path:
    """`dest` (JSONL): one document per distinct, non-empty UTF-8 `.py` file under `roots`."""
    if dest.exists():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    seen: set[bytes] = set()
    tmp = dest.with_name(dest.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for root in roots:
            for path in sorted(root.rglob("*.py")):
                try:
                    text = path.read_text(encoding="utf-8")
                except (UnicodeDecodeError, OSError):
                    continue
                digest = hashlib.sha256(text.encode()).digest()
                if text.strip() and digest not in seen:
                    seen.add(digest)
                    f.write(json.dumps({"id": str(path), "text": text}) + "\n")
    tmp.rename(dest)
    return dest


def code_roots(toy: bool) -> list[Path]:
    paths = sysconfig.get_paths()
    stdlib = Path(paths["stdlib"])
    if toy:
        return [stdlib / name for name in TOY_PACKAGES]
    return list(dict.fromkeys(Path(paths[k]) for k in ("stdlib", "purelib", "platlib")))


def matmul_flops(device: str, dtype: torch.dtype, n: int, seconds: float) -> float:
    """FLOP/s of an n x n matmul on `device` in `dtype`: the reference of this run."""
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    a @ b
    sync()
    reps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        a @ b
        reps += 1
        if reps % 10 == 0:
            sync()
    sync()
    return 2.0 * n**3 * reps / (time.perf_counter() - start)


def plan_rows(specs: list) -> list[dict]:
    rows = []
    for s in specs:
        tokens = s.params["max_steps"] * s.tokens_per_step
        rows.append(
            {
                "run": s.name,
                "train_tokens": s.params["train_tokens"],
                "max_steps": s.params["max_steps"],
                "budget_tokens": tokens,
                "budget_flops": tokens * s.model.train_flops_per_token,
            }
        )
    return rows


def prepare(cfg: PipelineConfig, work: Path, say) -> tuple:
    """validate's first step on `work` (token store, refusals before any training), and the
    data sweep it will train."""
    from scalelab.sweeps import data as data_sweep

    t0 = time.perf_counter()
    prep = steps.prepare(work, cfg)
    meta = json.loads((prep.data_dir / "meta.json").read_text(encoding="utf-8"))
    say(
        f"token store {prep.data_dir} ({time.perf_counter() - t0:.1f} s): "
        f"{meta['splits']['train']['n_tokens']:,} train tokens, vocab {meta['vocab_size']}"
    )
    return prep, data_sweep.specs(steps.data_sweep_config(prep)), meta


def train_and_measure(prep: steps.Prepared, device: str, say) -> tuple:
    """validate's data sweep (one process: the GPU's), then d of its largest model."""
    from scalelab.probe.estimate import estimate

    t0 = time.perf_counter()
    data = steps.run_data_sweep(prep, Pool(workers=1))
    sweep_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    doc = estimate(
        data.run_dir(), None, prep.estimate, prep.out / "d-largest", device=device, quiet=True
    )
    doc = {**doc.to_dict(), "wall_s": round(time.perf_counter() - t1, 2)}
    say(f"d of the largest model: {doc['dimension']:.3f} ({doc['wall_s']:.1f} s on {device})")
    return data.ordered().reset_index().to_dict("records"), doc, sweep_s


def run(opts: argparse.Namespace, say=print) -> dict:
    """Everything but the argument parsing; returns what it writes to OUT/gpu_validate.json."""
    from scalelab.laws.fit.power_law import fit_power_law
    from scalelab.laws.theory import alpha_D

    start = time.perf_counter()
    device = "cpu" if opts.toy else "cuda"
    if opts.toy:
        torch.set_num_threads(1)  # toy sizes: a second thread only waits
    overrides = dict(TOY) if opts.toy else {}
    overrides.update({k: v for k, v in vars(opts).items() if k.endswith("_tokens") and v})
    work = opts.out / "work"
    corpus = opts.corpus or python_code_corpus(work / "python-code.jsonl", code_roots(opts.toy))
    cfg = PipelineConfig.from_preset("gpu", corpus=str(corpus), **overrides)
    prep, specs, meta = prepare(cfg, work, say)
    plan = plan_rows(specs)
    flops = sum(r["budget_flops"] for r in plan)
    estimated_s = flops / (ASSUMED_MFU * NOMINAL_BF16_FLOPS)
    say(
        f"plan: {len(plan)} runs of {cfg.model} (ctx {cfg.train.block_size}, batch "
        f"{cfg.train.batch_size}) "
        f"on {plan[0]['train_tokens']:,} ... {plan[-1]['train_tokens']:,} tokens; budgets "
        f"{flops:.3g} FLOPs = {estimated_s:.0f} s at {ASSUMED_MFU:.0%} of "
        f"{NOMINAL_BF16_FLOPS / 1e12:.0f} TFLOP/s (limit {BUDGET_S:.0f} s)"
    )
    dtype = torch.float32 if opts.toy else torch.bfloat16
    peak = matmul_flops(device, dtype, 256 if opts.toy else 8192, 0.2 if opts.toy else 3.0)
    say(f"reference: {str(dtype)[6:]} matmul on {device}: {peak / 1e12:.3f} TFLOP/s (this run)")
    runs, d_doc, sweep_s = train_and_measure(prep, device, say)
    per_token = specs[0].model.train_flops_per_token
    for r in runs:
        achieved = r["tokens_per_s"] * per_token
        r.update(achieved_tflops=achieved / 1e12, ratio_to_matmul=achieved / peak)
        say(
            f"{r['train_tokens']:>12,} tokens: test loss {r['test_loss_nats']:.4f} "
            f"({r['stop_reason']}, {r['steps']}/{r['max_steps']} steps), "
            f"{r['tokens_per_s']:,.0f} tokens/s, {achieved / 1e12:.2f} TFLOP/s = "
            f"{achieved / peak:.2f}x the matmul reference"
        )
    x = [r["train_tokens"] for r in runs]
    fit = fit_power_law(x, [r["test_loss_nats"] for r in runs], n_boot=cfg.n_boot, seed=cfg.seed)
    predicted = float(alpha_D(d_doc["dimension"]))
    lo, hi = fit.exponent_ci95
    say(
        f"alpha_D observed {fit.exponent:.4f} [{lo:.4f}, {hi:.4f}] (log-log, {len(x)} runs); "
        f"predicted 2/(2+d) = {predicted:.4f}; data sweep {sweep_s:.0f} s "
        f"({sweep_s / estimated_s:.2f}x the plan's estimate)"
    )
    result = {
        "mode": "toy" if opts.toy else "gpu",
        "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
        "config": cfg.to_dict(),
        "store": {"path": str(prep.data_dir), "splits": meta["splits"], "corpus": meta["corpus"]},
        "plan": plan,
        "assumed_mfu": ASSUMED_MFU,
        "nominal_bf16_flops": NOMINAL_BF16_FLOPS,
        "estimated_sweep_s": estimated_s,
        "reference_matmul_flops": peak,
        "flops_per_token": per_token,
        "runs": runs,
        "sweep_wall_s": sweep_s,
        "d_largest": {k: d_doc[k] for k in ("dimension", "dimension_se", "alpha_D", "wall_s")},
        "alpha_D_predicted": predicted,
        "alpha_D_observed": fit.exponent,
        "alpha_D_observed_ci95": [lo, hi],
        "wall_s": time.perf_counter() - start,
        "provenance": provenance(),
    }
    atomic_write_json(opts.out / "gpu_validate.json", result)
    say(f"wrote {opts.out / 'gpu_validate.json'} ({result['wall_s']:.0f} s in all)")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(".bench-out/gpu_validate"))
    parser.add_argument("--corpus", help="Corpus or token store (default: this Python's code).")
    parser.add_argument("--max-tokens", type=int, help="Override the preset's largest size.")
    parser.add_argument("--min-tokens", type=int, help="Override the preset's smallest size.")
    parser.add_argument("--toy", action="store_true", help="CPU, toy size: test this script.")
    opts = parser.parse_args()
    if not opts.toy and not torch.cuda.is_available():
        print(
            f"no CUDA device (torch {torch.__version__}, CUDA build {torch.version.cuda}): "
            "the GPU validation did not run. Run it on a machine with an NVIDIA GPU."
        )
        return
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        run(opts)
    except ScalelabError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
