"""Induction heads in language models: per-head induction and previous-token scores, and
the in-context-learning score.

Definitions (TransformerLens's head detector and Olsson et al. 2022):

- Repeated random tokens: r_1..r_L drawn uniformly from the vocabulary (special tokens
  excluded), fed as [BOS] r_1..r_L r_1..r_L (BOS only for models that have one).
- Induction score of a head: the mean attention from each token of the second copy to the
  token after its previous occurrence (second-copy position i → first-copy position
  i − L + 1), over the L second-copy positions and all sequences.
- Previous-token score: the mean attention from every token but the first to the token just
  before it (position i → i − 1), on the same sequences.
- In-context-learning score: mean loss at a late context position minus mean loss at an
  early one (Olsson et al.: token 500 minus token 50), over windows of a corpus. Negative
  when later tokens are predicted better because of the context. Positions scale with the
  model's context: late = min(500, context − 1), early = max(1, round(late / 10)).

Scores come from explicit attention probabilities: `GPT.attention_probs` for scalelab
GPTs, `output_attentions=True` with eager attention for Hugging Face models.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import tokenizers
import torch
from torch import Tensor, nn

from scalelab.config import Config, option
from scalelab.errors import CheckpointError, ConfigError, InputError
from scalelab.io import atomic_write_json, provenance

if TYPE_CHECKING:
    from scalelab.probe.sample import TokenDocuments


ICL_WINDOWS = ("documents", "stream")


@dataclass(frozen=True)
class HeadScoreConfig(Config):
    """How heads are scored. `half_len` None: min(64, what fits the context)."""

    half_len: int | None = option(None, "Length of each copy (default ≤ 64).")
    n_sequences: int = option(32, "Repeated random sequences.", flag="--sequences")
    batch_size: int = option(8, "Sequences per forward pass.")
    icl_windows: int = option(128, "Corpus windows for the ICL score.")
    icl_early: int | None = option(None, "Early position (default late / 10).")
    icl_late: int | None = option(None, "Late position (default min(500, ctx-1)).")
    icl_windows_from: str = option(
        "documents",
        "ICL windows: documents (starts of long documents) | stream.",
        flag="--icl-from",
    )
    seed: int = option(0, "Random seed (recorded with the results).")

    def validate(self) -> None:
        for name in ("n_sequences", "batch_size", "icl_windows"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        for name in ("half_len", "icl_early", "icl_late"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ConfigError(f"{name} must be a positive integer or None, got {value!r}")
        if self.icl_early and self.icl_late and self.icl_early >= self.icl_late:
            raise ConfigError(
                f"icl_early ({self.icl_early}) must be before icl_late ({self.icl_late})"
            )
        if self.seed < 0:
            raise ConfigError(f"seed must be >= 0, got {self.seed}")
        if self.icl_windows_from not in ICL_WINDOWS:
            raise ConfigError(
                f"icl_windows_from must be one of {ICL_WINDOWS}, got {self.icl_windows_from!r}"
            )


@dataclass
class ScoredModel:
    """A causal LM as the head scores see it: attention probabilities and logits."""

    kind: str
    n_layer: int
    n_head: int
    max_context: int
    vocab_size: int
    # Both take ids [b, t] on any device and answer on the model's device.
    attention: Callable[[Tensor], list[Tensor]]  # -> per layer [b, heads, t, t]
    logits: Callable[[Tensor], Tensor]  # -> [b, t, vocab]
    bos_id: int | None = None
    excluded_ids: list[int] = field(default_factory=list)
    tokenizer: tokenizers.Tokenizer | None = None
    info: dict[str, Any] = field(default_factory=dict)


def from_gpt(gpt: nn.Module, tokenizer: tokenizers.Tokenizer | None = None) -> ScoredModel:
    """A scalelab `GPT` (no BOS token: it was trained on windows cut anywhere)."""
    cfg = gpt.config
    special = _special_ids(tokenizer)
    device = _device_of(gpt)
    return ScoredModel(
        kind="scalelab",
        n_layer=cfg.n_layer,
        n_head=cfg.n_head,
        max_context=cfg.block_size,
        vocab_size=cfg.vocab_size,
        attention=lambda idx: gpt.attention_probs(idx.to(device)),
        logits=lambda idx: gpt(idx.to(device))[0],
        excluded_ids=special,
        tokenizer=tokenizer,
    )


def from_hf(
    model: nn.Module, tokenizer: tokenizers.Tokenizer | None = None, *, bos: bool = True
) -> ScoredModel:
    """A Hugging Face causal LM, switched to eager attention so it returns probabilities.
    With `bos`, sequences start with the config's bos_token_id (if it has one)."""
    from scalelab.lm.hf import max_context, num_layers

    model.set_attn_implementation("eager")
    config = model.config
    n_head = getattr(config, "num_attention_heads", None) or getattr(config, "n_head", None)
    if not n_head:
        raise CheckpointError(f"{type(model).__name__} config does not state its head count")

    device = _device_of(model)

    def attention(idx: Tensor) -> list[Tensor]:
        out = model(input_ids=idx.to(device), output_attentions=True, use_cache=False)
        return list(out.attentions)

    bos_id = getattr(config, "bos_token_id", None)
    return ScoredModel(
        kind="hf",
        n_layer=num_layers(model),
        n_head=int(n_head),
        max_context=max_context(model),
        vocab_size=int(model.get_input_embeddings().weight.shape[0]),
        attention=attention,
        logits=lambda idx: model(input_ids=idx.to(device), use_cache=False).logits,
        bos_id=int(bos_id) if bos and isinstance(bos_id, int) else None,
        excluded_ids=_special_ids(tokenizer),
        tokenizer=tokenizer,
    )


