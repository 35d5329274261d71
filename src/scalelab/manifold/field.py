"""A target as hard as Theorem 1's class: a Gaussian random field of smoothness β on T^d.

On the flat torus T^d (angles θ ∈ [-π, π)^d) the Fourier modes cos(<k, θ> + b), k ∈ Z^d,
are orthogonal, and a frequency shell r ≤ |k| < 2r holds ∝ r^d of them, independent.
f(θ) = Σ_k a_k cos(<k, θ> + b_k) with a_k cos b_k, a_k sin b_k independent N(0, v_k) and
v_k ∝ |k|^-(2β+d) is the Gaussian field whose variogram behaves like |θ − θ'|^2β: the energy
of a shell falls like r^-2β, spread over ∝ r^d independent modes, which is what makes
n^(-2β/(2β+d)) the Bayes (hence minimax) rate, not only an upper bound (docs/manifold.md).

The field is kept to whole shells |k|² <= K² with K set from the largest training size:
modes whose variance is below `ideal_noise(n_cap) / cap_factor` (far below what n_cap
noisy samples resolve), at most `max_modes`. `bayes_risk(n)` is the ideal learner's error on
exactly this (capped) field, so the exponent the cap allows is computed, not assumed.

Known constants (isometric embedding, so |Δy| <= |Δx| for the native coordinates y): on a
circle of radius ρ = 1/√d a chord c spans an angle <= (π/2) c / ρ, so
|<k, Δθ>| <= |k| (π/2) √d |Δx|, and with |cos a − cos b| <= 2^(1−β) |a − b|^β:
|f(x) − f(y)| <= H |x − y|^β, H = 2^(1−β) Σ |a_k| (|k| π √d / 2)^β, and |f| <= R = Σ |a_k|.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from scalelab.errors import ConfigError


def half_lattice(d: int, k2_max: int) -> np.ndarray:
    """Every k ∈ Z^d with 0 < |k|² <= k2_max and first non-zero entry > 0 (one of ±k) [M, d],
    sorted by |k|; built one coordinate at a time, pruning partial sums above k2_max."""
    K = math.isqrt(k2_max)
    axis = np.arange(-K, K + 1, dtype=np.int64)
    pts, norm2 = np.zeros((1, 0), dtype=np.int64), np.zeros(1, dtype=np.int64)
    for _ in range(d):
        total = norm2[:, None] + axis[None, :] ** 2
        rows, cols = np.nonzero(total <= k2_max)
        pts = np.concatenate([pts[rows], axis[cols, None]], axis=1)
        norm2 = total[rows, cols]
    first = pts[np.arange(len(pts)), (pts != 0).argmax(1)]
    keep = first > 0
    order = np.argsort(norm2[keep], kind="stable")
    return pts[keep][order]


def half_lattice_counts(d: int, k2_max: int) -> np.ndarray:
    """c[m] = number of rows `half_lattice(d, m)` has, for m = 0 … k2_max (from r_d(m),
    the representations of m as a sum of d squares, built one coordinate at a time)."""
    reps = np.zeros(k2_max + 1, dtype=np.int64)
    reps[0] = 1
    K = math.isqrt(k2_max)
    for _ in range(d):
        nxt = np.zeros_like(reps)
        for j in range(-K, K + 1):
            nxt[j * j :] += reps[: k2_max + 1 - j * j]
        reps = nxt
    return (np.cumsum(reps) - 1) // 2


def spectrum(modes: np.ndarray, beta: float) -> np.ndarray:
    """Per-mode variance v_k ∝ |k|^-(2β+d), normalised so that Var f = Σ v_k = 1."""
    norms = np.linalg.norm(modes, axis=1)
    v = norms ** -(2 * beta + modes.shape[1])
    return v / v.sum()


def ideal_noise(n: float | np.ndarray, noise_std: float) -> float | np.ndarray:
    """The noise variance per mode coefficient that n samples leave: 2σ²/n (E cos² = 1/2)."""
    return 2.0 * noise_std**2 / n


def cap_k2(
    d: int,
    beta: float,
    n_cap: int,
    noise_std: float,
    *,
    cap_factor: float = 64.0,
    max_modes: int = 4096,
) -> int:
    """The largest K² (whole shells) whose modes have v_k >= ideal_noise(n_cap)/cap_factor,
    with at most `max_modes` modes (and at least the first shell)."""
    floor = ideal_noise(n_cap, max(noise_std, 1e-3)) / cap_factor
    k2_norm = 10_000 if d == 1 else 400  # v_k = c |k|^-(2β+d); c from the shells up to here
    shells = np.diff(half_lattice_counts(d, k2_norm))
    m = np.arange(1, k2_norm + 1, dtype=np.float64)
    c = 1.0 / np.sum(shells * m ** -(beta + d / 2))
    k2_floor = int((c / floor) ** (2.0 / (2 * beta + d)))
    if d == 1:
        k2_modes = max_modes**2
    else:
        ball = math.pi ** (d / 2) / math.gamma(d / 2 + 1)  # volume of the unit d-ball
        hi = int((1.5 * (2 * max_modes / ball) ** (1 / d)) ** 2) + 1
        k2_modes = int(np.flatnonzero(half_lattice_counts(d, hi) <= max_modes)[-1])
    return max(1, min(k2_floor, k2_modes))


def tail_variance(d: int, beta: float, k2: int) -> float:
    """Σ v_k over |k|² > k2 of the uncapped spectrum, in units of the field capped at k2
    (whose Σ v_k is 1): shell counts out to |k|² = 16·k2 + 400, then the integral
    ∫ (S_(d−1)/2) r^(d−1) r^-(2β+d) dr beyond (half the sphere: one of ±k)."""
    hi = 16 * k2 + 400
    if d == 1:
        k = np.arange(1, math.isqrt(hi) + 1, dtype=np.float64)
        v = k ** -(2 * beta + 1)
        inner, outer = v[: math.isqrt(k2)].sum(), v[math.isqrt(k2) :].sum()
    else:
        shells = np.diff(half_lattice_counts(d, hi)).astype(np.float64)
        v = shells * np.arange(1, hi + 1, dtype=np.float64) ** -(beta + d / 2)
        inner, outer = v[:k2].sum(), v[k2:].sum()
    sphere = 2 * math.pi ** (d / 2) / math.gamma(d / 2)
    outer += sphere / 2 * (hi + 0.5) ** -beta / (2 * beta)
    return float(outer / inner)


@dataclass(frozen=True)
class TorusField:
    """A fixed draw of the capped Gaussian field, as a function of x ∈ R^D (module docstring)."""

    q: np.ndarray  # [D, 2d] orthonormal columns: x = q y, y = (cos θ_1, sin θ_1, ...)/√d
    modes: np.ndarray  # [M, d] integers
    variance: np.ndarray  # [M] v_k, Σ = 1
    amplitude: np.ndarray  # [M] a_k >= 0
    phase: np.ndarray  # [M]
    beta: float

    @classmethod
    def random(
        cls, q: np.ndarray, beta: float, k2_max: int, rng: np.random.Generator
    ) -> TorusField:
        if not 0.0 < beta <= 1.0:
            raise ConfigError(f"Hölder exponent beta must be in (0, 1], got {beta}")
        if q.shape[1] % 2:
            raise ConfigError("the field lives on the torus: q must have 2d columns")
        modes = half_lattice(q.shape[1] // 2, k2_max)
        v = spectrum(modes, beta)
        g = rng.standard_normal((len(modes), 2)) * np.sqrt(v)[:, None]
        return cls(
            q=q,
            modes=modes,
            variance=v,
            amplitude=np.hypot(g[:, 0], g[:, 1]),
            phase=np.arctan2(-g[:, 1], g[:, 0]),
            beta=float(beta),
        )

    @property
    def d(self) -> int:
        return self.modes.shape[1]

    @property
    def holder_constant(self) -> float:
        """H with |f(x) − f(y)| <= H |x − y|^β for all x, y on the embedded torus."""
        lip = np.linalg.norm(self.modes, axis=1) * math.pi * math.sqrt(self.d) / 2
        return float(2 ** (1 - self.beta) * np.sum(self.amplitude * lip**self.beta))

    @property
    def bound(self) -> float:
        """R with |f(x)| <= R for all x."""
        return float(np.sum(self.amplitude))

    def angles(self, x: np.ndarray) -> np.ndarray:
        """θ [n, d] of points x [n, D] on (or near) the embedded torus."""
        y = x @ self.q
        return np.arctan2(y[:, 1::2], y[:, 0::2])

    def __call__(self, x: np.ndarray, chunk: int = 512) -> np.ndarray:
        """f at the rows of x [n, D], in cache-sized chunks (the cosines dominate)."""
        theta = self.angles(x)
        k = self.modes.T.astype(np.float64)
        out = np.empty(x.shape[0])
        for start in range(0, x.shape[0], chunk):
            z = theta[start : start + chunk] @ k + self.phase
            out[start : start + chunk] = np.cos(z) @ self.amplitude
        return out

    def bayes_risk(self, n: np.ndarray | float, noise_std: float) -> np.ndarray:
        """The ideal learner's excess L2 risk after n samples: the posterior variance
        Σ_k v_k s / (v_k + s), s = 2σ²/n, of the Gaussian sequence model that knows the prior
        (every estimator's average risk over the prior is at least this)."""
        s = ideal_noise(np.asarray(n, dtype=np.float64)[..., None], noise_std)
        return np.sum(self.variance * s / (self.variance + s), axis=-1)

    def shell_counts(self, edges: np.ndarray) -> np.ndarray:
        """Modes with edges[i] <= |k| < edges[i+1] (the test of ∝ r^d growth)."""
        counts, _ = np.histogram(np.linalg.norm(self.modes, axis=1), bins=edges)
        return counts
