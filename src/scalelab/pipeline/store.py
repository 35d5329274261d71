"""Any corpus into a token store, and every check that can refuse it before training.

What `corpus prepare` takes works here: a built-in name, a text file, a folder, a JSONL or
Parquet file; a prepared token store (a folder with meta.json) is used as it is. Empty and
non-UTF-8 inputs are refused by the corpus loader; the checks below refuse a store whose
splits cannot feed the sweep or one MLE batch, each with the option that fixes it.
"""

from __future__ import annotations

import math
from pathlib import Path

from scalelab.errors import InputError
from scalelab.text.store import TokenStore


def is_token_store(corpus: str) -> bool:
    path = Path(corpus)
    return path.is_dir() and (path / "meta.json").is_file()


def prepare_data(cfg, out: Path, *, quiet: bool = True) -> Path:
    """The token store for `cfg.corpus`: the given store, or `out/data` (made once)."""
    from scalelab.text.corpora import load_corpus
    from scalelab.text.store import prepare_corpus

    if is_token_store(cfg.corpus):
        return Path(cfg.corpus).resolve()
    data_dir = out / "data"
    if not (data_dir / "meta.json").exists():
        corpus = load_corpus(
            cfg.corpus, split_on=cfg.split_on, glob=cfg.glob, text_field=cfg.text_field
        )
        prepare_corpus(corpus, data_dir, vocab_size=cfg.vocab_size, seed=0, quiet=quiet)
    return data_dir


def refuse_unreadable_corpus(cfg) -> None:
    """Read the corpus (not a store) once to refuse a missing, empty or non-UTF-8 input
    before any folder is created."""
    from scalelab.text.corpora import load_corpus

    if not is_token_store(cfg.corpus):
        load_corpus(cfg.corpus, split_on=cfg.split_on, glob=cfg.glob, text_field=cfg.text_field)


def count_id_points(data_dir: Path, cfg) -> int:
    """Points the protocol samples from the test split with the store's own tokenizer (the
    data sweep's models), without running a model."""
    from scalelab.probe.corpus import load_corpus_tokens
    from scalelab.probe.sample import sample_protocol

    store = TokenStore(data_dir, "test")
    tok = store.tokenizer()
    specials = sorted(i for i, t in tok.get_added_tokens_decoder().items() if t.special)
    tokens = load_corpus_tokens(data_dir, tok, split="test")
    docs = tokens.docs
    part = cfg.id
    if part.max_documents is not None and part.max_documents < docs.n_documents:
        return min(docs.n_documents, part.max_documents) * part.per_doc  # upper bound
    sample = sample_protocol(
        docs,
        context_len=cfg.train.block_size,
        per_doc=part.per_doc,
        seed=cfg.seed,
        special_ids=specials,
    )
    return sample.n_points


def refuse_small_store(data_dir: Path, cfg, sizes: list[int]) -> None:
    """Refuse, with the fix, a store too small for the sweep sizes, the validation/test
    windows, or one MLE batch of the test split."""
    from scalelab.sweeps.data import check_sizes

    block_size = cfg.train.block_size
    train = TokenStore(data_dir, "train").n_tokens
    for split in ("val", "test"):
        n = TokenStore(data_dir, split).n_tokens
        if n <= block_size:
            raise InputError(
                f"the {split} split has {n} tokens, not more than the context length "
                f"{block_size}: give a larger corpus (or, from Python, a smaller train.block_size)"
            )
    if sizes[-1] > train:
        raise InputError(
            f"the corpus's train split has {train:,} tokens, fewer than the largest sweep size "
            f"{sizes[-1]:,}: give a larger corpus (docs/sweeps.md#presets says which reach "
            f"which scale) or use --max-tokens {train} or less (and --min-tokens below it)"
        )
    check_sizes(sizes, train, block_size)
    model_tokens = cfg.model_sweep.train_tokens if cfg.model_sweep.models else None
    if model_tokens is not None and model_tokens > train:
        raise InputError(
            f"the corpus's train split has {train:,} tokens, fewer than the model sweep's "
            f"{model_tokens:,}: give a larger corpus (docs/sweeps.md#presets says which reach "
            "which scale) or a preset without that model sweep"
        )
    n_points = count_id_points(data_dir, cfg)
    batch = cfg.id.batch_size
    if n_points < batch:
        fix = 2 ** int(math.log2(n_points)) if n_points > 1 else 0
        hint = (
            f"use --id-batch-size {fix} (or more --id-per-doc)"
            if fix > cfg.id.k
            else "give a corpus with more test documents"
        )
        raise InputError(
            f"the test split gives {n_points} points for the intrinsic dimension but one MLE "
            f"batch needs {batch}: {hint}"
        )
