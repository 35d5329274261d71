"""Scaling-exponent theory: the paper's formulas, conversions, inverses and error propagation."""

from __future__ import annotations

import numpy as np
import pytest

from scalelab.errors import ConfigError
from scalelab.laws import theory as th


@pytest.mark.parametrize(
    ("fn", "value", "expected"),
    [
        # Havrilla & Liao Table 1: GPT-2 (Kaplan) and Chinchilla (Hoffmann) exponents.
        (th.alpha_D_from_alpha_N, 0.076, 0.0706),
        (th.alpha_N_from_alpha_D, 0.095, 0.1050),
        (th.alpha_D_from_alpha_N, 0.34, 0.2537),
        # The paper prints 0.33 here; the formula gives 0.28/0.72 = 0.3889.
        (th.alpha_N_from_alpha_D, 0.28, 0.3889),
    ],
)
def test_table1_conversions(fn, value, expected):
    assert round(fn(value), 4) == expected


def test_table1_slip_is_not_reproduced():
    assert abs(th.alpha_N_from_alpha_D(0.28) - 0.33) > 0.05


def test_closed_forms():
    # d = 8, β = 1: α_D = 2/10, α_N = 2/8; β = 2.5, d = 5: α_D = 5/10, α_N = 1.
    assert th.alpha_D(8) == pytest.approx(0.2, rel=1e-15)
    assert th.alpha_N(8) == pytest.approx(0.25, rel=1e-15)
    assert th.alpha_D(5, beta=2.5) == pytest.approx(0.5, rel=1e-15)
    assert th.alpha_N(5, beta=2.5) == pytest.approx(1.0, rel=1e-15)


def test_conversions_are_consistent_with_d_for_any_beta():
    d = np.array([0.5, 1, 3, 16, 70, 300.0])
    for beta in (0.3, 1.0, 4.0):
        a_n = th.alpha_N(d, beta)
        a_d = th.alpha_D(d, beta)
        np.testing.assert_allclose(th.alpha_D_from_alpha_N(a_n), a_d, rtol=1e-14)
        np.testing.assert_allclose(th.alpha_N_from_alpha_D(a_d), a_n, rtol=1e-13)


def test_inverses_round_trip():
    d = np.geomspace(0.1, 1000, 57)
    for beta in (0.5, 1.0, 3.0):
        np.testing.assert_allclose(th.d_from_alpha_D(th.alpha_D(d, beta), beta), d, rtol=1e-12)
        np.testing.assert_allclose(th.d_from_alpha_N(th.alpha_N(d, beta), beta), d, rtol=1e-13)
    a = np.linspace(0.01, 0.99, 50)
    np.testing.assert_allclose(th.alpha_N_from_alpha_D(th.alpha_D_from_alpha_N(a)), a, rtol=1e-13)
    np.testing.assert_allclose(th.alpha_D_from_alpha_N(th.alpha_N_from_alpha_D(a)), a, rtol=1e-13)


def test_scalar_in_scalar_out():
    assert isinstance(th.alpha_D(3.0), float)
    assert isinstance(th.d_from_alpha_N(0.1), float)
    assert th.alpha_N([2, 4]).shape == (2,)


def test_predict_exponents_values_and_keys():
    out = th.predict_exponents(8.0, 0.5, beta=1.0)
    assert out.alpha_D == pytest.approx(0.2)
    assert out.alpha_N == pytest.approx(0.25)
    # delta method closed forms: 2/(10)^2 * 0.5 and 2/64 * 0.5
    assert out.alpha_D_se == pytest.approx(0.01, rel=1e-12)
    assert out.alpha_N_se == pytest.approx(1 / 64, rel=1e-12)
    lo, hi = out.alpha_D_ci95
    assert lo == pytest.approx(0.2 - 1.959964 * 0.01, rel=1e-6)
    assert hi == pytest.approx(0.2 + 1.959964 * 0.01, rel=1e-6)
    saved = out.to_dict()  # the JSON a result file holds: intervals as lists, keys in order
    keys = "d d_se beta alpha_D alpha_D_se alpha_D_ci95 alpha_N alpha_N_se alpha_N_ci95"
    assert list(saved) == keys.split()
    assert isinstance(saved["alpha_N_ci95"], list)
    assert th.Exponents.from_dict(saved) == out
    zero = th.predict_exponents(8.0)
    assert zero.alpha_D_se == 0 and zero.alpha_N_ci95 == (0.25, 0.25)
    one_batch = out.without_se().alphas()
    assert one_batch == {k: None for k in keys.split()[4:] if k[-3:] in ("_se", "i95")} | {
        "alpha_D": 0.2,
        "alpha_N": 0.25,
    }


