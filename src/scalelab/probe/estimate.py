"""From a language model and a corpus to an intrinsic dimension and predicted exponents.

The seed paper's protocol (Havrilla & Liao 2024, §4 and its code), every step an option:
1. documents of the corpus's test split (all, or a seeded subset of `max_documents`);
2. one random window of `context_len` tokens per document (default min(1024, model max));
   shorter documents whole;
3. the hidden states of `layer` (default the final LayerNorm's output), `per_doc` random
   non-special positions per window (default 32; more, up to the window, where 32 give fewer
   than two batches: `sample_for_batches`, the number taken recorded as `per_doc_taken`);
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
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from scalelab import seeds
from scalelab.config import Config
from scalelab.device import resolve_device, resolve_dtype
from scalelab.errors import ConfigError, InputError
from scalelab.io import atomic_write, atomic_write_json, provenance, to_json
from scalelab.lm.load import LoadedModel, load_model_for_embedding
from scalelab.probe.config import PAPER_CONTEXT, EstimateConfig
from scalelab.probe.corpus import CorpusTokens, encode_texts, load_corpus_tokens
from scalelab.probe.dimension import Dimension, dimension_and_exponents
from scalelab.probe.result import EstimateResult, read_estimate
from scalelab.probe.sample import (
    Sample,
    TokenDocuments,
    extract,
    layer_name,
    resolve_layer,
    sample_for_batches,
    tokens_to_run,
)
from scalelab.runs import outdir

RESULT = "estimate.json"
EMBEDDINGS = "embeddings.safetensors"
POSITIONS = "positions.safetensors"


@dataclass
class ProbeInputs:
    """Everything checked and sampled, before the model runs."""

    model: LoadedModel
    corpus: CorpusTokens
    docs: TokenDocuments
    doc_ids: np.ndarray
    context_len: int
    sample: Sample
    per_doc: int  # positions per window taken: cfg.per_doc or more (`sample_for_batches`)


def prepare(
    model: LoadedModel,
    corpus: str | Path | Sequence[str] | None,
    cfg: EstimateConfig,
    *,
    groups: int = 1,
) -> ProbeInputs:
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
    if isinstance(corpus, list | tuple):  # texts given in memory: each one a document
        texts = [str(t) for t in corpus]
        info = {"kind": "texts", "name": "texts", "n_documents": len(texts)}
        tokens = CorpusTokens(encode_texts(model.tokenizer, texts), info)
    else:
        tokens = load_corpus_tokens(
            corpus, model.tokenizer, split=cfg.split, split_seed=cfg.split_seed
        )
    docs = tokens.docs
    if len(docs.tokens) and int(docs.tokens.max()) >= model.vocab_size:
        raise InputError(
            f"token id {int(docs.tokens.max())} is outside the model's vocabulary "
            f"({model.vocab_size}); the corpus was tokenised for another model"
        )
    doc_ids = np.arange(docs.n_documents)
    if cfg.max_documents is not None and cfg.max_documents < docs.n_documents:
        rng = np.random.default_rng([cfg.seed, seeds.DOCUMENTS])
        doc_ids = np.sort(rng.choice(docs.n_documents, cfg.max_documents, replace=False))
        docs = docs.select(doc_ids)
    need = cfg.batch_size
    if cfg.max_points < need:
        raise ConfigError(
            f"--max-points {cfg.max_points} is below --batch-size {need}: raise the cap or "
            "lower the batch size"
        )
    sample, per_doc = sample_for_batches(
        docs,
        context_len=context_len,
        per_doc=cfg.per_doc,
        batch_size=need,
        seed=cfg.seed,
        special_ids=model.special_ids,
        groups=groups,
    )
    if sample.n_points < need:
        usable = int((sample.windows.length > 0).sum())
        raise InputError(
            f"the {cfg.split} split of {tokens.info['name']!r} gives only {sample.n_points:,} "
            f"points ({usable} usable documents, every position of a {context_len}-token "
            f"window each) but one batch needs {need:,}: use a corpus with more or longer "
            f"{cfg.split} documents, or a --batch-size of at most {sample.n_points:,}"
        )
    return ProbeInputs(model, tokens, docs, doc_ids, context_len, sample, per_doc)


def embed_sample(
    model: LoadedModel,
    sample: Sample,
    layers: list[int],
    cfg: EstimateConfig,
    *,
    device: torch.device | str = "cpu",
    quiet: bool = True,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Run the model over the sampled windows (`cfg.batch_tokens` per batch, forward pass in
    `cfg.dtype`): `[len(layers), n_points, width]` and timing."""
    dtype = resolve_dtype(cfg.dtype, device)
    t0, c0 = time.perf_counter(), time.process_time()
    x = extract(
        model.states,
        sample,
        layers,
        batch_tokens=cfg.batch_tokens,
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
        "precision": str(dtype).removeprefix("torch."),  # the timing's on-disk key
        "torch_threads": torch.get_num_threads(),
    }


