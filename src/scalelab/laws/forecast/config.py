"""Defaults of `scalelab forecast` (kept apart from the fits so the CLI can read them without
importing numpy or scipy)."""

from __future__ import annotations

from dataclasses import dataclass

from scalelab.config import Config, option
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
    constant_alpha: float = option(
        0.095, "The constant exponent scored as a baseline.", flag="--constant"
    )
    n_boot: int = option(1000, "Bootstrap resamples for intervals.")
    level: float = 0.95
    seed: int = option(0, "Random seed (recorded with the results).")

    def validate(self) -> None:
        if not self.ks or any(int(k) < 2 for k in self.ks):
            raise ConfigError(f"ks must be integers >= 2, got {self.ks}")
        if not self.constant_alpha > 0:
            raise ConfigError(f"constant_alpha must be > 0, got {self.constant_alpha}")
        if self.n_boot < 0:
            raise ConfigError(f"n_boot must be >= 0, got {self.n_boot}")
        if not 0 < self.level < 1:
            raise ConfigError(f"level must be in (0, 1), got {self.level}")


@dataclass(frozen=True)
class ForecastRequest(Config):
    """What `scalelab forecast` is asked: where the exponent comes from (a number, a d, a d
    source of a validate folder, or none: free), which runs are fitted, and what is
    forecast (sizes, the data for a loss, the compute-optimal split of budgets)."""

    alpha: float | None = option(None, "Fix the exponent at this value.")
    d: float | None = option(None, "Fix the exponent from d: 2/(2+d).")
    source: str | None = option(
        None, "Fix the exponent from this d source of a validate folder's d/."
    )
    floor: bool = option(
        True, "With a fixed exponent fit L = E + A·n^-α (--no-floor: L = A·n^-α, no E term)."
    )
    fit_upto: float | None = option(None, "Fit on the runs up to this size (default: all).")
    k: int | None = option(None, "Fit on the K smallest runs.")
    at: tuple[float, ...] = option(
        (), "Comma-separated sizes to forecast (default: the runs not fitted)."
    )
    loss: float | None = option(None, "Also: data needed to reach this loss.")
    budget: tuple[float, ...] = option(
        (), "Comma-separated FLOP budgets C: compute-optimal N, D (C = 6ND)."
    )
    grid: str | None = option(None, "Data × model table for --budget (default: the input).")
    n_col: str = option("params_non_embedding", "Grid: parameters column.")
    d_col: str = option("train_tokens", "Grid: tokens column.")
    c_col: str | None = option(None, "Grid: training-FLOP column instead of --d-col (D = C / 6N).")
    corpus: str | None = option(None, "Forecast only this corpus of a table with a corpus column.")
    x: str = option("train_tokens", "Size column of a table.")
    y: str = option("test_loss_nats", "Loss column.")
    score: bool = option(
        False, "Score every method on held-out runs (fit on k = 3, 4, 5 smallest)."
    )
