"""The split: a function of (seed, text) per document, nested as the corpus grows."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from scalelab.errors import ConfigError
from scalelab.text.corpora import Document
from scalelab.text.split import split_documents

DOCS = [Document(f"d{i}", f"document number {i} " * (1 + i % 7)) for i in range(3000)]


def _names(split: dict[str, list[Document]]) -> dict[str, list[str]]:
    return {k: [d.name for d in v] for k, v in split.items()}


def test_split_matches_the_documented_hash_rule() -> None:
    split = _names(split_documents(DOCS, seed=7, val_fraction=0.2, test_fraction=0.1))
    for doc in DOCS[:200]:
        digest = hashlib.sha256(f"scalelab-split:7:{doc.text}".encode()).digest()
        u = (int.from_bytes(digest[:8], "big") >> 11) / 2**53
        expected = "test" if u < 0.1 else "val" if u < 0.3 else "train"
        assert doc.name in split[expected]
    # train order is by the second 8 bytes of the digest
    rank = {
        d.name: int.from_bytes(hashlib.sha256(f"scalelab-split:7:{d.text}".encode()).digest()[8:16])
        for d in DOCS
    }
    train_ranks = [rank[n] for n in split["train"]]
    assert train_ranks == sorted(train_ranks)


def test_split_is_deterministic_order_free_and_seeded() -> None:
    a = _names(split_documents(DOCS, seed=0))
    assert a == _names(split_documents(DOCS, seed=0))
    shuffled = [DOCS[i] for i in np.random.default_rng(1).permutation(len(DOCS))]
    assert a == _names(split_documents(shuffled, seed=0))
    b = _names(split_documents(DOCS, seed=1))
    assert a["test"] != b["test"]
    assert sorted(a["train"] + a["val"] + a["test"]) == sorted(d.name for d in DOCS)
    # fractions: binomial, 3000 documents, tolerance ≈ 5 standard deviations
    assert abs(len(a["test"]) / 3000 - 0.1) < 5 * (0.1 * 0.9 / 3000) ** 0.5
    assert abs(len(a["val"]) / 3000 - 0.05) < 5 * (0.05 * 0.95 / 3000) ** 0.5


def test_split_is_nested_as_the_corpus_grows() -> None:
    small = _names(split_documents(DOCS[:1000], seed=3))
    large = _names(split_documents(DOCS, seed=3))
    for name in ("val", "test"):
        assert set(small[name]) == set(large[name]) & {d.name for d in DOCS[:1000]}
    # the small corpus's train order is the large one's with the new documents removed
    old = {d.name for d in DOCS[:1000]}
    assert small["train"] == [n for n in large["train"] if n in old]


def test_duplicates_share_a_split() -> None:
    docs = [Document("a", "same text"), Document("b", "same text"), *DOCS[:50]]
    split = _names(split_documents(docs, seed=0))
    (where,) = [k for k, v in split.items() if "a" in v]
    assert "b" in split[where]


@pytest.mark.parametrize(("val", "test"), [(0.0, 0.1), (0.1, 1.0), (0.5, 0.5), (-0.1, 0.1)])
def test_bad_fractions_are_refused(val: float, test: float) -> None:
    with pytest.raises(ConfigError, match="fraction"):
        split_documents(DOCS[:10], val_fraction=val, test_fraction=test)
