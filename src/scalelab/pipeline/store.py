"""Any corpus into a token store, and every check that can refuse it before training.

What `corpus prepare` takes works here: a built-in name, a text file, a folder, a JSONL or
Parquet file; a prepared token store (a folder with meta.json) is used as it is. Empty and
non-UTF-8 inputs are refused by the corpus loader; the checks below refuse a store whose
splits cannot feed the sweep or one MLE batch, each with the option that fixes it.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

from scalelab.errors import InputError
from scalelab.io import atomic_write_json, read_json
from scalelab.text.store import Store, opened


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
    if not reusable_store(cfg, out):
        corpus = load_corpus(
            cfg.corpus, split_on=cfg.split_on, glob=cfg.glob, text_field=cfg.text_field
        )
        prepare_corpus(corpus, data_dir, vocab_size=cfg.vocab_size, seed=0, quiet=quiet)
        atomic_write_json(data_dir / STORE_REQUEST, store_request(cfg))
    return data_dir


STORE_REQUEST = "request.json"  # in a store validate made: what it was made from


def store_request(cfg) -> dict:
    """What a store made from `cfg.corpus` depends on: the corpus and how it is read."""
    path = Path(cfg.corpus)
    corpus = str(path.resolve()) if path.exists() else cfg.corpus
    return {
        "corpus": corpus,
        "split_on": cfg.split_on,
        "glob": cfg.glob,
        "text_field": cfg.text_field,
        "vocab_size": cfg.vocab_size,
    }


def reusable_store(cfg, out: Path) -> bool:
    """OUT/data is a finished store made from what `cfg` asks for (one kept by a refusal, or
    a resumed run's; a store of a folder that predates request.json is trusted as before,
    its pipeline.json having been checked)."""
    data_dir = out / "data"
    if not (data_dir / "meta.json").is_file():
        return False
    saved = data_dir / STORE_REQUEST
    return not saved.is_file() or read_json(saved) == store_request(cfg)


def move_store(data_dir: Path, out: Path) -> Path:
    """Move a store made in a staging folder to OUT/data (replacing any other)."""
    shutil.rmtree(out / "data", ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    shutil.move(str(data_dir), str(out / "data"))
    return out / "data"


class StoreKept(InputError):
    """A corpus refused after tokenising: its store stays in OUT/data for the rerun."""


def keep_store(data_dir: Path, out: Path) -> str:
    """A refused corpus's store, kept in OUT/data; the sentence that says so."""
    if data_dir != out / "data":
        move_store(data_dir, out)
    return f"the token store is kept in {out / 'data'}: the rerun does not tokenise again"


def refuse_unreadable_corpus(cfg) -> None:
    """Read the corpus (not a store) once to refuse a missing, empty or non-UTF-8 input
    before any folder is created."""
    from scalelab.text.corpora import load_corpus

    if not is_token_store(cfg.corpus):
        load_corpus(cfg.corpus, split_on=cfg.split_on, glob=cfg.glob, text_field=cfg.text_field)


def count_id_points(store: str | Path | Store, cfg) -> tuple[int, int, int]:
    """(points, positions per window, test documents) that the protocol samples from the test
    split with the store's own tokenizer (the data sweep's models), without running a model:
    `sample_for_batches`, the rule every estimate follows."""
    from scalelab.probe.corpus import load_corpus_tokens
    from scalelab.probe.sample import sample_for_batches

    store = opened(store)
    tok = store.tokenizer()
    specials = sorted(i for i, t in tok.get_added_tokens_decoder().items() if t.special)
    docs = load_corpus_tokens(store, tok, split="test").docs
    part = cfg.id
    if part.max_documents is not None and part.max_documents < docs.n_documents:
        bound = part.max_documents * max(part.per_doc, cfg.train.block_size)  # upper bound
        return bound, part.per_doc, part.max_documents
    sample, per_doc = sample_for_batches(
        docs,
        context_len=cfg.train.block_size,
        per_doc=part.per_doc,
        batch_size=part.batch_size,
        seed=cfg.seed,
        special_ids=specials,
    )
    return sample.n_points, per_doc, docs.n_documents


def refuse_small_store(store: str | Path | Store, cfg, sizes: list[int]) -> int:
    """Refuse, with the fix, a store too small for the sweep sizes, the validation/test
    windows, or one MLE batch of the test split; else the positions per test window that the
    own models' d will take (`count_id_points`)."""
    from scalelab.sweeps.data import check_sizes

    block_size = cfg.train.block_size
    store = opened(store)
    train = store.split("train").n_tokens
    for split in ("val", "test"):
        n = store.split(split).n_tokens
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
    n_points, per_doc, n_docs = count_id_points(store, cfg)
    batch = cfg.id.batch_size
    if n_points < batch:
        tokens = store.split("test").n_tokens
        fix = 2 ** int(math.log2(n_points)) if n_points > 1 else 0
        hint = f"or --id-batch-size {fix} (a smaller scale)" if fix > cfg.id.k else ""
        raise InputError(
            f"the test split ({n_docs:,} documents, {tokens:,} tokens) gives {n_points:,} "
            f"points for the intrinsic dimension, every position of a {block_size}-token "
            f"window per document, but one MLE batch needs {batch:,}: give a corpus whose "
            f"test split (10% of the documents) holds {-(-batch // block_size):,} documents "
            f"of {block_size}+ tokens {hint}".rstrip()
        )
    return per_doc


def per_doc_note(cfg, per_doc: int) -> str:
    """The line that says the own models' d takes more positions per test window."""
    return (
        f"      d of the own models: {per_doc} positions per test window, not "
        f"{cfg.id.per_doc}: the fewest that give two batches of {cfg.id.batch_size:,} points "
        "(or one) from this test split"
    )
