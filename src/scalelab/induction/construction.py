"""The paper's two-layer transformer for induction heads: one head per layer and a width
that is a constant (12), independent of n and |Σ|, exact at p = O(log n) bits.

Tokens and positions are angles on a circle (θ_σ = 2πσ/S, φ_j = 2πj/N with N = n + 2 > the
number of positions, so no two positions share an angle). Residual stream, BOS at
position 0 with a zero token vector:

    T  0, 1   (cos θ_σ, sin θ_σ)   φ  2, 3  (cos φ_j, sin φ_j)    1  4  constant
    j  5      position index       b  6     BOS flag              P  7, 8  previous token
    A  9, 10  answer (layer 2)     ⊥  11    "no previous occurrence"

Layer 1, previous-token head: the query is φ_i rotated back by one step, so
score(i, j) = β₁ cos(φ_j − φ_{i−1}); position i − 1 beats every other key by
β₁(1 − cos(2π/N)) and its T is copied into P.

Layer 2, induction head: query (β₂ T_i, 1), key (P_j, γj + c·b_j), so
score(i, j) = β₂ cos(θ_{σ_i} − θ_{σ_{j−1}}) + γj + c·b_j. Keys whose previous token is σ_i
score β₂ + γj and the rightmost wins by γ; any other key scores at most
β₂(1 − g) + γn (g = 1 − cos(2π/S), the closest two tokens get); the BOS sink sits halfway,
c = β₂(1 − g/2), so it wins exactly when there is no match. The value copies T_j into A
and b_j into ⊥; the read-out scores class s by ⟨A, (cos θ_s, sin θ_s)⟩ and ⊥ by ⊥/2.

Constants: margin M = ln n + ln S + 4 (a leak of e^−M per key moves A by well under the
π/S that separates neighbouring tokens), γ = M, β₂ = 2(γn + M)/g, and β₁ such that the
previous-token leak changes no layer-2 score by more than ≈ 1/4: β₁(1 − cos 2π/N) =
ln n + ln(4β₂) + 2. So β₂ ≈ S²n·M/π² and β₁ ≈ n²·log(n)/π². Precision: a layer-2 score of
size β₂ must be right to within ≈ γ and a layer-1 score of size β₁ to within half its
margin, so p ≈ max(log2(β₂/γ), log2(2β₁/margin₁)) (`CircleConstants.predicted_bits`):
≈ 2·log2 S + log2 n − 3 or ≈ 2·log2 n − 3, at most ≈ 3·log2 n for |Σ| ≤ n, i.e. O(log n),
and the width stays 12 (h·m·p = O(log n), against the one-layer Ω(n)).
`smallest_exact_bits` measures p.

The one-hot construction (width 3S + 5, `induction.one_hot`) is the easier-to-read
version of the same two heads; it needs only 2·log2 n bits but its width grows with |Σ|.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from scalelab.errors import ConfigError
from scalelab.induction.model import InductionTransformer
from scalelab.induction.one_hot import blank_two_layer, one_hot_construction
from scalelab.induction.precision import FULL, Precision
from scalelab.induction.task import hard_instances, solve, uniform_instances

WIDTH = 12  # the residual-stream width above, whatever n and |Σ|
D_HEAD = 4  # a power of 4, so the attention's 1/sqrt(d_head) = 1/2 is exact


@dataclass(frozen=True)
class CircleConstants:
    """Sharpness β₁ (layer 1), β₂ (token match), recency γ and BOS sink c for length n and
    S symbols; `steps` is N, the number of position angles."""

    n: int
    alphabet_size: int
    beta1: float
    beta2: float
    gamma: float
    sink: float
    steps: int

    @classmethod
    def for_task(cls, n: int, alphabet_size: int) -> CircleConstants:
        margin = math.log(n) + math.log(alphabet_size) + 4.0
        gamma = margin
        gap2 = 1.0 - math.cos(2 * math.pi / alphabet_size)
        beta2 = 2.0 * (gamma * n + margin) / gap2
        steps = n + 2
        gap1 = 1.0 - math.cos(2 * math.pi / steps)
        beta1 = (math.log(n) + math.log(4.0 * beta2) + 2.0) / gap1
        return cls(n, alphabet_size, beta1, beta2, gamma, beta2 * (1.0 - gap2 / 2), steps)

    @property
    def predicted_bits(self) -> int:
        """The p at which p-bit rounding errors (relative 2^−p) reach about half of each
        layer's margin: layer 1's scores (size β₁) must keep the previous position ahead by
        half of β₁(1 − cos 2π/N), layer 2's (size β₂) the rightmost match ahead by γ."""
        margin1 = self.beta1 * (1.0 - math.cos(2 * math.pi / self.steps))
        need = max(math.log2(2 * self.beta1 / margin1), math.log2(self.beta2 / self.gamma))
        return math.ceil(need)