def test_predict_exponents_se_matches_finite_difference_and_monte_carlo():
    d, d_se, beta = 12.0, 0.3, 1.5
    out = th.predict_exponents(d, d_se, beta)
    h = 1e-5
    fd_d = (th.alpha_D(d + h, beta) - th.alpha_D(d - h, beta)) / (2 * h)
    fd_n = (th.alpha_N(d + h, beta) - th.alpha_N(d - h, beta)) / (2 * h)
    assert out.alpha_D_se == pytest.approx(abs(fd_d) * d_se, rel=1e-6)
    assert out.alpha_N_se == pytest.approx(abs(fd_n) * d_se, rel=1e-6)
    # Monte Carlo: with d_se/d = 2.5% the first-order SE is within ~1% of the sampled SD.
    rng = np.random.default_rng(0)
    ds = rng.normal(d, d_se, 400_000)
    assert np.std(th.alpha_D(ds, beta)) == pytest.approx(out.alpha_D_se, rel=0.01)
    assert np.std(th.alpha_N(ds, beta)) == pytest.approx(out.alpha_N_se, rel=0.01)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: th.alpha_D(0), "d .* > 0"),
        (lambda: th.alpha_N(-1.0), "d .* > 0"),
        (lambda: th.alpha_D([3, -1]), "> 0"),
        (lambda: th.alpha_D(3, beta=0), "beta .* > 0"),
        (lambda: th.alpha_N(3, beta=-2), "beta .* > 0"),
        (lambda: th.alpha_D(float("nan")), "finite"),
        (lambda: th.alpha_N(float("inf")), "finite"),
        (lambda: th.alpha_D("seven"), "number"),
        (lambda: th.alpha_N_from_alpha_D(1.0), r"\(0, 1\)"),
        (lambda: th.alpha_N_from_alpha_D(0.0), r"\(0, 1\)"),
        (lambda: th.d_from_alpha_D(1.2), r"\(0, 1\)"),
        (lambda: th.d_from_alpha_D(0.5, beta=0), "beta"),
        (lambda: th.alpha_D_from_alpha_N(0), "alpha_N .* > 0"),
        (lambda: th.d_from_alpha_N(-0.1), "alpha_N .* > 0"),
        (lambda: th.predict_exponents(0.0, 0.1), "d .* > 0"),
        (lambda: th.predict_exponents(5.0, -0.1), "d_se"),
        (lambda: th.predict_exponents(5.0, 0.1, beta=0), "beta"),
    ],
)
def test_invalid_inputs_raise_config_error(call, match):
    with pytest.raises(ConfigError, match=match):
        call()


def test_exponents_request_converts_and_refuses() -> None:
    """`scalelab exponents`' config: closed forms at β = 1 (α_N = 0.5 ↔ d = 4, α_D = 1/3),
    and a request for two things at once refused with the fields' names."""
    from scalelab.errors import ConfigError
    from scalelab.laws.theory import ExponentsRequest

    row = ExponentsRequest(alpha_n=0.5).row()
    assert row["alpha_D"] == pytest.approx(1 / 3) and row["d"] == pytest.approx(4.0)
    row = ExponentsRequest(alpha_d=1 / 3, beta=0.5).row()
    assert row["alpha_N"] == pytest.approx(0.5) and row["d"] == pytest.approx(2.0)
    assert ExponentsRequest(d=4.0).row()["alpha_N"] == pytest.approx(0.5)
    with pytest.raises(ConfigError, match="exactly one of d, alpha_n, alpha_d"):
        ExponentsRequest(d=4.0, alpha_n=0.5).row()
