"""A fitted power law as an object: what `laws.fit` returns and `report/` draws, apart from
the fitting itself, so that drawing a fit needs nothing of how it was fitted."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scalelab.config import Record


@dataclass(frozen=True)
class PowerLawFit(Record):
    """`y = A·x^-exponent` ("power") or `y = E + A·x^-exponent` ("power+E").

    `exponent` is positive for a decreasing law. `exponent_ci95` is a bootstrap interval:
    studentized residual bootstrap for "power" (calibrated at 3-8 points, where a plain
    percentile interval is too narrow), percentile residual bootstrap for "power+E".
    """

    form: str
    exponent: float
    exponent_ci95: tuple[float, float]
    A: float
    E: float | None
    n_points: int
    exponent_se: float = math.nan
    rmse_log: float = math.nan
    n_boot: int = 0
    n_boot_used: int = 0
    seed: int = 0
    ci_method: str = ""
    x_range: tuple[float, float] = field(default=(math.nan, math.nan))

    def predict(self, x: Any) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        return (self.E or 0.0) + self.A * x ** (-self.exponent)