def two_layer_construction(alphabet_size: int, max_len: int) -> InductionTransformer:
    """A float64 `InductionTransformer` of width 12 with the hand-set weights above."""
    if alphabet_size < 2:
        raise ConfigError(f"the construction needs --alphabet >= 2, got {alphabet_size}")
    if max_len < 1:
        raise ConfigError(f"the construction needs max_len >= 1 (the length, --n), got {max_len}")
    s = alphabet_size
    k = CircleConstants.for_task(max(max_len, 2), s)
    model = blank_two_layer(s, max_len, WIDTH, D_HEAD)
    comp = math.sqrt(D_HEAD)  # undo the attention's 1/sqrt(d_head)
    theta = 2 * math.pi * torch.arange(s, dtype=torch.float64) / s
    phi = 2 * math.pi * torch.arange(model.cfg.n_positions, dtype=torch.float64) / k.steps
    step = 2 * math.pi / k.steps
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        model.tok.weight[:s, 0] = torch.cos(theta)
        model.tok.weight[:s, 1] = torch.sin(theta)
        model.tok.weight[s, 6] = 1.0  # BOS: flag only, zero token vector
        model.pos[:, 2] = torch.cos(phi)
        model.pos[:, 3] = torch.sin(phi)
        model.pos[:, 4] = 1.0
        model.pos[:, 5] = torch.arange(model.cfg.n_positions, dtype=torch.float64)
        # layer 1: previous-token head (query = φ_i rotated by −2π/N)
        a1 = model.blocks[0].attn
        b1 = k.beta1 * comp
        a1.q.weight[0, 2], a1.q.weight[0, 3] = b1 * math.cos(step), b1 * math.sin(step)
        a1.q.weight[1, 2], a1.q.weight[1, 3] = -b1 * math.sin(step), b1 * math.cos(step)
        a1.k.weight[0, 2] = a1.k.weight[1, 3] = 1.0
        a1.v.weight[0, 0] = a1.v.weight[1, 1] = 1.0
        a1.o.weight[7, 0] = a1.o.weight[8, 1] = 1.0
        # layer 2: induction head with recency and a BOS sink
        a2 = model.blocks[1].attn
        a2.q.weight[0, 0] = a2.q.weight[1, 1] = k.beta2 * comp
        a2.q.weight[2, 4] = comp
        a2.k.weight[0, 7] = a2.k.weight[1, 8] = 1.0
        a2.k.weight[2, 5], a2.k.weight[2, 6] = k.gamma, k.sink
        a2.v.weight[0, 0] = a2.v.weight[1, 1] = a2.v.weight[2, 6] = 1.0
        a2.o.weight[9, 0] = a2.o.weight[10, 1] = a2.o.weight[11, 2] = 1.0
        # read-out: class s by <A, (cos θ_s, sin θ_s)>, ⊥ by half the ⊥ slot
        model.head.weight[:s, 9] = torch.cos(theta)
        model.head.weight[:s, 10] = torch.sin(theta)
        model.head.weight[s, 11] = 0.5
    return model.eval()


