"""Compact manifolds of known dimension d, sampled exactly uniformly w.r.t. their volume.

Each manifold lives in its own small "native" space R^k (k = d+1 or 2d) and is scaled to lie
in the unit ball there, so that one target-frequency range means the same thing for every
manifold. `Embedding` places it in R^D by a random isometry (and optionally a smooth,
exactly invertible warp), which is what the regressor sees. `residual` is an upper bound on
a point's distance to the manifold (exact for sphere, torus and subspace), so tests can check
that samples lie on it.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from scalelab.errors import ConfigError


class Manifold(ABC):
    """A d-dimensional compact manifold in R^native_dim with an exact uniform sampler."""

    name: str = ""

    def __init__(self, d: int) -> None:
        if not isinstance(d, int | np.integer) or d < 1:
            raise ConfigError(f"manifold dimension d must be a positive integer, got {d!r}")
        self.d = int(d)

    @property
    @abstractmethod
    def native_dim(self) -> int:
        """Dimension k of the space the manifold is defined in (before embedding in R^D)."""

    @abstractmethod
    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n points [n, native_dim] drawn i.i.d. uniformly w.r.t. the Riemannian volume."""

    @abstractmethod
    def residual(self, y: np.ndarray) -> np.ndarray:
        """Per point, an upper bound on the distance from y [n, native_dim] to the manifold."""


class Sphere(Manifold):
    """The unit sphere S^d in R^(d+1): normalised Gaussians are exactly uniform."""

    name = "sphere"

    @property
    def native_dim(self) -> int:
        return self.d + 1

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        g = rng.standard_normal((n, self.d + 1))
        return g / np.linalg.norm(g, axis=1, keepdims=True)

    def residual(self, y: np.ndarray) -> np.ndarray:
        return np.abs(np.linalg.norm(y, axis=1) - 1.0)


class Torus(Manifold):
    """The flat torus T^d: a product of d circles of radius 1/sqrt(d) in R^(2d).

    Points lie on the unit sphere of R^(2d); independent uniform angles give the uniform
    volume measure because the product metric is flat.
    """

    name = "torus"

    @property
    def native_dim(self) -> int:
        return 2 * self.d

    @property
    def radius(self) -> float:
        return 1.0 / math.sqrt(self.d)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        theta = rng.uniform(-math.pi, math.pi, size=(n, self.d))
        return self.from_angles(theta)

    def from_angles(self, theta: np.ndarray) -> np.ndarray:
        y = np.empty((theta.shape[0], 2 * self.d))
        y[:, 0::2] = self.radius * np.cos(theta)
        y[:, 1::2] = self.radius * np.sin(theta)
        return y

    def angles(self, y: np.ndarray) -> np.ndarray:
        return np.arctan2(y[:, 1::2], y[:, 0::2])

    def residual(self, y: np.ndarray) -> np.ndarray:
        radii = np.hypot(y[:, 0::2], y[:, 1::2])
        return np.linalg.norm(radii - self.radius, axis=1)


class Subspace(Manifold):
    """A flat baseline: the cube [-1, 1]^d / sqrt(d) in R^d (inside the unit ball)."""

    name = "subspace"

    @property
    def native_dim(self) -> int:
        return self.d

    @property
    def half_side(self) -> float:
        return 1.0 / math.sqrt(self.d)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return rng.uniform(-self.half_side, self.half_side, size=(n, self.d))

    def residual(self, y: np.ndarray) -> np.ndarray:
        outside = np.maximum(np.abs(y) - self.half_side, 0.0)
        return np.linalg.norm(outside, axis=1)


