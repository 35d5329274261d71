"""The paper's Lemma 1 transformer, built by hand: a Definition-1 network whose weights
implement f̂(x) = Σ_n f_n φ_n(x) on [0,1]^d, with G grid points per axis.

Why by hand: a trained model's error mixes approximation with optimisation; this one has no
optimiser, so its error against its size is the approximation rate of Theorem 2's proof.

The construction follows Appendix E.1 (Interaction Lemma 3 for every sparse head), with the
printed proof's misprints corrected (docs/manifold_construction.md lists each, and
tests/test_manifold_construction.py fails on each printed form, `Reading`):
- ψ(t) = 1 on |t| ≤ 1, 2 − |t| on 1 ≤ |t| ≤ 2, 0 beyond (printed: 1 − |t|, discontinuous);
- bump φ_n(x) = Π_i ψ(3(G − 1)(x^i − c_{n^i})), c_j = (j − 1)/(G − 1) (printed: 3N, no
  partition of unity);
- f_n = f(c_n), the bump's centre (printed: the centre of U_n, one cell over);
- every FFN outputs an increment, since Definition 3 adds FFN(·) to the residual (printed:
  the new token, which doubles the data rows);
- block 1's key offset is 1 − (j − 1)/(G − 1) (printed: 1 − j/(N − 1), one bump over).

Tokens (n_embd = 5): rows 0, 1 data; rows 2, 3 the interaction term
I_t = (cos(tπ/2l), sin(tπ/2l)), t = 1 … l; row 4 the constant 1. Layout (0-based columns):
x^i at i; bump s_{i,j} at d + iG + j; patch n's product slot s at d + dG + d·idx(n) + s.
l = d + dG + dG^d.

Blocks (Definition 3, B(H) = FFN(MHA(H) + H) + MHA(H) + H; heads summed, eq. 17):
1. bumps: dG heads, token (i, j) reads x^i: row 1 += x^i − c_j + 1; FFN (width 5, depth 2)
   adds ψ(3(G − 1)(row 1 − 1)) to row 0 and clears row 1 (−σ(row 1): row 1 ≥ 0 on every
   token). On every other token row 1 is 0, so ψ(−3(G − 1)) = 0 and the FFN adds nothing
   there: no gating FFN (Lemma 4) is needed.
2. gather: dG^d heads, product slot (n, i) copies s_{i, n^i} into row 0; no FFN.
3. ⌈log₂ d⌉ product blocks: slot a reads slot b, row 1 += (row 0)_a (row 0)_b; an odd slot
   out reads itself (carried); FFN (Lemma 6, linear) row 0 ← row 1, row 1 ← 0.
4. multiply: G^d heads, slot 0 of patch n reads itself, row 1 += f_n φ_n + R ≥ 0; FFN (linear)
   clears row 0.
5. sum: one head with a constant score 1 on every pair, value row 1 → row 0, so every token's
   row 0 becomes Σ_n (f_n φ_n + R); FFN bias −G^d R. The decoder reads row 0 of the last token.

Heads 1–4 are Interaction-Lemma heads: data kernels Q^B, K^B (rows 0, 1 of Q, K), interaction
kernels Q^I = C·rotation(I_{t1} → I_{t2}), K^I = I_{t2} I_{t2}ᵀ and −C on the constant row.
Off the target pair (t1, t2) the interaction score is C cos((t − t1)π/2l) cos((k − t2)π/2l)
≤ C cos(π/2l) (all angle gaps are under π/2), so C = 2S / (1 − cos(π/2l)), with S a bound on
|⟨Q^B h, K^B h'⟩| over tokens whose data rows lie in [0, 1] (`DATA_BOUND`), leaves every
other score at most −S < 0. C ≈ 16 S l²/π² ≈ 1.6 S l², so float64 loses ≈ C·1e-16 per
score and float32 ≈ C·6e-8: float32 is off by 1e-5 at l = 9 and by O(1) from a few hundred
tokens (docs/benchmarks/manifold_construct.md).

Simplifications, inside Definitions 1–2: no gating FFNs (the FFNs' inputs vanish off their
tokens); R is subtracted once, after the sum (G^d R), not per token; the sum head is a plain
Definition-4 head (constant score), not an Interaction-Lemma head. Positional encoding and
embedding are fixed (Definition 1) and are not counted as parameters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from scalelab.errors import ConfigError

D_EMBD = 5
FFN_WIDTH = 5  # block 1's hidden width: four ReLUs for ψ, one to clear row 1
DATA_BOUND = 1.0  # every data entry at an interaction block's input lies in [0, 1]


@dataclass(frozen=True)
class Reading:
    """Which printed forms of Appendix E.1 to build (all False: the corrected construction).
    Each flag exists so a test can show that the printed form fails."""

    printed_scale: bool = False  # bump scale 3G instead of 3(G − 1)
    printed_centre: bool = False  # f_n at U_n's centre n/(G − 1) instead of c_n
    printed_ffn: bool = False  # FFNs output the new token instead of the increment
    printed_key: bool = False  # key offset 1 − j/(G − 1) instead of 1 − (j − 1)/(G − 1)


def check_size(d: int, G: int) -> None:
    """One line naming the option, the problem and the fix."""
    if not isinstance(d, int) or d < 1:
        raise ConfigError(f"dimension d = {d}: d must be an integer >= 1; use 1, 2 or 3")
    if not isinstance(G, int) or G < 2:
        raise ConfigError(f"grid G = {G}: a grid needs G >= 2 points per axis; use e.g. 4, 8, 16")


def psi(t: np.ndarray, *, printed: bool = False) -> np.ndarray:
    """The trapezoid ψ: 1 on |t| ≤ 1, 2 − |t| on 1 ≤ |t| ≤ 2, 0 beyond. `printed`: the
    paper's 1 − |t| on 1 < |t| < 2 (which jumps at |t| = 1 and 2)."""
    a = np.abs(np.asarray(t, dtype=np.float64))
    if printed:
        return np.where(a <= 1, 1.0, np.where(a < 2, 1.0 - a, 0.0))
    return np.clip(2.0 - a, 0.0, 1.0)


