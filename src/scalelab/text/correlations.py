"""How token-token correlations decay with distance, counted from a token sequence.

For each distance t, the pairs (x_s, x_{s+t}) of tokens in the same document give the joint
frequencies P_t(i, j) and the marginals p_t(i) (left token) and q_t(j) (right token). The
connected correlation matrix is C_t = P_t − p_t q_tᵀ; its Frobenius norm is

    ‖C_t‖² = Σ P_t(i,j)² − 2 Σ_ij P_t(i,j) p_t(i) q_t(j) + (Σ p_t²)(Σ q_t²),

computed from the pairs alone (no V × V matrix): the first sum from the counts of distinct
pairs, the second as the mean of p(x_s) q(x_{s+t}) over pairs. Cagnetta et al. (2026, arXiv
2602.07488) fit ‖C_t‖ ∝ t^-β; this is the statistic as scalelab defines it (see
docs/fitting.md for what was and was not checked against the paper).

Sampling noise: with M pairs of independent tokens the empirical norm² is about
(1 − Σp²)(1 − Σq²)/M, not 0; `noise_sq` reports that floor for each t so that fits can keep
only distances whose correlation stands above it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from scalelab.errors import InputError


def _pairs(tokens: np.ndarray, doc: np.ndarray, t: int) -> tuple[np.ndarray, np.ndarray]:
    same = doc[:-t] == doc[t:]
    return tokens[:-t][same], tokens[t:][same]


def correlation_norm(a: np.ndarray, b: np.ndarray, vocab: int) -> tuple[float, float]:
    """‖P − p qᵀ‖_F of the pairs (a[s], b[s]) and its independent-token noise floor
    (norm²), vectorised over pairs."""
    m = len(a)
    p = np.bincount(a, minlength=vocab) / m
    q = np.bincount(b, minlength=vocab) / m
    _, counts = np.unique(a.astype(np.int64) * vocab + b, return_counts=True)
    sum_p2 = float(np.sum((counts / m) ** 2))
    cross = float(np.mean(p[a] * q[b]))
    pp, qq = float(p @ p), float(q @ q)
    norm_sq = max(sum_p2 - 2.0 * cross + pp * qq, 0.0)
    return float(np.sqrt(norm_sq)), (1.0 - pp) * (1.0 - qq) / m


def correlation_decay(
    tokens: Any, offsets: Any, distances: Any, *, exclude: Any = ()
) -> dict[str, list[float]]:
    """‖C_t‖ for each distance t, over pairs inside one document (`offsets`: document
    boundaries into `tokens`, starting at 0). Tokens in `exclude` (e.g. an end-of-text id)
    take part in no pair. A distance with fewer than 2 pairs gets norm 0 and n_pairs as
    counted (fits skip it)."""
    tok = np.asarray(tokens, dtype=np.int64)
    off = np.asarray(offsets, dtype=np.int64)
    dist = np.asarray(distances, dtype=np.int64)
    if off.ndim != 1 or off[0] != 0 or off[-1] != len(tok) or np.any(np.diff(off) < 0):
        raise InputError("offsets must rise from 0 to len(tokens); pass document boundaries")
    if len(dist) == 0 or np.any(dist < 1):
        raise InputError("distances must be positive integers; e.g. 1 2 4 ... 256")
    doc = np.repeat(np.arange(len(off) - 1), np.diff(off))
    keep = ~np.isin(tok, np.asarray(exclude, dtype=np.int64))
    doc = np.where(keep, doc, -1 - np.arange(len(tok)))  # an excluded token pairs with none
    vocab = int(tok.max()) + 1 if len(tok) else 1
    rows: dict[str, list[float]] = {"distance": [], "norm": [], "noise_sq": [], "n_pairs": []}
    for t in dist.tolist():
        a, b = _pairs(tok, doc, t) if t < len(tok) else (tok[:0], tok[:0])
        norm, noise = correlation_norm(a, b, vocab) if len(a) >= 2 else (0.0, 0.0)
        rows["distance"].append(float(t))
        rows["norm"].append(norm)
        rows["noise_sq"].append(noise)
        rows["n_pairs"].append(float(len(a)))
    return rows


def store_correlation_decay(data_dir: Any, distances: Any, split: str = "train") -> dict:
    """`correlation_decay` of one split of a token store (its end-of-text tokens excluded)."""
    from scalelab.text.store import TokenStore

    store = TokenStore(data_dir, split)
    rows = correlation_decay(
        np.asarray(store.tokens), store.offsets, distances, exclude=[store.eot_id]
    )
    return {**rows, "split": split, "n_tokens": store.n_tokens}


# ---- the operator norm (Cagnetta et al.'s statistic, as the issue reads it) ----

DENSE_MAX = 256  # up to this many distinct tokens the matrix is formed and its norm taken densely
NOISE_SEED = 0


def operator_norm(a: np.ndarray, b: np.ndarray) -> float:
    """Top singular value of C = P − p qᵀ for the pairs (a[s], b[s]): P the joint frequency
    of (left, right) tokens (a sparse V × V matrix of the distinct pairs), p and q its
    marginals. C is never formed for large V: `svds` works on P x − p (q·x)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.linalg import LinearOperator, svds

    m = len(a)
    ids, inv = np.unique(np.concatenate([a, b]), return_inverse=True)
    ia, ib, v = inv[:m], inv[m:], len(ids)
    joint = coo_matrix((np.full(m, 1.0 / m), (ia, ib)), shape=(v, v)).tocsr()
    p = np.bincount(ia, minlength=v) / m
    q = np.bincount(ib, minlength=v) / m
    if v <= DENSE_MAX:
        return float(np.linalg.norm(joint.toarray() - np.outer(p, q), 2))
    op = LinearOperator(
        (v, v),
        matvec=lambda x: joint @ x.ravel() - p * (q @ x.ravel()),
        rmatvec=lambda y: joint.T @ y.ravel() - q * (p @ y.ravel()),
        dtype=np.float64,
    )
    v0 = np.random.default_rng(NOISE_SEED).normal(size=v)
    return float(svds(op, k=1, v0=v0, return_singular_vectors=False)[0])


