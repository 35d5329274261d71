"""The theorem analysis: the regime test's power, its three outcomes, and the report's
verdict against the predictors that ignore d, on synthetic tables with known exponents."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scalelab.io import to_json
from scalelab.laws.regime.rules import POWER_LAW
from scalelab.manifold import theorem
from scalelab.manifold.plan import MANIFOLD_PRESETS
from scalelab.manifold.results import analyse_sweep
from scalelab.report import manifold as manifold_report
from scalelab.report.document import Report

SIZES = np.array([100, 316, 1000, 3162, 10000], dtype=float)
CFG = MANIFOLD_PRESETS["theorem"].replace(dims=(1, 2, 3, 4), extra_problems=(), online_dims=(),
                                 online_widths=(), wide_width=0)  # fmt: skip


def test_the_check_reads_the_librarys_outcome_and_power() -> None:
    """One rule: the theorem's outcome and power are `analyse_regime`'s (`laws.regime`)."""
    from scalelab.laws.regime.analysis import analyse_regime
    from scalelab.laws.regime.rules import CURVED, POWER_LAW

    x = np.repeat(SIZES, 3)
    rng = np.random.default_rng(0)
    quiet = 2 * x**-0.4 * np.exp(0.002 * rng.standard_normal(x.size))
    curved = np.exp(-0.05 * np.log(x) ** 2) * np.exp(0.002 * rng.standard_normal(x.size))
    for y, want in ((quiet, POWER_LAW), (curved, CURVED)):
        extra = {"model_limited": False, "wide_ratio": None, "best_at_end": False}
        check = theorem._check("data", 2, 1.0, x, y, {"true": 0.5}, extra=extra)
        lib = analyse_regime(x, y, floor=0.0, floor_source="excess risk")
        assert check.outcome == lib.outcome == want
        assert check.power == pytest.approx(lib.power.power)


def _table(exponent: dict[int, float], noise: float = 0.03) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    rows = []
    for d, alpha in exponent.items():
        rows.append({"task": "id", "d": d, "beta": 1.0, "d_hat": d * 1.05, "d_hat_se": 0.01,
                     "id_points": 8192, "d_hat_k10": d * 1.1, "d_hat_k20": d * 1.05,
                     "d_hat_k40": d})  # fmt: skip
        for seed in range(3):
            for n in SIZES:
                err = 0.8 * n**-alpha * np.exp(noise * rng.standard_normal())
                rows.append({"task": "data", "d": d, "beta": 1.0, "n": n, "seed": seed,
                             "test_mse": err, "test_mse_capped": err, "best_step": 10,
                             "steps": 20, "params": 100, "stop_reason": "schedule",
                             "hidden_d_hat": d + 0.5 if n in (100, 10000) else np.nan,
                             "hidden_d_hat_k10": d + 0.6, "hidden_d_hat_k20": d + 0.5,
                             "hidden_d_hat_k40": d + 0.4, "wall_time_s": 1.0,
                             "cpu_time_s": 1.0})  # fmt: skip
    return pd.DataFrame(rows)


def _sweep(tmp_path: Path, table: pd.DataFrame) -> Path:
    out = tmp_path / "sweep"
    out.mkdir()
    (out / "sweep.json").write_text(to_json({"kind": "manifold", "config": CFG.to_dict()}))
    table.to_csv(out / "runs.csv", index=False)
    return out


def test_report_scores_the_theorem_against_the_d_free_baseline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exact = {d: 2 / (2 + d) for d in CFG.dims}
    summary = theorem.summarise(_table(exact), CFG)
    assert [c.outcome for c in summary.data] == [POWER_LAW] * 4
    for c in summary.data:
        assert c.exponent == pytest.approx(c.predicted, abs=0.02)
    row = summary.scores_power_law["scores"]["2β/(2β+d), true d"]
    assert row["baselines"]["leave-one-out mean"]["mae"] > 0.05 > row["mae"]
    assert row["informative"] and row["margin_ci95"][0] > 0
    assert summary.hidden[0]["hidden_large_n_k20"] == pytest.approx(1.5)
    # the report prints that verdict (it draws; the numbers are the summary's)
    report = Report("theorem")
    folder = _sweep(tmp_path, _table(exact))
    manifold_report.draw(analyse_sweep(folder), report, folder)
    _, md = report.write(tmp_path / "report")
    text = md.read_text()
    assert "2β/(2β+d), true d: MAE" in text and "the best baseline that ignores d" in text
    assert "informative: the interval of the margin lies above 0" in text
    assert "Data scaling per (d, β)" in text


def test_a_d_free_curve_family_is_not_called_informative(monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative control: the same exponent at every d. The theorem's prediction must lose to
    the leave-one-out mean (which is exact here), not be called informative."""
    summary = theorem.summarise(_table(dict.fromkeys(CFG.dims, 0.3)), CFG)
    row = summary.scores_all["scores"]["2β/(2β+d), true d"]
    assert not row["informative"] and row["margin"] < 0
    assert json.loads(to_json([c.to_dict() for c in summary.data]))[0]["d"] == 1