def centres(G: int) -> np.ndarray:
    """c_j = (j − 1)/(G − 1), j = 1 … G: the bump centres on one axis."""
    return np.arange(G, dtype=np.float64) / (G - 1)


def nodes(d: int, G: int, reading: Reading = Reading()) -> np.ndarray:
    """[G^d, d] the points f is read at, patch n in row-major order of (n^1, …, n^d):
    the bump centres, or (printed_centre) the centres n/(G − 1) of the printed cells U_n."""
    axis = centres(G) + (1.0 / (G - 1) if reading.printed_centre else 0.0)
    grids = np.meshgrid(*([axis] * d), indexing="ij")
    return np.stack([g.ravel() for g in grids], axis=1)


def bump_scale(G: int, reading: Reading = Reading()) -> float:
    return 3.0 * G if reading.printed_scale else 3.0 * (G - 1)


def partition_sum(
    x: np.ndarray, G: int, *, printed_psi: bool = False, scale: float | None = None
) -> np.ndarray:
    """Σ_j ψ(scale (x − c_j)) per entry of x: 1 everywhere for the corrected ψ and scale."""
    s = 3.0 * (G - 1) if scale is None else scale
    t = s * (np.asarray(x, dtype=np.float64)[..., None] - centres(G))
    return psi(t, printed=printed_psi).sum(-1)


def evaluate(x: np.ndarray, values: np.ndarray, G: int) -> np.ndarray:
    """The closed form f̂(x) = Σ_n f_n φ_n(x), read sparsely: on each axis at most the two
    centres around x carry weight (ψ's support, 2/3 of a cell, is under one cell), so each
    point sums 2^d terms. `values`: [G^d] f_n in `nodes` order. Independent of the network."""
    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape
    h = 1.0 / (G - 1)
    lo = np.clip(np.floor(x / h).astype(np.int64), 0, G - 2)  # [n, d] left centre
    w_lo = psi(3.0 * (G - 1) * (x - lo * h))
    w_hi = psi(3.0 * (G - 1) * (x - (lo + 1) * h))
    strides = G ** np.arange(d - 1, -1, -1)
    out = np.zeros(n)
    for corner in range(2**d):
        bits = (corner >> np.arange(d)) & 1  # 1: the right centre on that axis
        weight = np.prod(np.where(bits, w_hi, w_lo), axis=1)
        out += weight * values[(lo + bits) @ strides]
    return out


