"""A model's mean test loss against context length: the curve γ is read from.

Cagnetta et al. (2026) take the next-token conditional entropy as a function of the length of
the conditioning context; a trained model's cross-entropy at context length n (the number of
tokens it sees before the predicted one) is its upper bound that a model can measure. Each
test document at least `context_len` tokens long gives one window of exactly `context_len`
tokens at a seeded uniform start (the estimate protocol's window sampler), so every context
length 1 … context_len − 1 is averaged over the same windows. Any model scalelab loads works:
a run folder, a local Hugging Face folder or a GGUF file in one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from scalelab import seeds
from scalelab.errors import ConfigError, InputError
from scalelab.lm.load import LoadedModel, load_model_for_embedding
from scalelab.probe.corpus import load_corpus_tokens
from scalelab.probe.sample import ragged_arange, sample_windows

MIN_WINDOWS = 8


def _logits(model: LoadedModel, idx: torch.Tensor) -> torch.Tensor:
    if model.kind == "scalelab":
        return model.module(idx)[0]
    return model.module(input_ids=idx).logits


def window_tokens(docs: Any, context_len: int, max_windows: int | None, seed: int) -> np.ndarray:
    """`[n_windows, context_len]` token ids: one seeded window per long-enough document,
    at most `max_windows` of them (a seeded subset)."""
    lengths = docs.lengths
    long = np.flatnonzero(lengths >= context_len)
    rng = np.random.default_rng([seed, seeds.DOCUMENTS])
    if max_windows is not None and len(long) > max_windows:
        long = np.sort(rng.choice(long, max_windows, replace=False))
    if len(long) < MIN_WINDOWS:
        raise InputError(
            f"only {len(long)} test document(s) hold {context_len} tokens (need "
            f"{MIN_WINDOWS}); use a shorter --context-len or a corpus with longer documents"
        )
    win = sample_windows(lengths[long], context_len, rng)
    starts = docs.offsets[long] + win.start
    flat = ragged_arange(starts, np.full(len(long), context_len))
    return np.asarray(docs.tokens[flat], dtype=np.int64).reshape(len(long), context_len)


@torch.no_grad()
def position_loss(
    model: str | Path | LoadedModel,
    corpus: str | Path,
    *,
    context_len: int | None = None,
    max_windows: int | None = 512,
    batch_windows: int = 8,
    seed: int = 0,
    weights: str | None = None,
    device: str = "cpu",
) -> dict[str, Any]:
    """Mean cross-entropy (nats/token) at each context length n = 1 … context_len − 1 over
    windows of the corpus's test split, with the standard error over windows."""
    if not isinstance(model, LoadedModel):
        model = load_model_for_embedding(model, device=device, weights=weights)
    ctx = context_len or model.max_context
    if ctx < 5 or ctx > model.max_context:
        raise ConfigError(
            f"context_len {ctx}: use 5 … {model.max_context} (the model's maximum context)"
        )
    docs = load_corpus_tokens(corpus, model.tokenizer, split="test").docs
    windows = window_tokens(docs, ctx, max_windows, seed)
    module = model.module
    module.eval()
    losses = []
    for i in range(0, len(windows), batch_windows):
        idx = torch.from_numpy(windows[i : i + batch_windows]).to(device)
        logits = _logits(model, idx[:, :-1]).float()
        nll = F.cross_entropy(logits.transpose(1, 2), idx[:, 1:], reduction="none")
        losses.append(nll.cpu().numpy())
    per = np.concatenate(losses)  # [windows, ctx − 1]: column j has context length j + 1
    return {
        "context": np.arange(1, ctx).astype(float).tolist(),
        "loss_nats": per.mean(axis=0).tolist(),
        "loss_se": (per.std(axis=0, ddof=1) / np.sqrt(len(per))).tolist(),
        "n_windows": len(per),
        "context_len": ctx,
        "model": str(model.path),
    }
