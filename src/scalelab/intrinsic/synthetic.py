"""Point clouds of known intrinsic dimension, for tests, benchmarks and the demo.

All are embedded in R^ambient by a random orthonormal map (an isometry, so distances and the
dimension are unchanged) and sampled with an explicit `np.random.Generator` seed.
"""

from __future__ import annotations

import numpy as np

from scalelab.errors import ConfigError

KINDS = ("sphere", "torus", "swiss-roll", "subspace")


def known_manifold(
    kind: str,
    n: int,
    d: int,
    ambient: int = 768,
    *,
    noise: float = 0.0,
    seed: int = 0,
    dtype: type = np.float32,
) -> np.ndarray:
    """n points on a d-dimensional manifold in R^ambient.

    sphere: the unit sphere S^d (uniform); torus: the flat torus (S^1)^d in R^2d (uniform);
    swiss-roll: the 2-D Swiss roll of R^3 (d must be 2); subspace: the cube [0, 1]^d in a
    d-dimensional subspace. `noise` adds isotropic Gaussian noise of that standard deviation
    in all ambient directions.
    """
    rng = np.random.default_rng(seed)
    if kind == "sphere":
        g = rng.standard_normal((n, d + 1))
        local = g / np.linalg.norm(g, axis=1, keepdims=True)
    elif kind == "torus":
        theta = rng.uniform(0.0, 2 * np.pi, (n, d))
        local = np.concatenate([np.cos(theta), np.sin(theta)], axis=1)
    elif kind == "swiss-roll":
        if d != 2:
            raise ConfigError(f"the Swiss roll is 2-dimensional, got d = {d}: use d = 2")
        t = 1.5 * np.pi * (1 + 2 * rng.random(n))
        local = np.stack([t * np.cos(t), 21 * rng.random(n), t * np.sin(t)], axis=1)
    elif kind == "subspace":
        local = rng.random((n, d))
    else:
        raise ConfigError(f"unknown manifold {kind!r}: use one of {', '.join(KINDS)}")
    if local.shape[1] > ambient:
        raise ConfigError(f"{kind} of dimension {d} needs ambient >= {local.shape[1]}")
    basis, _ = np.linalg.qr(rng.standard_normal((ambient, local.shape[1])))
    x = local @ basis.T
    if noise > 0:
        x += noise * rng.standard_normal(x.shape)
    return x.astype(dtype)


def curved_manifold(n: int, d: int = 16, ambient: int = 768, *, seed: int = 0) -> np.ndarray:
    """A curved d-manifold in R^ambient: the sphere S^d bent by a smooth invertible warp.

    x = Q s + 0.3 P sin(3 s), s uniform on S^d, Q and P random orthonormal maps onto
    orthogonal subspaces: the first term alone makes the map injective, the second adds
    curvature that differs from point to point. Used by the demo and the speed benchmark.
    """
    rng = np.random.default_rng(seed)
    if 2 * (d + 1) > ambient:
        raise ConfigError(f"a curved {d}-manifold needs ambient >= {2 * (d + 1)}")
    g = rng.standard_normal((n, d + 1))
    s = g / np.linalg.norm(g, axis=1, keepdims=True)
    basis, _ = np.linalg.qr(rng.standard_normal((ambient, 2 * (d + 1))))
    x = s @ basis[:, : d + 1].T + 0.3 * np.sin(3.0 * s) @ basis[:, d + 1 :].T
    return x.astype(np.float32)
