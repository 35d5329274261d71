"""Reference levels of a token store's test split that a scaling fit is read against: the
unigram entropy (where the fit range starts) and, for the synthetic facts family, the
generator's exact floor per token of the store's own tokenizer (the E of L − E)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from scalelab.errors import InputError
from scalelab.text import synth
from scalelab.text.store import Store, opened
from scalelab.text.synth_theory import FactsTheory


def unigram_entropy(tokens: np.ndarray) -> float:
    """Entropy (nats/token) of the tokens' own unigram frequencies: the lowest test loss
    any model that ignores context can reach on exactly these tokens."""
    counts = np.bincount(np.asarray(tokens, dtype=np.int64))
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


def scored_test_tokens(
    data_dir: str | Path | Store, block_size: int | None = None, test_tokens: int | None = None
) -> np.ndarray:
    """The test-split targets a run's test loss scores: the non-overlapping windows of
    `block_size` from the split's start (`lm.data.tiling_starts`, at most `test_tokens`
    targets), each window scoring the `block_size` tokens after its first. Without a
    `block_size`: the whole split."""
    tokens = opened(data_dir).split("test").tokens
    if block_size is None:
        return np.asarray(tokens)
    if block_size < 1 or len(tokens) < block_size + 1:
        raise InputError(
            f"the test split has {len(tokens)} tokens, too few for context length "
            f"{block_size}; give the context length the runs used"
        )
    usable = len(tokens) - 1 if test_tokens is None else min(len(tokens) - 1, test_tokens)
    n_windows = max(usable // block_size, 1)
    return np.asarray(tokens[1 : n_windows * block_size + 1])


def store_unigram_entropy(
    data_dir: str | Path | Store, block_size: int | None = None, test_tokens: int | None = None
) -> float:
    """`unigram_entropy` of the test tokens a sweep's runs are scored on."""
    return unigram_entropy(scored_test_tokens(data_dir, block_size, test_tokens))


def facts_store_theory(data_dir: str | Path | Store) -> FactsTheory:
    """The ideal learner of a facts store with the store's own tokens per fact.

    The key law's entropy is the only uncertainty in a fact (the value, separators and
    end-of-text follow from the key, and a byte-level BPE spells distinct keys differently),
    so the floor per token is `facts × H(key) / tokens` over the test split, with the
    tokens the store's tokenizer actually made (a word may be several tokens). It is the
    floor of an unbounded context: a run scoring windows also loses the fact cut at each
    window start, which this leaves out (docs/fitting.md)."""
    store = opened(data_dir).split("test")
    spec = str(store.meta.get("corpus", {}).get("source", ""))
    if not spec.startswith(synth.PREFIX + "facts"):
        raise InputError(
            f"{store.data_dir} holds corpus {spec or '?'!r}, not a synthetic facts corpus; "
            "the exact floor is known only for synth:facts stores"
        )
    cfg = synth.parse_spec(spec)
    n_facts = store.n_documents * cfg.facts_per_doc
    return dataclasses.replace(cfg.theory(), tokens_per_fact=store.n_tokens / n_facts)


#: Where the floor E comes from when the store is not a facts corpus.
FITTED_FLOOR = "the power+E fit over the fitted range"


def facts_floor(
    data_dir: str | Path | Store,
) -> tuple[float | None, str, FactsTheory | None]:
    """The floor E of the store's test loss, where it comes from, and the ideal learner: the
    exact floor of a facts store (`facts_store_theory`), or (None, `FITTED_FLOOR`, None)
    for any other store, whose E the power+E fit gives. The one place both `validate` and
    `scalelab fit --store` read it."""
    try:
        theory = facts_store_theory(data_dir)
    except InputError:
        return None, FITTED_FLOOR, None
    where = "exact: the facts generator's floor per token of this store's tokens"
    return theory.irreducible_nats_per_token, where, theory