def _device_of(module: nn.Module) -> torch.device:
    """Where the module's weights are: its inputs are moved there (a GPU run scores on the GPU)."""
    return next(module.parameters()).device


def _special_ids(tokenizer: tokenizers.Tokenizer | None) -> list[int]:
    if tokenizer is None:
        return []
    return sorted(i for i, t in tokenizer.get_added_tokens_decoder().items() if t.special)


def load_scored_model(path: str | Path, *, bos: bool | None = None) -> ScoredModel:
    """A scalelab run folder, a local HF folder, or a .gguf file (read with transformers),
    loaded by `lm.load`. `bos` None: HF models get their BOS token first, scalelab GPTs
    none (they were trained on windows cut anywhere)."""
    from scalelab.lm.load import load_model_for_embedding

    path = Path(path)
    if path.is_file() and path.suffix == ".gguf":
        loaded = load_model_for_embedding(path.parent, weights=path.name)
    else:
        loaded = load_model_for_embedding(path)
    if loaded.kind == "hf":
        scored = from_hf(loaded.module, loaded.tokenizer, bos=bos is not False)
    else:
        scored = from_gpt(loaded.module, loaded.tokenizer)
        if bos:
            scored.bos_id = loaded.tokenizer.token_to_id("<|endoftext|>")
    scored.info = loaded.describe()
    return scored


# --- scores ---------------------------------------------------------------------------------


def resolve_half_len(model: ScoredModel, half_len: int | None) -> int:
    """The repeated half's length: as asked, or min(64, what fits the context)."""
    room = (model.max_context - int(model.bos_id is not None)) // 2
    if half_len is None:
        half_len = min(64, room)
    if half_len < 2 or half_len > room:
        raise ConfigError(
            f"half_len {half_len} does not fit: the model's context of {model.max_context} "
            f"tokens allows 2 to {room}; lower --half-len"
        )
    return half_len


def repeated_tokens(
    model: ScoredModel, half_len: int, count: int, rng: np.random.Generator
) -> Tensor:
    """[count, (1 +) 2·half_len] ids: random non-special tokens repeated once, BOS first if
    the model has one. Tokens within a copy are distinct (drawn without replacement), so the
    previous occurrence of every second-copy token is exactly half_len positions back."""
    allowed = np.setdiff1d(np.arange(model.vocab_size), np.asarray(model.excluded_ids, int))
    if len(allowed) < half_len:
        raise InputError(
            f"the vocabulary has {len(allowed)} ordinary tokens, fewer than half_len "
            f"{half_len}; lower --half-len"
        )
    half = allowed[np.argsort(rng.random((count, len(allowed))), axis=1)[:, :half_len]]
    seqs = np.concatenate([half, half], axis=1)
    if model.bos_id is not None:
        seqs = np.concatenate([np.full((count, 1), model.bos_id), seqs], axis=1)
    return torch.from_numpy(seqs.astype(np.int64))


