"""What one training run returns and writes last as `result.json` (`lm.train.train`), read
without torch: a run is finished when this file exists."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scalelab.config import Record
from scalelab.lm.config import GPTConfig, TrainConfig


@dataclass(frozen=True, kw_only=True)
class TrainResult(Record):
    """Test loss (the best weights, over the test tiling) and how the run got there: its
    stop, its tokens and time, where it ran, and the configs it was trained from.

    `test_loss_se_nats` and `provenance` are None in runs saved before they were recorded."""

    test_loss_nats: float
    test_loss_se_nats: float | None = None  # over the test windows: the loss's sampling noise
    best_val_loss_nats: float
    best_step: int
    unigram_val_loss_nats: float
    test_tokens_scored: int
    tokens_seen: int
    train_tokens_available: int
    steps: int
    params: int
    params_non_embedding: int
    wall_time_s: float
    train_time_s: float
    tokens_per_s: float
    train_cpu_time_s: float
    tokens_per_cpu_s: float
    stop_reason: str
    dtype: str
    device: str
    world_size: int
    model: GPTConfig
    train: TrainConfig
    provenance: dict[str, Any] | None = None

    def scalars(self) -> dict[str, Any]:
        """The flat fields (what `scalelab train` prints and a runs.csv row holds)."""
        return {k: v for k, v in self.to_dict().items() if not isinstance(v, dict | list)}
