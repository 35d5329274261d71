"""The ideal learner on a run's own sample (`manifold.ideal`) against independent truth: a
reference ridge solver, a test-point Monte Carlo of its risk, the closed-form average
`TorusField.bayes_risk`, and the paired curve's definition."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import Ridge

from scalelab.manifold import ideal
from scalelab.manifold.plan import MANIFOLD_PRESETS, run_rng
from scalelab.manifold.problem import Problem
from scalelab.manifold.theorem import luck_coefficient, paired_checks, scored

CFG = MANIFOLD_PRESETS["theorem-quick"].replace(n_values=(60, 100, 160, 250, 400))


@pytest.fixture(scope="module")
def problem() -> Problem:
    return Problem(CFG.problem(2, 1.0))


@pytest.mark.parametrize("n", [40, 3000])  # the dual (n < 2M) and the primal system
def test_posterior_mean_is_ridge_on_prior_scaled_features(problem: Problem, n: int) -> None:
    field, sigma = problem.target, problem.label_noise_std
    s = problem.sample(n, np.random.default_rng(n))
    scale = np.sqrt(np.concatenate([field.variance, field.variance]))
    ref = Ridge(alpha=sigma**2, fit_intercept=False, solver="cholesky")
    ref.fit(ideal.features(field, s.x) * scale, s.y)
    w = ideal.posterior_mean(field, s.x, s.y, sigma)
    np.testing.assert_allclose(w, ref.coef_ * scale, rtol=1e-6, atol=1e-9)


def test_exact_risk_equals_test_point_mean_square(problem: Problem) -> None:
    field, sigma = problem.target, problem.label_noise_std
    s = problem.sample(200, np.random.default_rng(1))
    w = ideal.posterior_mean(field, s.x, s.y, sigma)
    rng = np.random.default_rng(2)
    squares = []
    for _ in range(10):  # 200,000 test points in chunks
        test = problem.sample(20_000, rng, noise=False)
        squares.append(np.mean((ideal.features(field, test.x) @ w - test.f) ** 2))
    assert ideal.posterior_risk(field, s.x, s.y, sigma) == pytest.approx(np.mean(squares), rel=0.02)
    np.testing.assert_allclose(ideal.features(field, test.x[:50]) @ ideal.coefficients(field),
                               test.f[:50], atol=1e-9)  # fmt: skip


def test_average_over_samples_is_the_closed_form_bayes_risk(problem: Problem) -> None:
    """bayes_risk is the Gaussian sequence model's posterior variance: with uniform random
    inputs the realised ideal learner's risk averages to it within a few percent once n
    exceeds the modes it resolves."""
    n = 2000
    risks = [
        ideal.posterior_risk(problem.target, s.x, s.y, problem.label_noise_std)
        for s in (problem.sample(n, np.random.default_rng([n, i])) for i in range(40))
    ]
    closed = float(problem.target.bayes_risk(n, problem.label_noise_std))
    assert np.mean(risks) == pytest.approx(closed, rel=0.1)


def test_run_risk_uses_the_sweeps_training_sample(problem: Problem) -> None:
    s = problem.sample(100, run_rng(CFG, 2, 1.0, 100, 3))
    direct = ideal.posterior_risk(problem.target, s.x, s.y, problem.label_noise_std)
    assert ideal.run_risk(CFG, problem, 100, 3) == direct
    assert ideal.run_risk(CFG, problem, 100, 4) != direct


def _table(problem: Problem, luck: float) -> pd.DataFrame:
    """Runs whose error is an exact power law times each sample's ideal-learner luck."""
    rows = []
    for n in CFG.n_values:
        for seed in (0, 1, 2):
            risk = ideal.run_risk(CFG, problem, n, seed)
            capped = 3.0 * n**-0.5 * (risk / problem.target.bayes_risk(n, 0.5)) ** luck
            rows.append({"run": f"data_d2_b1_n{n}_s{seed}", "task": "data", "d": 2,
                         "beta": 1.0, "n": n, "seed": seed, "test_mse_capped": capped,
                         "test_mse": capped, "cpu_time_s": 1.0, "stop_reason": "patience",
                         "steps": 10, "best_step": 5})  # fmt: skip
    return pd.DataFrame(rows)


