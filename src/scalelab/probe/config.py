"""The probe's options (`EstimateConfig`), defaults the seed paper's. No torch here: the CLI
reads its defaults from this dataclass."""

from __future__ import annotations

import dataclasses

from scalelab.config import Config, saved_as
from scalelab.errors import ConfigError
from scalelab.fields import choice, positive_int
from scalelab.intrinsic import PAPER_BATCH_SIZE, PAPER_K
from scalelab.lm.config import DTYPES

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

    split: str = "test"
    max_documents: int | None = None
    context_len: int | None = None
    per_doc: int = 32
    layer: str = "final"
    max_points: int = 1_000_000
    batch_size: int = PAPER_BATCH_SIZE
    k: int = PAPER_K
    aggregate: str = "mean"
    metric: str = "euclidean"
    beta: float = 1.0
    seed: int = 0
    split_seed: int = 0
    batch_tokens: int = BATCH_TOKENS
    # The forward pass's dtype (auto: bf16 where native), as `TrainConfig.dtype` names it;
    # saved under the key "precision", which estimate folders hold.
    dtype: str = dataclasses.field(default="auto", metadata=saved_as("precision"))

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
