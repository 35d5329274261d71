"""Next-token conditional entropies H_n = H(x_{n+1} | x_1 … x_n) of a token sequence,
counted from n-grams (plug-in estimates, in nats).

Why: the second theory (Cagnetta et al. 2026, arXiv 2602.07488) reads γ from the decay of
H_n − H_∞ with the context length n, at the small n that the training data resolves. Counting
n-grams on the full train split measures H_n directly, without a model whose own limits
(size, training budget, context) would enter the curve.

For each n the windows of n + 1 consecutive tokens inside one document (and not across an
excluded token, e.g. end-of-text) give H_n = H(window) − H(its first n tokens). The plug-in
estimate is biased low once the number of distinct windows approaches the number of windows
(most (n+1)-grams seen once): each row reports both, and `resolved` keeps the n where the
distinct windows are at most `MAX_DISTINCT_SHARE` of all windows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from scalelab.errors import InputError
from scalelab.text.correlations import _checked, _segments

MAX_DISTINCT_SHARE = 0.1  # above this share of distinct (n+1)-grams the plug-in H_n is biased


def _entropy(ids: np.ndarray) -> float:
    _, counts = np.unique(ids, return_counts=True)
    f = counts / counts.sum()
    return float(-(f * np.log(f)).sum())


def conditional_entropies(
    tokens: Any, offsets: Any, max_n: int, *, exclude: Any = ()
) -> dict[str, list[float]]:
    """H_n for n = 0 … max_n (H_0: the unigram entropy), with the number of windows and of
    distinct (n+1)-grams behind each, and whether the estimate is resolved."""
    tok, off = _checked(tokens, offsets)
    if max_n < 0:
        raise InputError(f"max_n = {max_n}: give a context length of 0 or more")
    tok, seg = _segments(tok, off, exclude)
    vocab = int(tok.max()) + 1 if len(tok) else 1
    ctx = np.zeros(len(tok), dtype=np.int64)  # id of the n tokens starting at each position
    rows: dict[str, list] = {"n": [], "H": [], "windows": [], "distinct": [], "resolved": []}
    for n in range(max_n + 1):
        m = len(tok) - n
        if m < 2:
            break
        inside = seg[:m] == seg[n : n + m]  # segments are contiguous: both ends suffice
        joint = ctx[:m] * vocab + tok[n : n + m]
        h = _entropy(joint[inside]) - _entropy(ctx[:m][inside])
        distinct = len(np.unique(joint[inside]))
        rows["n"].append(n)
        rows["H"].append(h)
        rows["windows"].append(int(inside.sum()))
        rows["distinct"].append(distinct)
        rows["resolved"].append(bool(distinct <= MAX_DISTINCT_SHARE * max(inside.sum(), 1)))
        ctx = np.unique(joint, return_inverse=True)[1].astype(np.int64)
    return rows
