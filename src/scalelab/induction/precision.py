"""p-bit rounding of the values a transformer computes (the paper's "p bits of precision").

The paper says a transformer uses p bits when every output of its embedding functions
(ψ_in, Q, K, V) and of its attention heads can be rounded to p-bit rationals without
changing its outputs. Two readings of "p bits" are offered:

- ``"float"``: p significant bits, any exponent (x = m·2^e, m rounded to p bits). Scale-free;
  zero stays zero; relative error ≤ 2^−p.
- ``"fixed"``: p fractional bits and magnitude at most 2^p (the paper's appendix bounds
  |V| ≤ 2^p and rounds to absolute error 2^−p): x ↦ clamp(round(x·2^p)/2^p, ±2^p).

Rounding is round-half-to-even (torch.round). With ``straight_through=True`` the backward
pass treats rounding as the identity, so models can be trained at p bits.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from scalelab.errors import ConfigError
from scalelab.induction.config import MODES


def round_to_bits(x: torch.Tensor, bits: int, mode: str = "float") -> torch.Tensor:
    """Round every entry of `x` to `bits` bits in the given mode (see module doc)."""
    if bits < 1:
        raise ConfigError(f"precision bits must be >= 1, got {bits}")
    if mode == "float":
        mantissa, exponent = torch.frexp(x)  # x = mantissa * 2**exponent, |mantissa| in [.5, 1)
        scale = float(2**bits)
        return torch.ldexp(torch.round(mantissa * scale) / scale, exponent)
    if mode == "fixed":
        scale = float(2**bits)
        return torch.clamp(torch.round(x * scale) / scale, -scale, scale)
    raise ConfigError(f"unknown precision mode {mode!r}; use one of {MODES}")


@dataclass(frozen=True)
class Precision:
    """Where a model rounds: `bits` (None = no rounding), `mode`, and straight-through."""

    bits: int | None = None
    mode: str = "float"
    straight_through: bool = False

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"unknown precision mode {self.mode!r}; use one of {MODES}")
        if self.bits is not None and self.bits < 1:
            raise ConfigError(f"precision bits must be >= 1 or None, got {self.bits}")

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.bits is None:
            return x
        rounded = round_to_bits(x, self.bits, self.mode)
        if self.straight_through:
            return x + (rounded - x).detach()
        return rounded


FULL = Precision(None)