CONSTRUCTIONS: dict[str, Callable[[int, int], InductionTransformer]] = {
    "constant-width": two_layer_construction,
    "one-hot": one_hot_construction,
}


def build_construction(kind: str, alphabet_size: int, max_len: int) -> InductionTransformer:
    """One of `CONSTRUCTIONS` by name."""
    if kind not in CONSTRUCTIONS:
        raise ConfigError(f"unknown construction {kind!r}; use one of {sorted(CONSTRUCTIONS)}")
    return CONSTRUCTIONS[kind](alphabet_size, max_len)


@torch.no_grad()
def count_errors(
    model: InductionTransformer,
    seqs: np.ndarray,
    precision: Precision = FULL,
    chunk: int = 16,
) -> tuple[int, int]:
    """(wrong positions, wrong sequences) of `model` on `seqs`, in chunks to bound memory."""
    target = solve(seqs)
    wrong_pos = wrong_seq = 0
    for start in range(0, len(seqs), chunk):
        x = torch.from_numpy(seqs[start : start + chunk])
        pred = model.predict(x, precision).numpy()
        bad = pred != target[start : start + chunk]
        wrong_pos += int(bad.sum())
        wrong_seq += int(bad.any(axis=1).sum())
    return wrong_pos, wrong_seq


def evaluation_instances(
    n: int, alphabet_size: int, n_random: int, n_hard: int, seed: int = 0
) -> np.ndarray:
    """Uniform instances over the alphabet followed by INDEX hard instances (f over Σ ∖ {?}),
    all length n."""
    rng = np.random.default_rng(seed)
    parts = [uniform_instances(n_random, n, alphabet_size, rng)] if n_random else []
    if n_hard:
        parts.append(hard_instances(n_hard, n, rng, alphabet_size).seqs)
    return np.concatenate(parts)


def smallest_exact_bits(
    n: int,
    alphabet_size: int = 4,
    mode: str = "float",
    n_random: int = 64,
    n_hard: int = 64,
    seed: int = 0,
    max_bits: int = 52,
    kind: str = "constant-width",
    start_bits: int = 1,
) -> dict[str, int | float | str | None]:
    """Measure the smallest p at which the `kind` construction built for length n answers
    every position of the evaluation instances exactly, scanning p = start_bits, … upwards
    (from a `start_bits` guess that is exact it first steps down to the first p that fails,
    so the answer has p − 1 failing either way).

    `exact_up_to` is the end of the unbroken run of exact p that follows (checked for up to
    four more bits), since rounding need not act monotonically in p."""
    model = build_construction(kind, alphabet_size, n)
    seqs = evaluation_instances(n, alphabet_size, n_random, n_hard, seed)
    if count_errors(model, seqs)[0]:
        raise ConfigError(f"the {kind} construction is not exact at full precision for n={n}")
    while start_bits > 1 and _is_exact(model, seqs, Precision(start_bits, mode)):
        start_bits -= 1  # the guess was high: step down until one bit fewer fails
    row = {"n": n, "alphabet_size": alphabet_size, "mode": mode, "kind": kind}
    row.update(width=model.cfg.n_embd, log2_n=math.log2(n))
    for bits in range(start_bits, max_bits + 1):
        if _is_exact(model, seqs, Precision(bits, mode)):
            last = bits
            while last < min(bits + 4, max_bits) and _is_exact(
                model, seqs, Precision(last + 1, mode)
            ):
                last += 1
            return {**row, "smallest_exact_bits": bits, "exact_up_to": last}
    return {**row, "smallest_exact_bits": None}


@torch.no_grad()
def _is_exact(model: InductionTransformer, seqs: np.ndarray, precision: Precision) -> bool:
    """True when every position is right; stops at the first wrong chunk (cheap scans)."""
    target = solve(seqs)
    for start in range(0, len(seqs), 16):
        pred = model.predict(torch.from_numpy(seqs[start : start + 16]), precision).numpy()
        if (pred != target[start : start + 16]).any():
            return False
    return True
