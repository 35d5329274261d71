"""The exponent of the excess loss L − E, the quantity Hutter's closed form and Cagnetta et
al.'s γ/(2β) predict (the plain log-log slope of L is what Havrilla & Liao read).

E comes from one of two declared sources:
- given (a synthetic corpus's exact floor, `scalelab.text.floors`): the exponent is the
  log-log fit of L − E, with its studentized residual-bootstrap interval;
- estimated (a real corpus): the floor of the power+E fit `L = E + A·n^-α` over the fitted
  range, with a percentile residual-bootstrap interval of E from the same resamples as α's.
  Why this estimator: it is the only one that uses nothing but the sweep itself, and its
  failure is visible: on a concave curve E goes to its bound (0 or min L), and the
  exponent is then reported as not estimable rather than as a number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from scalelab.config import Record
from scalelab.errors import InputError
from scalelab.laws.fit.power_law import fit_power_law, power_e_intervals
from scalelab.laws.regime.rules import by_size

#: How an estimated E is labelled (`ExcessFit.E_source`).
ESTIMATED = "power+E fit over the fitted range (percentile residual bootstrap)"
#: E within this fraction of its bounds (0 and min L) counts as at the bound.
BOUND_FRACTION = 1e-3


@dataclass(frozen=True)
class ExcessFit(Record):
    """The exponent of L − E over a range, E and where it came from."""

    exponent: float
    exponent_ci95: tuple[float, float]
    E: float
    E_ci95: tuple[float, float]
    E_source: str
    estimable: bool
    n_points: int
    x_range: tuple[float, float]
    text: str


def excess_exponent(
    x: Any,
    y: Any,
    *,
    floor: float | None = None,
    floor_source: str = "given",
    n_boot: int = 1000,
    seed: int = 0,
) -> ExcessFit:
    """The exponent of `y − E` against `x`: E = `floor` when given, else the power+E fit's."""
    sizes, loss, _ = by_size(x, y)
    x_range = (float(sizes.min()), float(sizes.max()))
    if floor is not None:
        if not math.isfinite(floor) or floor < 0 or np.any(loss <= floor):
            raise InputError(
                f"floor E = {floor} is not below every loss (min {loss.min():.4g}); "
                "give the corpus's irreducible loss in the same units as the losses"
            )
        fit = fit_power_law(sizes, loss - floor, n_boot=n_boot, seed=seed)
        return ExcessFit(
            exponent=fit.exponent,
            exponent_ci95=fit.exponent_ci95,
            E=float(floor),
            E_ci95=(float(floor), float(floor)),
            E_source=floor_source,
            estimable=True,
            n_points=int(sizes.size),
            x_range=x_range,
            text=f"exponent of L − E with E = {floor:.4f} ({floor_source}): {fit.exponent:.3f}",
        )
    fit = fit_power_law(sizes, loss, form="power+E", n_boot=0, seed=seed)
    alpha_ci, e_ci = power_e_intervals(sizes, loss, n_boot, seed)
    lo_bound, hi_bound = BOUND_FRACTION, 1.0 - BOUND_FRACTION
    at_bound = not lo_bound < fit.E / loss.min() < hi_bound
    text = (
        f"exponent of L − E with E = {fit.E:.4g} from the power+E fit: {fit.exponent:.3f}"
        if not at_bound
        else (
            f"the power+E fit puts E at its bound ({fit.E:.3g}; bounds 0 and min L = "
            f"{loss.min():.4g}): the curve shows no floor, the excess exponent is not estimable"
        )
    )
    return ExcessFit(
        exponent=fit.exponent if not at_bound else math.nan,
        exponent_ci95=alpha_ci if not at_bound else (math.nan, math.nan),
        E=float(fit.E),
        E_ci95=e_ci,
        E_source=ESTIMATED,
        estimable=not at_bound,
        n_points=int(sizes.size),
        x_range=x_range,
        text=text,
    )
