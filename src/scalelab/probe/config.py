"""The probe's options (`EstimateConfig`), defaults the seed paper's. No torch here: the CLI
derives its options from this dataclass (each field's default and help)."""

from __future__ import annotations

import dataclasses

from scalelab.config import Config, option
from scalelab.errors import ConfigError
from scalelab.fields import DTYPES, choice, positive_int
from scalelab.intrinsic import PAPER_BATCH_SIZE, PAPER_K

PAPER_CONTEXT = 1024  # window length in tokens, or the model's maximum if shorter
DEFAULT_BATCH_SIZES = (512, 1024, 2048, 4096, 8192, 16384)  # `ablate batch-size`
# Tokens per forward pass: on a CPU, batches of 1-2k tokens keep more of the activations in
# cache than 4k (SmolLM2-135M, one thread: ~1.1x per CPU-second; docs/benchmarks/estimate.md).
BATCH_TOKENS = 2048
POSITION_GROUPS = 4  # `ablate positions`: equal ranges the window is cut into


@dataclasses.dataclass(frozen=True)
class EstimateConfig(Config):
    """The protocol's options; defaults are the paper's. `context_len` is the probe's window
    length (tokens per sampled window, default min(1024, the model's maximum context)): a
    different thing from a model's own context, `GPTConfig.block_size`, which bounds it."""

    split: str = option("test", "Corpus split: test (paper), val, train or all.")
    max_documents: int | None = option(
        None, "Use a seeded random subset of this many documents (default: all).", flag="--max-docs"
    )
    context_len: int | None = option(
        None, f"Window length in tokens (default: min({PAPER_CONTEXT}, model maximum))."
    )
    per_doc: int = option(32, "Random positions kept per document.")
    layer: str = option(
        "final",
        "Hidden state: 'final' (after the final LayerNorm, default), 'final-pre-ln' (residual "
        "after the last block), 'embeddings', or an index 0..n_layer+1 (negative counts from "
        "the end).",
    )
    max_points: int = option(1_000_000, "Cap on the points kept.")
    batch_size: int = option(PAPER_BATCH_SIZE, "Points per MLE batch.")
    k: int = option(PAPER_K, "Neighbours for the MLE.")
    aggregate: str = option("mean", "'mean' (paper) or 'harmonic'.")
    metric: str = option("euclidean", "euclidean, cosine or angular.")
    beta: float = option(1.0, "Hölder smoothness β in the predicted exponents.")
    seed: int = option(0, "Random seed (recorded with the results).")
    split_seed: int = option(0, "Seed of the train/val/test split of a text corpus.")
    batch_tokens: int = option(
        BATCH_TOKENS, "Tokens per forward pass when embedding (memory vs speed)."
    )
    # The forward pass's dtype (auto: bf16 where native), as `TrainConfig.dtype` names it
    # (format 1 saved it as "precision": runs.migrate).
    dtype: str = option(
        "auto",
        "Forward-pass dtype: auto (bfloat16 autocast where the CPU/GPU has native bf16, about "
        "2x faster, d within 1%), float32 or bfloat16.",
        retired="--precision",
    )

    def validate(self) -> None:
        choice(self.split, "split", ("train", "val", "test", "all"))
        for name in ("per_doc", "max_points", "batch_size", "k", "batch_tokens"):
            positive_int(getattr(self, name), name)
        for name in ("max_documents", "context_len"):
            positive_int(getattr(self, name), name, optional=True)
        if self.k + 1 > self.batch_size:
            raise ConfigError(f"batch_size {self.batch_size} must exceed k = {self.k}")
        choice(self.aggregate, "aggregate", ("mean", "harmonic"))
        choice(self.metric, "metric", ("euclidean", "cosine", "angular"))
        choice(self.dtype, "dtype", DTYPES)
        if not self.beta > 0:
            raise ConfigError(f"beta must be positive, got {self.beta}")
