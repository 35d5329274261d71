"""A regression problem with known intrinsic dimension: manifold + embedding + target + noise.

Two targets: `waves` (the multi-scale plane-wave sum of `targets.py`, any manifold) and
`field` (the Gaussian field of `field.py` on the torus, as hard as Theorem 1's class). The
field is capped at the scale `cap_n` samples resolve; what lies beyond the cap enters, as for
the uncapped field at that resolution, as label noise of variance `tail_variance` and as
that same constant in the reported risk (`Problem.excess_offset`).

Everything fixed about the problem (the rotation, the warp, the target's frequencies) comes
from `ProblemConfig.seed`; each data draw takes its own generator, so runs with different
data seeds and sizes share one target function.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scalelab import seeds
from scalelab.config import Config, option
from scalelab.errors import ConfigError
from scalelab.fields import choice
from scalelab.manifold.field import TorusField, cap_k2, tail_variance
from scalelab.manifold.geometry import MANIFOLDS, Embedding, Manifold, make_manifold
from scalelab.manifold.targets import HolderTarget

TARGETS = ("waves", "field")


@dataclass(frozen=True)
class ProblemConfig(Config):
    """Manifold (name, d), ambient D, target (β, frequency range) and label noise."""

    manifold: str = option("sphere", f"One of: {', '.join(MANIFOLDS)}.")
    d: int = option(2, "Intrinsic dimension.")
    D: int = option(32, "Ambient dimension D.")
    beta: float = option(1.0, "Hölder exponent of the target, in (0, 1].")
    noise_std: float = option(0.5, "Label noise standard deviation.")
    warp: float = option(0.0, "Smooth warp strength in [0, 1) (0: isometric).")
    n_features: int = 2048
    n_shells: int = 8
    r_min: float = 1.0
    r_max: float = 64.0
    target: str = "waves"
    cap_n: int = 10000
    cap_factor: float = 64.0
    max_modes: int = 4096
    seed: int = option(0, "Seed of the rotation, warp and target.", flag="--problem-seed")

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
        choice(self.target, "target", TARGETS)
        if self.target == "field":
            if self.manifold != "torus" or self.warp:
                raise ConfigError(
                    "target 'field' lives on the flat torus: use manifold='torus' and warp=0"
                )
            if self.cap_n < 1 or self.cap_factor <= 0 or self.max_modes < 1:
                raise ConfigError("need cap_n >= 1, cap_factor > 0 and max_modes >= 1")


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
        self.target: HolderTarget | TorusField
        self.excess_offset = 0.0  # the capped field's tail: in the labels' noise and the risk
        if cfg.target == "field":
            k2 = cap_k2(
                cfg.d, cfg.beta, cfg.cap_n, cfg.noise_std,
                cap_factor=cfg.cap_factor, max_modes=cfg.max_modes,
            )  # fmt: skip
            self.target = TorusField.random(self.embedding.q, cfg.beta, k2, rng)
            self.excess_offset = tail_variance(cfg.d, cfg.beta, k2)
        else:
            self.target = HolderTarget.random(
                self.embedding.q,
                cfg.beta,
                rng,
                n_features=cfg.n_features,
                n_shells=cfg.n_shells,
                r_min=cfg.r_min,
                r_max=cfg.r_max,
            )

    @property
    def label_noise_std(self) -> float:
        """σ of y − f: the configured noise, plus the field's tail beyond its cap."""
        return (self.cfg.noise_std**2 + self.excess_offset) ** 0.5

    def points(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n inputs on the embedded manifold [n, D]."""
        return self.embedding(self.manifold.sample(n, rng))

    def sample(self, n: int, rng: np.random.Generator, *, noise: bool = True) -> Sample:
        """n inputs with f and labels y (y = f when `noise` is False: the noise-free runs)."""
        x = self.points(n, rng)
        f = self.target(x)
        y = f + self.label_noise_std * rng.standard_normal(n) if noise else f.copy()
        return Sample(x=x, f=f, y=y)
