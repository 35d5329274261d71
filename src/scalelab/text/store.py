"""Token stores: a corpus split, tokenised once, as flat memory-mapped arrays.

Layout of a store folder (written to a temporary folder and renamed into place, so a
folder with `meta.json` is always complete):

    tokenizer.json          the tokenizer that made the ids
    meta.json               corpus (name, license, source, sha256), tokenizer, vocab size,
                            dtype, split rule and per-split counts and text hashes
    <split>.bin             the split's documents' tokens, each document followed by EOT
    <split>.offsets.npy     int64, n_documents + 1: document i (with its EOT) is
                            tokens[offsets[i]:offsets[i+1]]
    <split>.names.json      the documents' names, in store order

for split in train/val/test. Ids are uint16 when the vocabulary fits, else uint32.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from scalelab.config import Config, option
from scalelab.errors import ConfigError, InputError
from scalelab.io import atomic_write_json, provenance, read_json
from scalelab.progress import progress
from scalelab.runs import outdir
from scalelab.text.corpora import BLANK_LINES, Corpus, Document, text_sha256
from scalelab.text.split import SPLITS, split_documents
from scalelab.text.tokenizer import MIN_VOCAB_SIZE, eot_id, load_tokenizer, train_bpe

FORMAT = "scalelab-token-store/1"
#: Characters per encode_batch call: large enough to use the Rust threads, small enough
#: for a smooth progress bar and bounded memory.
CHUNK_CHARS = 1 << 20


@dataclasses.dataclass(frozen=True)
class PrepareConfig(Config):
    """How `scalelab corpus prepare` turns a corpus into a token store: how a path's files
    are read as documents (`load_corpus`), the tokenizer and the split (`prepare_corpus`)."""

    split_on: str = option(
        "blank", "Text files: documents end at 'blank' lines, or one per 'line'."
    )
    glob: str = option("**/*.txt", "Directories: files to read.")
    text_field: str = option("text", "JSONL field / Parquet column holding the text.")
    vocab_size: int = option(
        4096, "BPE vocabulary size, including <|endoftext|> (256 bytes + 1 at least)."
    )
    tokenizer: str | None = option(
        None,
        "Use this tokenizer.json, HF tokenizer folder or vocab.json+merges.txt folder instead of "
        "training a BPE (--vocab-size is then ignored).",
    )
    seed: int = option(0, "Random seed (recorded with the results).")
    val_fraction: float = option(0.05, "Share of documents for validation.")
    test_fraction: float = option(0.1, "Share of documents for test (fixed as train grows).")

    def validate(self) -> None:
        if self.split_on not in ("blank", "line"):
            raise ConfigError(f"split_on must be one of blank, line, got {self.split_on!r}")
        if not isinstance(self.vocab_size, int) or self.vocab_size < MIN_VOCAB_SIZE:
            raise ConfigError(
                f"vocab_size {self.vocab_size}: a byte-level BPE needs at least "
                f"{MIN_VOCAB_SIZE} tokens (256 bytes + end of text); give {MIN_VOCAB_SIZE} or more"
            )
        split_documents((), val_fraction=self.val_fraction, test_fraction=self.test_fraction)


def _chunks(docs: Sequence[Document]) -> Iterator[Sequence[Document]]:
    start, size = 0, 0
    for i, doc in enumerate(docs):
        size += len(doc.text)
        if size >= CHUNK_CHARS:
            yield docs[start : i + 1]
            start, size = i + 1, 0
    if start < len(docs):
        yield docs[start:]


def encode_documents(
    tok: Tokenizer, texts: Sequence[str], eot: int, dtype: np.dtype
) -> tuple[np.ndarray, np.ndarray]:
    """(tokens with EOT after each text, per-text token counts without the EOT)."""
    encodings = tok.encode_batch_fast(list(texts), add_special_tokens=False)
    ids = [np.asarray(e.ids, dtype=dtype) for e in encodings]
    lengths = np.array([len(a) for a in ids], dtype=np.int64)
    flat = np.concatenate(ids) if ids else np.empty(0, dtype)
    return np.insert(flat, np.cumsum(lengths), eot), lengths


def _write_split(
    tok: Tokenizer,
    docs: Sequence[Document],
    eot: int,
    dtype: np.dtype,
    folder: Path,
    split: str,
    advance: Callable[..., None],
) -> dict[str, Any]:
    counts = []
    with open(folder / f"{split}.bin", "wb") as f:
        for chunk in _chunks(docs):
            tokens, lengths = encode_documents(tok, [d.text for d in chunk], eot, dtype)
            f.write(tokens.tobytes())
            counts.append(lengths + 1)
            advance(sum(len(d.text) for d in chunk), info=split)
        f.flush()
        os.fsync(f.fileno())
    offsets = np.concatenate([[0], np.cumsum(np.concatenate(counts))]).astype(np.int64)
    np.save(folder / f"{split}.offsets.npy", offsets)
    atomic_write_json(folder / f"{split}.names.json", [d.name for d in docs])
    return {
        "n_documents": len(docs),
        "n_tokens": int(offsets[-1]),
        "n_chars": sum(len(d.text) for d in docs),
        "sha256": text_sha256(d.text for d in docs),
        "tokens_file": f"{split}.bin",
        "offsets_file": f"{split}.offsets.npy",
        "names_file": f"{split}.names.json",
    }


def _resolve_tokenizer(tokenizer: str | Path | Tokenizer | None) -> tuple[Tokenizer | None, str]:
    if tokenizer is None:
        return None, "trained on the train split"
    if isinstance(tokenizer, Tokenizer):
        return tokenizer, "given in memory"
    return load_tokenizer(tokenizer), str(Path(tokenizer).resolve())


def _tokenizer_sha256(tok: Tokenizer | None) -> str | None:
    return None if tok is None else hashlib.sha256(tok.to_str().encode()).hexdigest()


def _check_existing(out: Path, request: dict[str, Any]) -> bool:
    """True when `out` already holds this exact store; raise if it holds anything else."""
    if not out.exists() or (out.is_dir() and not any(out.iterdir())):
        return False
    meta = out / "meta.json"
    if meta.is_file():  # the shared resume-or-refuse check, on the store's request
        outdir.same_config(outdir.read_meta(meta).get("request") or {}, request, out)
        return True
    raise InputError(
        f"{out} already exists and does not hold this exact store; "
        "choose a new --out folder or delete it"
    )


def prepare_corpus(
    corpus: Corpus,
    out_dir: str | Path,
    *,
    vocab_size: int = PrepareConfig.vocab_size,
    tokenizer: str | Path | Tokenizer | None = None,
    seed: int = PrepareConfig.seed,
    val_fraction: float = PrepareConfig.val_fraction,
    test_fraction: float = PrepareConfig.test_fraction,
    quiet: bool = False,
) -> Path:
    """Split `corpus`, train (or load) a tokenizer, and write the token store to `out_dir`.

    The BPE is trained on the train split only. Re-running with the same inputs returns the
    existing folder untouched; a folder holding anything else is refused.
    """
    out = Path(out_dir)
    splits = split_documents(
        corpus.documents, seed=seed, val_fraction=val_fraction, test_fraction=test_fraction
    )
    lines = " (e.g. --split-on line)" if corpus.description == BLANK_LINES else ""
    for name in SPLITS:
        if not splits[name]:
            raise InputError(
                f"the {name} split of {corpus.name!r} is empty: {len(corpus.documents)} "
                f"document(s) are too few; give more documents{lines}, or a "
                "larger share for the split with `scalelab corpus prepare --val-fraction/"
                "--test-fraction` (validate takes the token store it writes as --corpus)"
            )
    tok, tok_source = _resolve_tokenizer(tokenizer)
    request = {
        "corpus_sha256": corpus.sha256(),
        "corpus_name": corpus.name,
        "seed": seed,
        "val_fraction": val_fraction,
        "test_fraction": test_fraction,
        "vocab_size": vocab_size if tok is None else None,
        "tokenizer_sha256": _tokenizer_sha256(tok),
    }
    if _check_existing(out, request):
        return out
    if tok is None:
        with progress(f"training BPE {vocab_size}", 1, quiet=quiet) as advance:
            tok = train_bpe((d.text for d in splits["train"]), vocab_size)
            advance(1)
    folder = Path(tokenizer) if isinstance(tokenizer, str | Path) else None
    eot = eot_id(tok, folder if folder is not None and folder.is_dir() else None)
    n_vocab = max(tok.get_vocab().values()) + 1
    dtype = np.dtype(np.uint16 if n_vocab <= 1 << 16 else np.uint32)

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    umask = os.umask(0)
    os.umask(umask)
    tmp.chmod(0o777 & ~umask)  # mkdtemp makes it private; a store is ordinary data
    special_as_text = tok.encode_special_tokens
    tok.encode_special_tokens = True  # a literal "<|endoftext|>" in the text is just text
    try:
        tok.save(str(tmp / "tokenizer.json"))
        total = sum(len(d.text) for name in SPLITS for d in splits[name])
        with progress(f"tokenising {corpus.name}", total, quiet=quiet) as advance:
            split_meta = {
                name: _write_split(tok, splits[name], eot, dtype, tmp, name, advance)
                for name in SPLITS
            }
        meta = _store_meta(corpus, request, tok, tok_source, eot, dtype, split_meta)
        atomic_write_json(tmp / "meta.json", meta)
        if out.exists():
            out.rmdir()  # empty (checked above); rename needs the name free
        os.rename(tmp, out)
    finally:
        tok.encode_special_tokens = special_as_text
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def _store_meta(
    corpus: Corpus,
    request: dict[str, Any],
    tok: Tokenizer,
    tok_source: str,
    eot: int,
    dtype: np.dtype,
    split_meta: dict[str, Any],
) -> dict[str, Any]:
    """What meta.json records: the corpus, the tokenizer, the split rule and each split."""
    return {
        "format": FORMAT,
        "request": request,
        "corpus": {
            "name": corpus.name,
            "license": corpus.license,
            "source": corpus.source,
            "description": corpus.description,
            "n_documents": len(corpus.documents),
            "n_chars": corpus.n_chars,
            "sha256": request["corpus_sha256"],
        },
        "tokenizer_path": "tokenizer.json",
        "tokenizer_source": tok_source,
        "vocab_size": max(tok.get_vocab().values()) + 1,
        "eot_id": eot,
        "eot_token": tok.id_to_token(eot),
        "dtype": dtype.name,
        "seed": request["seed"],
        "val_fraction": request["val_fraction"],
        "test_fraction": request["test_fraction"],
        "split_rule": "sha256(seed, text) per document; train in seeded hash-rank order",
        "splits": split_meta,
        "provenance": provenance(),
    }


class TokenStore:
    """One split of a prepared token store, memory-mapped read-only."""

    def __init__(self, data_dir: str | Path, split: str = "train") -> None:
        self.data_dir = Path(data_dir)
        self.split = split
        meta_path = self.data_dir / "meta.json"
        if not meta_path.is_file():
            raise InputError(
                f"{self.data_dir} is not a token store (no meta.json); "
                "make one with `scalelab corpus prepare NAME --out DIR`"
            )
        try:
            self.meta: dict[str, Any] = read_json(meta_path)
            if self.meta.get("format") != FORMAT:
                raise InputError(f"{meta_path} is not a {FORMAT} store; prepare it again")
            if not isinstance(self.meta.get("splits"), dict):
                raise InputError(
                    f"{meta_path} is damaged (no 'splits' mapping); prepare the store again "
                    "with `scalelab corpus prepare`"
                )
            if split not in self.meta["splits"]:
                raise InputError(f"no split {split!r} in {self.data_dir}; use one of {SPLITS}")
            self.tokens, self.offsets = self._open(self.meta["splits"][split])
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            raise InputError(
                f"{self.data_dir} is a damaged token store ({type(err).__name__}: {err}); "
                "prepare it again"
            ) from err

    def _open(self, info: dict[str, Any]) -> tuple[np.memmap, np.ndarray]:
        """Memory-map the split's tokens and load its offsets, checking both against meta."""
        dtype = np.dtype(self.meta["dtype"])
        tokens_path = self.data_dir / info["tokens_file"]
        expected = info["n_tokens"] * dtype.itemsize
        size = tokens_path.stat().st_size if tokens_path.is_file() else -1
        if size != expected:
            raise InputError(
                f"{tokens_path} holds {size} bytes, meta.json says {expected}: the store is "
                "damaged; prepare it again"
            )
        offsets = np.load(self.data_dir / info["offsets_file"], allow_pickle=False)
        if len(offsets) != info["n_documents"] + 1 or offsets[-1] != info["n_tokens"]:
            raise InputError(f"{info['offsets_file']} does not match meta.json; prepare again")
        return np.memmap(tokens_path, dtype=dtype, mode="r"), offsets

    @property
    def n_documents(self) -> int:
        return len(self.offsets) - 1

    @property
    def n_tokens(self) -> int:
        """Tokens in the split, counting the EOT after each document."""
        return len(self.tokens)

    @property
    def vocab_size(self) -> int:
        return int(self.meta["vocab_size"])

    @property
    def eot_id(self) -> int:
        return int(self.meta["eot_id"])

    @property
    def tokenizer_path(self) -> Path:
        return self.data_dir / self.meta["tokenizer_path"]

    def tokenizer(self) -> Tokenizer:
        return load_tokenizer(self.tokenizer_path)

    def document_names(self) -> list[str]:
        return read_json(self.data_dir / self.meta["splits"][self.split]["names_file"])

    def document(self, i: int) -> np.ndarray:
        """The tokens of document `i`, without its trailing EOT."""
        if not 0 <= i < self.n_documents:
            raise IndexError(f"document {i} out of range [0, {self.n_documents})")
        return self.tokens[self.offsets[i] : self.offsets[i + 1] - 1]

    def prefix(self, n_tokens: int) -> np.ndarray:
        """The first `n_tokens` of the split: nested data subsets for data-size sweeps."""
        if not 0 < n_tokens <= self.n_tokens:
            raise InputError(
                f"asked for {n_tokens} tokens but the {self.split} split of {self.data_dir} "
                f"holds {self.n_tokens}; use 1..{self.n_tokens} or a larger corpus"
            )
        return self.tokens[:n_tokens]


class Store:
    """A token store opened once: its splits, each memory-mapped on first use.
    A caller that reads several splits, or hands the store on, opens it once with this and
    passes the object (`opened` takes either), instead of reopening it from its path."""

    def __init__(self, data_dir: str | Path) -> None:
        self.data_dir = Path(data_dir)
        self._splits: dict[str, TokenStore] = {}

    def split(self, name: str) -> TokenStore:
        """The split `name` (train, val or test)."""
        if name not in self._splits:
            self._splits[name] = TokenStore(self.data_dir, name)
        return self._splits[name]

    def _any(self) -> TokenStore:
        """A split already opened, else train: what the store's meta is read from."""
        return next(iter(self._splits.values()), None) or self.split("train")

    @property
    def vocab_size(self) -> int:
        return self._any().vocab_size

    def tokenizer(self) -> Tokenizer:
        return self._any().tokenizer()


def opened(store: str | Path | Store) -> Store:
    """`store` itself, or the token store at that path, opened."""
    return store if isinstance(store, Store) else Store(store)
