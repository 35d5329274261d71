"""Defaults of `scalelab forecast` (kept apart from the fits so the CLI can read them without
importing numpy or scipy)."""

from __future__ import annotations

from dataclasses import dataclass

from scalelab.config import Config
from scalelab.errors import ConfigError


@dataclass(frozen=True)
class ForecastConfig(Config):
    """Defaults of `scalelab forecast` and of the held-out scoring.

    `constant_alpha` 0.095 is SmolLM2-135M's shakespeare prediction and close to the data
    exponents measured at CPU scale (docs/benchmarks/scaling.md): a baseline that ignores d.
    """

    ks: tuple[int, ...] = (3, 4, 5)
    # Also score each fixed exponent without the floor E (L = A·n^-α). Added after the
    # E + A·n^-α scores of docs/benchmarks/scaling.md's four corpora had been seen.
    score_without_floor: bool = True
    constant_alpha: float = 0.095
    n_boot: int = 1000
    level: float = 0.95
    seed: int = 0

    def validate(self) -> None:
        if not self.ks or any(int(k) < 2 for k in self.ks):
            raise ConfigError(f"ks must be integers >= 2, got {self.ks}")
        if not self.constant_alpha > 0:
            raise ConfigError(f"constant_alpha must be > 0, got {self.constant_alpha}")
        if self.n_boot < 0:
            raise ConfigError(f"n_boot must be >= 0, got {self.n_boot}")
        if not 0 < self.level < 1:
            raise ConfigError(f"level must be in (0, 1), got {self.level}")
