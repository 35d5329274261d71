"""Forecasts against truths known in advance: noiseless laws (a correct fixed exponent forecasts
exactly), hand-computed held-out errors, numpy's and scipy's least squares, the closed form of
the compute-optimal split checked by a numerical search, and the inversion round trip; the
results (`ScoreResult`, `ForecastResult`) save as the dicts they replaced and read back."""

import dataclasses
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize_scalar, nnls

from scalelab.errors import InputError
from scalelab.laws.forecast.config import ForecastConfig, ForecastRequest
from scalelab.laws.forecast.fits import (
    Exponent,
    fit_forecast,
    fit_joint,
    forecast_table,
    nonneg_linear_fit,
)
from scalelab.laws.forecast.holdout import (
    CorpusRuns,
    ScoreResult,
    corpus_table,
    loo_exponent,
    observed_exponent,
    score_corpora,
    summarize,
)
from scalelab.laws.forecast.run import ForecastResult, run_forecast

X = np.geomspace(1e3, 1e6, 7)
E0, A0, ALPHA0 = 2.0, 20.0, 0.3


def law(x, e=E0, a=A0, alpha=ALPHA0):
    return e + a * np.asarray(x, float) ** -alpha


def test_linear_solve_matches_lstsq_when_unconstrained_is_feasible() -> None:
    rng = np.random.default_rng(0)
    z = X**-0.3
    y = 2.0 + 20.0 * z + rng.normal(0, 0.05, z.size)
    e, a, sse = nonneg_linear_fit(z, y)
    coef, res, *_ = np.linalg.lstsq(np.stack([np.ones_like(z), z], 1), y, rcond=None)
    assert e[0] == pytest.approx(coef[0], rel=1e-10)
    assert a[0] == pytest.approx(coef[1], rel=1e-10)
    assert sse[0] == pytest.approx(res[0], rel=1e-8)


@pytest.mark.parametrize(("e_true", "a_true"), [(-1.0, 20.0), (5.0, -0.5)])
def test_linear_solve_with_bounds_matches_scipy_nnls(e_true: float, a_true: float) -> None:
    """E < 0 (pushed to E = 0) and a rising y (A pushed to 0): the same optimum as NNLS."""
    z = X**-0.3
    y = e_true + a_true * z + np.random.default_rng(0).normal(0, 0.01, z.size)
    e, a, _ = nonneg_linear_fit(z, y)
    ref, _ = nnls(np.stack([np.ones_like(z), z], 1), y)
    assert min(e[0], a[0]) == 0.0
    np.testing.assert_allclose([e[0], a[0]], ref, rtol=1e-9, atol=1e-12)


def test_noiseless_fixed_correct_exponent_forecasts_exactly() -> None:
    fc = fit_forecast(X[:3], law(X[:3]), exponent=Exponent("true", ALPHA0), n_boot=0)
    np.testing.assert_allclose([fc.E, fc.A], [E0, A0], rtol=1e-9)
    far = np.array([1e8, 1e10])
    np.testing.assert_allclose(fc.predict(far), law(far), rtol=1e-10)


def test_held_out_are_is_the_hand_computed_one() -> None:
    """Exact power law (E = 0), largest run observed 3% above it: a log-log fit and the
    correct fixed exponent both forecast the law, so ARE = 0.03 / 1.03 exactly."""
    y = 5.0 * X**-0.1
    y[-1] *= 1.03
    cfg = ForecastConfig(ks=(3,), constant_alpha=0.1, n_boot=0)
    rows = score_corpora([CorpusRuns("c", X, y)], cfg).rows
    by = {r["method"]: r for r in rows}
    for method in ("log-log free", "constant 0.1", "constant 0.1, E=0", "E+A free"):
        assert by[method]["are_largest"] == pytest.approx(0.03 / 1.03, rel=1e-6), method
    # 10^6 / 10^(4) is 2 decades beyond the fit: the largest run is in the second step.
    assert set(by["log-log free"]["are_by_step"]) == {1, 2}
    assert by["log-log free"]["are_by_step"][1] == pytest.approx(0.0, abs=1e-9)


def test_free_fit_extrapolates_badly_where_a_fixed_exponent_does_not() -> None:
    """±0.5% noise with a curvature pattern on 4 runs bends the free 3-parameter fit (its α
    goes to ≈ 0.24); the true α fixed keeps the forecast 2.5 decades out within 1%."""
    y = law(X[:4]) * (1 + np.array([-0.005, 0.005, 0.005, -0.005]))
    free = fit_forecast(X[:4], y, method="free", n_boot=0)
    fixed = fit_forecast(X[:4], y, exponent=Exponent("true", ALPHA0), n_boot=0)
    truth = law(X[-1])
    assert abs(free.predict(X[-1]) / truth - 1) > 0.04
    assert abs(fixed.predict(X[-1]) / truth - 1) < 0.01