def test_a_sweep_without_model_runs_draws_no_empty_legend() -> None:
    """The model panels of a data-only sweep say that it has no model runs; the data panels
    keep their legends."""
    import warnings

    from scalelab.report.manifold_theorem import curves_figure, exponent_figure

    summary = theorem.summarise(_table({d: 2 / (2 + d) for d in CFG.dims}), CFG)
    assert summary.data and not summary.online
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns on a legend with nothing to show
        figures = [exponent_figure(summary), curves_figure(summary)]
    for fig in figures:
        data, model = fig.axes
        assert data.get_legend() is not None and not data.texts
        assert model.get_legend() is None
        assert [t.get_text() for t in model.texts] == ["no model-scaling runs in this sweep"]


def test_curvature_is_the_quadratic_term_in_log_log() -> None:
    """log v = a + b·log n + c·(log n − mean)²: `curvature` returns c exactly; a straight
    line gives 0, and fewer than 3 sizes give None."""
    n = np.geomspace(100, 10_000, 9)
    x = np.log(n) - np.log(n).mean()
    assert theorem.curvature(n, np.exp(0.3 - 0.4 * x + 0.07 * x**2)) == pytest.approx(0.07)
    assert theorem.curvature(n, 2 * n**-0.5) == pytest.approx(0.0, abs=1e-12)
    assert theorem.curvature(n[:2], n[:2]) is None


def test_a_curved_curve_names_the_bayes_ratio_when_the_ratio_carries_the_bend() -> None:
    """Error = an ideal learner's power law × a U-shaped Bayes ratio: the curve is CURVED,
    its bend is the ratio's (cause named with the share); the same bend with a straight ratio
    is left unexplained."""
    from scalelab.laws.regime.rules import CURVED

    x = np.repeat(np.geomspace(100, 10_000, 13), 3)
    centred = np.log(x) - np.log(x).mean()
    ratio = np.exp(0.08 * centred**2)
    rng = np.random.default_rng(0)
    y = 0.5 * x**-0.4 * ratio * np.exp(0.01 * rng.standard_normal(x.size))
    extra = {"model_limited": False, "wide_ratio": None, "best_at_end": ""}
    check = theorem._check("paired", 3, 1.0, x, y, {"true": 0.4}, extra=extra)
    assert check.outcome == CURVED and check.curve_curvature == pytest.approx(0.08, abs=0.01)
    sizes = np.unique(x)
    bent = theorem.curvature(sizes, np.exp(0.08 * (np.log(sizes) - np.log(sizes).mean()) ** 2))
    cause = theorem._cause(theorem._replace(check, ratio_curvature=bent, ratio_slope=0.0))
    share = int(cause.split(" is ")[1].split("%")[0])
    assert cause.startswith("the Bayes ratio's bend") and 95 <= share <= 105
    flat = theorem._cause(theorem._replace(check, ratio_curvature=0.001, ratio_slope=0.0))
    assert flat.startswith("none of the checks")
