"""A regression problem with known intrinsic dimension: manifold + embedding + target + noise.

Everything fixed about the problem (the rotation, the warp, the target's frequencies) comes
from `ProblemConfig.seed`; each data draw takes its own generator, so runs with different
data seeds and sizes share one target function.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scalelab import seeds
from scalelab.config import Config
from scalelab.errors import ConfigError
from scalelab.manifold.geometry import MANIFOLDS, Embedding, Manifold, make_manifold
from scalelab.manifold.targets import HolderTarget


@dataclass(frozen=True)
class ProblemConfig(Config):
    """Manifold (name, d), ambient D, target (β, frequency range) and label noise."""

    manifold: str = "sphere"
    d: int = 2
    D: int = 32
    beta: float = 1.0
    noise_std: float = 0.5
    warp: float = 0.0
    n_features: int = 2048
    n_shells: int = 8
    r_min: float = 1.0
    r_max: float = 64.0
    seed: int = 0

    def validate(self) -> None:
        if self.manifold not in MANIFOLDS:
            raise ConfigError(
                f"unknown manifold {self.manifold!r}; choose one of {sorted(MANIFOLDS)}"
            )
        if self.d < 1 or self.D < 1:
            raise ConfigError(f"need d >= 1 and D >= 1, got d={self.d}, D={self.D}")
        if not 0.0 < self.beta <= 1.0:
            raise ConfigError(f"beta must be in (0, 1], got {self.beta}")
        if self.noise_std < 0:
            raise ConfigError(f"noise_std must be >= 0, got {self.noise_std}")


@dataclass(frozen=True)
class Sample:
    """Inputs x [n, D], noiseless targets f(x) [n] and noisy labels y [n]."""

    x: np.ndarray
    f: np.ndarray
    y: np.ndarray


class Problem:
    """The fixed pieces of one problem, built deterministically from its config."""

    def __init__(self, cfg: ProblemConfig) -> None:
        self.cfg = cfg
        rng = np.random.default_rng([cfg.seed, seeds.MANIFOLD_PROBLEM])
        self.manifold: Manifold = make_manifold(cfg.manifold, cfg.d)
        self.embedding = Embedding.random(self.manifold.native_dim, cfg.D, rng, warp=cfg.warp)
        self.target = HolderTarget.random(
            self.embedding.q,
            cfg.beta,
            rng,
            n_features=cfg.n_features,
            n_shells=cfg.n_shells,
            r_min=cfg.r_min,
            r_max=cfg.r_max,
        )

    def points(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n inputs on the embedded manifold [n, D]."""
        return self.embedding(self.manifold.sample(n, rng))

    def sample(self, n: int, rng: np.random.Generator) -> Sample:
        x = self.points(n, rng)
        f = self.target(x)
        y = f + self.cfg.noise_std * rng.standard_normal(n)
        return Sample(x=x, f=f, y=y)