class SwissRoll(Manifold):
    """A curved, non-symmetric manifold: the Swiss roll times a cube, in R^(d+1).

    The roll is the curve t -> (t cos t, t sin t) / s for t in [1.5π, 4.5π] (s = 4.5π),
    times a height cube [0, h]^(d-1). Its area element is sqrt(1 + t²) dt, so t is drawn by
    inverting the closed-form arc length (Newton, to 1e-13), which is exactly area-uniform;
    the common `t ~ Uniform` recipe is not.
    """

    name = "swissroll"
    t0, t1 = 1.5 * math.pi, 4.5 * math.pi
    height = 1.0

    def __init__(self, d: int = 2) -> None:
        super().__init__(d)
        if self.d < 2:
            raise ConfigError("the Swiss roll needs d >= 2 (a curve times a (d-1)-cube)")

    @property
    def native_dim(self) -> int:
        return self.d + 1

    @property
    def scale(self) -> float:
        return self.t1

    @staticmethod
    def arc_length(t: np.ndarray) -> np.ndarray:
        """∫_0^t sqrt(1+u²) du (unscaled)."""
        return 0.5 * (t * np.sqrt(1.0 + t * t) + np.arcsinh(t))

    def t_from_arc_length(self, s: np.ndarray) -> np.ndarray:
        t = np.sqrt(2.0 * s)  # s ≈ t²/2 for large t: a good start, then Newton
        for _ in range(50):
            step = (self.arc_length(t) - s) / np.sqrt(1.0 + t * t)
            t = t - step
            if np.max(np.abs(step)) < 1e-13:
                break
        return t

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        s = rng.uniform(self.arc_length(self.t0), self.arc_length(self.t1), size=n)
        t = self.t_from_arc_length(s)
        h = rng.uniform(0.0, self.height, size=(n, self.d - 1))
        return self.from_params(t, h)

    def from_params(self, t: np.ndarray, h: np.ndarray) -> np.ndarray:
        roll = np.stack([t * np.cos(t), t * np.sin(t)], axis=1) / self.scale
        return np.concatenate([roll, h], axis=1)

    def params(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Recover (t, h) of points near the roll: radius gives t up to one turn, angle fixes it."""
        r = np.hypot(y[:, 0], y[:, 1]) * self.scale
        phase = np.arctan2(y[:, 1], y[:, 0])
        turns = np.round((r - phase) / (2 * math.pi))
        t = np.clip(phase + 2 * math.pi * turns, self.t0, self.t1)
        return t, np.clip(y[:, 2:], 0.0, self.height)

    def residual(self, y: np.ndarray) -> np.ndarray:
        t, h = self.params(y)
        return np.linalg.norm(y - self.from_params(t, h), axis=1)


MANIFOLDS: dict[str, type[Manifold]] = {
    cls.name: cls for cls in (Sphere, Torus, Subspace, SwissRoll)
}


def make_manifold(name: str, d: int) -> Manifold:
    """A manifold by name (sphere, torus, subspace, swissroll) and dimension."""
    if name not in MANIFOLDS:
        raise ConfigError(f"unknown manifold {name!r}; choose one of {sorted(MANIFOLDS)}")
    return MANIFOLDS[name](d)


def random_orthonormal(rows: int, cols: int, rng: np.random.Generator) -> np.ndarray:
    """A Haar-random matrix with orthonormal columns [rows, cols] (QR with sign fix)."""
    q, r = np.linalg.qr(rng.standard_normal((rows, cols)))
    return q * np.sign(np.diag(r))


@dataclass(frozen=True)
class Embedding:
    """x = warp(Q y): a random isometry R^k -> R^D, then `n_shears` volume-preserving shears.

    Each shear is x -> x + a sin(ν <w, x>) u with unit u ⊥ w, so it is inverted exactly by
    subtracting the same term (⟨w, x⟩ is unchanged by it). Its Jacobian I + aν cos(.) u wᵀ
    has determinant 1 and distorts lengths by at most a factor 1 ± aν, with aν = `warp`.
    With warp = 0 the embedding is an isometry and sampling stays exactly volume-uniform.
    """

    q: np.ndarray  # [D, k] orthonormal columns
    shear_u: np.ndarray  # [S, D]
    shear_w: np.ndarray  # [S, D]
    warp: float
    frequency: float = math.pi

    @classmethod
    def random(
        cls, k: int, D: int, rng: np.random.Generator, *, warp: float = 0.0, n_shears: int = 4
    ) -> Embedding:
        if k > D:
            raise ConfigError(
                f"ambient dimension D={D} is below the manifold's native {k}; use --D {k} or more"
            )
        if not 0.0 <= warp < 1.0:
            raise ConfigError(f"warp must be in [0, 1) to keep the map invertible, got {warp}")
        q = random_orthonormal(D, k, rng)
        uw = np.array([random_orthonormal(D, 2, rng) for _ in range(n_shears if warp else 0)])
        uw = uw.reshape(-1, D, 2)
        return cls(q=q, shear_u=uw[:, :, 0], shear_w=uw[:, :, 1], warp=float(warp))

    @property
    def D(self) -> int:
        return self.q.shape[0]

    def _shear_terms(self, x: np.ndarray, s: int) -> np.ndarray:
        a = self.warp / self.frequency
        return a * np.sin(self.frequency * (x @ self.shear_w[s]))[:, None] * self.shear_u[s]

    def __call__(self, y: np.ndarray) -> np.ndarray:
        x = y @ self.q.T
        for s in range(len(self.shear_u)):
            x = x + self._shear_terms(x, s)
        return x

    def inverse(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Undo the warp; return native coordinates y and each point's distance off span(Q)."""
        for s in reversed(range(len(self.shear_u))):
            x = x - self._shear_terms(x, s)
        y = x @ self.q
        return y, np.linalg.norm(x - y @ self.q.T, axis=1)
