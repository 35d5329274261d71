"""From a language model and a corpus to an intrinsic dimension and predicted exponents.

The seed paper's protocol (Havrilla & Liao 2024, §4 and its code), every step an option:
1. documents of the corpus's test split (all, or a seeded subset of `max_documents`);
2. one random window of `context_len` tokens per document (default min(1024, model max));
   shorter documents whole;
3. the hidden states of `layer` (default the final LayerNorm's output), `per_doc` random
   non-special positions per window (default 32);
4. all vectors shuffled together, capped at `max_points` (1,000,000), MLE (K = 20, mean of
   local estimates) on batches of `batch_size` (4096): d = batch mean ± standard error;
5. alpha_D = 2β/(2β+d), alpha_N = 2β/d with delta-method intervals.

Models: a scalelab run folder (its own tokenizer from the run's token store) or a local
Hugging Face folder (its own tokenizer). Corpora: a built-in name, a text path, or a prepared
token store (its split used as stored when the tokenizer matches; decoded and re-encoded with
the model's tokenizer otherwise).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import tokenizers
import torch

from scalelab.config import Config, check_same_config
from scalelab.device import resolve_device
from scalelab.errors import CheckpointError, ConfigError, InputError
from scalelab.io import atomic_write, atomic_write_json, provenance, read_json
from scalelab.lm.embed import (
    PRECISIONS,
    Sample,
    StatesFn,
    TokenDocuments,
    extract,
    layer_name,
    ragged_arange,
    resolve_layer,
    resolve_precision,
    sample_protocol,
    tokens_to_run,
)

PAPER_CONTEXT = 1024
RESULT = "estimate.json"
EMBEDDINGS = "embeddings.safetensors"
POSITIONS = "positions.safetensors"


@dataclasses.dataclass(frozen=True)
class EstimateConfig(Config):
    """The protocol's options; defaults are the paper's."""

    split: str = "test"
    max_documents: int | None = None
    context_len: int | None = None
    per_doc: int = 32
    layer: str = "final"
    max_points: int = 1_000_000
    batch_size: int = 4096
    k: int = 20
    aggregate: str = "mean"
    metric: str = "euclidean"
    beta: float = 1.0
    seed: int = 0
    split_seed: int = 0
    batch_tokens: int = 4096
    precision: str = "auto"

    def validate(self) -> None:
        if self.split not in ("train", "val", "test", "all"):
            raise ConfigError(f"split must be train, val, test or all, not {self.split!r}")
        for name in ("per_doc", "max_points", "batch_size", "k", "batch_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        for name in ("max_documents", "context_len"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ConfigError(f"{name} must be a positive integer or unset, got {value!r}")
        if self.k + 1 > self.batch_size:
            raise ConfigError(f"batch_size {self.batch_size} must exceed k = {self.k}")
        if self.aggregate not in ("mean", "harmonic"):
            raise ConfigError(f"aggregate must be 'mean' or 'harmonic', not {self.aggregate!r}")
        if self.metric not in ("euclidean", "cosine", "angular"):
            raise ConfigError(f"metric must be euclidean, cosine or angular, not {self.metric!r}")
        if not self.beta > 0:
            raise ConfigError(f"beta must be positive, got {self.beta}")
        if self.precision not in PRECISIONS:
            raise ConfigError(f"precision must be one of {PRECISIONS}, not {self.precision!r}")


# --- models -------------------------------------------------------------------------------


@dataclass
class LoadedModel:
    """A model ready for hidden-state extraction, with what the results must record."""

    kind: str  # "scalelab" or "hf"
    path: Path
    states: StatesFn
    n_states: int
    max_context: int
    vocab_size: int
    width: int
    n_params: int
    n_params_non_embedding: int
    tokenizer: tokenizers.Tokenizer
    weight_files: list[Path]
    data_dir: Path | None = None
    gguf_file: str | None = None
    checkpoint: str | None = None

    @property
    def n_layer(self) -> int:
        return self.n_states - 2

    @property
    def special_ids(self) -> list[int]:
        return sorted(i for i, t in self.tokenizer.get_added_tokens_decoder().items() if t.special)

    def describe(self) -> dict[str, Any]:
        """What estimate.json records about the model (fingerprints included)."""
        return {
            "kind": self.kind,
            "path": str(self.path.resolve()),
            "gguf_file": self.gguf_file,
            "checkpoint": self.checkpoint,
            "n_layer": self.n_layer,
            "width": self.width,
            "max_context": self.max_context,
            "vocab_size": self.vocab_size,
            "params": self.n_params,
            "params_non_embedding": self.n_params_non_embedding,
            "weights_sha256": {f.name: sha256_file(f) for f in self.weight_files},
            "tokenizer_sha256": tokenizer_sha256(self.tokenizer),
            **self._training(),
        }

    def _training(self) -> dict[str, Any]:
        """For a scalelab run: whether it finished, why it stopped and its test loss (an
        unfinished run's checkpoint is its best weights so far)."""
        if self.kind != "scalelab":
            return {}
        result = self.path / "result.json"
        if not result.is_file():
            return {"run_finished": False}
        saved = read_json(result)
        keys = ("stop_reason", "steps", "tokens_seen", "test_loss_nats")
        return {"run_finished": True, **{f"run_{k}": saved.get(k) for k in keys}}


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def tokenizer_sha256(tok: tokenizers.Tokenizer) -> str:
    return hashlib.sha256(tok.to_str().encode("utf-8")).hexdigest()


def load_model_for_embedding(
    path: str | Path, *, device: torch.device | str = "cpu", weights: str | None = None
) -> LoadedModel:
    """A scalelab run folder or a local HF folder, with its own tokenizer. `weights` picks the
    checkpoint: for a run `best` (default: the weights its test loss was measured on),
    `latest` (the last saved step, from state.pt) or a .safetensors file in the folder; for an
    HF folder the .gguf file to read (default: the folder's weights, or its only GGUF)."""
    from scalelab.lm.hf import is_hf_folder

    path = Path(path)
    if not path.is_dir():
        raise CheckpointError(f"model folder {path} does not exist; pass a run or HF folder")
    config = path / "config.json"
    if config.is_file() and not is_hf_folder(path):
        return _load_scalelab(path, device, weights or "best")
    if is_hf_folder(path):
        return _load_hf(path, device, weights)
    raise CheckpointError(
        f"{path} is neither a scalelab run folder (config.json with a 'model' section) nor a "
        "Hugging Face model folder (config.json + weights, or a .gguf file); check --model"
    )


def _load_scalelab(path: Path, device: torch.device | str, weights: str) -> LoadedModel:
    from scalelab.lm.checkpoint import WEIGHTS, load_model
    from scalelab.text.tokenizer import load_tokenizer

    gpt, cfg = load_model(path, device=device)  # the best weights; checks the folder
    file = path / WEIGHTS
    if weights != "best":
        file = _load_other_weights(gpt, path, weights)
    data_dir = Path(cfg.get("data_dir", ""))
    if not (data_dir / "tokenizer.json").is_file():
        raise CheckpointError(
            f"the run's token store {data_dir} has no tokenizer.json; restore that folder "
            "(the run's config.json names it) to embed text with the run's own tokenizer"
        )
    tok = load_tokenizer(data_dir / "tokenizer.json")
    c = gpt.config

    def states(idx: torch.Tensor, mask: torch.Tensor) -> list[torch.Tensor]:
        return gpt.hidden_states(idx)

    return LoadedModel(
        kind="scalelab",
        path=path,
        checkpoint=weights,
        states=states,
        n_states=c.n_layer + 2,
        max_context=c.block_size,
        vocab_size=c.vocab_size,
        width=c.n_embd,
        n_params=gpt.num_params(non_embedding=False),
        n_params_non_embedding=gpt.num_params(non_embedding=True),
        tokenizer=tok,
        weight_files=[file],
        data_dir=data_dir,
    )


def _load_other_weights(gpt: torch.nn.Module, path: Path, weights: str) -> Path:
    """Replace the best weights with the latest ones (state.pt) or another safetensors file
    of the run folder; return the file read."""
    from scalelab.lm.checkpoint import STATE, load_state, load_weights

    if weights == "latest":
        file = path / STATE
        if not file.is_file():
            raise CheckpointError(f"{path} has no {STATE} (latest weights); use --weights best")
        state = load_state(file)
        try:
            gpt.load_state_dict(state["model"])
        except (KeyError, RuntimeError) as err:
            raise CheckpointError(f"{file} holds no weights for this model ({err})") from None
        return file
    file = path / weights
    if not weights.endswith(".safetensors") or not file.is_file():
        raise CheckpointError(
            f"--weights {weights!r}: use best, latest or a .safetensors file in {path}"
        )
    load_weights(gpt, file)
    return file


def _load_hf(path: Path, device: torch.device | str, gguf_file: str | None) -> LoadedModel:
    from scalelab.lm.hf import HFStates, load_hf, max_context, weight_files

    if gguf_file is not None and not gguf_file.endswith(".gguf"):
        raise CheckpointError(f"--weights {gguf_file!r}: an HF folder takes a .gguf file name")
    model, tok, gguf = load_hf(path, gguf_file=gguf_file, device=device)
    states = HFStates(model)
    emb = model.get_input_embeddings().weight
    n_params = sum(p.numel() for p in model.parameters())
    embedding = emb.numel()
    wpe = getattr(model.base_model, "wpe", None)
    if isinstance(wpe, torch.nn.Embedding):
        embedding += wpe.weight.numel()
    out = model.get_output_embeddings()
    if out is not None and out.weight.data_ptr() != emb.data_ptr():
        embedding += out.weight.numel()
    return LoadedModel(
        kind="hf",
        path=path,
        states=states,
        n_states=states.n_layer + 2,
        max_context=max_context(model),
        vocab_size=int(emb.shape[0]),
        width=int(emb.shape[1]),
        n_params=n_params,
        n_params_non_embedding=n_params - embedding,
        tokenizer=tok,
        weight_files=weight_files(path, gguf),
        gguf_file=gguf,
    )


# --- corpora ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CorpusTokens:
    """A corpus split tokenised with the model's tokenizer, and where it came from."""

    docs: TokenDocuments
    info: dict[str, Any]


def load_corpus_tokens(
    corpus: str | Path, tok: tokenizers.Tokenizer, *, split: str = "test", split_seed: int = 0
) -> CorpusTokens:
    """A token-store folder, a built-in corpus name or a text path, as documents of ids."""
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


def _store_tokens(path: Path, tok: tokenizers.Tokenizer, split: str) -> CorpusTokens:
    from scalelab.text.store import TokenStore

    if split == "all":
        raise ConfigError("a token store is read one split at a time; use --split test")
    store = TokenStore(path, split)
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


# --- the protocol ---------------------------------------------------------------------------


@dataclass
class Prepared:
    """Everything checked and sampled, before the model runs."""

    model: LoadedModel
    corpus: CorpusTokens
    docs: TokenDocuments
    doc_ids: np.ndarray
    context_len: int
    sample: Sample


def prepare(
    model: LoadedModel,
    corpus: str | Path | None,
    cfg: EstimateConfig,
    *,
    groups: int = 1,
) -> Prepared:
    """Resolve the corpus and context, check vocabularies, and sample windows and positions.
    Every user error surfaces here, before any file is written or the model runs."""
    context_len = cfg.context_len or min(PAPER_CONTEXT, model.max_context)
    if context_len > model.max_context:
        raise ConfigError(
            f"--context-len {context_len} exceeds the model's maximum context "
            f"{model.max_context}; use at most {model.max_context}"
        )
    n_tok = model.tokenizer.get_vocab_size(with_added_tokens=True)
    if n_tok > model.vocab_size:
        raise InputError(
            f"the tokenizer has {n_tok} tokens but the model's embedding has only "
            f"{model.vocab_size} rows: they do not belong together; use the model's own "
            "tokenizer (the run's token store, or the HF folder's tokenizer files)"
        )
    if corpus is None:
        if model.data_dir is None:
            raise ConfigError("--corpus is required for a Hugging Face model")
        corpus = model.data_dir
    tokens = load_corpus_tokens(corpus, model.tokenizer, split=cfg.split, split_seed=cfg.split_seed)
    docs = tokens.docs
    if len(docs.tokens) and int(docs.tokens.max()) >= model.vocab_size:
        raise InputError(
            f"token id {int(docs.tokens.max())} is outside the model's vocabulary "
            f"({model.vocab_size}); the corpus was tokenised for another model"
        )
    doc_ids = np.arange(docs.n_documents)
    if cfg.max_documents is not None and cfg.max_documents < docs.n_documents:
        rng = np.random.default_rng([cfg.seed, 0xD0C])
        doc_ids = np.sort(rng.choice(docs.n_documents, cfg.max_documents, replace=False))
        docs = docs.select(doc_ids)
    sample = sample_protocol(
        docs,
        context_len=context_len,
        per_doc=cfg.per_doc,
        seed=cfg.seed,
        special_ids=model.special_ids,
        groups=groups,
    )
    need = cfg.batch_size
    if cfg.max_points < need:
        raise ConfigError(
            f"--max-points {cfg.max_points} is below --batch-size {need}: raise the cap or "
            "lower the batch size"
        )
    if sample.n_points < need:
        usable = int((sample.windows.length > 0).sum())
        raise InputError(
            f"the {cfg.split} split of {tokens.info['name']!r} gives only {sample.n_points} "
            f"points ({usable} usable documents, at most {cfg.per_doc} positions each) but "
            f"one batch needs {need}; use a larger corpus, more --per-doc or a smaller "
            "--batch-size"
        )
    return Prepared(model, tokens, docs, doc_ids, context_len, sample)


def embed(
    model: LoadedModel,
    sample: Sample,
    layers: list[int],
    *,
    batch_tokens: int = 4096,
    device: torch.device | str = "cpu",
    precision: str = "auto",
    quiet: bool = True,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Run the model over the sampled windows: `[len(layers), n_points, width]` and timing."""
    dtype = resolve_precision(precision, device)
    t0, c0 = time.perf_counter(), time.process_time()
    x = extract(
        model.states,
        sample,
        layers,
        batch_tokens=batch_tokens,
        device=device,
        dtype=dtype,
        quiet=quiet,
    )
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    n_tokens = tokens_to_run(sample)
    return x, {
        "tokens_run": n_tokens,
        "extract_wall_s": wall,
        "extract_cpu_s": cpu,
        "tokens_per_s": n_tokens / wall if wall > 0 else None,
        "tokens_per_cpu_s": n_tokens / cpu if cpu > 0 else None,
        "device": str(device),
        "precision": str(dtype).removeprefix("torch."),
        "torch_threads": torch.get_num_threads(),
    }


def shuffle_cap(n_points: int, max_points: int, seed: int) -> np.ndarray:
    """Step 4: a seeded permutation of all points, cut to `max_points`."""
    perm = np.random.default_rng([seed, 0x5A1]).permutation(n_points)
    return perm[:max_points]


def estimate_dimension(x: np.ndarray, cfg: EstimateConfig, batch_size: int | None = None) -> dict:
    """MLE on batches of (already shuffled) points, and the predicted exponents."""
    from scalelab.intrinsic.mle import MLE
    from scalelab.intrinsic.protocol import estimate_in_batches
    from scalelab.laws.theory import predict_exponents

    t0 = time.perf_counter()
    est = estimate_in_batches(
        x,
        MLE(k=cfg.k, aggregate=cfg.aggregate, metric=cfg.metric),
        batch_size=batch_size or cfg.batch_size,
        seed=cfg.seed,
    )
    result = est.to_dict()
    result["estimate_wall_s"] = time.perf_counter() - t0
    se = float(est.dimension_se)
    pred = predict_exponents(float(est.dimension), se if math.isfinite(se) else 0.0, cfg.beta)
    if not math.isfinite(se):  # one batch: no spread, so no interval either
        pred = {k: (None if k.endswith(("_se", "_ci95")) else v) for k, v in pred.items()}
    result.update({k: v for k, v in pred.items() if k.startswith("alpha")})
    return result


def _headline(result: dict[str, Any]) -> dict[str, Any]:
    """The numbers a reader wants first: d ± se and both exponents with intervals."""
    keys = ("dimension", "dimension_se", "alpha_D", "alpha_D_se", "alpha_D_ci95")
    keys += ("alpha_N", "alpha_N_se", "alpha_N_ci95")
    return {k: result[k] for k in keys}


def estimate(
    model: str | Path,
    corpus: str | Path | None,
    cfg: EstimateConfig,
    out_dir: str | Path,
    *,
    device: str | None = None,
    weights: str | None = None,
    quiet: bool = False,
) -> dict[str, Any]:
    """The whole protocol: `out_dir/estimate.json` (written last) and the kept embeddings
    (`out_dir/embeddings.safetensors`). A finished folder with the same request is returned
    as is; one made with another request is refused. Nothing is written before every input
    has been checked and the estimate has succeeded."""
    out_dir = Path(out_dir)
    request = _request(model, corpus, weights, cfg)
    done = _finished(out_dir / RESULT, request)
    if done is not None:
        return done
    dev = resolve_device(device)
    loaded = load_model_for_embedding(model, device=dev, weights=weights)
    layer = resolve_layer(cfg.layer, loaded.n_states)
    prep = prepare(loaded, corpus, cfg)
    keep = shuffle_cap(prep.sample.n_points, cfg.max_points, cfg.seed)
    sample = prep.sample.subset(keep)
    x, timing = embed(
        loaded,
        sample,
        [layer],
        batch_tokens=cfg.batch_tokens,
        device=dev,
        precision=cfg.precision,
        quiet=quiet,
    )
    result = estimate_dimension(x[0], cfg)
    doc = {
        **_headline(result),
        "beta": cfg.beta,
        "estimate": {k: v for k, v in result.items() if not k.startswith("alpha")},
        "layer": layer,
        "layer_name": layer_name(layer, loaded.n_states),
        "settings": {**cfg.to_dict(), "context_len": prep.context_len},
        "model": loaded.describe(),
        "corpus": prep.corpus.info,
        "counts": _counts(prep, len(keep)),
        "timing": timing,
        "files": {"embeddings": EMBEDDINGS, "positions": POSITIONS},
        "request": request,
        "provenance": provenance(),
    }
    save_embeddings(out_dir, x[0], prep, sample, doc)
    atomic_write_json(out_dir / RESULT, doc)
    return doc


def _request(
    model: str | Path | list[str], corpus: str | Path | None, weights: str | None, cfg: Config
) -> dict[str, Any]:
    models = model if isinstance(model, list) else [model]
    resolved = [str(Path(m).resolve()) for m in models]
    return {
        "model": resolved if isinstance(model, list) else resolved[0],
        "corpus": _corpus_key(corpus),
        "weights": weights,
        **cfg.to_dict(),
    }


def _corpus_key(corpus: str | Path | None) -> str | None:
    if corpus is None:
        return None
    path = Path(corpus)
    return str(path.resolve()) if path.exists() else str(corpus)


def _finished(path: Path, request: dict[str, Any]) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    saved = read_json(path)
    check_same_config(saved.get("request", {}), request, path.parent)
    return saved


def _counts(prep: Prepared, kept: int) -> dict[str, int]:
    return {
        "documents_in_split": prep.corpus.docs.n_documents,
        "documents_used": prep.docs.n_documents,
        "windows": len(prep.sample.windows.doc),
        "window_tokens": int(prep.sample.windows.length.sum()),
        "points_sampled": prep.sample.n_points,
        "points_kept": kept,
    }


def point_index(prep: Prepared, sample: Sample) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per point of `sample`: document index (in the split), position in the document, and
    position in its window."""
    pos, win = sample.positions, sample.windows
    doc = prep.doc_ids[win.doc[pos.window]]
    return doc, win.start[pos.window] + pos.offset, pos.offset


def save_embeddings(
    out_dir: Path, points: np.ndarray, prep: Prepared, sample: Sample, doc: dict
) -> None:
    """The kept vectors (in their shuffled order) alone in `embeddings.safetensors`, so
    `scalelab id OUT/embeddings.safetensors` re-estimates the ID without the model, and
    where each came from in `positions.safetensors` (same row order)."""
    from safetensors.numpy import save_file

    d, p, w = point_index(prep, sample)
    where = {
        "document": d.astype(np.int64),
        "position": p.astype(np.int64),
        "window_position": w.astype(np.int64),
    }
    meta = {
        "layer": str(doc["layer"]),
        "layer_name": doc["layer_name"],
        "model": json.dumps(doc["model"]),
        "corpus": json.dumps(doc["corpus"]),
        "settings": json.dumps(doc["settings"]),
    }
    x = {"embeddings": np.ascontiguousarray(points, dtype=np.float32)}
    atomic_write(out_dir / POSITIONS, lambda tmp: save_file(where, str(tmp), metadata=meta))
    atomic_write(out_dir / EMBEDDINGS, lambda tmp: save_file(x, str(tmp), metadata=meta))


def load_embeddings(path: str | Path) -> tuple[np.ndarray, dict[str, str]]:
    """The vectors and metadata of an `embeddings.safetensors` written by `estimate`."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="numpy") as f:
            meta = f.metadata() or {}
            x = f.get_tensor("embeddings")
    except (FileNotFoundError, SafetensorError, OSError) as err:
        raise InputError(f"cannot read embeddings from {path} ({err}); check the path") from err
    except KeyError:
        raise InputError(f"{path} has no 'embeddings' tensor; give a file from estimate") from None
    return x, meta


# --- ablations (the paper's Figure 4) -----------------------------------------------------


def _write_ablation(
    out_dir: Path, name: str, rows: list[dict[str, Any]], info: dict[str, Any], fig: Any
) -> dict[str, Any]:
    """`<name>.csv` (one row per setting), `<name>.png` and `<name>.json` (rows, settings,
    fingerprints, provenance), the JSON written last: a folder without it is unfinished."""
    import pandas as pd

    table = pd.DataFrame(rows)
    atomic_write(out_dir / f"{name}.csv", lambda p: table.to_csv(p, index=False))
    atomic_write(out_dir / f"{name}.png", lambda p: fig.savefig(p, format="png", dpi=110))
    doc = {"ablation": name, "rows": rows, **info, "provenance": provenance()}
    doc["files"] = {"table": f"{name}.csv", "plot": f"{name}.png"}
    atomic_write_json(out_dir / f"{name}.json", doc)
    return doc


def _figure(ncols: int = 1) -> tuple[Any, Any]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.2 * ncols, 3.8), layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, axes


def _errorbar(ax: Any, x: list, rows: list[dict[str, Any]], *, joined: bool = True) -> None:
    """d ± SE against `x`; `joined=False` for points that are not a series (other models)."""
    d = [r["dimension"] for r in rows]
    se = [r["dimension_se"] if r["dimension_se"] is not None else 0.0 for r in rows]
    ax.errorbar(x, d, yerr=se, marker="o", capsize=3, linestyle="-" if joined else "none")
    ax.set_ylabel("estimated intrinsic dimension d")
    ax.grid(alpha=0.3)


def _row(result: dict[str, Any]) -> dict[str, Any]:
    keys = ("dimension", "dimension_se", "n_batches", "n_points", "n_duplicates_removed")
    keys += ("alpha_D", "alpha_N")
    return {k: result[k] for k in keys}


def _prepare_ablation(
    model: str | Path,
    corpus: str | Path | None,
    cfg: EstimateConfig,
    device: str | None,
    weights: str | None,
    groups: int = 1,
) -> tuple[LoadedModel, Prepared, torch.device]:
    dev = resolve_device(device)
    loaded = load_model_for_embedding(model, device=dev, weights=weights)
    resolve_layer(cfg.layer, loaded.n_states)
    prep = prepare(loaded, corpus, cfg, groups=groups)
    return loaded, prep, dev


def ablate_layers(
    model: str | Path,
    corpus: str | Path | None,
    cfg: EstimateConfig,
    out_dir: str | Path,
    *,
    layers: list[str] | None = None,
    device: str | None = None,
    weights: str | None = None,
    quiet: bool = False,
) -> dict[str, Any]:
    """d at every hidden state of one model (or the listed ones), on the same positions."""
    out_dir = Path(out_dir)
    request = {**_request(model, corpus, weights, cfg), "layers": layers}
    done = _finished(out_dir / "layers.json", request)
    if done is not None:
        return done
    loaded, prep, dev = _prepare_ablation(model, corpus, cfg, device, weights)
    index = (
        list(range(loaded.n_states))
        if layers is None
        else sorted({resolve_layer(v, loaded.n_states) for v in layers})
    )
    sample = prep.sample.subset(shuffle_cap(prep.sample.n_points, cfg.max_points, cfg.seed))
    x, timing = embed(
        loaded,
        sample,
        index,
        batch_tokens=cfg.batch_tokens,
        device=dev,
        precision=cfg.precision,
        quiet=quiet,
    )
    rows = []
    for j, layer in enumerate(index):
        result = estimate_dimension(x[j], cfg)
        rows.append(
            {"layer": layer, "layer_name": layer_name(layer, loaded.n_states), **_row(result)}
        )
    fig, (ax,) = _figure()
    _errorbar(ax, [r["layer"] for r in rows], rows)
    ax.set_xlabel(f"hidden state (0 = embeddings, {loaded.n_states - 1} = after final LN)")
    ax.set_title(f"d vs layer: {loaded.path.name} on {prep.corpus.info['name']}")
    info = _ablation_info(loaded, prep, cfg, request, timing, sample.n_points)
    return _write_ablation(out_dir, "layers", rows, info, fig)


def ablate_positions(
    model: str | Path,
    corpus: str | Path | None,
    cfg: EstimateConfig,
    out_dir: str | Path,
    *,
    groups: int = 4,
    device: str | None = None,
    weights: str | None = None,
    quiet: bool = False,
) -> dict[str, Any]:
    """d per context-position range: the window split into `groups` equal ranges, `per_doc`
    positions drawn in each range of each window, one estimate per range."""
    out_dir = Path(out_dir)
    request = {**_request(model, corpus, weights, cfg), "groups": groups}
    done = _finished(out_dir / "positions.json", request)
    if done is not None:
        return done
    loaded, prep, dev = _prepare_ablation(model, corpus, cfg, device, weights, groups=groups)
    layer = resolve_layer(cfg.layer, loaded.n_states)
    group = prep.sample.positions.group
    rng = np.random.default_rng([cfg.seed, 0x5A1])
    keep = np.concatenate(  # step 4 within each range: shuffle, cap
        [rng.permutation(np.flatnonzero(group == g))[: cfg.max_points] for g in range(groups)]
    )
    counts = np.bincount(group[keep], minlength=groups)
    if counts.max() < cfg.batch_size:
        raise InputError(
            f"no position range has {cfg.batch_size} points (most: {counts.max()}); use fewer "
            "--groups, more documents, more --per-doc or a smaller --batch-size"
        )
    sample = prep.sample.subset(keep)
    x, timing = embed(
        loaded,
        sample,
        [layer],
        batch_tokens=cfg.batch_tokens,
        device=dev,
        precision=cfg.precision,
        quiet=quiet,
    )
    rows = []
    span = prep.context_len
    for g in range(groups):
        lo, hi = -(-g * span // groups), -(-(g + 1) * span // groups)
        row: dict[str, Any] = {"group": g, "position_from": lo, "position_to": hi}
        sel = np.flatnonzero(group[keep] == g)
        if len(sel) >= cfg.batch_size:
            row.update(_row(estimate_dimension(x[0, sel], cfg)))
        else:  # too few points for one batch: shown as a gap, not as a biased number
            row.update({"dimension": None, "dimension_se": None, "n_points": len(sel)})
        rows.append(row)
    shown = [r for r in rows if r["dimension"] is not None]
    fig, (ax,) = _figure()
    _errorbar(ax, [(r["position_from"] + r["position_to"]) / 2 for r in shown], shown)
    ax.set_xlabel(f"position in the window (centre of each of {groups} ranges)")
    ax.set_title(f"d vs position: {loaded.path.name}, {layer_name(layer, loaded.n_states)}")
    info = _ablation_info(loaded, prep, cfg, request, timing, sample.n_points)
    return _write_ablation(out_dir, "positions", rows, {**info, "layer": layer}, fig)


def _ablation_info(
    loaded: LoadedModel,
    prep: Prepared,
    cfg: EstimateConfig,
    request: dict[str, Any],
    timing: dict[str, Any],
    kept: int,
) -> dict[str, Any]:
    return {
        "settings": {**cfg.to_dict(), "context_len": prep.context_len},
        "model": loaded.describe(),
        "corpus": prep.corpus.info,
        "counts": _counts(prep, kept),
        "timing": timing,
        "request": request,
    }


def _models_worker(params: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """One model of `ablate_models` (module level: run_sweep may pickle it)."""
    cfg = EstimateConfig.from_dict(params["config"])
    doc = estimate(
        params["model"],
        params["corpus"],
        cfg,
        run_dir,
        device=params["device"],
        weights=params["weights"],
        quiet=True,
    )
    m = doc["model"]
    return {
        "model": params["model"],
        "kind": m["kind"],
        "n_layer": m["n_layer"],
        "width": m["width"],
        "params": m["params"],
        "params_non_embedding": m["params_non_embedding"],
        **_row({**doc, **doc["estimate"]}),
    }


def ablate_models(
    models: list[str],
    corpus: str | Path | None,
    cfg: EstimateConfig,
    out_dir: str | Path,
    *,
    device: str | None = None,
    weights: str | None = None,
    quiet: bool = False,
) -> dict[str, Any]:
    """d for each model of a list (the same corpus and protocol): against model size
    (non-embedding parameters) and against width. A resumable sweep: one run folder per
    model (its estimate.json), finished models are not redone."""
    from scalelab.sweeps.runner import RunSpec, open_sweep, run_sweep

    if not models:
        raise ConfigError("give at least one --model")
    for m in models:
        if not Path(m).is_dir():
            raise CheckpointError(f"model folder {m} does not exist; check the --model list")
    out_dir = Path(out_dir)
    request = _request(list(models), corpus, weights, cfg)
    done = _finished(out_dir / "models.json", request)
    if done is not None:
        return done
    open_sweep(out_dir, "ablate-models", request)
    specs = [
        RunSpec(
            f"{i:02d}-{Path(m).resolve().name}",
            {
                "model": str(Path(m).resolve()),
                "corpus": _corpus_key(corpus),
                "config": cfg.to_dict(),
                "device": device,
                "weights": weights,
            },
        )
        for i, m in enumerate(models)
    ]
    table = run_sweep(out_dir, specs, _models_worker, quiet=quiet, description="models")
    cols = ["run", "model", "kind", "n_layer", "width", "params", "params_non_embedding"]
    cols += ["dimension", "dimension_se", "n_batches", "n_points", "alpha_D", "alpha_N"]
    rows = [{k: _plain(r[k]) for k in cols} for r in table.to_dict("records")]
    fig, (ax_n, ax_w) = _figure(2)
    for ax, key in ((ax_n, "params_non_embedding"), (ax_w, "width")):
        _errorbar(ax, [r[key] for r in rows], rows, joined=False)
        for r in rows:
            ax.annotate(
                r["run"],
                (r[key], r["dimension"]),
                fontsize=7,
                xytext=(4, 4),
                textcoords="offset points",
            )
    ax_n.set_xscale("log")
    ax_n.set_xlabel("non-embedding parameters")
    ax_w.set_xlabel("width (embedding dimension)")
    fig.suptitle("d vs model size and width")
    info = {"settings": cfg.to_dict(), "request": request}
    return _write_ablation(out_dir, "models", rows, info, fig)


def _plain(v: Any) -> Any:
    """numpy scalars and NaN from a DataFrame, as JSON-friendly Python values."""
    if isinstance(v, np.generic):
        v = v.item()
    return None if isinstance(v, float) and math.isnan(v) else v


DEFAULT_BATCH_SIZES = (512, 1024, 2048, 4096, 8192, 16384)


def ablate_batch_size(
    embeddings: str | Path,
    cfg: EstimateConfig,
    out_dir: str | Path,
    *,
    batch_sizes: list[int] | None = None,
) -> dict[str, Any]:
    """d against the number of points per MLE batch, on one saved set of embeddings (from
    `estimate`): the estimate moves with the batch size, so the protocol must state it."""
    out_dir = Path(out_dir)
    sizes = sorted(set(batch_sizes or DEFAULT_BATCH_SIZES))
    request = {"embeddings": str(Path(embeddings).resolve()), "batch_sizes": sizes}
    request.update({k: v for k, v in cfg.to_dict().items() if k in ("k", "aggregate", "metric")})
    request["seed"] = cfg.seed
    done = _finished(out_dir / "batch_size.json", request)
    if done is not None:
        return done
    x, meta = load_embeddings(embeddings)
    usable = [b for b in sizes if cfg.k < b <= len(x)]
    if not usable:
        raise InputError(
            f"{embeddings} holds {len(x)} points: every batch size {sizes} is above that or "
            f"not above k = {cfg.k}; give batch sizes between {cfg.k + 1} and {len(x)}"
        )
    rows = [{"batch_size": b, **_row(estimate_dimension(x, cfg, batch_size=b))} for b in usable]
    fig, (ax,) = _figure()
    _errorbar(ax, [r["batch_size"] for r in rows], rows)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("points per MLE batch")
    ax.set_title(f"d vs batch size ({len(x)} points, K = {cfg.k})")
    info = {
        "skipped_batch_sizes": [b for b in sizes if b not in usable],
        "source": {k: _maybe_json(v) for k, v in meta.items()},
        "request": request,
    }
    return _write_ablation(out_dir, "batch_size", rows, info, fig)


def _maybe_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text
