"""A one-layer transformer that solves induction heads exactly once h·m·p is of order n.

The lower bound (Sanford, Hsu & Telgarsky 2024, Theorem 1) says a one-layer model needs
h·m·p = Ω(n). This is the matching upper bound, in the paper's own model of a one-layer
transformer (ψ_in and Q, K, V may depend on the position; ψ_out is any function of the
position and the residual):

- ψ_in(i, σ) = σ·e_0: the token as a number in coordinate 0.
- One head (h = 1) with Q = K = 0, so causal softmax attention is the uniform average over
  positions 1..i. Its value packs the token into a position-tagged digit:
  V(j, x) = x_0 · 2^(β·r) · e_(1+c), with β = ⌈log2 S⌉ bits per digit and position j − 1
  = c·b + r (block c, slot r < b). Block c thus sums to the integer N_c = Σ_r σ_(cb+r+1)·2^(βr)
  and the head returns N_c / i in coordinate 1 + c.
- ψ_out(i, x): N̂_c = round(i·x_(1+c)) recovers every digit of the prefix σ_1..σ_i exactly,
  σ_i = x_0, and the answer is read off the recovered prefix (rightmost earlier match, next
  token, or ⊥). The theorem puts no limit on ψ_out, so this decoder is exact integer
  arithmetic; the bound counts only what crosses the attention layer (h, m, p).

Precision: p-bit rounding of ψ_in, q, k, v and the head output (see `precision`). N_c has
βb bits and is recovered exactly when the rounding error of N_c / i, times i, stays under
1/2:
- ``"float"`` (p significant bits): relative error ≤ 2^−p, so N_c < 2^(p−1): b = ⌊(p−1)/β⌋.
- ``"fixed"`` (p fractional bits, |x| ≤ 2^p): absolute error ≤ 2^−(p+1), times i ≤ n, so
  n < 2^p; and N_c < 2^p: b = ⌊p/β⌋.
Hence h = 1, m = 1 + ⌈n/b⌉ and h·m·p ≈ n·β·p/(βb) + p, i.e. h·m·p / n → ⌈log2 S⌉ (= 2 for
the three-symbol hard instances) as p grows, against the lower bound's Ω(n).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from scalelab.config import Config, option
from scalelab.errors import ConfigError, InputError
from scalelab.induction.precision import FULL, Precision
from scalelab.induction.task import BOTTOM


@dataclass(frozen=True)
class GatherLayout:
    """Sizes of the one-layer gather construction for length n, S symbols, p bits."""

    n: int
    alphabet_size: int
    bits: int
    mode: str = "float"

    def __post_init__(self) -> None:
        if self.n < 1 or self.alphabet_size < 2:
            raise ConfigError("the one-layer construction needs n >= 1 and alphabet_size >= 2")
        if self.mode not in ("float", "fixed"):
            raise ConfigError(f"unknown precision mode {self.mode!r}; use 'float' or 'fixed'")
        least = self.least_bits(self.n, self.alphabet_size, self.mode)
        if self.bits < least:
            raise ConfigError(
                f"the one-layer construction for n={self.n}, |Σ|={self.alphabet_size} in "
                f"{self.mode} mode needs at least {least} bits, got {self.bits}; raise --bits"
            )

    @staticmethod
    def least_bits(n: int, alphabet_size: int, mode: str) -> int:
        """The smallest p at which one digit fits a coordinate (and, fixed point, n < 2^p)."""
        beta = max(1, math.ceil(math.log2(alphabet_size)))
        if mode == "float":
            return beta + 1
        return max(beta, n.bit_length())

    @property
    def digit_bits(self) -> int:
        return max(1, math.ceil(math.log2(self.alphabet_size)))

    @property
    def per_coordinate(self) -> int:
        usable = self.bits - 1 if self.mode == "float" else self.bits
        return usable // self.digit_bits

    @property
    def n_blocks(self) -> int:
        return math.ceil(self.n / self.per_coordinate)

    @property
    def width(self) -> int:
        return 1 + self.n_blocks

    @property
    def hmp(self) -> int:
        return self.width * self.bits


class OneLayerGather(nn.Module):
    """`predict(seqs [B, n], precision) -> answers [B, n]` (⊥ = −1), float64 throughout.

    `forward` returns the residual stream ψ_in + Z after the single attention layer;
    `decode` is ψ_out. A `Precision` rounds ψ_in, q, k, v and the head output, as in
    `InductionTransformer`."""

    def __init__(self, layout: GatherLayout) -> None:
        super().__init__()
        self.layout = layout
        n, b, beta = layout.n, layout.per_coordinate, layout.digit_bits
        j = torch.arange(n)
        tag = torch.zeros(n, layout.width, dtype=torch.float64)
        tag[j, 1 + j // b] = torch.pow(2.0, beta * (j % b).double())
        self.register_buffer("tag", tag)  # V(j, x) = x_0 · tag[j]

    def forward(self, seqs: torch.Tensor, precision: Precision = FULL) -> torch.Tensor:
        n, width = seqs.shape[1], self.layout.width
        if n > self.layout.n:
            raise InputError(f"sequence length {n} exceeds the construction's n={self.layout.n}")
        x = torch.zeros(*seqs.shape, width, dtype=torch.float64)
        x[..., 0] = seqs.double()
        x = precision(x)  # ψ_in
        q = k = precision(torch.zeros(*seqs.shape, 1, dtype=torch.float64))
        v = precision(x[..., :1] * self.tag[:n])
        scores = q @ k.transpose(-1, -2)  # all zero: attention is the causal average
        causal = torch.ones(n, n, dtype=torch.bool).tril()
        weights = torch.softmax(scores.masked_fill(~causal, -math.inf), dim=-1)
        return x + precision(weights @ v)

    def decode(self, x: torch.Tensor) -> torch.Tensor:
        """ψ_out: recover the prefix from the gathered blocks, then answer by lookup."""
        lay = self.layout
        n = x.shape[1]
        i = torch.arange(1, n + 1, dtype=torch.float64)[:, None]  # tokens attended
        blocks = torch.round(x[..., 1:] * i).long()  # N̂_c, [B, n(i), blocks]
        shifts = lay.digit_bits * torch.arange(lay.per_coordinate)
        digits = (blocks[..., None] >> shifts) & ((1 << lay.digit_bits) - 1)
        prefix = digits.flatten(-2)[..., :n]  # [B, i, j]: σ̂_j as seen from position i
        query = torch.round(x[..., 0]).long()  # σ_i
        pos = torch.arange(n)
        earlier = pos[None, :] < pos[:, None]  # j < i
        match = (prefix == query[..., None]) & earlier
        last = torch.where(match, pos, -1).amax(-1)  # rightmost earlier match, −1 if none
        nxt = torch.gather(prefix, -1, (last + 1).clamp(max=n - 1)[..., None])[..., 0]
        return torch.where(last >= 0, nxt, BOTTOM)

    @torch.no_grad()
    def predict(self, seqs: torch.Tensor, precision: Precision = FULL) -> torch.Tensor:
        return self.decode(self.forward(seqs, precision))


def one_layer_construction(
    alphabet_size: int, n: int, bits: int, mode: str = "float"
) -> OneLayerGather:
    """The gather construction for sequences up to length n, built for p = `bits`."""
    return OneLayerGather(GatherLayout(n, alphabet_size, bits, mode)).eval()


@dataclass(frozen=True)
class GatherCheckConfig(Config):
    """`scalelab induction gather`: the construction built for `n` and checked at p bits on
    every position of random and INDEX-hard instances."""

    n: int = option(65, "Sequence length the construction is built for.")
    alphabet_size: int = option(3, "Alphabet size.", flag="--alphabet")
    bits: int | None = option(None, "Precision p (default: the least it allows).")
    mode: str = option("float", "Rounding: float (p significant bits) | fixed.")
    random: int = option(500, "Uniform random instances to check.")
    hard: int = option(500, "INDEX hard instances to check (needs alphabet >= 3).")
    seed: int = option(0, "Random seed (recorded with the results).")

    def validate(self) -> None:
        if self.n < 1:
            raise ConfigError(f"n must be >= 1, got {self.n}; give a sequence length, e.g. 65")
        if self.random < 0 or self.hard < 0:
            raise ConfigError(
                f"random and hard must be >= 0, got {self.random}, {self.hard}; give 0 to skip"
            )
        if self.hard and self.alphabet_size < 3:
            raise ConfigError("hard instances use three symbols; give alphabet_size >= 3 or hard 0")


def check_gather(cfg: GatherCheckConfig) -> dict[str, Any]:
    """Build the construction at p bits (the least it allows unless given) and count the
    positions and sequences it gets wrong: its size h·m·p beside n, and its errors."""
    from scalelab.induction.construction import count_errors, evaluation_instances

    t0 = time.perf_counter()
    p = (
        cfg.bits
        if cfg.bits is not None
        else GatherLayout.least_bits(cfg.n, cfg.alphabet_size, cfg.mode)
    )
    model = one_layer_construction(cfg.alphabet_size, cfg.n, p, cfg.mode)
    seqs = evaluation_instances(cfg.n, cfg.alphabet_size, cfg.random, cfg.hard, cfg.seed)
    wrong_pos, wrong_seq = count_errors(model, seqs, Precision(p, cfg.mode))
    lay = model.layout
    return {
        "n": cfg.n,
        "alphabet_size": cfg.alphabet_size,
        "mode": cfg.mode,
        "heads_h": 1,
        "width_m": lay.width,
        "bits_p": p,
        "digits_per_coordinate": lay.per_coordinate,
        "hmp": lay.hmp,
        "hmp_over_n": round(lay.hmp / cfg.n, 4),
        "instances": len(seqs),
        "positions_checked": int(seqs.size),
        "wrong_positions": wrong_pos,
        "wrong_sequences": wrong_seq,
        "wall_s": round(time.perf_counter() - t0, 2),
    }
