"""The configs of the manifold regression: the regressor's sizes and its two training
schedules. Plain dataclasses without torch, so the CLI reads their defaults and the sweep
presets (`manifold.plan`) without importing it (as `lm.config` does for the language models)."""

from __future__ import annotations

from dataclasses import dataclass

from scalelab.config import Config
from scalelab.errors import ConfigError
from scalelab.fields import choice


@dataclass(frozen=True)
class RegressorConfig(Config):
    """Sizes of the regressor: input dim D (= number of tokens l), blocks, heads, widths."""

    D: int = 32
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 32
    ffn_width: int = 64
    ffn_depth: int = 2
    attention: str = "softmax"

    def validate(self) -> None:
        for name in ("D", "n_layer", "n_head", "n_embd", "ffn_width", "ffn_depth"):
            if getattr(self, name) < 1:
                raise ConfigError(f"regressor {name} must be >= 1, got {getattr(self, name)}")
        if self.n_embd < 2:
            raise ConfigError("regressor n_embd must be >= 2 (data row + positional rows)")
        if self.n_embd % self.n_head:
            raise ConfigError(f"n_embd={self.n_embd} must be divisible by n_head={self.n_head}")
        choice(self.attention, "attention", ("softmax", "relu"))


@dataclass(frozen=True)
class FitConfig(Config):
    """Optimiser and stopping rule of one regression run."""

    lr: float = 2e-3
    batch_size: int = 128
    max_steps: int = 20000
    min_eval_steps: int = 25
    patience: int = 12
    lr_patience: int = 4
    min_lr: float = 1e-5
    weight_decay: float = 0.0

    def validate(self) -> None:
        if not self.lr > 0 or not self.min_lr > 0:
            raise ConfigError("lr and min_lr must be > 0")
        for name in ("batch_size", "max_steps", "min_eval_steps", "patience", "lr_patience"):
            if getattr(self, name) < 1:
                raise ConfigError(f"fit {name} must be >= 1, got {getattr(self, name)}")
        if self.weight_decay < 0:
            raise ConfigError("weight_decay must be >= 0")


@dataclass(frozen=True)
class ScheduleConfig(Config):
    """The fixed schedule: `max_steps` Adam steps, cosine decay from `lr` to `lr`·`final_lr_ratio`,
    `n_evals` validations spread evenly, the best of them restored. Nothing stops early, so
    the stopping point is not a source of noise: only the choice among `n_evals` checkpoints
    uses the validation set."""

    lr: float = 2e-3
    batch_size: int = 64
    max_steps: int = 1000
    n_evals: int = 20
    final_lr_ratio: float = 0.01

    def validate(self) -> None:
        if not self.lr > 0 or not 0 < self.final_lr_ratio <= 1:
            raise ConfigError("schedule lr must be > 0 and final_lr_ratio in (0, 1]")
        for name in ("batch_size", "max_steps", "n_evals"):
            if getattr(self, name) < 1:
                raise ConfigError(f"schedule {name} must be >= 1, got {getattr(self, name)}")
