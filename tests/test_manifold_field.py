"""The Gaussian field on T^d: independent modes per shell grow like r^d, the energy per shell
falls like r^-2β, the stated Hölder constant and bound hold, the tail and the ideal
learner's rate match closed forms."""

import math

import numpy as np
import pytest

from scalelab.errors import ConfigError
from scalelab.manifold.field import (
    TorusField,
    half_lattice,
    half_lattice_counts,
    spectrum,
    tail_variance,
)
from scalelab.manifold.geometry import random_orthonormal
from scalelab.manifold.problem import Problem, ProblemConfig


def _ball(d: int) -> float:
    return math.pi ** (d / 2) / math.gamma(d / 2 + 1)


@pytest.mark.parametrize(
    ("d", "k2", "shells"), [(1, 250_000, 4), (2, 10_000, 4), (3, 900, 4), (4, 400, 3), (6, 64, 2)]
)
def test_modes_per_shell_grow_like_r_to_the_d(d: int, k2: int, shells: int) -> None:
    modes = half_lattice(d, k2)
    assert len(modes) == half_lattice_counts(d, k2)[-1]  # two independent counts agree
    norms = np.linalg.norm(modes, axis=1)
    assert len(np.unique(modes, axis=0)) == len(modes)
    assert not np.any(np.all(modes + modes[:1] == 0, axis=1))  # one of ±k only
    # modes up to R: half the lattice points of the d-ball, V_d R^d / 2 (Gauss's count)
    R = math.sqrt(k2)
    assert len(modes) == pytest.approx(_ball(d) * R**d / 2, rel=0.12)
    # per dyadic shell [r, 2r): ∝ r^d, i.e. the log-log slope of the counts is d
    edges = R * 2.0 ** -np.arange(shells, -1, -1)
    counts, _ = np.histogram(norms, bins=edges)
    slope = np.polyfit(np.log(edges[:-1]), np.log(counts), 1)[0]
    assert slope == pytest.approx(d, abs=0.1 * d)
    field = TorusField.random(random_orthonormal(2 * d, 2 * d, np.random.default_rng(0)),
                              1.0, k2, np.random.default_rng(1))  # fmt: skip
    np.testing.assert_array_equal(field.shell_counts(edges), counts)


def test_modes_are_independent_orthogonal_functions() -> None:
    """On a uniform grid of T^2 the cos/sin of the modes are exactly orthogonal, norm² 1/2."""
    modes = half_lattice(2, 40)
    g = np.arange(32) * 2 * np.pi / 32
    theta = np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)
    z = theta @ modes.T
    phi = np.concatenate([np.cos(z), np.sin(z)], axis=1)
    np.testing.assert_allclose(phi.T @ phi / len(theta), np.eye(phi.shape[1]) / 2, atol=1e-10)


@pytest.mark.parametrize(("d", "beta"), [(2, 1.0), (2, 0.5), (4, 1.0)])
def test_energy_per_shell_falls_like_r_to_minus_2beta(d: int, beta: float) -> None:
    modes = half_lattice(d, 2500 if d == 2 else 400)
    v = spectrum(modes, beta)
    assert v.sum() == pytest.approx(1.0)
    norms = np.linalg.norm(modes, axis=1)
    R = norms.max()
    edges = R * 2.0 ** -np.arange(3, -1, -1)
    energy = np.histogram(norms, bins=edges, weights=v)[0]
    slope = np.polyfit(np.log(edges[:-1]), np.log(energy), 1)[0]
    assert slope == pytest.approx(-2 * beta, abs=0.15)


@pytest.mark.parametrize("beta", [1.0, 0.5])
@pytest.mark.parametrize("d", [1, 2, 3])
def test_holder_constant_bounds_measured_increments(d: int, beta: float) -> None:
    problem = Problem(ProblemConfig(manifold="torus", d=d, D=12, beta=beta, target="field",
                                    cap_n=2000, max_modes=1500))  # fmt: skip
    f = problem.target
    rng = np.random.default_rng(0)
    x = problem.points(3000, rng)
    # near pairs on the torus at every scale (angles nudged), and far random pairs
    theta = f.angles(x) + rng.standard_normal((len(x), d)) * np.geomspace(1e-6, 1, len(x))[:, None]
    near = problem.embedding(problem.manifold.from_angles(theta))
    worst = 0.0
    for a, b in ((x, near), (x, x[rng.permutation(len(x))])):
        dist = np.linalg.norm(a - b, axis=1)
        ok = dist > 0
        ratio = np.abs(f(a) - f(b))[ok] / dist[ok] ** beta
        assert np.all(ratio <= f.holder_constant)
        worst = max(worst, ratio.max())
    assert worst > 0.02 * f.holder_constant  # the bound is not vacuous by orders of magnitude
    assert np.all(np.abs(f(x)) <= f.bound)


def test_tail_variance_matches_a_direct_sum() -> None:
    k2 = 100
    inner = spectrum(half_lattice(2, k2), 1.0)
    big = half_lattice(2, 90_000)
    raw = np.linalg.norm(big, axis=1) ** -4.0
    cap_sum = raw[: len(inner)].sum()
    direct = raw[len(inner) :].sum() / cap_sum  # out to |k| = 300, then ~(S/2)/(2β) R^-2β
    direct += math.pi * 300.0**-2 / 2 / cap_sum
    assert tail_variance(2, 1.0, k2) == pytest.approx(direct, rel=0.01)


def test_ideal_learner_rate_is_the_minimax_exponent() -> None:
    """With a cap far beyond the sizes, the Bayes risk falls like n^(-2β/(2β+d))."""
    for d, beta in ((1, 1.0), (2, 1.0), (2, 0.5)):
        q = random_orthonormal(2 * d, 2 * d, np.random.default_rng(0))
        k2 = 1_000_000 if d == 1 else 40_000
        field = TorusField.random(q, beta, k2, np.random.default_rng(1))
        n = np.geomspace(100, 10_000, 5)
        slope = -np.polyfit(np.log(n), np.log(field.bayes_risk(n, 0.5)), 1)[0]
        assert slope == pytest.approx(2 * beta / (2 * beta + d), abs=0.02)


def test_field_problem_adds_the_tail_to_the_label_noise() -> None:
    problem = Problem(ProblemConfig(manifold="torus", d=4, D=8, target="field", noise_std=0.3,
                                    cap_n=1000, max_modes=300))  # fmt: skip
    assert problem.excess_offset > 0
    s = problem.sample(20000, np.random.default_rng(2))
    want = math.sqrt(0.09 + problem.excess_offset)
    assert np.std(s.y - s.f) == pytest.approx(want, rel=0.03)
    assert np.array_equal(problem.sample(10, np.random.default_rng(3), noise=False).y,
                          problem.sample(10, np.random.default_rng(3), noise=False).f)  # fmt: skip


def test_field_needs_the_flat_torus() -> None:
    with pytest.raises(ConfigError, match="torus"):
        ProblemConfig(manifold="sphere", target="field")
    with pytest.raises(ConfigError, match="warp"):
        ProblemConfig(manifold="torus", target="field", warp=0.2)
