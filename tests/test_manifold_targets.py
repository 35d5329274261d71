"""The targets satisfy their stated Hölder bound and sup bound; the bound is not vacuous."""

import numpy as np
import pytest

from scalelab.errors import ConfigError
from scalelab.manifold.problem import Problem, ProblemConfig
from scalelab.manifold.targets import HolderTarget


@pytest.mark.parametrize("beta", [1.0, 0.5, 0.25])
@pytest.mark.parametrize("manifold", ["sphere", "torus", "swissroll"])
def test_holder_bound_holds_on_random_pairs(beta: float, manifold: str) -> None:
    problem = Problem(ProblemConfig(manifold=manifold, d=2, beta=beta, n_features=512))
    rng = np.random.default_rng(0)
    x = problem.points(3000, rng)
    # pairs at every scale: random far pairs, and near pairs from tiny ambient offsets
    near = x + rng.standard_normal(x.shape) * np.geomspace(1e-6, 1e-1, len(x))[:, None]
    for a, b in ((x, near), (x, x[rng.permutation(len(x))])):
        dist = np.linalg.norm(a - b, axis=1)
        diff = np.abs(problem.target(a) - problem.target(b))
        ok = dist > 0
        assert np.all(diff[ok] <= problem.target.holder_constant * dist[ok] ** beta)
    assert np.all(np.abs(problem.target(x)) <= problem.target.bound)


def test_single_feature_bound_is_tight() -> None:
    """f = a cos(<ω, x>), β = 1: H = |a| |ω| is the true Lipschitz constant, attained."""
    omega = np.array([[3.0, 4.0]])
    target = HolderTarget(omega=omega, phase=np.zeros(1), amplitude=np.array([0.5]), beta=1.0)
    assert target.holder_constant == pytest.approx(2.5)
    x = np.array([[np.pi / 2 / 5 * 0.6, np.pi / 2 / 5 * 0.8]])  # <ω, x> = π/2: slope maximal
    step = 1e-6 * omega / 5
    ratio = abs(target(x + step)[0] - target(x)[0]) / np.linalg.norm(step)
    assert ratio == pytest.approx(2.5, rel=1e-5)
    assert target.bound == 0.5


def test_target_is_deterministic_given_seed_and_varies_with_it() -> None:
    x = Problem(ProblemConfig(d=3)).points(100, np.random.default_rng(0))
    f0 = Problem(ProblemConfig(d=3, seed=0)).target(x)
    np.testing.assert_array_equal(f0, Problem(ProblemConfig(d=3, seed=0)).target(x))
    assert not np.allclose(f0, Problem(ProblemConfig(d=3, seed=1)).target(x))


def test_label_noise_has_the_configured_scale() -> None:
    problem = Problem(ProblemConfig(d=2, noise_std=0.3))
    s = problem.sample(20000, np.random.default_rng(5))
    assert np.std(s.y - s.f) == pytest.approx(0.3, rel=0.03)


def test_bad_target_arguments_raise() -> None:
    with pytest.raises(ConfigError, match="beta"):
        ProblemConfig(beta=1.5)
    with pytest.raises(ConfigError, match="r_min"):
        HolderTarget.random(np.eye(3), 1.0, np.random.default_rng(0), r_min=2, r_max=1)
