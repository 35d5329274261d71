"""The manifold sweep: resumable folder, tidy rows, exponent analysis, report section."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scalelab.errors import ConfigError
from scalelab.manifold import analysis
from scalelab.manifold.results import analyse_sweep
from scalelab.manifold.sweep import ManifoldSweepConfig, run_manifold_sweep, specs_for
from scalelab.report import manifold as manifold_report
from scalelab.report.document import Report

TINY = ManifoldSweepConfig(
    dims=(2,), n_values=(32, 64, 128), seeds=(0,), n_test=256, n_embd=8, n_head=2,
    ffn_width=16, max_steps=40, id_points=600, model_dims=(2,), model_widths=(4, 8),
)  # fmt: skip


def test_tiny_sweep_writes_resumable_folder_and_report(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    table = run_manifold_sweep(TINY, out, quiet=True)
    names = {s.name for s in specs_for(TINY)}
    assert set(table["run"]) == names and len(names) == 1 + 3 + 2
    for name in names:
        assert (out / "runs" / name / "result.json").exists()
        cfg = json.loads((out / "runs" / name / "config.json").read_text())
        assert "git_revision" in cfg["provenance"]
    data = table[table["task"] == "data"]
    assert np.all(np.isfinite(data["test_mse"])) and np.all(data["test_mse"] > 0)
    assert set(data["stop_reason"]) <= {"patience", "max_steps"}
    assert table.loc[table["task"] == "id", "d_hat"].between(1.5, 2.6).all()
    if importlib.util.find_spec("tensorboard") is not None:  # `tensorboard --logdir out`
        for name in names - {s.name for s in specs_for(TINY) if s.params["task"] == "id"}:
            assert list((out / "runs" / name).glob("events.out.tfevents.*")), name
    # resuming does not redo a finished run
    stamp = (out / "runs" / "data_d2_b1_n32_s0" / "result.json").stat().st_mtime_ns
    run_manifold_sweep(TINY, out, quiet=True)
    assert (out / "runs" / "data_d2_b1_n32_s0" / "result.json").stat().st_mtime_ns == stamp
    with pytest.raises(ConfigError, match="different config"):
        run_manifold_sweep(TINY.replace(noise_std=0.1), out, quiet=True)
    report = Report("manifold")
    manifold_report.draw(analyse_sweep(out), report, out)
    _, md = report.write(tmp_path / "report")
    text = md.read_text()
    assert "Data-scaling exponents" in text and "Model-scaling exponents" in text
    assert "Intrinsic dimension of the sampled inputs" in text


def test_analysis_recovers_a_known_exponent_and_prediction() -> None:
    """A synthetic table with error = 3 n^-0.4 (seed noise) must give α̂ ≈ 0.4."""
    rng = np.random.default_rng(0)
    n = np.repeat([100, 300, 1000, 3000, 10000], 3)
    rows = pd.DataFrame(
        {
            "task": "data",
            "d": 4,
            "beta": 0.5,
            "n": n,
            "seed": np.tile([0, 1, 2], 5),
            "test_mse": 3 * n**-0.4 * np.exp(0.05 * rng.standard_normal(len(n))),
            "stop_reason": "patience",
        }
    )
    ids = pd.DataFrame([{"task": "id", "d": 4, "d_hat": 4.0, "d_hat_se": 0.1, "id_points": 9}])
    (row,) = analysis.data_exponents(pd.concat([rows, ids], ignore_index=True))
    assert row["alpha_D_obs"] == pytest.approx(0.4, abs=0.02)
    assert row["ci95_low"] < 0.4 < row["ci95_high"]
    assert row["alpha_D_pred"] == pytest.approx(2 * 0.5 / (2 * 0.5 + 4))
    assert row["alpha_D_from_d_hat"] == pytest.approx(0.2)
    assert row["stopped_by_patience"] == "15/15"
    assert row["decades"] == pytest.approx(2.0)


def test_sweep_config_is_validated() -> None:
    with pytest.raises(ConfigError, match="model_dims"):
        ManifoldSweepConfig(model_dims=(3,), model_widths=(8,))
    with pytest.raises(ConfigError, match="unknown manifold"):
        ManifoldSweepConfig(manifold="cone")
    with pytest.raises(ConfigError, match="n must be"):
        ManifoldSweepConfig(n_values=(4, 100))
    with pytest.raises(ConfigError, match="divisible"):
        ManifoldSweepConfig(model_dims=(2,), model_widths=(6,))
    with pytest.raises(ConfigError, match="Swiss roll"):
        ManifoldSweepConfig(manifold="swissroll", dims=(1, 2))


def test_the_width_rule_grows_parameters_as_theorem_1s_n() -> None:
    """With `width_rule`, a data run's width is n_embd·(n/n_mid)^(d/(2(2β+d))), a multiple of
    n_head: its parameters (≈ width²) grow as n^(d/(2β+d)); without it, the config's width."""
    from scalelab.manifold.levers import LEVERS
    from scalelab.manifold.plan import MANIFOLD_PRESETS

    base = MANIFOLD_PRESETS["theorem"].replace(dims=(6,), extra_problems=())
    assert base.data_width(6, 1.0, 10_000) is None
    cfg = base.replace(width_rule=True)
    expected = {100: 12, 1000: 32, 10_000: 76}  # 32·(n/1000)^0.375 = 13.5, 32, 75.9, by 4
    assert {n: cfg.data_width(6, 1.0, n) for n in expected} == expected
    assert cfg.data_width(2, 0.5, 10_000) == 4 * round(32 * 10 ** (1 / 3) / 4)  # 2/(2·3)
    widths = {
        s.params["n"]: s.params["n_embd"] for s in specs_for(cfg) if s.name.startswith("data")
    }
    assert {n: widths[n] for n in expected} == expected
    assert LEVERS["width-rule"].data_width(8, 1.0, 10_000) == cfg.data_width(8, 1.0, 10_000)


