"""Training and evaluation windows from a flat token array (a `TokenStore` split).

Training windows are drawn with replacement (as nanoGPT does) by an explicit numpy
generator whose state is saved in every checkpoint, so a resumed run sees exactly the
batches an uninterrupted run would have seen. Evaluation windows are fixed, so validation
losses at different steps are comparable.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from scalelab.errors import ConfigError


def check_long_enough(n_tokens: int, block_size: int, what: str) -> None:
    """A window needs `block_size + 1` tokens (inputs and their next-token targets)."""
    if n_tokens < block_size + 1:
        raise ConfigError(
            f"the {what} has {n_tokens} tokens, fewer than context length {block_size} + 1; "
            f"use a smaller --block-size (at most {max(n_tokens - 1, 0)}) or more data"
        )


def windows(tokens: np.ndarray, starts: np.ndarray, block_size: int) -> tuple[torch.Tensor, ...]:
    """Inputs and targets `[len(starts), block_size]` (int64) by one vectorised gather."""
    idx = starts[:, None] + np.arange(block_size + 1)
    w = torch.from_numpy(np.asarray(tokens[idx], dtype=np.int64))
    return w[:, :-1], w[:, 1:]


class WindowSampler:
    """Random windows drawn with replacement from `tokens` by a seeded PCG64 generator."""

    def __init__(self, tokens: np.ndarray, block_size: int, seed: int) -> None:
        check_long_enough(len(tokens), block_size, "training data")
        self.tokens = tokens
        self.block_size = block_size
        self.rng = np.random.Generator(np.random.PCG64(seed))
        self.windows_drawn = 0

    def sample(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        """`n` windows: inputs and targets `[n, block_size]`."""
        starts = self.rng.integers(0, len(self.tokens) - self.block_size, size=n)
        self.windows_drawn += n
        return windows(self.tokens, starts, self.block_size)

    def state(self) -> dict[str, Any]:
        """Everything needed to continue the same stream of windows."""
        return {"bit_generator": self.rng.bit_generator.state, "windows_drawn": self.windows_drawn}

    def load_state(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["bit_generator"]
        self.windows_drawn = int(state["windows_drawn"])


def spaced_starts(n_tokens: int, block_size: int, n_windows: int) -> np.ndarray:
    """`n_windows` window starts spread evenly over the split (validation: a fixed sample)."""
    check_long_enough(n_tokens, block_size, "evaluation split")
    return np.unique(np.linspace(0, n_tokens - block_size - 1, n_windows).round().astype(np.int64))


def tiling_starts(n_tokens: int, block_size: int, max_tokens: int | None = None) -> np.ndarray:
    """Non-overlapping windows covering the split (test: every target token scored once)."""
    check_long_enough(n_tokens, block_size, "evaluation split")
    usable = n_tokens - 1 if max_tokens is None else min(n_tokens - 1, max_tokens)
    return np.arange(max(usable // block_size, 1), dtype=np.int64) * block_size


def unigram_loss(train_tokens: np.ndarray, eval_tokens: np.ndarray, vocab_size: int) -> float:
    """Cross-entropy (nats/token) of the add-one-smoothed unigram model of the training tokens
    on `eval_tokens`: the baseline a language model must clearly beat."""
    counts = np.bincount(np.asarray(train_tokens), minlength=vocab_size).astype(np.float64) + 1.0
    logp = np.log(counts / counts.sum())
    eval_counts = np.bincount(np.asarray(eval_tokens), minlength=vocab_size)
    return float(-(eval_counts * logp).sum() / eval_counts.sum())