def test_a_wrong_fixed_exponent_extrapolates_badly_where_the_free_fit_does_not() -> None:
    y = law(X[:4])
    free = fit_forecast(X[:4], y, method="free", n_boot=0)
    wrong = fit_forecast(X[:4], y, exponent=Exponent("wrong", 0.6), n_boot=0)
    truth = law(X[-1])
    assert free.alpha == pytest.approx(ALPHA0, rel=1e-4)
    assert abs(free.predict(X[-1]) / truth - 1) < 1e-4
    assert abs(wrong.predict(X[-1]) / truth - 1) > 0.02


def test_fixed_without_floor_is_a_line_through_the_origin_in_z() -> None:
    """L = A·n^-α with α fixed: A = Σ z·y / Σ z·z (z = n^-α), the least-squares slope."""
    y = law(X[:4])
    fc = fit_forecast(X[:4], y, method="fixed, E=0", exponent=Exponent("t", ALPHA0), n_boot=0)
    z = X[:4] ** -ALPHA0
    assert fc.E == 0.0
    np.testing.assert_allclose(fc.A, z @ y / (z @ z), rtol=1e-12)


def test_exponent_interval_band_lies_between_its_endpoint_forecasts() -> None:
    """Noiseless runs, α drawn from [0.25, 0.35]: the band at a far size lies between the
    forecasts fixed at each end, covers most of that span, and holds the truth."""
    far = 1e9
    y = law(X[:4])
    fc = fit_forecast(X[:4], y, exponent=Exponent("d", 0.3, (0.25, 0.35)), n_boot=400)
    ends = [
        fit_forecast(X[:4], y, exponent=Exponent("e", a), n_boot=0).predict(far)
        for a in (0.25, 0.35)
    ]
    lo, hi = fc.interval([far])
    span = max(ends) - min(ends)
    assert min(ends) - 1e-9 <= lo[0] < law(far) < hi[0] <= max(ends) + 1e-9
    assert hi[0] - lo[0] > 0.8 * span


def test_residual_bootstrap_band_covers_noisy_forecasts() -> None:
    """1% noise, correct α fixed, 7 runs: the 95% band at 10× the largest run holds the
    truth in most of 40 seeded data sets (a band that is never right would fail)."""
    rng = np.random.default_rng(1)
    hits = 0
    for i in range(40):
        y = law(X) * (1 + rng.normal(0, 0.01, X.size))
        fc = fit_forecast(X, y, exponent=Exponent("t", ALPHA0), n_boot=300, seed=i)
        lo, hi = fc.interval([1e7])
        hits += bool(lo[0] <= law(1e7) <= hi[0])
    assert hits >= 30


def test_data_needed_round_trip_and_unreachable_loss() -> None:
    fc = fit_forecast(X[:4], law(X[:4]), exponent=Exponent("t", ALPHA0), n_boot=50)
    for n in (1e7, 3.3e9):
        assert fc.data_needed(float(fc.predict(n)))["n"] == pytest.approx(n, rel=1e-9)
    assert fc.data_needed(E0 * 0.99)["n"] == math.inf  # below the floor: never


def test_exponent_from_d() -> None:
    ex = Exponent.from_d("s", 8.0, (6.0, 10.0))
    assert ex.alpha == pytest.approx(0.2)
    assert ex.interval == pytest.approx((2 / 12, 2 / 8))
    assert Exponent.from_d("s", 8.0, axis="model").alpha == pytest.approx(0.25)


def test_leave_one_out_mean_excludes_the_corpus_itself() -> None:
    corpora = [CorpusRuns(f"c{a}", X, 5.0 * X**-a) for a in (0.1, 0.2, 0.3)]
    loo = loo_exponent(corpora, "c0.1")
    assert loo.alpha == pytest.approx(0.25)
    assert loo.interval == pytest.approx((0.2, 0.3))


@pytest.mark.parametrize(
    "call",
    [
        lambda: fit_forecast(X[:2], law(X[:2]), exponent=Exponent("t", 0.3)),
        lambda: fit_forecast([0.0, 1.0, 2.0], [3.0, 2.0, 1.0], method="free"),
        lambda: fit_forecast(X[:3], law(X[:3]), method="free", exponent=Exponent("t", 0.3)),
        lambda: forecast_table(fit_forecast(X, law(X), method="free", n_boot=0), [-5.0]),
        lambda: Exponent.from_d("s", -1.0),
    ],
)
def test_bad_input_is_an_input_error(call) -> None:
    with pytest.raises(InputError):
        call()


# ---- the joint law and the compute-optimal split ----------------------------------------

JE, JA, JB, JAE, JBE = 1.7, 400.0, 1500.0, 0.34, 0.28


def _grid():
    n, d = np.meshgrid(np.geomspace(1e6, 1e9, 5), np.geomspace(1e8, 1e11, 5))
    n, d = n.ravel(), d.ravel()
    return n, d, JE + JA * n**-JAE + JB * d**-JBE