def scores_from_patterns(patterns: list[Tensor], half_len: int, offset: int) -> dict[str, Tensor]:
    """Per layer × head induction and previous-token scores [L, H] from attention
    probabilities [b, H, t, t] on repeated sequences whose first copy starts at `offset`."""
    second = torch.arange(offset + half_len, offset + 2 * half_len)
    after_prev = second - half_len + 1  # the token after the previous occurrence
    dest = torch.arange(offset + 1, offset + 2 * half_len)
    induction, previous = [], []
    for probs in patterns:
        p = probs.double().cpu()
        induction.append(p[:, :, second, after_prev].mean(dim=(0, 2)))
        previous.append(p[:, :, dest, dest - 1].mean(dim=(0, 2)))
    return {"induction": torch.stack(induction), "previous_token": torch.stack(previous)}


@torch.no_grad()
def head_scores(model: ScoredModel, cfg: HeadScoreConfig) -> dict[str, Any]:
    """Induction and previous-token scores of every head, as [n_layer][n_head] lists."""
    half_len = resolve_half_len(model, cfg.half_len)
    rng = np.random.default_rng(cfg.seed)
    seqs = repeated_tokens(model, half_len, cfg.n_sequences, rng)
    offset = int(model.bos_id is not None)
    totals: dict[str, Tensor] = {}
    for start in range(0, len(seqs), cfg.batch_size):
        chunk = seqs[start : start + cfg.batch_size]
        part = scores_from_patterns(model.attention(chunk), half_len, offset)
        for key, value in part.items():
            totals[key] = totals.get(key, 0) + value * len(chunk)
    out = {key: (value / len(seqs)).tolist() for key, value in totals.items()}
    return {**out, "half_len": half_len, "n_sequences": len(seqs), "bos": offset == 1}


def icl_positions(model: ScoredModel, cfg: HeadScoreConfig) -> tuple[int, int]:
    """(early, late) context positions: as asked, or Olsson et al.'s 50 and 500 capped to
    the model's context (late = min(500, context − 1), early = late / 10)."""
    late = cfg.icl_late or min(500, model.max_context - 1)
    early = cfg.icl_early or max(1, round(late / 10))
    if late >= model.max_context or early >= late:
        raise ConfigError(
            f"ICL positions early={early}, late={late} must satisfy early < late < the "
            f"model's context {model.max_context}; lower --icl-late"
        )
    return early, late


