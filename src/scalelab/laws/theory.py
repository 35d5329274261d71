"""Scaling exponents predicted from intrinsic dimension (Havrilla & Liao, NeurIPS 2024).

For a β-Hölder target on a d-dimensional manifold the paper bounds the squared error by
`n^-α_D` in the data size n and `N^-α_N` in the parameter count N, with

    α_D = 2β / (2β + d)        (eq. 3)        α_N = 2β / d        (eq. 4)

Eliminating d gives ID-free conversions that do not depend on β either:
`α_D = α_N / (α_N + 1)` and `α_N = α_D / (1 − α_D)`. The inverses recover d from a measured
exponent. Every function takes a float or a numpy array and validates its domain, raising
`ConfigError` with the valid range, because out-of-range values (d ≤ 0, α_D ≥ 1) silently give
negative or infinite exponents otherwise.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from scalelab.config import Config, Record, option
from scalelab.errors import ConfigError

Z95 = 1.959963984540054  # two-sided 95% normal quantile


def _as_float(x: ArrayLike, name: str) -> np.ndarray | float:
    """Return `x` as float64 (scalar stays a Python float); reject NaN/inf and non-numbers."""
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{name} must be a number, got {x!r}") from exc
    if not np.all(np.isfinite(a)):
        raise ConfigError(f"{name} must be finite, got {x!r}")
    return float(a) if a.ndim == 0 else a


def _check_positive(x: ArrayLike, name: str) -> np.ndarray | float:
    a = _as_float(x, name)
    if not np.all(np.asarray(a) > 0):
        raise ConfigError(f"{name} must be > 0, got {x!r}")
    return a


def _check_alpha_D(a: ArrayLike) -> np.ndarray | float:
    v = _as_float(a, "alpha_D")
    arr = np.asarray(v)
    if not np.all((arr > 0) & (arr < 1)):
        raise ConfigError(
            f"alpha_D must lie in (0, 1) since alpha_D = 2β/(2β+d) with d > 0, got {a!r}"
        )
    return v


def alpha_D(d: ArrayLike, beta: ArrayLike = 1.0) -> np.ndarray | float:
    """Data-scaling exponent `2β/(2β+d)` (paper eq. 3)."""
    d = _check_positive(d, "d (intrinsic dimension)")
    beta = _check_positive(beta, "beta (Hölder smoothness)")
    return 2 * beta / (2 * beta + d)


def alpha_N(d: ArrayLike, beta: ArrayLike = 1.0) -> np.ndarray | float:
    """Model-scaling exponent `2β/d` (paper eq. 4)."""
    d = _check_positive(d, "d (intrinsic dimension)")
    beta = _check_positive(beta, "beta (Hölder smoothness)")
    return 2 * beta / d


def alpha_D_from_alpha_N(a: ArrayLike) -> np.ndarray | float:
    """ID-free conversion `α_D = α_N/(α_N+1)`; independent of β."""
    a = _check_positive(a, "alpha_N")
    return a / (a + 1)


def alpha_N_from_alpha_D(a: ArrayLike) -> np.ndarray | float:
    """ID-free conversion `α_N = α_D/(1−α_D)`; independent of β."""
    a = _check_alpha_D(a)
    return a / (1 - a)


def d_from_alpha_D(a: ArrayLike, beta: ArrayLike = 1.0) -> np.ndarray | float:
    """Intrinsic dimension implied by a data exponent: `d = 2β(1−α_D)/α_D`."""
    a = _check_alpha_D(a)
    beta = _check_positive(beta, "beta (Hölder smoothness)")
    return 2 * beta * (1 - a) / a


def d_from_alpha_N(a: ArrayLike, beta: ArrayLike = 1.0) -> np.ndarray | float:
    """Intrinsic dimension implied by a model exponent: `d = 2β/α_N`."""
    a = _check_positive(a, "alpha_N")
    beta = _check_positive(beta, "beta (Hölder smoothness)")
    return 2 * beta / a


@dataclass(frozen=True)
class Exponents(Record):
    """Both exponents predicted from one d, with delta-method standard errors and 95%
    intervals; those are None where d has no standard error (an estimate from one batch),
    not a spurious zero-width interval."""

    d: float
    d_se: float | None
    beta: float
    alpha_D: float
    alpha_D_se: float | None
    alpha_D_ci95: tuple[float, float] | None
    alpha_N: float
    alpha_N_se: float | None
    alpha_N_ci95: tuple[float, float] | None

    def alphas(self) -> dict[str, Any]:
        """The exponents' keys alone (what a dimension's JSON holds beside the estimate)."""
        return {k: v for k, v in self.to_dict().items() if k.startswith("alpha")}

    def without_se(self) -> Exponents:
        """The same exponents with no standard error or interval (d measured on one batch)."""
        return dataclasses.replace(
            self,
            d_se=None,
            alpha_D_se=None,
            alpha_D_ci95=None,
            alpha_N_se=None,
            alpha_N_ci95=None,
        )


@dataclass(frozen=True)
class ExponentsRequest(Config):
    """What `scalelab exponents` is asked: both exponents from d (with its standard error),
    or one exponent converted to the other, at smoothness β."""

    d: float | None = option(None, "Intrinsic dimension.")
    alpha_n: float | None = option(None, "Model-size exponent α_N.")
    alpha_d: float | None = option(None, "Data-size exponent α_D.")
    d_se: float = option(0.0, "Standard error of --d (delta method).")
    beta: float = option(1.0, "Hölder smoothness β (the paper uses 1).")

    def validate(self) -> None:
        if self.d_se < 0:
            raise ConfigError(f"d_se must be >= 0, got {self.d_se!r}; give 0 (none) or more")

    def row(self) -> dict[str, Any]:
        """The exponents asked for, with the d a converted exponent implies at this β."""
        if sum(v is not None for v in (self.d, self.alpha_n, self.alpha_d)) != 1:
            raise ConfigError("give exactly one of d, alpha_n, alpha_d")
        if self.d is None and self.d_se:
            raise ConfigError("d_se goes with d only")
        if self.d is not None:
            return predict_exponents(self.d, self.d_se, self.beta).to_dict()
        if self.alpha_n is not None:
            return {
                "alpha_N": float(self.alpha_n),
                "alpha_D": float(alpha_D_from_alpha_N(self.alpha_n)),
                "d": float(d_from_alpha_N(self.alpha_n, self.beta)),
                "beta": self.beta,
            }
        return {
            "alpha_D": float(self.alpha_d),
            "alpha_N": float(alpha_N_from_alpha_D(self.alpha_d)),
            "d": float(d_from_alpha_D(self.alpha_d, self.beta)),
            "beta": self.beta,
        }


def predict_exponents(
    d: float, d_se: float = ExponentsRequest.d_se, beta: float = ExponentsRequest.beta
) -> Exponents:
    """Both exponents for a measured dimension, with standard errors by the delta method.

    `se(α) = |dα/dd| · se(d)` with `dα_D/dd = −2β/(2β+d)²` and `dα_N/dd = −2β/d²`; the 95%
    intervals are `α ± 1.96·se` (first order, so only trustworthy while `d_se ≪ d`).
    """
    d = _check_positive(d, "d (intrinsic dimension)")
    beta = _check_positive(beta, "beta (Hölder smoothness)")
    d_se = _as_float(d_se, "d_se")
    if not isinstance(d, float) or not isinstance(beta, float) or not isinstance(d_se, float):
        raise ConfigError("predict_exponents takes scalar d, d_se and beta; loop over arrays")
    if d_se < 0:
        raise ConfigError(f"d_se must be >= 0, got {d_se!r}")
    a_d = 2 * beta / (2 * beta + d)
    a_n = 2 * beta / d
    a_d_se = 2 * beta / (2 * beta + d) ** 2 * d_se
    a_n_se = 2 * beta / d**2 * d_se
    return Exponents(
        d=d,
        d_se=d_se,
        beta=beta,
        alpha_D=a_d,
        alpha_D_se=a_d_se,
        alpha_D_ci95=(a_d - Z95 * a_d_se, a_d + Z95 * a_d_se),
        alpha_N=a_n,
        alpha_N_se=a_n_se,
        alpha_N_ci95=(a_n - Z95 * a_n_se, a_n + Z95 * a_n_se),
    )


__all__ = [
    "Z95",
    "Exponents",
    "ExponentsRequest",
    "alpha_D",
    "alpha_D_from_alpha_N",
    "alpha_N",
    "alpha_N_from_alpha_D",
    "d_from_alpha_D",
    "d_from_alpha_N",
    "predict_exponents",
]
