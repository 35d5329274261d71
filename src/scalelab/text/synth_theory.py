"""Closed forms for the synthetic corpora of `scalelab.text.synth`.

Truncated Zipf law: `p_k = k^-s / Z`, `k = 1..K`, `s = 1 + a`, `Z = sum_k k^-s`.

Facts (Hutter 2021, "Learning curve theory", arXiv 2102.04074): a learner that memorises the
value of every key it has seen, and knows nothing of an unseen key's value, errs on a fresh
fact with probability equal to the mass of the keys missing from its n training facts,

    U(n) = sum_{k<=K} p_k (1 - p_k)^n                                           (exact)
         ~ Gamma(1 - 1/s) / s * (n / Z)^-(1 - 1/s)        (K -> inf; 1 << n, n p_K << 1)

so the error falls as n^-beta with beta = a / (1 + a) (Hutter's beta = alpha/(1+alpha) for
features with frequencies i^-(1+alpha)). The ideal learner also knows the key law, so its
expected test loss per fact in nats is `E + V * U(n)`: `E` the entropy of the key law (the
irreducible term), `V = value_len * ln(words)` the cost of a uniformly random value.

Sums over all K keys (2^24 by default) are exact for `k <= EXACT_TERMS` and an integral over
the rest (midpoint rule, relative error < 1e-9 there: the summands are smooth and tiny).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: Terms of each Zipf sum taken exactly; the tail beyond is integrated in closed form.
EXACT_TERMS = 1 << 16
#: Knowledge a language model stores per parameter, measured on synthetic biographies across
#: architectures and sizes (Allen-Zhu & Li 2024, "Physics of Language Models: Part 3.3",
#: arXiv 2404.05405: about 2 bits per parameter, int8 weights included): the capacity check.
BITS_PER_PARAM = 2.0


def _head(s: float, K: int) -> np.ndarray:
    return np.arange(1, min(K, EXACT_TERMS) + 1, dtype=np.float64) ** -s


def zipf_probabilities(s: float, K: int) -> np.ndarray:
    """`p_k` for k = 1..K (small K: the whole vector)."""
    p = np.arange(1, K + 1, dtype=np.float64) ** -s
    return p / p.sum()


def zipf_normaliser(s: float, K: int) -> float:
    """`Z = sum_{k=1}^K k^-s` (Riemann zeta minus the Hurwitz tail beyond K)."""
    from scipy.special import zeta  # scipy on first use: the corpus list reads this module

    return float(zeta(s) - zeta(s, K + 1))


def zipf_entropy(s: float, K: int) -> float:
    """Entropy in nats of the Zipf law truncated at K: `ln Z + s * sum_k p_k ln k`."""
    Z = zipf_normaliser(s, K)
    head = _head(s, K)
    total = float(head @ np.log(np.arange(1, head.size + 1)))
    if K > EXACT_TERMS:  # integral of x^-s ln x over [k0 + 1/2, K + 1/2]

        def antiderivative(x: float) -> float:
            return x ** (1 - s) * (math.log(x) / (1 - s) - 1 / (1 - s) ** 2)

        total += antiderivative(K + 0.5) - antiderivative(EXACT_TERMS + 0.5)
    return math.log(Z) + s * total / Z


def unseen_mass(s: float, K: int, n: np.ndarray | float) -> np.ndarray:
    """`U(n) = sum_k p_k (1 - p_k)^n`: expected Zipf mass of the keys absent from n draws."""
    n = np.atleast_1d(np.asarray(n, dtype=np.float64))
    Z = zipf_normaliser(s, K)
    p = _head(s, K) / Z
    out = (np.log1p(-p)[None, :] * n[:, None]).clip(-745.0)
    out = np.exp(out) @ p
    if K > EXACT_TERMS:
        # sum over the tail of (k^-s/Z) e^{-n k^-s/Z}: with u = n x^-s / Z the integral is
        # (n/Z)^{1/s} / (s n) * [Gamma(b, u_K) - Gamma(b, u_0)], b = 1 - 1/s.
        from scipy.special import gamma, gammaincc

        b = 1.0 - 1.0 / s
        nn = np.maximum(n, 1e-300)
        u_lo = nn * (K + 0.5) ** -s / Z
        u_hi = nn * (EXACT_TERMS + 0.5) ** -s / Z
        scale = (nn / Z) ** (1.0 / s) / (s * nn) * gamma(b)
        tail = scale * (gammaincc(b, u_lo) - gammaincc(b, u_hi))
        p_tail = ((EXACT_TERMS + 0.5) ** (1 - s) - (K + 0.5) ** (1 - s)) / ((s - 1) * Z)
        out += np.where(n > 0, tail, p_tail)
    return out


def local_slope(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares exponent `-d log y / d log x` over the given points."""
    return float(-np.polyfit(np.log(x), np.log(y), 1)[0])