@dataclass(frozen=True)
class Block:
    """One Definition-3 block: heads' Q, K, V [m, 5, 5] (summed, eq. 17), the Interaction
    constants C [m] (nan: not an Interaction-Lemma head) and FFN layers (W, b), ReLU between."""

    name: str
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    c: np.ndarray
    ffn: tuple[tuple[np.ndarray, np.ndarray], ...] = ()

    @property
    def heads(self) -> int:
        return self.q.shape[0]

    @property
    def params(self) -> int:
        """Every head's full Q, K, V (dense heads) plus the FFN's weights and biases."""
        return 3 * D_EMBD * D_EMBD * self.heads + sum(w.size + b.size for w, b in self.ffn)


def interaction_angles(tokens: int) -> np.ndarray:
    """The angle tπ/(2l) of I_t, t = 1 … l (0-based column t − 1)."""
    return np.arange(1, tokens + 1, dtype=np.float64) * math.pi / (2 * tokens)


def score_bound(qb: np.ndarray, kb: np.ndarray, bound: float = DATA_BOUND) -> np.ndarray:
    """S ≥ |⟨Q^B h, K^B h'⟩| for every h, h' with data rows in [−bound, bound], interaction
    rows in [0, 1] and constant 1: ‖Q^B h‖₂ ≤ ‖ |Q^B| m ‖₂ with m the entries' magnitudes."""
    m = np.array([bound, bound, 1.0, 1.0, 1.0])
    return np.linalg.norm(np.abs(qb) @ m, axis=-1) * np.linalg.norm(np.abs(kb) @ m, axis=-1)


