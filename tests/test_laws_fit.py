"""Scaling-law fits checked against known truth: synthetic laws with noise, the published
Hoffmann constants, and the Epoch replication's grid fit on the digitised Chinchilla data."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, stats

from scalelab.errors import InputError
from scalelab.laws.fit.chinchilla import (
    chinchilla_extrapolation_check,
    compute_optimal,
    epoch_starts,
    fit_chinchilla,
)
from scalelab.laws.fit.power_law import extrapolation_check, fit_power_law

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
HOFFMANN = {"A": 406.4, "B": 410.7, "E": 1.69, "alpha": 0.34, "beta": 0.28}


def _hoffmann_grid() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n, d = np.meshgrid(np.geomspace(1e7, 1e10, 7), np.geomspace(1e9, 1e12, 7))
    n, d = n.ravel(), d.ravel()
    h = HOFFMANN
    return n, d, h["E"] + h["A"] / n ** h["alpha"] + h["B"] / d ** h["beta"]


def test_power_fit_is_ordinary_least_squares_on_logs() -> None:
    rng = np.random.default_rng(0)
    x = np.geomspace(1e3, 1e6, 7)
    y = 5.0 * x**-0.2 * np.exp(rng.normal(0, 0.05, x.size))
    fit = fit_power_law(x, y, form="power", n_boot=200)
    ref = stats.linregress(np.log(x), np.log(y))
    assert fit.exponent == pytest.approx(-ref.slope, rel=1e-12)
    assert pytest.approx(np.exp(ref.intercept), rel=1e-12) == fit.A
    assert fit.E is None
    np.testing.assert_allclose(fit.predict(x), np.exp(ref.intercept) * x**ref.slope, rtol=1e-12)


def test_power_fit_recovers_exponent_and_ci_covers_truth() -> None:
    rng = np.random.default_rng(1)
    x = np.geomspace(1e4, 1e7, 8)
    y = 30.0 * x**-0.3 * np.exp(rng.normal(0, 0.03, x.size))
    fit = fit_power_law(x, y, form="power", n_boot=1000, seed=3)
    assert fit.exponent == pytest.approx(0.3, abs=0.02)
    lo, hi = fit.exponent_ci95
    assert lo < 0.3 < hi and hi - lo < 0.08


def test_power_ci_coverage_is_calibrated_at_six_points() -> None:
    """Across many noisy data sets the 95% interval covers the true exponent ~95% of the
    time; a plain percentile interval at n = 6 would cover only ~85%."""
    rng = np.random.default_rng(2)
    x = np.geomspace(1e4, 1e6, 6)
    covered = []
    for rep in range(300):
        y = 10.0 * x**-0.25 * np.exp(rng.normal(0, 0.04, x.size))
        lo, hi = fit_power_law(x, y, n_boot=400, seed=rep).exponent_ci95
        covered.append(lo < 0.25 < hi)
    assert 0.90 <= np.mean(covered) <= 0.99


def test_power_e_fit_recovers_exponent_and_floor() -> None:
    rng = np.random.default_rng(4)
    x = np.geomspace(1e4, 1e7, 8)
    y = 2.0 + 30.0 * x**-0.3 * np.exp(rng.normal(0, 0.01, x.size))
    plain = fit_power_law(x, y, form="power", n_boot=0)
    fit = fit_power_law(x, y, form="power+E", n_boot=300, seed=0)
    assert fit.exponent == pytest.approx(0.3, abs=0.03)
    assert pytest.approx(2.0, abs=0.1) == fit.E
    assert 0 <= fit.E < y.min()
    lo, hi = fit.exponent_ci95
    assert lo < 0.3 < hi
    # Without the floor the log-log slope is far flatter than the true exponent.
    assert plain.exponent < 0.15
    assert fit.rmse_log < plain.rmse_log / 5


def test_bootstrap_is_seeded() -> None:
    x = np.geomspace(10, 1e4, 6)
    y = 3 * x**-0.5 * np.exp(np.random.default_rng(0).normal(0, 0.05, 6))
    a = fit_power_law(x, y, n_boot=300, seed=7)
    b = fit_power_law(x, y, n_boot=300, seed=7)
    c = fit_power_law(x, y, n_boot=300, seed=8)
    assert a.exponent_ci95 == b.exponent_ci95 != c.exponent_ci95


@pytest.mark.parametrize(
    ("x", "y", "message"),
    [
        ([1, 2], [3, 2], "at least 3"),
        ([1, 2, 3], [3, 0, 1], "non-positive"),
        ([1, -2, 3], [3, 2, 1], "non-positive"),
        ([1, 2, 3], [3, np.nan, 1], "non-finite"),
        ([2, 2, 2], [3, 2, 1], "two sizes"),
        ([1, 2, 3], [3, 2], "differ in length"),
    ],
)
def test_bad_inputs_raise_input_error(x, y, message) -> None:
    with pytest.raises(InputError, match=message):
        fit_power_law(x, y)


def test_power_e_needs_four_points_and_known_form() -> None:
    with pytest.raises(InputError, match="at least 4"):
        fit_power_law([1, 2, 3], [3, 2, 1.5], form="power+E")
    with pytest.raises(InputError, match="unknown form"):
        fit_power_law([1, 2, 3], [3, 2, 1.5], form="exp")


def test_epoch_grid_has_4500_starts() -> None:
    starts = epoch_starts()
    assert starts.shape == (5 * 5 * 6 * 6 * 5, 5) == (4500, 5)


def test_joint_fit_recovers_hoffmann_constants_exactly_from_noiseless_law() -> None:
    n, d, loss = _hoffmann_grid()
    fit = fit_chinchilla(n, d, loss)
    for key, truth in HOFFMANN.items():
        assert getattr(fit, key) == pytest.approx(truth, rel=1e-4), key
    assert fit.objective < 1e-10


def test_joint_fit_on_noisy_hoffmann_law_stays_close_with_consistent_intervals() -> None:
    n, d, loss = _hoffmann_grid()
    noisy = loss * np.exp(np.random.default_rng(0).normal(0, 0.005, loss.size))
    fit = fit_chinchilla(n, d, noisy, n_boot=50, seed=0)
    assert fit.n_boot_used == 50
    assert fit.alpha == pytest.approx(0.34, abs=0.02)
    assert fit.beta == pytest.approx(0.28, abs=0.03)
    for key in HOFFMANN:
        lo, hi = fit.ci95[key]
        assert lo <= getattr(fit, key) <= hi and fit.se[key] > 0, key


def test_joint_fit_bootstrap_se_matches_monte_carlo_spread() -> None:
    """Over independent noise draws, the bootstrap SE of α, β, E should match the actual
    spread of the estimates, and the estimates should centre on the truth."""
    n, d, loss = _hoffmann_grid()
    starts = epoch_starts(
        {
            "a": (0.0, 5.0, 10.0),
            "b": (0.0, 5.0, 10.0),
            "e": (0.0, 1.0),
            "alpha": (0.0, 0.5),
            "beta": (0.0, 0.5),
        }
    )
    rng = np.random.default_rng(0)
    keys = ("alpha", "beta", "E")
    est, se = [], []
    for rep in range(20):
        noisy = loss * np.exp(rng.normal(0, 0.01, loss.size))
        fit = fit_chinchilla(n, d, noisy, starts=starts, n_boot=60, seed=rep)
        est.append([getattr(fit, k) for k in keys])
        se.append([fit.se[k] for k in keys])
    est, se = np.array(est), np.array(se)
    spread = est.std(0, ddof=1)
    ratio = se.mean(0) / spread
    assert np.all((ratio > 0.6) & (ratio < 1.6)), dict(zip(keys, ratio, strict=True))
    truth = np.array([HOFFMANN[k] for k in keys])
    assert np.all(np.abs(est.mean(0) - truth) < 3 * spread / np.sqrt(len(est)))


@pytest.mark.skipif(not (DATA / "epoch_chinchilla.csv").exists(), reason="needs ../shared/data")
def test_joint_fit_reproduces_epoch_grid_fit_and_bootstrap_errors() -> None:
    df = pd.read_csv(DATA / "epoch_chinchilla.csv").sort_values("loss").iloc[:-5]
    n = df["Model Size"].to_numpy()
    d = df["Training FLOP"].to_numpy() / (6 * n)
    fit = fit_chinchilla(n, d, df["loss"].to_numpy(), n_boot=100, seed=0)
    assert fit.n_points == 240 and fit.n_starts == 4500
    assert pytest.approx(477.84, rel=2e-3) == fit.A
    assert pytest.approx(2143.86, rel=2e-3) == fit.B
    assert pytest.approx(1.8172, abs=2e-4) == fit.E
    assert fit.alpha == pytest.approx(0.34731, abs=2e-4)
    assert fit.beta == pytest.approx(0.36718, abs=2e-4)
    assert fit.objective == pytest.approx(0.00101827, rel=1e-4)
    # Epoch's bootstrap standard errors (4000 resamples); 100 resamples agree within ~30%.
    epoch_se = {"A": 124.5, "B": 1293, "E": 0.026, "alpha": 0.015, "beta": 0.021}
    for key, se in epoch_se.items():
        assert fit.se[key] == pytest.approx(se, rel=0.3), key


def test_compute_optimal_matches_numerical_minimum() -> None:
    h = HOFFMANN
    for c in (1e20, 5.76e23):

        def loss_at(log_n: float, c: float = c) -> float:
            n = np.exp(log_n)
            return h["A"] / n ** h["alpha"] + h["B"] / (c / (6 * n)) ** h["beta"]

        best = optimize.minimize_scalar(
            loss_at, bounds=(5, 40), method="bounded", options={"xatol": 1e-10}
        )
        n_opt, d_opt = compute_optimal(c, h["A"], h["B"], h["alpha"], h["beta"])
        assert np.log(n_opt) == pytest.approx(best.x, abs=1e-5)
        assert 6 * n_opt * d_opt == pytest.approx(c, rel=1e-12)


def test_extrapolation_error_is_small_for_the_right_form() -> None:
    rng = np.random.default_rng(5)
    x = np.geomspace(1e4, 1e7, 8)
    y = 2.0 + 30.0 * x**-0.3 * np.exp(rng.normal(0, 0.005, x.size))
    with_e = extrapolation_check(x, y, form="power+E", holdout=2)
    plain = extrapolation_check(x, y, form="power", holdout=2)
    assert with_e.n_fit == 6 and len(with_e.predicted) == 2
    assert with_e.x_heldout == x[-2:].tolist()
    assert with_e.max_abs_rel_error < 0.01 < plain.max_abs_rel_error
    with pytest.raises(InputError, match="hold out fewer"):
        extrapolation_check(x, y, form="power+E", holdout=5)


def test_chinchilla_extrapolation_holds_out_largest_compute() -> None:
    n, d, loss = _hoffmann_grid()
    coarse = {"a": (0.0, 5.0, 10.0), "b": (0.0, 5.0, 10.0), "e": (0.0, 1.0)}
    starts = epoch_starts({**coarse, "alpha": (0.5,), "beta": (0.5,)})
    out = chinchilla_extrapolation_check(n, d, loss, holdout=3, starts=starts)
    compute = 6 * n * d
    assert sorted(out.N_heldout) == sorted(n[np.argsort(compute)[-3:]].tolist())
    assert out.n_fit == n.size - 3
    assert out.max_abs_rel_error < 1e-4


# ---- `scalelab fit` command line ----------------------------------------------------------


@pytest.fixture
def fit_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """Run `scalelab fit ARGS` through the real `main()` in this process: (code, out, err)."""
    from scalelab.cli import main

    def call(*args: object) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["scalelab", "fit", *map(str, args)])
        with pytest.raises(SystemExit) as info:
            main()
        out, err = capsys.readouterr()
        return info.value.code or 0, out, err

    return call


def _write(path: Path, rows: dict) -> Path:
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_cli_fit_json_matches_library(tmp_path: Path, fit_cli) -> None:
    x = np.geomspace(1e4, 1e7, 7)
    y = 30.0 * x**-0.3 * np.exp(np.random.default_rng(0).normal(0, 0.02, 7))
    table = _write(tmp_path / "runs.csv", {"train_tokens": x, "test_loss_nats": y})
    out = tmp_path / "fit.json"
    args = ["--x", "train_tokens", "--y", "test_loss_nats", "--n-boot", "100", "--holdout", "1"]
    code, stdout, err = fit_cli(table, *args, "--json", "--out", out)
    assert code == 0, err
    result = json.loads(stdout)
    lib = fit_power_law(x, y, n_boot=100, seed=0)
    assert result["fit"]["exponent"] == pytest.approx(lib.exponent, rel=1e-12)
    assert result["fit"]["exponent_ci95"] == pytest.approx(list(lib.exponent_ci95))
    assert result["holdout"]["n_fit"] == 6
    saved = json.loads(out.read_text())
    assert saved["fit"] == result["fit"] and "git_revision" in saved["provenance"]


def test_cli_chinchilla_from_flop_column(tmp_path: Path, fit_cli) -> None:
    n, d, loss = _hoffmann_grid()
    table = _write(tmp_path / "c.csv", {"N": n, "C": 6 * n * d, "L": loss})
    code, stdout, err = fit_cli(
        table,
        "--form",
        "chinchilla",
        "--y",
        "L",
        "--n-col",
        "N",
        "--c-col",
        "C",
        "--n-boot",
        "0",
        "--json",
    )
    assert code == 0, err
    fit = json.loads(stdout)["fit"]
    for key, truth in HOFFMANN.items():
        assert fit[key] == pytest.approx(truth, rel=1e-3)


@pytest.mark.parametrize(
    ("rows", "args", "message"),
    [
        (
            {"n": [1, 2, 3], "l": [3, 2, 1]},
            ["--x", "tokens", "--y", "l"],
            "no column(s) ['tokens']",
        ),
        ({"n": [1, 2, 3], "l": [3, 0, 1]}, ["--x", "n", "--y", "l"], "non-positive"),
        ({"n": [1, -2, 3], "l": [3, 2, 1]}, ["--x", "n", "--y", "l"], "non-positive"),
        ({"n": [1, 2], "l": [3, 2]}, ["--x", "n", "--y", "l"], "at least 3"),
        ({"n": [1, 2, 3], "l": ["a", 2, 1]}, ["--x", "n", "--y", "l"], "non-numeric"),
        ({"n": [1, 2, 3], "l": [3, 2, 1]}, ["--x", "n", "--y", "l", "--form", "exp"], "--form"),
        ({"n": [1, 2, 3], "l": [3, 2, 1]}, ["--y", "l"], "needs --x"),
        ({"n": [1, 2, 3], "l": [3, 2, 1]}, ["--y", "l", "--form", "chinchilla"], "--n-col"),
        (
            {"n": [1, 2, 3, 4], "l": [4, 3, 2, 1]},
            ["--x", "n", "--y", "l", "--holdout", "2"],
            "hold out fewer",
        ),
    ],
)
def test_cli_bad_input_is_one_line_exit_2_nothing_written(
    tmp_path: Path, fit_cli, rows, args, message
) -> None:
    table = _write(tmp_path / "t.csv", rows)
    out = tmp_path / "fit.json"
    code, _, err = fit_cli(table, *args, "--out", out)
    assert code == 2
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()


def test_cli_unreadable_and_missing_tables(tmp_path: Path, fit_cli) -> None:
    code, _, err = fit_cli(tmp_path / "nope.csv", "--x", "n", "--y", "l")
    assert code == 2 and "not found" in err
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet at all")
    code, _, err = fit_cli(bad, "--x", "n", "--y", "l")
    assert code == 2 and "cannot read table" in err and err.count("\n") == 1
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    code, _, err = fit_cli(empty, "--x", "n", "--y", "l")
    assert code == 2 and "cannot read table" in err


def test_cli_bad_input_in_a_real_process(tmp_path: Path) -> None:
    table = _write(tmp_path / "t.csv", {"n": [1, 2, 3], "l": [3, 2, 1]})
    proc = subprocess.run(
        [sys.executable, "-m", "scalelab", "fit", str(table), "--x", "size", "--y", "l"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1


def test_batched_lbfgs_solves_independent_rosenbrock_problems() -> None:
    """Each row is its own problem: shifted Rosenbrock valleys with different minima."""
    from scalelab.laws.fit.batched_lbfgs import minimize_batched

    shift = np.array([[0.0, 0.0], [2.0, -1.0], [-3.0, 4.0], [0.5, 0.5]])

    def rosen(x: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        u = x - shift[rows]
        a, b = u[:, 0], u[:, 1]
        f = (1 - a) ** 2 + 100 * (b - a * a) ** 2
        g = np.stack([-2 * (1 - a) - 400 * a * (b - a * a), 200 * (b - a * a)], axis=1)
        return f, g

    res = minimize_batched(rosen, shift + np.array([-1.2, 1.0]), gtol=1e-9, ftol=0.0)
    np.testing.assert_allclose(res.x, shift + 1.0, atol=1e-5)
    assert res.converged.all() and np.all(res.fun < 1e-10)
    ref = optimize.minimize(lambda z: rosen(z[None], np.array([2]))[0][0], shift[2] - [1.2, -1])
    np.testing.assert_allclose(res.x[2], ref.x, atol=1e-4)


def test_fit_table_returns_records_that_read_back() -> None:
    """`fit_table` gives a `TableFit` (the exponent of an exact power law, the regime test on
    it), chinchilla budgets split so that 6·N·D = C, and each reads back from its `to_dict`."""
    from scalelab.laws.fit_table import GroupFits, TableFit, fit_groups, fit_table

    x = np.geomspace(100, 1e5, 8)
    df = pd.DataFrame({"n": np.tile(x, 2), "loss": np.tile(3.0 * x**-0.4, 2)})
    df["corpus"] = ["a"] * 8 + ["b"] * 8
    one = fit_table(df[df.corpus == "a"], "loss", x="n", n_boot=20, holdout=2)
    assert one.fit.exponent == pytest.approx(0.4, abs=1e-9)
    assert one.holdout is not None and one.holdout.n_fit == 6 and one.regime is not None
    assert "compute_optimal" not in one.to_dict()
    assert TableFit.from_dict(one.to_dict()) == one
    groups = fit_groups(df, "loss", "corpus", x="n", n_boot=10)
    assert set(groups.groups) == {"a", "b"}
    assert GroupFits.from_dict(groups.to_dict()) == groups

    n, d = np.meshgrid(np.geomspace(1e5, 1e8, 5), np.geomspace(1e7, 1e10, 5))
    n, d = n.ravel(), d.ravel()
    table = pd.DataFrame({"N": n, "D": d, "L": 1.7 + 400 / n**0.34 + 410 / d**0.28})
    joint = fit_table(table, "L", form="chinchilla", n_col="N", d_col="D", compute=[1e20], n_boot=0)
    (best,) = joint.compute_optimal
    assert 6 * best.N_opt * best.D_opt == pytest.approx(1e20, rel=1e-6)
    assert best.tokens_per_param == pytest.approx(best.D_opt / best.N_opt)
    assert joint.regime is None and TableFit.from_dict(joint.to_dict()) == joint


def test_a_form_registered_once_is_fitted_checked_and_refused_by_its_minimum(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A new one-variable form is one `FORMS` line naming its function: `fit_power_law` and the
    held-out check then take it, and its fewest points are enforced (laws/fit/forms.py)."""
    from scalelab.laws.fit import forms
    from scalelab.laws.fit.fitted import PowerLawFit

    def two_point(x, y, n_boot, rng, seed):  # the slope through the first and last points
        slope = np.log(y[-1] / y[0]) / np.log(x[-1] / x[0])
        return PowerLawFit(
            "two-point", -slope, (np.nan, np.nan), y[0] * x[0] ** -slope, None, x.size
        )

    monkeypatch.setattr(sys.modules[__name__], "two_point", two_point, raising=False)
    toy = forms.Form("first and last point", 5, f"{__name__}:two_point")
    monkeypatch.setitem(forms.FORMS, "two-point", toy)
    x = np.geomspace(10, 1e4, 7)
    fit = fit_power_law(x, 3 * x**-0.35, form="two-point")
    assert fit.form == "two-point" and fit.exponent == pytest.approx(0.35)
    check = extrapolation_check(x, 3 * x**-0.35, form="two-point", holdout=2)
    assert check.max_abs_rel_error == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(InputError, match="needs 5"):
        extrapolation_check(x, 3 * x**-0.35, form="two-point", holdout=3)