def test_joint_fixed_exponents_recover_coefficients_and_closed_form_split() -> None:
    n, d, loss = _grid()
    fit = fit_joint(n, d, loss, a=JAE, b=JBE)
    np.testing.assert_allclose([fit.E, fit.A, fit.B], [JE, JA, JB], rtol=1e-8)
    budgets = [1e20, 1e23]
    rows = fit.compute_optimal(budgets)
    for c, row in zip(budgets, rows, strict=True):
        # numerical search along C = 6 N D, independent of the closed form
        def f(ln: float, c: float = c) -> float:
            return JA * math.exp(ln) ** -JAE + JB * (c / (6 * math.exp(ln))) ** -JBE

        ln_best = minimize_scalar(f, bounds=(0, 60), method="bounded", options={"xatol": 1e-10}).x
        assert row["N_opt"] == pytest.approx(math.exp(ln_best), rel=1e-4)
        assert row["D_opt"] == pytest.approx(c / (6 * row["N_opt"]), rel=1e-10)
    # N_opt ∝ C^(b/(a+b)) with coefficient G·6^-(b/(a+b)), G = (aA/(bB))^(1/(a+b))
    s = JAE + JBE
    g = (JAE * JA / (JBE * JB)) ** (1 / s)
    assert rows[1]["N_opt"] / rows[0]["N_opt"] == pytest.approx(1e3 ** (JBE / s), rel=1e-9)
    assert rows[0]["N_opt"] == pytest.approx(g * (1e20 / 6) ** (JBE / s), rel=1e-9)


@pytest.mark.parametrize(("a", "b"), [(JAE, None), (None, JBE)])
def test_joint_one_free_exponent_is_recovered(a, b) -> None:
    n, d, loss = _grid()
    fit = fit_joint(n, d, loss, a=a, b=b)
    assert (fit.a, fit.b) == pytest.approx((JAE, JBE), rel=1e-4)


# ---- the results as records -------------------------------------------------------------


def test_score_result_is_the_former_dict_and_round_trips() -> None:
    """`to_dict` is the layout `score_corpora` returned as a dict (forecast.json's `score`,
    less its tables), and reads back into an equal record."""
    corpora = [CorpusRuns(f"c{a}", X, 5.0 * X**-a) for a in (0.1, 0.2)]
    cfg = ForecastConfig(n_boot=0)
    result = score_corpora(corpora, cfg)
    assert result.to_dict() == {
        "config": {
            "ks": [3, 4, 5],
            "score_without_floor": True,
            "constant_alpha": 0.095,
            "n_boot": 0,
            "level": 0.95,
            "seed": 0,
        },
        "observed_exponents": {c.name: observed_exponent(c) for c in corpora},
        "rows": result.rows,
        "summary": summarize(result.rows),
    }
    assert list(result.rows[0]) == [
        *("corpus", "k", "method", "alpha", "E", "A", "fit_upto", "largest"),
        *("decades_beyond", "are_largest", "covered_largest", "are_by_step", "held_out"),
    ]
    assert ScoreResult.from_dict(result.to_dict()) == result
    assert result.tables() == {c.name: corpus_table(result.rows, c.name) for c in corpora}


def test_forecast_result_is_the_former_dict_and_round_trips(tmp_path: Path) -> None:
    """Every part asked for (forecasts with data needed, the joint split, the scores): the
    keys in the order forecast.json has always had them, the score's tables added, and the
    record read back from its dict; parts not asked for are absent, not null."""
    table = tmp_path / "runs.csv"
    frames = [
        pd.DataFrame({"corpus": f"c{a}", "train_tokens": X, "test_loss_nats": law(X, alpha=a)})
        for a in (0.2, 0.3)
    ]
    pd.concat(frames).to_csv(table, index=False)
    n, d = (v.ravel() for v in np.meshgrid(np.geomspace(1e5, 1e8, 4), np.geomspace(1e6, 1e9, 4)))
    grid = tmp_path / "grid.csv"
    loss = 1.2 + 30.0 * n**-0.25 + 80.0 * d**-0.2
    pd.DataFrame({"N": n, "C": 6 * n * d, "test_loss_nats": loss}).to_csv(grid, index=False)
    cfg = ForecastConfig(n_boot=0)
    request = ForecastRequest(
        d=8.0, k=4, loss=2.5, budget=(1e18,), grid=str(grid), n_col="N", c_col="C", score=True
    )
    result = run_forecast([table], request, cfg)
    saved = result.to_dict()
    assert list(saved) == ["config", "choice", "forecasts", "joint", "score"]
    assert saved["choice"] == {"alpha": None, "d": 8.0, "source": None, "floor": True}
    assert [list(f) for f in saved["forecasts"]] == [
        ["corpus", "forecast", "at", "data_needed"]
    ] * 2
    assert saved["joint"]["fit"] == dataclasses.asdict(result.joint.fit)  # as it was saved
    assert list(saved["score"]) == ["config", "observed_exponents", "rows", "summary", "tables"]
    assert saved["score"]["tables"] == result.score.tables()
    assert ForecastResult.from_dict(saved) == result

    plain = run_forecast([table], ForecastRequest(alpha=0.2), cfg).to_dict()
    assert list(plain) == ["config", "choice", "forecasts"]
    assert [list(f) for f in plain["forecasts"]] == [["corpus", "forecast", "at"]] * 2