def _segments(tokens: np.ndarray, offsets: np.ndarray, exclude: Any) -> tuple:
    """Tokens without the excluded ones, and a segment id per token that changes at every
    document boundary and at every excluded token (no pair or window crosses either)."""
    start = np.zeros(len(tokens), dtype=bool)
    start[offsets[:-1][offsets[:-1] < len(tokens)]] = True
    drop = np.isin(tokens, np.asarray(exclude, dtype=np.int64))
    after = np.zeros(len(tokens), dtype=bool)
    after[1:] = drop[:-1]
    seg = np.cumsum(start | after | drop)
    return tokens[~drop], seg[~drop]


def _checked(tokens: Any, offsets: Any) -> tuple[np.ndarray, np.ndarray]:
    tok = np.asarray(tokens, dtype=np.int64)
    off = np.asarray(offsets, dtype=np.int64)
    if off.ndim != 1 or off[0] != 0 or off[-1] != len(tok) or np.any(np.diff(off) < 0):
        raise InputError("offsets must rise from 0 to len(tokens); pass document boundaries")
    return tok, off


def operator_norm_decay(
    tokens: Any, offsets: Any, distances: Any, *, exclude: Any = (), seed: int = NOISE_SEED
) -> dict[str, list[float]]:
    """‖C_t‖_op (top singular value of the lagged one-hot covariance) for each distance t,
    over pairs inside one document, and its noise floor: the same norm of the pairs with
    the right-hand tokens shuffled (independent pairs with the same marginals, `seed`).
    A distance with fewer than 2 pairs gets norm and noise 0 (fits skip it)."""
    tok, off = _checked(tokens, offsets)
    dist = np.asarray(distances, dtype=np.int64)
    if len(dist) == 0 or np.any(dist < 1):
        raise InputError("distances must be positive integers; e.g. 1 2 4 ... 256")
    tok, seg = _segments(tok, off, exclude)
    rng = np.random.default_rng(seed)
    rows: dict[str, list[float]] = {"distance": [], "norm": [], "noise": [], "n_pairs": []}
    for t in dist.tolist():
        a, b = _pairs(tok, seg, t) if t < len(tok) else (tok[:0], tok[:0])
        ok = len(a) >= 2
        rows["distance"].append(float(t))
        rows["norm"].append(operator_norm(a, b) if ok else 0.0)
        rows["noise"].append(operator_norm(a, rng.permutation(b)) if ok else 0.0)
        rows["n_pairs"].append(float(len(a)))
    return rows