def test_paired_curve_removes_the_samples_luck(problem: Problem, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(ideal, "MAX_DRAWS", 16)  # E log ideal(n) to ±0.05: enough here
    table = _table(problem, luck=1.0)
    cfg = CFG.replace(dims=(2,))
    pairs = ideal.paired_with_ideal(table, cfg, tmp_path, quiet=True)
    (check,) = paired_checks(table, cfg, pairs)
    # the error divided by its own sample's ideal risk is 3 n^-0.5 / bayes_risk(n) exactly:
    # the paired ratio has no seed spread, and the paired curve's slope is the power law's
    # up to E log ideal(n) − log bayes_risk(n)
    assert check.noise_log < 0.05
    ratio = table["test_mse_capped"] / pairs["ideal_mse"]
    want = 3.0 * table["n"] ** -0.5 / problem.target.bayes_risk(table["n"].to_numpy(float), 0.5)
    np.testing.assert_allclose(ratio, want, rtol=1e-9)
    # cached: a second call computes nothing
    ideal.posterior_risk, saved = None, ideal.posterior_risk  # type: ignore[assignment]
    try:
        again = ideal.paired_with_ideal(table, cfg, tmp_path, quiet=True)
    finally:
        ideal.posterior_risk = saved
    pd.testing.assert_frame_equal(again, pairs)


@pytest.mark.parametrize("luck", [0.0, 0.5])
def test_the_pairing_takes_as_much_luck_as_the_model_shares(
    problem: Problem, tmp_path, monkeypatch, luck: float
) -> None:
    """A model whose error carries its sample's ideal risk to the power `luck`: the estimated
    coefficient is `luck`, and the paired curve is then free of the sample's spread; with
    luck 0 the pairing leaves the raw curve as it is (the coefficient 1 would add noise)."""
    monkeypatch.setattr(ideal, "MAX_DRAWS", 16)
    table = _table(problem, luck=luck)
    pairs = ideal.paired_with_ideal(table, CFG.replace(dims=(2,)), tmp_path, quiet=True)
    merged = table.merge(pairs[["run", "ideal_mse"]], on="run")
    b = luck_coefficient(merged["n"], merged["test_mse_capped"], merged["ideal_mse"])
    assert b == pytest.approx(luck, abs=1e-9)
    (check,) = paired_checks(table, CFG.replace(dims=(2,)), pairs)
    assert check.luck_coefficient == pytest.approx(luck, abs=1e-9) and check.noise_log < 0.05


def test_a_model_as_good_as_the_ideal_learner_has_its_exponent_on_samples(
    problem: Problem, tmp_path, monkeypatch
) -> None:
    """Runs whose error is their own sample's ideal risk: the paired curve is
    exp(E log ideal(n)) plus the tail, so its exponent is the ideal learner's on samples,
    computed here from the cache by hand, and not the sequence model's."""
    monkeypatch.setattr(ideal, "MAX_DRAWS", 16)
    cfg = CFG.replace(dims=(2,))
    table = _table(problem, luck=0.0)
    pairs = zip(table["n"], table["seed"], strict=True)
    table["test_mse_capped"] = [ideal.run_risk(cfg, problem, n, s) for n, s in pairs]
    table["test_mse"] = table["test_mse_capped"] + problem.excess_offset
    pairs = ideal.paired_with_ideal(table, cfg, tmp_path, quiet=True)
    (check,) = paired_checks(table, cfg, pairs)
    assert check.luck_coefficient == pytest.approx(1.0)
    per_n = pairs.groupby("n")["ideal_mean_log"].first()
    risk = np.exp(per_n.to_numpy()) + problem.excess_offset
    by_hand = -np.polyfit(np.log(per_n.index.to_numpy(float)), np.log(risk), 1)[0]
    assert check.x_range == (min(CFG.n_values), max(CFG.n_values))
    assert check.sample_ideal == pytest.approx(by_hand, rel=1e-9)
    assert check.exponent == pytest.approx(by_hand, abs=1e-6)
    assert abs(check.sample_ideal - check.predicted_ideal) > 0.01
    # the verdict scores it beside the predictions from d, as a source of its own
    twin = dataclasses.replace(check, d=3, exponent=0.4, sample_ideal=0.45)
    row = scored([check, twin], only_power_law=False)["scores"]
    want = np.mean([abs(check.exponent - check.sample_ideal), 0.05])
    assert row["ideal learner on samples of these sizes"]["mae"] == pytest.approx(want)
