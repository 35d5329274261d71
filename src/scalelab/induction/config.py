"""The configs of the induction-heads models, their training and their sweeps: plain
dataclasses without torch, so the CLI derives its options (each field's default and help)
without importing it (as from `lm.config` for the language models)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scalelab.config import Config, option
from scalelab.errors import ConfigError

MODES = ("float", "fixed")  # the readings of "p bits" (`induction.precision`)
POSITIONS = ("learned", "sinusoidal", "relative")


@dataclass(frozen=True)
class InductionConfig(Config):
    """Architecture of an induction model; `d_head` defaults to n_embd // n_head."""

    alphabet_size: int = option(8, "Alphabet size.", flag="--alphabet")
    max_len: int = option(64, "Longest sequence the model takes.")
    n_layer: int = option(2, "Number of attention layers L.", flag="--layers")
    n_head: int = option(2, "Heads per layer h.", flag="--heads")
    n_embd: int = option(64, "Model width m.", flag="--width")
    d_head: int | None = None
    positions: str = option("learned", "learned | sinusoidal | relative.")
    mlp: bool = option(False, "Add an MLP to each block.")
    layer_norm: bool = True
    bos: bool = True
    bias: bool = True
    rel_distances: int = 16
    rel_scale: float = 1.0  # the bias is rel_scale × its parameter: Adam moves it that much faster

    def validate(self) -> None:
        for name in ("alphabet_size", "max_len", "n_layer", "n_head", "n_embd"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.alphabet_size < 2:
            raise ConfigError("alphabet_size must be >= 2")
        if self.positions not in POSITIONS:
            raise ConfigError(f"positions must be one of {POSITIONS}, got {self.positions!r}")
        if self.d_head is None and self.n_embd % self.n_head:
            raise ConfigError(
                f"n_embd {self.n_embd} is not divisible by n_head {self.n_head}; "
                "change one or set d_head"
            )
        if self.rel_distances < 1:
            raise ConfigError(f"rel_distances must be >= 1, got {self.rel_distances}")
        if self.d_head is not None and self.d_head < 1:
            raise ConfigError(f"d_head must be >= 1, got {self.d_head}")

    @property
    def head_dim(self) -> int:
        return self.d_head if self.d_head is not None else self.n_embd // self.n_head

    @property
    def n_classes(self) -> int:
        return self.alphabet_size + 1

    @property
    def n_positions(self) -> int:
        return self.max_len + int(self.bos)


@dataclass(frozen=True)
class InductionTrainConfig(Config):
    """Optimiser and data settings (defaults: the measured recipe in docs/background.md)."""

    n: int = option(32, "Training sequence length.")
    seed: int = option(0, "Random seed (recorded with the results).")
    max_steps: int = option(2000, "Step cap.", flag="--steps")
    batch_size: int = 64
    lr: float = option(1e-3, "Peak learning rate (AdamW).")
    beta1: float = 0.9
    beta2: float = 0.98
    weight_decay: float = 0.0
    warmup_steps: int = 200
    grad_clip: float = 1.0
    hard_fraction: float = option(0.25, "Share of INDEX hard instances per batch.")
    eval_interval: int = 50
    eval_samples: int = 512
    # stop once acc_all and acc_hard both reach it
    target_acc: float | None = option(
        None,
        "Stop when acc_all and acc_hard reach it (default, or 0: never).",
        flag="--target",
        none_at=0,
    )
    # straight-through rounding to p bits while training
    train_bits: int | None = option(
        None, "Train with straight-through p-bit rounding (default, or 0: off).", none_at=0
    )
    precision_mode: str = "float"
    min_n: int | None = None  # each step's length uniform in [min_n, n]; evaluation at n
    last_weight: float = 0.0  # extra loss weight on the INDEX answer of the hard rows

    def validate(self) -> None:
        for name in ("n", "max_steps", "batch_size", "eval_interval", "eval_samples"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not 0.0 <= self.hard_fraction <= 1.0:
            raise ConfigError(f"hard_fraction must lie in [0, 1], got {self.hard_fraction}")
        if self.lr <= 0 or self.warmup_steps < 0 or self.grad_clip <= 0:
            raise ConfigError("need lr > 0, warmup_steps >= 0 and grad_clip > 0")
        if self.target_acc is not None and not 0.0 < self.target_acc <= 1.0:
            raise ConfigError(f"target_acc must lie in (0, 1], got {self.target_acc}")
        if self.train_bits is not None and self.train_bits < 1:
            raise ConfigError(f"train_bits must be >= 1, got {self.train_bits}")
        if self.precision_mode not in MODES:
            raise ConfigError(f"precision_mode must be one of {MODES}")
        if self.min_n is not None and not 3 <= self.min_n <= self.n:
            raise ConfigError(f"min_n must lie in [3, n={self.n}], got {self.min_n}")
        if self.last_weight < 0:
            raise ConfigError(f"last_weight must be >= 0, got {self.last_weight}")


@dataclass(frozen=True)
class InductionSweepConfig(Config):
    """The grid (lists) and the shared training settings of an induction sweep."""

    ns: tuple[int, ...] = option((16, 32, 64, 128), "Sequence lengths n.")
    alphabet_sizes: tuple[int, ...] = option((4, 8), "Alphabet sizes.", flag="--alphabets")
    layers: tuple[int, ...] = option((1, 2), "Layer counts L.")
    heads: tuple[int, ...] = option((2,), "Head counts h.")
    widths: tuple[int, ...] = option((64,), "Widths m.")
    eval_bits: tuple[int, ...] = option((), "Precisions p to also evaluate at.")
    # None: float32 training; an empty option means that (blank)
    train_bits: tuple[int | None, ...] = option(
        (None,), "Straight-through training precisions (grid; default: none).", blank=(None,)
    )
    seeds: tuple[int, ...] = option((0,), "Seeds.")
    construction: bool = option(True, "Add the construction's runs.")
    mlp: bool = option(False, "Give trained models an MLP.")
    precision_mode: str = option(
        "float", "Rounding of the precisions: float (p significant bits) | fixed."
    )
    max_steps: int = option(2000, "Step cap per run.", flag="--steps")
    max_steps_one_layer: int | None = option(
        None, "Step cap for one-layer runs (default: --steps).", flag="--steps-one-layer"
    )
    target_acc: float | None = option(
        0.99, "Stop when acc_all and acc_hard reach it (0: never).", flag="--target", none_at=0
    )
    batch_size: int = option(64, "Sequences per step.")
    hard_fraction: float = option(0.25, "Share of hard instances in training.")
    eval_samples: int = option(512, "Sequences per metric.")
    lr: float = option(1e-3, "Peak learning rate.")

    def validate(self) -> None:
        for name in ("ns", "alphabet_sizes", "layers", "heads", "widths", "train_bits", "seeds"):
            if not getattr(self, name):
                raise ConfigError(f"sweep list {name} is empty; give at least one value")
        if min(self.ns) < 3 or min(self.alphabet_sizes) < 3:
            raise ConfigError("induction sweeps need n >= 3 and alphabet sizes >= 3")
        if self.precision_mode not in MODES:
            raise ConfigError(f"precision_mode must be one of {MODES}")
        if any(b is not None and b < 1 for b in self.train_bits) or any(
            b < 1 for b in self.eval_bits
        ):
            raise ConfigError("bits must be >= 1 (train_bits may be None for float32)")

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> InductionSweepConfig:
        fixed = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        return super().from_dict(fixed)