def shuffle_cap(n_points: int, max_points: int, seed: int) -> np.ndarray:
    """Step 4: a seeded permutation of all points, cut to `max_points`."""
    perm = np.random.default_rng([seed, seeds.SHUFFLE]).permutation(n_points)
    return perm[:max_points]


@dataclass
class Embedded:
    """Steps 1-4 done: the model, the sampled corpus, the kept points (shuffled, capped) of
    `layer`, and how long the forward passes took."""

    model: LoadedModel
    layer: int
    prep: ProbeInputs
    sample: Sample
    points: np.ndarray
    timing: dict[str, Any]
    device: torch.device


def embed_protocol(
    model: str | Path | LoadedModel,
    corpus: str | Path | Sequence[str] | None,
    cfg: EstimateConfig,
    *,
    device: str | None = None,
    weights: str | None = None,
    quiet: bool = True,
) -> Embedded:
    """The one path from a model and a corpus to points that `embed` and `estimate` share:
    the model loaded in `cfg.dtype` (resolved for the device), every input checked,
    positions sampled, shuffled and capped, the hidden states of `cfg.layer` extracted."""
    dev = resolve_device(device)
    if not isinstance(model, LoadedModel):
        dtype = resolve_dtype(cfg.dtype, dev)
        model = load_model_for_embedding(model, device=dev, weights=weights, dtype=dtype)
    layer = resolve_layer(cfg.layer, model.n_states)
    prep = prepare(model, corpus, cfg)
    sample = prep.sample.subset(shuffle_cap(prep.sample.n_points, cfg.max_points, cfg.seed))
    x, timing = embed_sample(model, sample, [layer], cfg, device=dev, quiet=quiet)
    return Embedded(model, layer, prep, sample, x[0], timing, dev)


def embed(
    model: str | Path | LoadedModel,
    corpus: str | Path | Sequence[str] | None,
    cfg: EstimateConfig | None = None,
    *,
    device: str | None = None,
    weights: str | None = None,
    quiet: bool = True,
) -> np.ndarray:
    """The protocol's points in memory, `[n_points, width]` float32 (steps 1-4 of the module
    docstring, shuffled and capped; nothing written). `model`: a run or HF folder, or a
    `LoadedModel`; `corpus`: a built-in name, a text path, a token store or a list of texts
    (one document each). `estimate_dimension(points, cfg)` then gives d and the exponents,
    the same numbers `estimate` writes for the same model, corpus and config (both run
    `embed_protocol`)."""
    cfg = cfg or EstimateConfig()
    return embed_protocol(model, corpus, cfg, device=device, weights=weights, quiet=quiet).points


def estimate_dimension(
    x: np.ndarray,
    cfg: EstimateConfig | None = None,
    batch_size: int | None = None,
    *,
    device: torch.device | None = None,
    quiet: bool = True,
) -> Dimension:
    """MLE on batches of (already shuffled) points, and the predicted exponents: the paper's
    protocol on an array (`cfg` default: the paper's K = 20, batches of 4096, β = 1). The
    k-NN search runs on `device` when it is a GPU (where the model ran), else on the CPU."""
    cfg = cfg or EstimateConfig()
    from scalelab.intrinsic.mle import MLE

    knn_device = str(device) if device is not None and device.type != "cpu" else None
    t0 = time.perf_counter()
    result = dimension_and_exponents(
        x,
        MLE(k=cfg.k, aggregate=cfg.aggregate, metric=cfg.metric, device=knn_device),
        batch_size=batch_size or cfg.batch_size,
        seed=cfg.seed,
        beta=cfg.beta,
        quiet=quiet,
    )
    return dataclasses.replace(
        result, wall_s=time.perf_counter() - t0, knn_device=knn_device or "cpu"
    )