@dataclass(frozen=True)
class FactsTheory:
    """The ideal memorising learner on a facts corpus (see the module docstring)."""

    a: float
    keys: int
    key_entropy_nats: float
    value_nats: float
    tokens_per_fact: float

    @property
    def exponent(self) -> float:
        """Hutter's asymptotic exponent `a / (1 + a)` of the excess loss (infinite K)."""
        return self.a / (1.0 + self.a)

    @property
    def irreducible_nats_per_token(self) -> float:
        """`E` per token: the key law's entropy spread over a fact's tokens."""
        return self.key_entropy_nats / self.tokens_per_fact

    def unseen_mass(self, n_facts: np.ndarray | float) -> np.ndarray:
        """Probability that a test fact's key is missing from `n_facts` training facts."""
        return unseen_mass(1.0 + self.a, self.keys, n_facts)

    def loss_per_token(self, n_tokens: np.ndarray | float) -> np.ndarray:
        """Expected test loss (nats/token) after `n_tokens` training tokens."""
        n_facts = np.asarray(n_tokens, dtype=np.float64) / self.tokens_per_fact
        excess = self.value_nats * self.unseen_mass(n_facts)
        return (self.key_entropy_nats + excess) / self.tokens_per_fact

    def distinct_facts(self, n_tokens: float, points: int = 257) -> float:
        """Expected number of distinct keys among the facts of `n_tokens` training tokens.

        Each draw is new with probability U(j), the unseen mass after j draws, so the count
        after n draws is the sum of U(0 … n−1): the integral of U over [0, n] on a geometric
        grid plus Euler–Maclaurin's end correction (U(0) − U(n)) / 2."""
        n = float(n_tokens) / self.tokens_per_fact
        if n <= 1:
            return n
        grid = np.concatenate([[0.0], np.geomspace(1.0, n, points)])
        u = self.unseen_mass(grid)
        return float(np.sum((u[1:] + u[:-1]) / 2 * np.diff(grid)) + (u[0] - u[-1]) / 2)

    def capacity(self, n_tokens: float, params: int) -> dict[str, float | bool]:
        """Whether a model of `params` parameters can hold what the ideal learner memorises
        from `n_tokens` tokens: one value (`value_nats`) per distinct key seen, against
        `BITS_PER_PARAM` bits per parameter."""
        facts = self.distinct_facts(n_tokens)
        bits = facts * self.value_nats / math.log(2)
        return {
            "train_tokens": float(n_tokens),
            "distinct_facts": facts,
            "bits_needed": bits,
            "params": int(params),
            "bits_per_param_needed": bits / params,
            "bits_per_param_available": BITS_PER_PARAM,
            "holds": bits <= BITS_PER_PARAM * params,
        }

    def effective_exponent(self, lo_tokens: float, hi_tokens: float, points: int = 9) -> float:
        """Log-log slope of the excess loss over [lo, hi] tokens: the finite-K exponent."""
        n = np.geomspace(lo_tokens, hi_tokens, points) / self.tokens_per_fact
        return local_slope(n, self.unseen_mass(n))


def facts_theory(
    a: float, words: int, key_len: int, value_len: int, facts_per_doc: int
) -> FactsTheory:
    """The closed form for a facts corpus with these parameters (each symbol one token;
    a fact is key words, '=', value words, ';', and each document ends with one EOT)."""
    keys = words**key_len
    return FactsTheory(
        a=a,
        keys=keys,
        key_entropy_nats=zipf_entropy(1.0 + a, keys),
        value_nats=value_len * math.log(words),
        tokens_per_fact=key_len + value_len + 2 + 1 / facts_per_doc,
    )


def markov_entropy_per_token(a: float, states: int, doc_len: int) -> float:
    """Loss per token (EOT included) of a learner that knows the chain: a uniform first word,
    `doc_len - 1` draws from rows of entropy H(Zipf(1+a) over `states`), a certain EOT."""
    row = zipf_entropy(1.0 + a, states)
    return ((doc_len - 1) * row + math.log(states)) / (doc_len + 1)
