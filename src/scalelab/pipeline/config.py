"""The options of `scalelab validate` (and `scalelab demo`, which is validate on a built-in
corpus with these defaults). One default, one place: the CLI reads them from here.

How the defaults were chosen (docs/sweeps.md): by the runs' stop reasons and by time only,
never by how close the observed exponent came to a prediction. Small models, a constant
learning rate after a short warm-up, and patience on the validation loss make the runs stop by
patience well inside their budgets; the sizes keep `make demo` near 10 minutes on a quiet
2-core CPU.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from scalelab.config import Config
from scalelab.errors import ConfigError
from scalelab.fields import choice, positive_int
from scalelab.intrinsic import PAPER_BATCH_SIZE, PAPER_K
from scalelab.probe.config import PRECISIONS
from scalelab.sweeps.schedule import Schedule


def _schedule() -> dict[str, Any]:
    return Schedule(
        patience=4,
        patience_fraction=0.25,
        max_epochs=40.0,
        decay_epochs=3.0,
        min_steps=400,
        step_cap=4000,
    ).to_dict()


@dataclasses.dataclass(frozen=True)
class PipelineConfig(Config):
    """Everything that defines a validation (saved as pipeline.json, checked on resume)."""

    corpus: str = "shakespeare"
    split_on: str = "blank"
    glob: str = "**/*.txt"
    text_field: str = "text"
    vocab_size: int = 2048
    model: str = "2x48"  # the data sweep's model (LAYERSxWIDTH[xHEADS]); its largest run
    context_len: int = 128  # is the own reference model
    batch_size: int = 16
    lr: float = 2e-3
    min_lr: float = 2e-3  # = lr: constant after warm-up (a decayed rate left runs crawling)
    min_tokens: int = 500  # two decades below max_tokens
    max_tokens: int = 50_000  # the demo's time (docs/sweeps.md#how-the-defaults-were-chosen)
    points: int = 7
    eval_interval: int = 25
    eval_batches: int = 8
    test_tokens: int | None = 100_000
    schedule: dict[str, Any] = dataclasses.field(default_factory=_schedule)
    model_sweep: tuple[str, ...] = ("1x16", "1x32", "2x48")
    model_tokens: int | None = None  # the model sweep's data (None: max_tokens)
    check_largest: int = 1  # convergence check: the largest runs of each sweep
    check_factor: int = 3  # ... with a stopping rule (and budget) this many times stricter
    id_per_doc: int = 32
    id_max_documents: int | None = None
    # given reference models read only this many test documents (a declared subset, chosen
    # by the seed): a 135M model's forward pass is most of validate's time on a CPU
    id_reference_documents: int | None = 320
    id_k: int = PAPER_K
    id_batch_size: int = PAPER_BATCH_SIZE
    id_precision: str = "auto"  # forward pass of every model that measures d
    n_boot: int = 1000
    seed: int = 0

    def validate(self) -> None:
        Schedule.from_dict(self.schedule)
        if not 0 < self.min_tokens < self.max_tokens:
            raise ConfigError(
                f"need 0 < min_tokens < max_tokens, got {self.min_tokens}, {self.max_tokens}"
            )
        if self.points < 3:
            raise ConfigError(f"points must be >= 3 to fit an exponent, got {self.points}")
        if self.model_sweep and len(self.model_sweep) < 3:
            raise ConfigError("a model sweep needs at least 3 models to fit; list more or none")
        if not 1 <= self.check_largest <= self.points:
            raise ConfigError(f"check_largest must be in [1, points], got {self.check_largest}")
        if self.check_factor < 2:
            raise ConfigError(f"check_factor must be >= 2, got {self.check_factor}")
        positive_int(self.id_reference_documents, "id_reference_documents", optional=True)
        choice(self.id_precision, "id_precision", PRECISIONS)
        if self.id_batch_size <= self.id_k:
            raise ConfigError(
                f"--id-batch-size {self.id_batch_size} must exceed K = {self.id_k}; raise it"
            )

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "model_sweep": list(self.model_sweep)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PipelineConfig:
        if "model_sweep" in data:
            data = {**data, "model_sweep": tuple(data["model_sweep"])}
        return super().from_dict(data)

    @classmethod
    def from_preset(cls, name: str, **overrides: Any) -> PipelineConfig:
        """The preset `name` (PRESETS: overrides of the defaults above) with `overrides`,
        given by field name, on top."""
        if name not in PRESETS:
            raise ConfigError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
        return cls(**{**PRESETS[name], **overrides})


# Named presets (`scalelab validate --preset NAME`): overrides of the defaults above, one
# place. How each was sized, and which corpora reach its sizes: docs/sweeps.md#presets. Neither
# was tuned on an exponent.
PRESETS: dict[str, dict[str, Any]] = {
    # 2 CPU cores, one hour in the worst case (every run at its 4,000-step cap, the check's
    # stricter run continuing to 3x that cap and its reseeded run to the cap), from float32
    # tokens per CPU-second measured per shape; shakespeare's train split holds the sizes.
    "cpu-hour": {
        "model": "4x96",
        "min_tokens": 2_500,
        "max_tokens": 250_000,
        "points": 7,
        "model_sweep": ("1x32", "2x48", "3x64", "4x96"),
        "id_reference_documents": None,
    },
    # The model side where it can be read: a vocabulary of 320 (the 256 bytes, end-of-text and
    # 63 merges) so that non-embedding parameters are the larger part of every model
    # (59-91%), four widths at depth 6 (5,248 ... 300,032 non-embedding parameters, 1.76
    # decades), each on 2,048,000 tokens so that the 4,000-step cap is at most 4 passes:
    # no model can be data-limited by the report's rule. Corpora: >= 2,048,000 train tokens
    # with BPE 320 (shakespeare has 2.5M).
    "model-side": {
        "vocab_size": 320,
        "model_sweep": ("6x8", "6x16", "6x32", "6x64"),
        "model_tokens": 2_048_000,
    },
    # One H200-class GPU: 4.93M-85.1M non-embedding parameters, 10M-100M tokens (a corpus with
    # at least 100M training tokens); its data sweep is bench/gpu_validate.py's 8 minutes.
    "gpu": {
        "vocab_size": 4096,
        "model": "4x320x5",
        "context_len": 512,
        "batch_size": 128,
        "lr": 1e-3,
        "min_lr": 1e-3,
        "min_tokens": 10_000_000,
        "max_tokens": 100_000_000,
        "points": 4,
        "eval_interval": 50,
        "test_tokens": 2_000_000,
        "schedule": Schedule(
            patience=4, max_epochs=2.0, decay_epochs=2.0, min_steps=100, step_cap=20_000
        ).to_dict(),
        "model_sweep": ("4x320x5", "6x512x8", "8x640x10", "12x768x12"),
        "id_max_documents": 2_000,
    },
}
