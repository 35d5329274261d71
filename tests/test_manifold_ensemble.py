"""A theorem sweep with ensembles: the stored Bayes ratio against an ideal learner simulated in
the test, member 0 as the run's single model, and the `theorem` preset on any d."""

import functools
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from scalelab.manifold.field import TorusField, half_lattice, spectrum
from scalelab.manifold.plan import MANIFOLD_PRESETS
from scalelab.manifold.problem import Problem
from scalelab.manifold.sweep import run_manifold_sweep, specs_for
from scalelab.manifold.theorem import summarise

SMALL = MANIFOLD_PRESETS["theorem-quick"].replace(
    n_values=(24, 48), seeds=(0,), n_test=512, val_size=64, n_embd=8, n_head=2,
    ffn_width=16, max_steps=60, patience=2, wide_width=0, id_points=600, hidden_id=False,
)  # fmt: skip


def test_ideal_learner_simulated_on_a_random_design_matches_bayes_risk() -> None:
    """The yardstick itself: the exact posterior mean of Bayesian regression on the field's
    Fourier features, from n random points with noise σ, averaged over prior draws, has the
    excess risk `bayes_risk(n)` gives in closed form (up to its orthogonal-design step)."""
    rng = np.random.default_rng(0)
    modes = half_lattice(1, 64)  # 8 modes on the circle
    v = spectrum(modes, 1.0)
    sigma, n, draws = 0.5, 400, 300
    field = TorusField(q=np.eye(2), modes=modes, variance=v, amplitude=np.ones(len(v)),
                       phase=np.zeros(len(v)), beta=1.0)  # fmt: skip
    prior = np.concatenate([v, v])  # cos and sin coefficient of each mode
    risks = []
    for _ in range(draws):
        theta = rng.uniform(-np.pi, np.pi, n)
        k = modes[:, 0][None, :] * theta[:, None]
        phi = np.concatenate([np.cos(k), np.sin(k)], axis=1)
        coef = rng.standard_normal(prior.size) * np.sqrt(prior)
        y = phi @ coef + sigma * rng.standard_normal(n)
        post = np.linalg.solve(phi.T @ phi / sigma**2 + np.diag(1 / prior), phi.T @ y / sigma**2)
        risks.append(0.5 * np.sum((post - coef) ** 2))  # E cos² = E sin² = 1/2 on the circle
    assert np.mean(risks) == pytest.approx(float(field.bayes_risk(n, sigma)), rel=0.06)


def test_ensemble_runs_store_the_bayes_ratio_and_their_members(tmp_path: Path) -> None:
    table = run_manifold_sweep(SMALL, tmp_path / "s", quiet=True)
    data = table[table["task"] == "data"]
    problem = Problem(SMALL.problem(2, 1.0))
    field = problem.target
    for _, row in data.iterrows():
        s = 2 * problem.label_noise_std**2 / row["n"]  # the per-coefficient noise 2σ²/n
        bayes = float(np.sum(field.variance * s / (field.variance + s)))
        assert row["bayes_risk"] == pytest.approx(bayes, rel=1e-9)
        assert row["bayes_ratio"] == pytest.approx(row["test_mse_capped"] / bayes, rel=1e-9)
        members = [row[f"member{e}_mse_capped"] for e in range(SMALL.ensemble)]
        assert row["single_mse_capped"] == members[0]
        # the mean prediction is never worse than the average member (convexity of the MSE)
        assert row["test_mse_capped"] <= np.mean(members) + 1e-9
        saved = json.loads((tmp_path / "s" / "runs" / row["run"] / "result.json").read_text())
        assert len(saved["member_steps"]) == SMALL.ensemble
    summary = summarise(table, SMALL)
    check = summary.data[0]
    assert len(check.bayes_ratios) == 2 and check.ratio_drift == pytest.approx(
        check.bayes_ratios[-1] / check.bayes_ratios[0]
    )


def test_member_zero_is_the_single_model_of_an_ensemble_one_run(tmp_path: Path) -> None:
    one = run_manifold_sweep(SMALL.replace(ensemble=1, n_values=(24,)), tmp_path / "a", quiet=True)
    two = run_manifold_sweep(SMALL.replace(n_values=(24,)), tmp_path / "b", quiet=True)
    single = one.loc[one["task"] == "data", "test_mse_capped"].iloc[0]
    member = two.loc[two["task"] == "data", "member0_mse_capped"].iloc[0]
    assert member == pytest.approx(single, rel=1e-4)


def test_theorem_preset_runs_on_any_d(tmp_path: Path, run_cli: Callable) -> None:
    """`--dims 5` was refused (the preset's extra and online dims were not among them)."""
    cfg = MANIFOLD_PRESETS["theorem"].with_dims((5,))
    assert cfg.problems == [(5, 1.0)] and not cfg.online_dims
    assert {s.params["d"] for s in specs_for(cfg)} == {5}
    main = functools.partial(run_cli, "manifold")
    res = main("sweep", "--preset", "theorem", "--dims", "5", "--n-values", "16",
               "--seeds", "0", "--ensemble", "2", "--out", tmp_path / "t", "--json")  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "curves d=5 β=1; runs: id 1, data 1, wide 1" in res.stderr  # said before it runs
    rows = json.loads(res.stdout)
    assert {r["run"] for r in rows} >= {"id_d5", "data_d5_b1_n16_s0", "wide_d5_b1_w64_s0"}
    assert all(r["bayes_ratio"] > 0 for r in rows if r["task"] == "data")
    # the folder's own sweep.json as --config is the same sweep: it resumes, nothing reruns
    again = main("sweep", "--config", tmp_path / "t" / "sweep.json", "--out", tmp_path / "t",
                 "--json")  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == rows
