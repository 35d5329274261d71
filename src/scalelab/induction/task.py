"""The induction-heads task: definition, exact solvers and instance generators.

Input σ_1..σ_n over the alphabet {0, …, S−1}; output τ_i = σ_{j+1} for the rightmost
j < i with σ_j = σ_i, or ⊥ (``BOTTOM`` = −1 here) when σ_i has not occurred before.

The INDEX hard instances (Sanford, Hsu & Telgarsky 2024, Theorem 1) use three symbols,
0, 1 and ``?``: σ = (e_1, f_1, …, e_k, f_k, ?) with e_i = ? at i = i* and 0 elsewhere, so the
answer at the last position is f_{i*}. A one-layer model that answers it lets Alice (who
knows f) and Bob (who knows i*) solve INDEX, which needs k bits of communication.

Over a larger alphabet Σ the f_i range over every symbol but ``?`` (|Σ| − 1 values; the
paper's instances are |Σ| = 3), so INDEX needs k·log2(|Σ| − 1) bits: scalelab's extension,
argued in docs/induction.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scalelab.errors import ConfigError, InputError

BOTTOM = -1
QUERY_TOKEN = 2  # the symbol "?" of the hard instances; 0 and 1 are the bits


def solve_reference(seq: list[int] | np.ndarray) -> np.ndarray:
    """Reference solver, one Python pass with a last-seen table: O(n), obviously correct.

    A loop over positions on purpose: it is the readable definition that the vectorised
    `solve` is tested against, not a hot path.
    """
    seq = [int(t) for t in seq]
    last: dict[int, int] = {}
    out = np.full(len(seq), BOTTOM, dtype=np.int64)
    for i, tok in enumerate(seq):
        j = last.get(tok)
        if j is not None:
            out[i] = seq[j + 1]
        last[tok] = i
    return out


def _check_batch(seqs: np.ndarray) -> np.ndarray:
    seqs = np.asarray(seqs)
    if seqs.ndim == 1:
        seqs = seqs[None, :]
    if seqs.ndim != 2 or not np.issubdtype(seqs.dtype, np.integer):
        raise InputError(
            f"induction sequences must be a 2-D integer array [batch, n], got shape "
            f"{seqs.shape} dtype {seqs.dtype}; pass token ids"
        )
    if seqs.size and seqs.min() < 0:
        raise InputError("induction tokens must be >= 0 (−1 is reserved for ⊥)")
    return seqs


def solve(seqs: np.ndarray) -> np.ndarray:
    """Vectorised exact solver for a batch [B, n] → targets [B, n] with ⊥ = −1.

    One stable sort per row groups equal tokens in position order (numpy's stable sort
    is a radix sort for ≤ 16-bit integers, so this is O(n)); the predecessor of each
    element inside its group is the rightmost previous occurrence.
    """
    seqs = _check_batch(seqs)
    b, n = seqs.shape
    out = np.full((b, n), BOTTOM, dtype=np.int64)
    if n < 2:
        return out
    small = seqs.astype(np.uint16) if seqs.max(initial=0) < 2**16 else seqs
    order = np.argsort(small, axis=1, kind="stable")
    sorted_tok = np.take_along_axis(seqs, order, axis=1)
    same = sorted_tok[:, 1:] == sorted_tok[:, :-1]
    rows, cols = np.nonzero(same)
    pos = order[rows, cols + 1]  # position i whose previous occurrence is...
    prev = order[rows, cols]  # ...position j (< i by stability)
    out[rows, pos] = seqs[rows, prev + 1]
    return out


def uniform_instances(
    batch: int, n: int, alphabet_size: int, rng: np.random.Generator
) -> np.ndarray:
    """Uniform random sequences [batch, n] over {0, …, alphabet_size − 1}."""
    if alphabet_size < 2 or n < 1 or batch < 1:
        raise ConfigError(
            f"need alphabet_size >= 2, n >= 1 and count >= 1, got {alphabet_size}, {n}, {batch}; "
            "raise the one that is too small"
        )
    return rng.integers(0, alphabet_size, size=(batch, n), dtype=np.int64)


@dataclass(frozen=True)
class HardInstances:
    """A batch of INDEX instances: sequences, Alice's bits f [B, k] and Bob's index i* [B]
    (0-based), plus the answer at the last position (= f[i*])."""

    seqs: np.ndarray
    f: np.ndarray
    istar: np.ndarray

    @property
    def answers(self) -> np.ndarray:
        return self.f[np.arange(len(self.istar)), self.istar]

    @property
    def k(self) -> int:
        return int(self.f.shape[1])


def hard_instances_k(
    batch: int, k: int, rng: np.random.Generator, alphabet_size: int = 3
) -> HardInstances:
    """INDEX instances of length 2k + 1: (e_1, f_1, …, e_k, f_k, ?), the f_i uniform over
    Σ ∖ {?} (bits for the paper's |Σ| = 3; the same random stream as before for it)."""
    if k < 1 or batch < 1:
        raise ConfigError("hard instances need k >= 1 and batch >= 1")
    if alphabet_size < 3:
        raise ConfigError(f"hard instances need alphabet_size >= 3 (0, 1, ?), got {alphabet_size}")
    f = rng.integers(0, alphabet_size - 1, size=(batch, k), dtype=np.int64)
    f[f >= QUERY_TOKEN] += 1  # skip the symbol "?"
    istar = rng.integers(0, k, size=batch, dtype=np.int64)
    e = np.zeros((batch, k), dtype=np.int64)
    e[np.arange(batch), istar] = QUERY_TOKEN
    seqs = np.empty((batch, 2 * k + 1), dtype=np.int64)
    seqs[:, 0:-1:2] = e
    seqs[:, 1:-1:2] = f
    seqs[:, -1] = QUERY_TOKEN
    return HardInstances(seqs, f, istar)


def hard_instances(
    batch: int, n: int, rng: np.random.Generator, alphabet_size: int = 3
) -> HardInstances:
    """INDEX instances of total length n (k = (n − 1) // 2; an even n gets one leading 0,
    which changes no answer at the last position), f over Σ ∖ {?}."""
    if n < 3:
        raise ConfigError(f"hard instances need n >= 3, got {n}")
    inst = hard_instances_k(batch, (n - 1) // 2, rng, alphabet_size)
    if n % 2 == 0:
        pad = np.zeros((batch, 1), dtype=np.int64)
        return HardInstances(np.concatenate([pad, inst.seqs], axis=1), inst.f, inst.istar)
    return inst


def mixture_instances(
    batch: int,
    n: int,
    alphabet_size: int,
    rng: np.random.Generator,
    hard_fraction: float = 0.5,
) -> np.ndarray:
    """Uniform sequences with a `hard_fraction` of rows replaced by hard instances
    (which use tokens 0, 1, 2, so alphabet_size must be >= 3)."""
    return mixture_with_hard_rows(batch, n, alphabet_size, rng, hard_fraction)[0]


def mixture_with_hard_rows(
    batch: int,
    n: int,
    alphabet_size: int,
    rng: np.random.Generator,
    hard_fraction: float = 0.5,
) -> tuple[np.ndarray, np.ndarray]:
    """`mixture_instances` (the same random stream) and the indices of its hard rows."""
    if not 0.0 <= hard_fraction <= 1.0:
        raise ConfigError(f"hard_fraction must lie in [0, 1], got {hard_fraction}")
    seqs = uniform_instances(batch, n, alphabet_size, rng)
    n_hard = int(rng.binomial(batch, hard_fraction)) if 0 < hard_fraction < 1 else 0
    n_hard = batch if hard_fraction == 1.0 else n_hard
    rows = np.zeros(0, dtype=np.int64)
    if n_hard:
        if alphabet_size < 3:
            raise ConfigError("hard instances need alphabet_size >= 3 (symbols 0, 1, ?)")
        rows = rng.choice(batch, size=n_hard, replace=False)
        seqs[rows] = hard_instances(n_hard, n, rng).seqs
    return seqs, rows


def accuracy_metrics(pred: np.ndarray, target: np.ndarray) -> dict[str, float]:
    """Accuracy over all positions, over non-⊥ positions and at the last position."""
    pred = np.asarray(pred)
    target = np.asarray(target)
    if pred.shape != target.shape:
        raise InputError(f"prediction shape {pred.shape} != target shape {target.shape}")
    correct = pred == target
    non_bottom = target != BOTTOM
    return {
        "acc_all": float(correct.mean()),
        "acc_non_bottom": float(correct[non_bottom].mean()) if non_bottom.any() else float("nan"),
        "acc_last": float(correct[:, -1].mean()),
    }
