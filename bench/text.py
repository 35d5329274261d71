"""Token-store throughput: batched encoding + vectorised assembly vs a per-document loop.

    python bench/text.py [--corpus python-stdlib] [--vocab-size 4096] [--max-chars 4000000]

Both paths produce the same token array (checked); the reference encodes one document at a
time and builds the flat array in Python, as a straightforward script would. Prints wall
and CPU seconds (the machine is shared: CPU-seconds are the steadier measure) and ratios.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from scalelab.text.corpora import load_corpus
from scalelab.text.split import split_documents
from scalelab.text.store import encode_documents
from scalelab.text.tokenizer import EOT, train_bpe


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def reference(tok, texts: list[str], eot: int) -> np.ndarray:
    flat: list[int] = []
    for text in texts:
        flat.extend(tok.encode(text, add_special_tokens=False).ids)
        flat.append(eot)
    return np.array(flat, dtype=np.uint16)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="python-stdlib")
    ap.add_argument("--vocab-size", type=int, default=4096)
    ap.add_argument("--max-chars", type=int, default=4_000_000, help="train text to encode")
    args = ap.parse_args()

    corpus, w, c = timed(lambda: load_corpus(args.corpus))
    print(
        f"load {args.corpus}: {len(corpus.documents)} documents, {corpus.n_chars / 1e6:.1f} MB "
        f"chars, {w:.2f} s wall, {c:.2f} s CPU"
    )
    train = split_documents(corpus.documents)["train"]
    texts = [d.text for d in train]
    tok, w, c = timed(lambda: train_bpe(texts, args.vocab_size))
    mb = sum(map(len, texts)) / 1e6
    print(
        f"train BPE {args.vocab_size} on {mb:.1f} MB: {w:.2f} s wall, {c:.2f} s CPU "
        f"({mb / max(c, 1e-9):.2f} MB per CPU-second)"
    )

    total, subset = 0, []
    for t in texts:
        if total >= args.max_chars:
            break
        subset.append(t)
        total += len(t)
    eot = tok.token_to_id(EOT)
    tok.encode_special_tokens = True
    ref, rw, rc = timed(lambda: reference(tok, subset, eot))
    (ours, _), ow, oc = timed(lambda: encode_documents(tok, subset, eot, np.dtype(np.uint16)))
    assert np.array_equal(ref, ours), "batched encoding differs from the reference"
    n = len(ours)
    print(
        f"encode {total / 1e6:.1f} MB ({len(subset)} documents, {n} tokens), "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"  reference per-document loop: {rw:.2f} s wall, {rc:.2f} s CPU, "
        f"{n / rw / 1e3:.0f}k tokens/s, {n / max(rc, 1e-9) / 1e3:.0f}k tokens per CPU-s"
    )
    print(
        f"  scalelab batched + numpy:    {ow:.2f} s wall, {oc:.2f} s CPU, "
        f"{n / ow / 1e3:.0f}k tokens/s, {n / max(oc, 1e-9) / 1e3:.0f}k tokens per CPU-s"
    )
    print(f"  ratio (reference / scalelab): wall {rw / ow:.2f}x, CPU {rc / max(oc, 1e-9):.2f}x")


if __name__ == "__main__":
    main()
