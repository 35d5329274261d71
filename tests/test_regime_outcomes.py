"""The regime test's three outcomes on constructed tables, its power against an independent
simulation, seeds per size, the excess observable, and the plan that would decide."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import t as student_t

from scalelab.laws.regime.analysis import analyse_regime
from scalelab.laws.regime.power import decision_chance, decision_plan, regime_power
from scalelab.laws.regime.rules import (
    CURVED,
    POWER_LAW,
    UNDECIDED,
    RegimeConfig,
    curvature_test,
    curvature_test_over_floor,
)


def _law(n: np.ndarray, alpha: float, sigma: float, seed: int) -> np.ndarray:
    return 5.0 * (n / 1e4) ** -alpha * np.exp(np.random.default_rng(seed).normal(0, sigma, n.size))


def test_power_law_curved_and_undecided_on_constructed_tables() -> None:
    n = np.geomspace(1e3, 1e5, 9)
    assert curvature_test(n, _law(n, 0.1, 0.002, 0)).outcome == POWER_LAW
    # a concave curve: log L = −(0.03 u + 0.03 u²), slopes 0.03 → 0.31
    u = np.log(n / n[0])
    concave = 5.0 * np.exp(-(0.03 * u + 0.03 * u**2))
    test = curvature_test(n, concave)
    assert test.outcome == CURVED and test.relative_change_interval[0] > 0.5
    # an exact power law under noise far above its curvature signal: neither is shown
    noisy = curvature_test(n, _law(n, 0.05, 0.05, 1))
    assert noisy.outcome == UNDECIDED and not noisy.passed


def test_a_range_of_exactly_the_minimum_decades_can_pass() -> None:
    n = np.geomspace(1e4, 1e4 * 10**1.5, 9)
    assert (np.log(n[-1]) - np.log(n[0])) / math.log(10) < 1.5  # the float edge itself
    test = curvature_test(n, _law(n, 0.3, 0.001, 0))
    assert test.outcome == POWER_LAW, test.reason
    short = np.geomspace(1e4, 1e4 * 10**1.4, 9)
    assert curvature_test(short, _law(short, 0.3, 0.001, 0)).outcome == UNDECIDED


def test_a_law_with_a_floor_is_curved_as_a_slope_and_a_power_law_as_an_excess_law() -> None:
    n = np.geomspace(1e3, 1e6, 7)
    loss = (1.5 + 20 * n**-0.3) * np.exp(np.random.default_rng(0).normal(0, 0.002, n.size))
    fitted = analyse_regime(n, loss, n_boot=300, power_sims=20)
    assert fitted.outcome == CURVED
    assert fitted.excess_outcome == POWER_LAW
    assert abs(fitted.excess.exponent - 0.3) < 0.03
    known = analyse_regime(n, loss, floor=1.5, n_boot=300, power_sims=0)
    assert known.outcome == CURVED and known.excess_outcome == POWER_LAW
    assert "CURVED: test loss" in fitted.verdict and "POWER LAW: excess loss" in fitted.verdict


def test_the_floor_interval_widens_the_excess_test() -> None:
    n = np.geomspace(1e3, 1e6, 7)
    loss = (1.5 + 20 * n**-0.3) * np.exp(np.random.default_rng(2).normal(0, 0.01, n.size))
    one = curvature_test(n, loss - 1.5, n_boot=300)
    wide = curvature_test_over_floor(n, loss, [1.5, 1.3, 1.6], n_boot=300)
    for e in (1.3, 1.6):
        lo, hi = curvature_test(n, loss - e, n_boot=300).relative_change_interval
        assert wide.relative_change_interval[0] <= lo and wide.relative_change_interval[1] >= hi
    assert wide.relative_change_interval[1] - wide.relative_change_interval[0] > (
        one.relative_change_interval[1] - one.relative_change_interval[0]
    )


def test_seeds_per_size_fit_every_run_and_measure_the_seed_noise() -> None:
    n = np.geomspace(1e3, 1e5, 9)
    rng = np.random.default_rng(3)
    x = np.repeat(n, 4)
    y = 5.0 * (x / 1e4) ** -0.1 * np.exp(rng.normal(0, 0.02, x.size))
    test = curvature_test(x, y, n_boot=200)
    assert test.runs_per_size == (4,) * 9
    assert test.seed_noise_log == pytest.approx(0.02, rel=0.3)
    # equal runs per size: the coefficients of the fit to the means in log
    means = np.exp(np.log(y).reshape(9, 4).mean(axis=1))
    assert test.exponent_mid == pytest.approx(curvature_test(n, means).exponent_mid, rel=1e-9)
    assert curvature_test(n, means).seed_noise_log is None


def _independent_shares(
    n: np.ndarray, k: int, alpha: float, sigma: float, sims: int, r: float = 0.0, seed: int = 12345
) -> tuple[float, float]:
    """The normal-theory version of the test (no bootstrap), written from docs/fitting.md with
    numpy's polyfit, on the curve whose exponent changes by `r` of itself across `n` (log L
    quadratic in log n; r = 0: an exact power law): the shares of draws whose interval of the
    change is inside ±0.5 (POWER LAW) and inside or beyond it (decided)."""
    rng = np.random.default_rng(seed)
    x = np.repeat(n, k)
    u = np.log(x) - 0.5 * (np.log(n).min() + np.log(n).max())
    span = np.log(n).max() - np.log(n).min()
    design = np.stack([np.ones_like(u), u, u * u], 1)
    c22 = np.linalg.inv(design.T @ design)[2, 2]
    t = student_t.ppf(0.95, x.size - 3)
    inside = decided = 0
    for _ in range(sims):
        ly = -alpha * u - r * alpha / (2 * span) * u * u + rng.normal(0, sigma, x.size)
        b2, b1, b0 = np.polyfit(u, ly, 2)
        resid = ly - (b0 + b1 * u + b2 * u * u)
        se = np.sqrt((resid**2).sum() / (x.size - 3)) * 2 * span * np.sqrt(c22)
        change = -2 * b2 * span
        lo, hi = (change - t * se) / -b1, (change + t * se) / -b1
        power_law = (-b1 > 0) and lo > -0.5 and hi < 0.5
        inside += power_law
        decided += power_law or lo > 0.5 or hi < -0.5
    return inside / sims, decided / sims


@pytest.mark.parametrize(("sigma", "k"), [(0.004, 1), (0.013, 1), (0.013, 3), (0.05, 1)])
def test_power_matches_an_independent_simulation(sigma: float, k: int) -> None:
    n = np.geomspace(1e4, 1e4 * 10**1.7, 9)
    mine = regime_power(n, k, 0.08, sigma, n_sim=300, n_boot=0, seed=7).power
    theirs = _independent_shares(n, k, 0.08, sigma, 300)[0]
    se = math.sqrt(max(mine * (1 - mine), theirs * (1 - theirs), 0.01) / 300 * 2)
    assert abs(mine - theirs) < 4 * se, (mine, theirs)


def test_power_is_near_one_at_low_noise_and_near_zero_at_high_noise() -> None:
    n = np.geomspace(1e3, 1e5, 9)
    assert regime_power(n, 1, 0.1, 0.001, n_sim=40).power > 0.95
    assert regime_power(n, 1, 0.1, 0.08, n_sim=40).power < 0.15


def test_the_plan_names_a_deciding_rerun_and_its_cost() -> None:
    n = np.geomspace(1e4, 1e4 * 10**1.7, 9)
    plan = decision_plan(n, 1, 0.08, 0.013, cpu_s_per_run=lambda s: s / 1000, n_sim=30)
    assert plan.chosen is not None and plan.chosen.power >= 0.8
    assert plan.chosen.seeds > 1 or plan.chosen.decades > 1.71
    added = (plan.chosen.seeds - 1) * n.sum() / 1000  # the extra seeds at the sizes run ...
    grid = np.asarray(plan.chosen.sizes)
    added += plan.chosen.seeds * grid[n.size :].sum() / 1000  # ... and the new sizes
    assert plan.chosen.added_cpu_s == pytest.approx(added)
    assert plan.words().startswith("to decide: ")
    low = decision_plan(n, 1, 0.08, 0.001, seeds=(2,), extra_decades=(0.0,), n_sim=10)
    assert min(o.power for o in low.options) > 0.9
    undecided = analyse_regime(n, _law(n, 0.08, 0.02, 4), n_boot=300, power_sims=20)
    assert undecided.outcome == UNDECIDED and undecided.power.power < 0.5
    assert undecided.plan is not None and "to decide" in undecided.verdict
    assert all(o.decided is not None for o in undecided.plan.options)  # its own bend


@pytest.mark.parametrize("r", [-1.2, -0.55, -0.2])
def test_the_chance_to_decide_a_bent_curve_matches_an_independent_simulation(r: float) -> None:
    """A curve bent by about the tolerance is rarely decided, however well powered the test
    is on straight lines; one bent far beyond it, or far inside it, almost always is."""
    n = np.geomspace(100, 10_000, 13)
    alpha, sigma, k = 0.385, 0.06, 8
    span = math.log(n[-1] / n[0])
    bend = -r * alpha / (2 * span)
    center = math.sqrt(n[0] * n[-1])
    mine = decision_chance(n, k, alpha, sigma, bend, center, n_sim=300, n_boot=0, seed=3)
    theirs = _independent_shares(n, k, alpha, sigma, 300, r=r, seed=54321)[1]
    se = math.sqrt(max(mine * (1 - mine), theirs * (1 - theirs), 0.01) / 300 * 2)
    assert abs(mine - theirs) < 4 * se, (mine, theirs)
    if r == -0.55:
        assert mine < 0.5 < regime_power(n, k, alpha, sigma, n_sim=100, n_boot=0).power
    else:
        assert mine > 0.9


def test_the_plan_for_a_bent_curve_asks_for_a_chance_to_decide_it() -> None:
    n = np.geomspace(100, 10_000, 13)
    alpha, r = 0.385, -0.55
    bend = (-r * alpha / (2 * math.log(100)), 1000.0)
    only_seeds = decision_plan(
        n, 8, alpha, 0.06, bend=bend, seeds=(16,), extra_decades=(0.0,), n_sim=40
    )
    assert only_seeds.options and all(o.power > 0.9 > 0.8 > o.decided for o in only_seeds.options)
    assert only_seeds.chosen is None and "chance to decide this curve" in only_seeds.words()
    longer = decision_plan(n, 8, alpha, 0.06, bend=bend, extra_decades=(0.5,), n_sim=40)
    assert longer.chosen is not None and longer.chosen.decided >= 0.8
    assert longer.chosen.decades > 2.4


def test_the_tolerance_sets_both_sides() -> None:
    n = np.geomspace(1e3, 1e5, 9)
    u = np.log(n / n[0])
    curve = 5.0 * np.exp(-(0.05 * u + 0.004 * u**2))  # slopes 0.05 → 0.087: r ≈ +0.5
    strict = curvature_test(n, curve, config=RegimeConfig(tolerance=0.2))
    loose = curvature_test(n, curve, config=RegimeConfig(tolerance=2.0))
    assert strict.outcome == CURVED and loose.outcome == POWER_LAW


@pytest.mark.parametrize("n_boot", [0, 200])
def test_the_vectorised_test_is_the_test(n_boot: int) -> None:
    """The power's simulation runs `batch_outcomes`; on one row and one seed it is
    `curvature_test`, resamples and all, on tables of each outcome and with seeds."""
    from scalelab.laws.regime.rules import batch_outcomes

    n = np.geomspace(1e3, 1e5, 9)
    u = np.log(n / n[0])
    tables = [
        (n, _law(n, 0.1, 0.003, 0)),
        (n, 5.0 * np.exp(-(0.03 * u + 0.03 * u**2))),
        (n, _law(n, 0.05, 0.05, 1)),
        (np.repeat(n, 3), _law(np.repeat(n, 3), 0.1, 0.02, 2)),
    ]
    seen = set()
    for x, y in tables:
        one = curvature_test(x, y, n_boot=n_boot, seed=5)
        batch = batch_outcomes(x, np.log(y)[None, :], n_boot=n_boot, seed=5)
        assert batch[0] == one.outcome
        seen.add(one.outcome)
    assert seen == {POWER_LAW, CURVED, UNDECIDED}


def test_curvature_shown_but_not_beyond_the_tolerance_is_undecided() -> None:
    """CURVED needs the interval beyond ±tolerance, not merely away from 0 (docs/fitting.md):
    a change of about +0.54 whose interval [+0.33, +0.70] excludes 0 but straddles +0.5."""
    n = np.geomspace(1e3, 1e5, 9)
    u = np.log(n / n[0])
    noise = np.exp(np.random.default_rng(2).normal(0, 0.003, n.size))
    test = curvature_test(n, 5.0 * np.exp(-(0.05 * u + 0.004 * u**2)) * noise)
    lo, hi = test.relative_change_interval
    assert 0 < lo < 0.5 < hi
    assert test.outcome == UNDECIDED
