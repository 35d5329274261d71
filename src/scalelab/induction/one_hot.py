"""The one-hot two-layer construction: exact, easy to read, but of width 3|Σ| + 5.

The same two heads as the constant-width construction (`induction.construction`), with
tokens as one-hot vectors and positions as (j, j²); it needs only 2·log2 n bits, but its
width grows with the alphabet, so at |Σ| ≈ n its h·m·p is no smaller than the one-layer
bound: it does not show the separation.

Residual stream (width 3S + 5 for S symbols), one attention head per layer, no MLP, no
LayerNorm, BOS at position 0:

    T   [0, S)        one-hot of σ_j          b    S      BOS flag
    1   S + 1         constant 1              j    S + 2  position j
    j²  S + 3         position squared        P    [S+4, 2S+4)  previous token (layer 1)
    A   [2S+4, 3S+4)  answer (layer 2)        ⊥    3S + 4 "no previous occurrence"

Layer 1, previous-token head: score(i, j) = β₁(2(i−1)j − j²) = −β₁(j − (i−1))² + const(i),
so position i attends to i − 1 (to BOS at i = 1) with margin β₁ over every other key; it
copies T of that key into P.

Layer 2, induction head: score(i, j) = β₂⟨T_i, P_j⟩ + γ·j + c·b_j. Keys whose previous token
equals σ_i score β₂ + γj; among them the rightmost wins by γ. Non-matches score ≤ γn; BOS
scores c with γn < c < β₂, so it wins exactly when there is no match. The value copies T_j
into A and the BOS flag into ⊥; the read-out is the identity on (A, ⊥).

Constants for length n: margin M = ln n + 3, γ = 2^⌈log2 M⌉, c = γ(n + 2), β₂ = γ(n + 4),
β₁ = 2^⌈log2(ln β₂ + M + 1)⌉ (the previous-token leak δ₁ ≈ 2e^−β₁ must keep β₂δ₁ ≪ γ).
Scores reach ≈ 2β₁n², so it runs in float64. Precision: keys hold j and j², so p-bit
rounding must resolve j² to well under one unit: p ≈ 2·log2(n) + O(1) bits, i.e. O(log n).
`construction.smallest_exact_bits(..., kind="one-hot")` measures it: with p significant
bits ("float") the smallest exact p was exactly 2·log2(n) for n = 8 … 2048; with fixed
point it was 10, 11, 12, 13 at n = 8 … 64 (the γ(n + 4)-sized keys need integer bits) and
2·log2(n) from n = 128 on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from scalelab.errors import ConfigError
from scalelab.induction.config import InductionConfig
from scalelab.induction.model import InductionTransformer


@dataclass(frozen=True)
class OneHotConstants:
    """Attention sharpness β₁ (layer 1), β₂ (match), recency γ, BOS sink c, for length n."""

    n: int
    beta1: float
    beta2: float
    gamma: float
    sink: float

    @classmethod
    def for_length(cls, n: int) -> OneHotConstants:
        margin = math.log(n) + 3.0
        gamma = 2.0 ** math.ceil(math.log2(margin))
        sink = gamma * (n + 2)
        beta2 = gamma * (n + 4)
        beta1 = 2.0 ** math.ceil(math.log2(math.log(beta2) + margin + 1.0))
        return cls(n, beta1, beta2, gamma, sink)


def blank_two_layer(
    alphabet_size: int, max_len: int, width: int, d_head: int
) -> InductionTransformer:
    """The float64 frame both constructions set by hand: two attention-only layers of one head,
    learned positions, a BOS token, no MLP, norm or bias."""
    cfg = InductionConfig(
        alphabet_size=alphabet_size,
        max_len=max_len,
        n_layer=2,
        n_head=1,
        n_embd=width,
        d_head=d_head,
        positions="learned",
        mlp=False,
        layer_norm=False,
        bos=True,
        bias=False,
    )
    return InductionTransformer(cfg).double()


def one_hot_construction(alphabet_size: int, max_len: int) -> InductionTransformer:
    """A float64 `InductionTransformer` with the hand-set weights described above."""
    if alphabet_size < 2:
        raise ConfigError(f"the construction needs --alphabet >= 2, got {alphabet_size}")
    if max_len < 1:
        raise ConfigError(f"the construction needs max_len >= 1 (the length, --n), got {max_len}")
    s = alphabet_size
    k = OneHotConstants.for_length(max_len)
    width = 3 * s + 5
    d_head = 4 ** math.ceil(math.log(s + 1, 4))  # a power of 4: the 1/sqrt(d) scale is exact
    model = blank_two_layer(s, max_len, width, d_head)
    tok_sl, bos, one, pos, pos2 = slice(0, s), s, s + 1, s + 2, s + 3
    prev_sl, ans_sl, bot = slice(s + 4, 2 * s + 4), slice(2 * s + 4, 3 * s + 4), 3 * s + 4
    comp = math.sqrt(d_head)  # undo the attention's 1/sqrt(d_head)
    eye = torch.eye(s, dtype=torch.float64)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        model.tok.weight[:s, tok_sl] = eye
        model.tok.weight[s, bos] = 1.0
        j = torch.arange(model.cfg.n_positions, dtype=torch.float64)
        model.pos[:, one] = 1.0
        model.pos[:, pos] = j
        model.pos[:, pos2] = j * j
        # layer 1: previous-token head
        a1 = model.blocks[0].attn
        a1.q.weight[0, pos] = 2 * k.beta1 * comp
        a1.q.weight[0, one] = -2 * k.beta1 * comp
        a1.q.weight[1, one] = -k.beta1 * comp
        a1.k.weight[0, pos] = 1.0
        a1.k.weight[1, pos2] = 1.0
        a1.v.weight[:s, tok_sl] = eye
        a1.o.weight[prev_sl, :s] = eye
        # layer 2: induction head with a BOS sink
        a2 = model.blocks[1].attn
        a2.q.weight[:s, tok_sl] = k.beta2 * comp * eye
        a2.q.weight[s, one] = comp
        a2.k.weight[:s, prev_sl] = eye
        a2.k.weight[s, pos] = k.gamma
        a2.k.weight[s, bos] = k.sink
        a2.v.weight[:s, tok_sl] = eye
        a2.v.weight[s, bos] = 1.0
        a2.o.weight[ans_sl, :s] = eye
        a2.o.weight[bot, s] = 1.0
        # read-out: classes 0..S-1 from A, class S (⊥) from the ⊥ slot
        model.head.weight[:s, ans_sl] = eye
        model.head.weight[s, bot] = 1.0
    return model.eval()
