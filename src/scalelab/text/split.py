"""Deterministic train/validation/test split by document, for nested data-size sweeps.

Each document's split and rank come from sha256(seed, text) alone, so:
- the split of a document never depends on the other documents (adding text to the corpus
  never moves a test document, and exact duplicates always land in the same split);
- the train documents are ordered by their rank (a seeded shuffle), so the first n train
  tokens are always a subset of the first m > n: data-size sweeps use nested prefixes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from scalelab.errors import ConfigError
from scalelab.text.corpora import Document

SPLITS = ("train", "val", "test")


def _check_fractions(val_fraction: float, test_fraction: float) -> None:
    for name, f in (("val_fraction", val_fraction), ("test_fraction", test_fraction)):
        if not 0.0 < f < 1.0:
            raise ConfigError(f"{name} must be in (0, 1), not {f}; try 0.05")
    if val_fraction + test_fraction >= 1.0:
        raise ConfigError(
            f"val_fraction + test_fraction = {val_fraction + test_fraction} leaves no training "
            "data; keep their sum below 1 (e.g. 0.05 and 0.1)"
        )


def document_keys(docs: Sequence[Document], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Per document: a uniform number in [0, 1) that picks the split, and a uint64 rank."""
    prefix = f"scalelab-split:{int(seed)}:".encode()
    digests = b"".join(hashlib.sha256(prefix + d.text.encode("utf-8")).digest() for d in docs)
    words = np.frombuffer(digests, dtype=">u8").reshape(len(docs), 4).astype(np.uint64)
    uniform = (words[:, 0] >> np.uint64(11)).astype(np.float64) / float(1 << 53)
    return uniform, words[:, 1]


def split_documents(
    docs: Sequence[Document],
    *,
    seed: int = 0,
    val_fraction: float = 0.05,
    test_fraction: float = 0.1,
) -> dict[str, list[Document]]:
    """{"train", "val", "test"}: lists of documents, each in seeded (hash-rank) order.

    A document goes to test when its uniform key is below `test_fraction`, to val when it is
    below `test_fraction + val_fraction`, else to train.
    """
    _check_fractions(val_fraction, test_fraction)
    if not docs:
        return {s: [] for s in SPLITS}
    uniform, rank = document_keys(docs, seed)
    # 0 = train, 1 = val, 2 = test (the order of SPLITS)
    which = np.where(uniform < test_fraction, 2, (uniform < test_fraction + val_fraction) * 1)
    order = np.lexsort((np.arange(len(docs)), rank))  # by rank; ties (duplicates) by position
    return {split: [docs[i] for i in order[which[order] == k]] for k, split in enumerate(SPLITS)}