def test_a_width_rule_sweep_trains_each_size_at_its_width(tmp_path: Path) -> None:
    from scalelab.manifold.plan import MANIFOLD_PRESETS

    cfg = MANIFOLD_PRESETS["smoke"].replace(width_rule=True, n_values=(64, 256, 1024), max_steps=20)
    table = run_manifold_sweep(cfg, tmp_path / "w", quiet=True)
    data = table[table["task"] == "data"].sort_values("n")
    # 16·(n/256)^(2/(2·4)) = 11.3, 16, 22.6, each to a multiple of 4 heads
    assert data["n_embd"].tolist() == [12, 16, 24]
    assert data["params"].is_monotonic_increasing and data["params"].nunique() == 3


def test_each_training_lever_changes_only_what_it_names() -> None:
    """A lever is compared with `patience` on the same seeds, so it must differ from it in the
    settings its comment names and nothing else; `depth` builds a 4-block regressor."""
    from scalelab.manifold.levers import LEVERS, LeverConfig

    base = LEVERS["patience"].to_dict()
    changed = {
        lever: {k for k, v in LEVERS[lever].to_dict().items() if base[k] != v}
        for lever in LEVERS
        if lever != "v1"
    }
    assert changed == {
        "patience": set(),
        "anneal": {"patience"},
        "val-grows": {"val_size"},  # val_fraction 0.25 is the default
        "val-anneal": {"val_size", "patience"},
        "width-rule": {"width_rule"},
        "depth": {"n_layer"},
        "batch": {"batch_size"},
    }
    lever_cfg = LeverConfig(dims=(6,), n_values=(316, 10_000))
    assert lever_cfg.base("depth", 6).regressor().n_layer == 4
    assert (
        lever_cfg.base("batch", 6).fit().batch_size
        == 4 * lever_cfg.base("patience", 6).fit().batch_size
    )


def test_the_deep_preset_is_the_theorem_preset_with_four_blocks() -> None:
    """`theorem-deep` is measured against `theorem` run by run (same samples, same ideal
    learner), so it may differ in the number of blocks alone."""
    from scalelab.manifold.plan import MANIFOLD_PRESETS

    deep, base = MANIFOLD_PRESETS["theorem-deep"], MANIFOLD_PRESETS["theorem"]
    diff = {k for k, v in deep.to_dict().items() if base.to_dict()[k] != v}
    assert diff == {"n_layer"} and deep.regressor().n_layer == 4
    assert [s.name for s in specs_for(deep)] == [s.name for s in specs_for(base)]


def test_the_plan_line_names_every_curve_and_marks_the_extra_ones() -> None:
    """`--dims 4 --betas 1` on the theorem preset also runs (4, 0.5), the preset's extra
    problem at d = 4: the line the sweep prints first says so, with its runs by task."""
    from scalelab.manifold.plan import MANIFOLD_PRESETS, plan_words

    cfg = MANIFOLD_PRESETS["theorem"].with_dims((4,)).replace(betas=(1.0,))
    per_curve = len(cfg.n_values) * len(cfg.seeds)  # 13 sizes x 3 seeds
    assert plan_words(cfg) == (
        f"curves d=4 β=0.5 (extra_problems), d=4 β=1; runs: id 1, data {2 * per_curve}, wide 2"
    )
    alone = cfg.replace(extra_problems=())
    assert plan_words(alone) == f"curves d=4 β=1; runs: id 1, data {per_curve}, wide 1"