def icl_windows(docs: TokenDocuments, span: int, count: int, where: str) -> np.ndarray:
    """[≤ count, span] windows. "documents": the first `span` tokens of documents at least
    that long (so position t is the t-th token of a document, as in Olsson et al.), spread
    evenly over them; "stream": spaced evenly through the concatenated documents (how
    scalelab GPTs are trained: windows cut anywhere)."""
    if where == "stream":
        stream = docs.tokens
        if len(stream) < span:
            raise InputError(
                f"the corpus has {len(stream)} tokens, fewer than one window of {span}; use "
                "a larger corpus or a smaller --icl-late"
            )
        starts = np.linspace(0, len(stream) - span, min(count, len(stream) // span))
    else:
        long = np.flatnonzero(docs.lengths >= span)
        if len(long) == 0:
            raise InputError(
                f"no document of the corpus has {span} tokens (the longest has "
                f"{int(docs.lengths.max(initial=0))}); use a corpus of longer documents "
                "(e.g. python-stdlib), a smaller --icl-late, or --icl-from stream"
            )
        picked = long[np.linspace(0, len(long) - 1, min(count, len(long))).astype(np.int64)]
        starts = docs.offsets[picked]
    idx = starts.astype(np.int64)[:, None] + np.arange(span)
    return np.asarray(docs.tokens[idx], dtype=np.int64)


@torch.no_grad()
def icl_score(model: ScoredModel, docs: TokenDocuments, cfg: HeadScoreConfig) -> dict[str, Any]:
    """Loss at the late position minus loss at the early one (nats), over windows of
    late + 1 tokens (see `icl_windows`)."""
    early, late = icl_positions(model, cfg)
    windows = torch.from_numpy(icl_windows(docs, late + 1, cfg.icl_windows, cfg.icl_windows_from))
    count = len(windows)
    at = torch.tensor([early, late])  # the token at position t, predicted from positions < t
    losses = []
    for i in range(0, count, cfg.batch_size):
        x = windows[i : i + cfg.batch_size]
        logp = torch.log_softmax(model.logits(x)[:, at - 1].double().cpu(), dim=-1)
        losses.append(-logp.gather(-1, x[:, at][..., None])[..., 0])
    loss = torch.cat(losses)
    early_loss, late_loss = float(loss[:, 0].mean()), float(loss[:, 1].mean())
    diff = loss[:, 1] - loss[:, 0]  # paired per window: its spread gives the standard error
    se = float(diff.std() / np.sqrt(count)) if count > 1 else float("nan")
    return {
        "icl_score": late_loss - early_loss,
        "icl_score_se": se,
        "loss_early_nats": early_loss,
        "loss_late_nats": late_loss,
        "icl_early": early,
        "icl_late": late,
        "icl_windows": count,
        "icl_windows_from": cfg.icl_windows_from,
    }


def top_heads(scores: list[list[float]], k: int = 5) -> list[dict[str, Any]]:
    """The k highest-scoring (layer, head) pairs, best first."""
    arr = np.asarray(scores)
    order = np.argsort(arr, axis=None)[::-1][:k]
    return [
        {
            "layer": int(i // arr.shape[1]),
            "head": int(i % arr.shape[1]),
            "score": float(arr.flat[i]),
        }
        for i in order
    ]


def measure_heads(
    model: str | Path | ScoredModel,
    cfg: HeadScoreConfig,
    corpus: str | Path | None = None,
    *,
    bos: bool | None = None,
) -> dict[str, Any]:
    """Head scores of a model (path or `ScoredModel`), their top heads, and, with a corpus
    (built-in name, text path or token store), the in-context-learning score."""
    scored = model if isinstance(model, ScoredModel) else load_scored_model(model, bos=bos)
    if corpus is not None and scored.tokenizer is None:
        raise InputError(
            "the model has no tokenizer to encode --corpus with; restore its token store "
            "(named in the run's config.json) or leave --corpus out"
        )
    icl_positions(scored, cfg)  # validate before the long part
    result: dict[str, Any] = {
        "model": {
            **scored.info,
            "n_layer": scored.n_layer,
            "n_head": scored.n_head,
            "max_context": scored.max_context,
            "vocab_size": scored.vocab_size,
        },
        "config": cfg.to_dict(),
        **head_scores(scored, cfg),
    }
    result["top_induction"] = top_heads(result["induction"])
    result["top_previous_token"] = top_heads(result["previous_token"])
    if corpus is not None:
        from scalelab.probe.corpus import load_corpus_tokens

        tokens = load_corpus_tokens(corpus, scored.tokenizer, split="test")
        result["corpus"] = tokens.info
        result.update(icl_score(scored, tokens.docs, cfg))
    return result


def run_heads(
    model: str | Path | ScoredModel,
    cfg: HeadScoreConfig,
    corpus: str | Path | None = None,
    out: str | Path | None = None,
    *,
    bos: bool | None = None,
) -> dict[str, Any]:
    """`measure_heads` with its time and provenance; with `out`, also `out/heads.json`
    (`scalelab.report.heads.write_heads_report` draws the page beside it)."""
    t0, c0 = time.perf_counter(), time.process_time()
    result = measure_heads(model, cfg, corpus, bos=bos)
    result["wall_s"] = round(time.perf_counter() - t0, 1)
    result["cpu_s"] = round(time.process_time() - c0, 1)
    result["provenance"] = provenance()
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_json(out / "heads.json", result)
    return result