def estimate(
    model: str | Path,
    corpus: str | Path | None,
    cfg: EstimateConfig,
    out_dir: str | Path,
    *,
    device: str | None = None,
    weights: str | None = None,
    quiet: bool = False,
) -> EstimateResult:
    """The whole protocol: `out_dir/estimate.json` (written last) and the kept embeddings
    (`out_dir/embeddings.safetensors`). A finished folder with the same request is returned
    as is; one made with another request is refused. Nothing is written before every input
    has been checked and the estimate has succeeded."""
    out_dir = Path(out_dir)
    request = estimate_request(model, corpus, weights, cfg)
    if finished_estimate(out_dir / RESULT, request) is not None:
        return read_estimate(out_dir / RESULT)
    emb = embed_protocol(model, corpus, cfg, device=device, weights=weights, quiet=quiet)
    loaded, layer, prep, sample = emb.model, emb.layer, emb.prep, emb.sample
    result = estimate_dimension(emb.points, cfg, device=emb.device, quiet=quiet)
    doc = EstimateResult.measured(
        result,
        beta=cfg.beta,
        layer=layer,
        layer_name=layer_name(layer, loaded.n_states),
        settings={
            **cfg.to_dict(),
            "context_len": prep.context_len,
            "per_doc_taken": prep.per_doc,
        },
        model=loaded.describe(),
        corpus=prep.corpus.info,
        counts=sample_counts(prep, len(emb.points)),
        timing=emb.timing,
        files={"embeddings": EMBEDDINGS, "positions": POSITIONS},
        request=request,
        provenance=provenance(),
    )
    with outdir.locked(out_dir):  # taken last: a failed estimate leaves no folder behind
        save_embeddings(out_dir, emb.points, prep, sample, doc)
        atomic_write_json(out_dir / RESULT, doc)
    return doc


def estimate_request(
    model: str | Path | list[str], corpus: str | Path | None, weights: str | None, cfg: Config
) -> dict[str, Any]:
    """What a result depends on (model and corpus paths resolved, the config): a finished
    folder is reused only when its saved request equals this one."""
    models = model if isinstance(model, list) else [model]
    resolved = [str(Path(m).resolve()) for m in models]
    return {
        "model": resolved if isinstance(model, list) else resolved[0],
        "corpus": corpus_key(corpus),
        "weights": weights,
        **cfg.to_dict(),
    }


def corpus_key(corpus: str | Path | None) -> str | None:
    """A corpus as recorded in a request: a resolved path, else the built-in name."""
    if corpus is None:
        return None
    path = Path(corpus)
    return str(path.resolve()) if path.exists() else str(corpus)


def finished_estimate(path: Path, request: dict[str, Any]) -> dict[str, Any] | None:
    """The saved result at `path` (None if absent), refused when made for another request."""
    if not path.is_file():
        return None
    saved = outdir.read_meta(path)
    outdir.same_config(saved.get("request", {}), request, path.parent)
    return saved


def sample_counts(prep: ProbeInputs, kept: int) -> dict[str, int]:
    """Documents, windows and points at each step of the protocol."""
    return {
        "documents_in_split": prep.corpus.docs.n_documents,
        "documents_used": prep.docs.n_documents,
        "windows": len(prep.sample.windows.doc),
        "window_tokens": int(prep.sample.windows.length.sum()),
        "points_sampled": prep.sample.n_points,
        "points_kept": kept,
    }


def point_index(prep: ProbeInputs, sample: Sample) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per point of `sample`: document index (in the split), position in the document, and
    position in its window."""
    pos, win = sample.positions, sample.windows
    doc = prep.doc_ids[win.doc[pos.window]]
    return doc, win.start[pos.window] + pos.offset, pos.offset


def save_embeddings(
    out_dir: Path, points: np.ndarray, prep: ProbeInputs, sample: Sample, doc: EstimateResult
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
        "layer": str(doc.layer),
        "layer_name": doc.layer_name,
        "model": to_json(doc.model, indent=None),
        "corpus": to_json(doc.corpus, indent=None),
        "settings": to_json(doc.settings, indent=None),
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
