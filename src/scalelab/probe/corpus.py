"""A corpus as documents of token ids in a model's own tokenizer: a built-in corpus name, a
text path, or a prepared token store (its split used as stored when the tokenizer matches;
decoded and re-encoded with the model's tokenizer otherwise)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import tokenizers

from scalelab.errors import ConfigError
from scalelab.probe.sample import TokenDocuments, ragged_arange

if TYPE_CHECKING:
    from scalelab.text.store import Store


@dataclass(frozen=True)
class CorpusTokens:
    """A corpus split tokenised with the model's tokenizer, and where it came from."""

    docs: TokenDocuments
    info: dict[str, Any]


def load_corpus_tokens(
    corpus: str | Path | Store,
    tok: tokenizers.Tokenizer,
    *,
    split: str = "test",
    split_seed: int = 0,
) -> CorpusTokens:
    """A token store (its folder, or opened: `text.store.Store`), a built-in corpus name or a
    text path, as documents of ids."""
    from scalelab.text.store import Store

    if isinstance(corpus, Store):
        return _store_tokens(corpus, tok, split)
    path = Path(corpus)
    if path.is_dir() and (path / "meta.json").is_file():
        return _store_tokens(path, tok, split)
    from scalelab.text.corpora import load_corpus, text_sha256
    from scalelab.text.split import split_documents

    loaded = load_corpus(corpus)
    docs = (
        list(loaded.documents)
        if split == "all"
        else split_documents(loaded.documents, seed=split_seed)[split]
    )
    texts = [d.text for d in docs]
    info = {
        "kind": "text",
        "name": loaded.name,
        "source": loaded.source,
        "license": loaded.license,
        "split": split,
        "split_seed": split_seed,
        "n_documents": len(texts),
        "text_sha256": text_sha256(texts),
    }
    return CorpusTokens(encode_texts(tok, texts), info)


def encode_texts(tok: tokenizers.Tokenizer, texts: list[str]) -> TokenDocuments:
    """Documents of ids without separators; special-token spellings in the text stay text
    (as in the token store)."""
    before = tok.encode_special_tokens
    tok.encode_special_tokens = True
    try:
        encodings = tok.encode_batch_fast(texts, add_special_tokens=False)
    finally:
        tok.encode_special_tokens = before
    return TokenDocuments.from_list([np.asarray(e.ids, dtype=np.int64) for e in encodings])


def _store_tokens(path: Path | Store, tok: tokenizers.Tokenizer, split: str) -> CorpusTokens:
    from scalelab.text.store import opened

    if split == "all":
        raise ConfigError("a token store is read one split at a time; use --split test")
    store = opened(path).split(split)
    path = store.data_dir
    lengths = np.diff(store.offsets) - 1  # each document ends with EOT
    docs = TokenDocuments(np.zeros(0, np.int64), np.zeros(1, np.int64))
    if store.n_documents:
        whole = TokenDocuments(np.asarray(store.tokens), store.offsets.astype(np.int64))
        docs = _strip_last(whole, lengths)
    store_tok = store.tokenizer()
    same = store_tok.to_str() == tok.to_str()
    if not same:  # another tokenizer made the ids: back to text, then the model's tokenizer
        texts = store_tok.decode_batch(
            [part.tolist() for part in np.split(docs.tokens, docs.offsets[1:-1])],
            skip_special_tokens=False,
        )
        docs = encode_texts(tok, texts)
    meta_bytes = (path / "meta.json").read_bytes()
    info = {
        "kind": "token-store",
        "name": store.meta.get("corpus", {}).get("name", path.name),
        "source": str(path.resolve()),
        "license": store.meta.get("corpus", {}).get("license"),
        "split": split,
        "n_documents": store.n_documents,
        "meta_sha256": hashlib.sha256(meta_bytes).hexdigest(),
        "retokenized": not same,
    }
    return CorpusTokens(docs, info)


def _strip_last(docs: TokenDocuments, lengths: np.ndarray) -> TokenDocuments:
    """Documents without their final token (the store's EOT)."""
    gather = ragged_arange(docs.offsets[:-1], lengths)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return TokenDocuments(np.asarray(docs.tokens[gather], dtype=np.int64), offsets)
