"""Samples lie on their manifold and are uniform w.r.t. its volume (independent checks)."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from scalelab.errors import ConfigError
from scalelab.manifold.geometry import Embedding, Sphere, SwissRoll, Torus, make_manifold

CASES = [("sphere", 2), ("sphere", 6), ("torus", 2), ("torus", 8), ("subspace", 4)]
CASES += [("swissroll", 2), ("swissroll", 3)]


@pytest.mark.parametrize(("name", "d"), CASES)
@pytest.mark.parametrize("warp", [0.0, 0.3])
def test_embedded_samples_lie_on_the_manifold(name: str, d: int, warp: float) -> None:
    rng = np.random.default_rng(0)
    m = make_manifold(name, d)
    emb = Embedding.random(m.native_dim, 32, rng, warp=warp)
    x = emb(m.sample(2000, rng))
    assert x.shape == (2000, 32)
    y, off_span = emb.inverse(x)
    assert np.max(off_span) <= 1e-6
    assert np.max(m.residual(y)) <= 1e-6
    # the residual is not trivially zero: points pushed off the manifold are detected
    yb, off_b = emb.inverse(x + 1e-3 * rng.standard_normal(x.shape))
    assert np.median(np.hypot(off_b, m.residual(yb))) > 1e-4
    if warp:  # the warp really moves points (else the inverse test would be vacuous)
        assert np.max(np.abs(x - y @ emb.q.T)) > 1e-2


def test_isometric_embedding_preserves_distances() -> None:
    rng = np.random.default_rng(1)
    emb = Embedding.random(5, 32, rng)
    y = rng.standard_normal((50, 5))
    x = emb(y)
    dy = np.linalg.norm(y[:, None] - y[None], axis=-1)
    dx = np.linalg.norm(x[:, None] - x[None], axis=-1)
    np.testing.assert_allclose(dx, dy, atol=1e-12)


@pytest.mark.parametrize("d", [2, 5])
def test_sphere_is_uniform(d: int) -> None:
    """For uniform points on S^d, (1 + <y, v>)/2 ~ Beta(d/2, d/2) for any unit v."""
    rng = np.random.default_rng(2)
    y = Sphere(d).sample(20000, rng)
    for v in np.eye(d + 1)[:2]:
        p = stats.kstest((1 + y @ v) / 2, stats.beta(d / 2, d / 2).cdf).pvalue
        assert p > 1e-3


def test_torus_angles_are_uniform_and_independent() -> None:
    rng = np.random.default_rng(3)
    t = Torus(3)
    theta = t.angles(t.sample(20000, rng))
    for j in range(3):
        assert stats.kstest(theta[:, j], stats.uniform(-math.pi, 2 * math.pi).cdf).pvalue > 1e-3
    # sum of two independent uniforms mod 2π is again uniform; dependent angles would not be
    s = np.mod(theta[:, 0] + theta[:, 1], 2 * math.pi)
    assert stats.kstest(s, stats.uniform(0, 2 * math.pi).cdf).pvalue > 1e-3


def test_swiss_roll_is_area_uniform() -> None:
    """Area-uniform ⇔ arc length uniform; arc length here by quadrature, not the sampler's
    closed form. The naive t ~ Uniform sampler must fail the same test."""
    rng = np.random.default_rng(4)
    roll = SwissRoll(2)
    t, h = roll.params(roll.sample(4000, rng))
    ds = lambda u: math.sqrt(1 + u * u)  # noqa: E731
    arc = np.array([integrate.quad(ds, roll.t0, ti)[0] for ti in t])
    total = integrate.quad(ds, roll.t0, roll.t1)[0]
    assert stats.kstest(arc / total, "uniform").pvalue > 1e-3
    assert stats.kstest(h[:, 0], "uniform").pvalue > 1e-3
    naive_t = rng.uniform(roll.t0, roll.t1, 4000)
    naive = np.array([integrate.quad(ds, roll.t0, ti)[0] for ti in naive_t])
    assert stats.kstest(naive / total, "uniform").pvalue < 1e-6


def test_bad_manifold_arguments_raise_config_errors() -> None:
    with pytest.raises(ConfigError, match="unknown manifold"):
        make_manifold("klein", 2)
    with pytest.raises(ConfigError, match="positive integer"):
        make_manifold("sphere", 0)
    with pytest.raises(ConfigError, match="below the manifold"):
        Embedding.random(10, 4, np.random.default_rng(0))
    with pytest.raises(ConfigError, match="warp"):
        Embedding.random(3, 8, np.random.default_rng(0), warp=1.5)