def interaction_heads(
    tokens: int, t1: np.ndarray, t2: np.ndarray, qb: np.ndarray, kb: np.ndarray, out_row: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Lemma 3: heads [m] where query token t1 reads only key token t2 with the data score
    σ(⟨Q^B h_t1, K^B h_t2⟩) into row `out_row`; every other token pair scores below 0.
    Returns Q, K, V [m, 5, 5] and C [m], C computed from the data kernels' score bound."""
    m = len(t1)
    ang = interaction_angles(tokens)
    c = 2.0 * score_bound(qb, kb) / (1.0 - math.cos(math.pi / (2 * tokens)))
    phi = ang[t2] - ang[t1]  # rotate I_t1 onto I_t2
    q = np.zeros((m, D_EMBD, D_EMBD))
    k = np.zeros((m, D_EMBD, D_EMBD))
    q[:, :2, :] = qb
    k[:, :2, :] = kb
    q[:, 2, 2], q[:, 2, 3] = c * np.cos(phi), -c * np.sin(phi)
    q[:, 3, 2], q[:, 3, 3] = c * np.sin(phi), c * np.cos(phi)
    u = np.stack([np.cos(ang[t2]), np.sin(ang[t2])], axis=1)
    k[:, 2:4, 2:4] = u[:, :, None] * u[:, None, :]
    q[:, 4, 4] = 1.0
    k[:, 4, 4] = -c
    v = np.zeros((m, D_EMBD, D_EMBD))
    v[:, out_row, 4] = 1.0
    return q, k, v, c


def _kernels(m: int, q_rows: dict, k_rows: dict) -> tuple[np.ndarray, np.ndarray]:
    """Data kernels [m, 2, 5] from {(row, column): value or [m] values}."""
    qb, kb = np.zeros((m, 2, D_EMBD)), np.zeros((m, 2, D_EMBD))
    for (r, col), val in q_rows.items():
        qb[:, r, col] = val
    for (r, col), val in k_rows.items():
        kb[:, r, col] = val
    return qb, kb


def _linear(rows: dict, bias: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    w, b = np.zeros((D_EMBD, D_EMBD)), np.zeros(D_EMBD)
    for (r, col), val in rows.items():
        w[r, col] = val
    for r, val in (bias or {}).items():
        b[r] = val
    return w, b


@dataclass(frozen=True)
class Layout:
    """Token columns of the d-dimensional, G-point construction (module docstring)."""

    d: int
    G: int

    @property
    def patches(self) -> int:
        return self.G**self.d

    @property
    def tokens(self) -> int:
        return self.d + self.d * self.G + self.d * self.patches

    def bump(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        return self.d + i * self.G + j

    def slot(self, n: np.ndarray, s: np.ndarray | int) -> np.ndarray:
        return self.d + self.d * self.G + self.d * n + s

    def patch_index(self) -> np.ndarray:
        """[G^d, d] the 0-based grid index of every patch, row-major (as `nodes`)."""
        grids = np.meshgrid(*([np.arange(self.G)] * self.d), indexing="ij")
        return np.stack([g.ravel() for g in grids], axis=1)


def product_levels(d: int) -> list[list[tuple[int, int]]]:
    """Per product block, (query slot, key slot) pairs: live slots paired left to right, an
    odd one out reads itself; ⌈log₂ d⌉ levels, the product ends in slot 0."""
    live, levels = list(range(d)), []
    while len(live) > 1:
        pairs = [(live[a], live[min(a + 1, len(live) - 1)]) for a in range(0, len(live), 2)]
        levels.append(pairs)
        live = [p for p, _ in pairs]
    return levels


def _bump_block(lay: Layout, reading: Reading) -> Block:
    d, G = lay.d, lay.G
    i, j = np.repeat(np.arange(d), G), np.tile(np.arange(G), d)
    offset = 1.0 - (j + (1 if reading.printed_key else 0)) / (G - 1)
    qb, kb = _kernels(d * G, {(0, 4): 1.0, (1, 4): 1.0}, {(0, 0): 1.0, (1, 4): offset})
    q, k, v, c = interaction_heads(lay.tokens, lay.bump(i, j), i, qb, kb, out_row=1)
    a = bump_scale(G, reading)
    # hidden: ψ(a(u − 1)) = σ(t+2) − σ(t+1) − σ(t−1) + σ(t−2), t = a(u − 1); and σ(u), u = row 1
    w1 = np.zeros((FFN_WIDTH + reading.printed_ffn, D_EMBD))
    w1[:4, 1], w1[4, 1] = a, 1.0
    b1 = np.zeros(w1.shape[0])
    b1[:4] = -a + np.array([2.0, 1.0, -1.0, -2.0])
    w2 = np.zeros((D_EMBD, w1.shape[0]))
    w2[0, :4] = [1.0, -1.0, -1.0, 1.0]
    if reading.printed_ffn:  # the printed FFN returns the new rows 0, 1: (ψ + row 0, 0)
        w1[5, 0] = 1.0
        w2[0, 5] = 1.0
    else:  # the increment: row 0 += ψ, row 1 −= row 1
        w2[1, 4] = -1.0
    return Block("bumps", q, k, v, c, ((w1, b1), (w2, np.zeros(D_EMBD))))


def _gather_block(lay: Layout) -> Block:
    idx = lay.patch_index()  # [P, d]
    n = np.repeat(np.arange(lay.patches), lay.d)
    i = np.tile(np.arange(lay.d), lay.patches)
    key = lay.bump(i, idx[n, i])
    qb, kb = _kernels(len(n), {(0, 4): 1.0}, {(0, 0): 1.0})
    q, k, v, c = interaction_heads(lay.tokens, lay.slot(n, i), key, qb, kb, out_row=0)
    return Block("gather", q, k, v, c)


def _product_block(lay: Layout, level: int, pairs: list[tuple[int, int]]) -> Block:
    a = np.array([p for p, _ in pairs])
    b = np.array([p for _, p in pairs])
    n = np.repeat(np.arange(lay.patches), len(pairs))
    qs, ks = np.tile(a, lay.patches), np.tile(b, lay.patches)
    # the carried slot reads itself through the constant row: (row 0)·1
    carried = qs == ks
    qb, kb = _kernels(len(n), {(0, 0): np.where(carried, 0.0, 1.0), (0, 4): carried * 1.0},
                      {(0, 0): 1.0})  # fmt: skip
    q, k, v, c = interaction_heads(lay.tokens, lay.slot(n, qs), lay.slot(n, ks), qb, kb, out_row=1)
    ffn = (_linear({(0, 0): -1.0, (0, 1): 1.0, (1, 1): -1.0}),)  # Lemma 6: row 0 ← row 1
    return Block(f"product {level}", q, k, v, c, ffn)


def _multiply_block(lay: Layout, values: np.ndarray, R: float) -> Block:
    n = np.arange(lay.patches)
    t = lay.slot(n, 0)
    qb, kb = _kernels(lay.patches, {(0, 0): 1.0, (1, 4): 1.0}, {(0, 4): values, (1, 4): R})
    q, k, v, c = interaction_heads(lay.tokens, t, t, qb, kb, out_row=1)
    return Block("multiply", q, k, v, c, (_linear({(0, 0): -1.0}),))


def _sum_block(lay: Layout, R: float, reading: Reading) -> Block:
    q = np.zeros((1, D_EMBD, D_EMBD))
    q[0, 4, 4] = 1.0
    v = np.zeros((1, D_EMBD, D_EMBD))
    v[0, 0, 1] = 1.0
    shift = {0: -lay.patches * R}
    # printed: the FFN returns the new row 0 (row 0 − G^d R), which the residual adds again
    ffn = _linear({(0, 0): 1.0} if reading.printed_ffn else {}, shift)
    return Block("sum", q, q.copy(), v, np.array([math.nan]), (ffn,))


@dataclass(frozen=True)
class Lemma1Transformer:
    """The built network: fixed embedding and positional encoding, the blocks, the decoder
    (row 0 of the last token). `forward` runs it literally; `evaluate` is its closed form."""

    d: int
    G: int
    R: float
    values: np.ndarray  # [G^d] f_n
    blocks: tuple[Block, ...]
    pe: np.ndarray = field(repr=False)  # [5, l]

    @property
    def layout(self) -> Layout:
        return Layout(self.d, self.G)

    @property
    def tokens(self) -> int:
        return self.layout.tokens

    @property
    def heads(self) -> int:
        return sum(b.heads for b in self.blocks)

    @property
    def params(self) -> int:
        return sum(b.params for b in self.blocks)

    @property
    def weight_bound(self) -> float:
        """κ = ‖θ‖_∞ over every head and FFN weight (the Interaction constants dominate)."""
        arrays = [a for b in self.blocks for a in (b.q, b.k, b.v)]
        arrays += [a for b in self.blocks for layer in b.ffn for a in layer]
        return float(max(np.abs(a).max() for a in arrays))

    def embed(self, x: np.ndarray) -> np.ndarray:
        """H₁ [n, 5, l] = PE + E(x): x^i in row 0 of column i, zeros elsewhere in rows 0–1."""
        x = np.asarray(x, dtype=np.float64)
        h = np.broadcast_to(self.pe, (x.shape[0], *self.pe.shape)).copy()
        h[:, 0, : self.d] = x
        return h

    def forward(
        self, x: np.ndarray, *, dtype: torch.dtype = torch.float64, trace: bool = False,
        max_elements: int = 2**23,
    ) -> np.ndarray | tuple[np.ndarray, list[np.ndarray]]:  # fmt: skip
        """T(x) [n] for x [n, d]: every head of every block over all l² token pairs (eq. 14),
        heads summed (eq. 17), blocks as Definition 3. `trace`: also each block's input H."""
        h = torch.as_tensor(self.embed(x), dtype=dtype)
        inputs = []
        for block in self.blocks:
            if trace:
                inputs.append(h.numpy().astype(np.float64))
            mha = attention(block, h, max_elements)
            h = h + mha
            h = h + feed_forward(block, h)
        out = h[:, 0, -1].numpy().astype(np.float64)
        return (out, inputs) if trace else out

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        return evaluate(x, self.values, self.G)


def attention(block: Block, h: torch.Tensor, max_elements: int = 2**23) -> torch.Tensor:
    """MHA(H) = Σ_heads V H σ((K H)ᵀ Q H) [n, 5, l], heads in chunks of ≤ max_elements scores."""
    n, _, tokens = h.shape
    q, k, v = (torch.as_tensor(a, dtype=h.dtype) for a in (block.q, block.k, block.v))
    out = torch.zeros_like(h)
    step = max(1, max_elements // (n * tokens * tokens))
    for s in range(0, block.heads, step):
        qh = torch.einsum("mab,nbl->nmal", q[s : s + step], h)
        kh = torch.einsum("mab,nbl->nmal", k[s : s + step], h)
        vh = torch.einsum("mab,nbl->nmal", v[s : s + step], h)
        scores = torch.relu(kh.transpose(-1, -2) @ qh)  # [n, m, key j, query i]
        out += (vh @ scores).sum(1)
    return out


def feed_forward(block: Block, h: torch.Tensor) -> torch.Tensor:
    """FFN applied to every token (Definition 5); zero when the block has none."""
    if not block.ffn:
        return torch.zeros_like(h)
    z = h.transpose(1, 2)
    for depth, (w, b) in enumerate(block.ffn):
        z = z @ torch.as_tensor(w, dtype=h.dtype).T + torch.as_tensor(b, dtype=h.dtype)
        if depth < len(block.ffn) - 1:
            z = torch.relu(z)
    return z.transpose(1, 2)


def build(
    d: int, G: int, values: np.ndarray, *, R: float | None = None, reading: Reading = Reading()
) -> Lemma1Transformer:
    """The Lemma-1 transformer for grid values f_n [G^d] (f at `nodes(d, G)`); R ≥ max |f_n|
    (default: max |f_n|, or 1 if f ≡ 0)."""
    check_size(d, G)
    values = np.asarray(values, dtype=np.float64).ravel()
    lay = Layout(d, G)
    if values.size != lay.patches:
        raise ConfigError(f"values: need G^d = {lay.patches} grid values, got {values.size}")
    bound = float(np.abs(values).max()) if R is None else float(R)
    if bound < np.abs(values).max():
        raise ConfigError(f"R {bound} is below max |f_n| = {np.abs(values).max()}; raise R")
    bound = bound if bound > 0 else 1.0
    ang = interaction_angles(lay.tokens)
    pe = np.zeros((D_EMBD, lay.tokens))
    pe[2], pe[3], pe[4] = np.cos(ang), np.sin(ang), 1.0
    blocks = [_bump_block(lay, reading), _gather_block(lay)]
    blocks += [_product_block(lay, i + 1, p) for i, p in enumerate(product_levels(d))]
    blocks += [_multiply_block(lay, values, bound), _sum_block(lay, bound, reading)]
    return Lemma1Transformer(d, G, bound, values, tuple(blocks), pe)


@dataclass(frozen=True)
class Sizes:
    """The construction's sizes at (d, G), from the formulas (`size_formulas`); a test
    checks them against a built model."""

    d: int
    G: int
    tokens: int
    heads: int
    max_heads: int
    depth: int
    width: int
    ffn_width: int
    ffn_depth: int
    params_dense: int
    params_appendix_b: int


def _levels_heads(d: int) -> int:
    """Σ over product levels of the heads per patch (⌈live/2⌉ each)."""
    return sum(len(p) for p in product_levels(d))


def sizes(d: int, G: int) -> Sizes:
    """l = d + dG + dG^d; heads dG + (d + p_d + 1)G^d + 1 (p_d: product heads per patch);
    depth ⌈log₂ d⌉ + 4; dense parameters 75 per head (full Q, K, V) plus the FFNs (60 in
    block 1, 30 in each linear one); Appendix B's N = L_T·n_embd²·(3m + L_FFN), m = dG^d."""
    check_size(d, G)
    levels = len(product_levels(d))
    heads = d * G + (d + _levels_heads(d) + 1) * G**d + 1
    depth = levels + 4
    m = max(d * G, d * G**d)
    ffn = 2 * (FFN_WIDTH * D_EMBD + D_EMBD) + (levels + 2) * (D_EMBD * D_EMBD + D_EMBD)
    return Sizes(
        d=d, G=G, tokens=d + d * G + d * G**d, heads=heads, max_heads=m, depth=depth,
        width=D_EMBD, ffn_width=FFN_WIDTH, ffn_depth=2,
        params_dense=3 * D_EMBD * D_EMBD * heads + ffn,
        params_appendix_b=depth * D_EMBD * D_EMBD * (3 * m + 2),
    )  # fmt: skip


def size_formulas(d: int) -> dict[str, str]:
    """The `sizes` columns as functions of G, for the docs' table."""
    levels = len(product_levels(d))
    p = d + _levels_heads(d) + 1
    power = "G" if d == 1 else f"G^{d}"
    lead = f"{d}G" if d > 1 else "G"
    tok = f"{d} + {2 * d}G" if d == 1 else f"{d} + {lead} + {d}{power}"
    heads = f"{lead} + {p}{power} + 1" if d > 1 else f"{p + 1}G + 1"
    ffn = 2 * (FFN_WIDTH * D_EMBD + D_EMBD) + (levels + 2) * (D_EMBD * D_EMBD + D_EMBD)
    dense = f"75({heads}) + {ffn}"
    b = f"{levels + 4}·25·(3·{'' if d == 1 else d}{power} + 2)"
    return {"tokens": tok, "heads": heads, "depth": str(levels + 4), "params_dense": dense,
            "params_appendix_b": b}  # fmt: skip
