"""α_N's online runs as the `theorem-width` preset runs them: seeds, steps growing with
width, and the tripled-steps check that says which widths are approximation-limited."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scalelab.errors import ConfigError
from scalelab.manifold.plan import MANIFOLD_PRESETS, specs_for
from scalelab.manifold.sweep import run_manifold_sweep
from scalelab.manifold.theorem import online_checks

TINY = MANIFOLD_PRESETS["theorem-width"].replace(
    dims=(2,), n_values=(100, 400), online_dims=(2,), online_widths=(4, 8, 16),
    online_seeds=(0, 1), online_steps=40, n_test=512, val_size=64, id_points=1024,
)  # fmt: skip


def test_the_preset_runs_online_runs_alone_with_steps_growing_with_width() -> None:
    cfg = MANIFOLD_PRESETS["theorem-width"]
    names = [s.name for s in specs_for(cfg)]
    assert not [n for n in names if n.startswith(("data", "wide", "model"))]
    assert len([n for n in names if n.startswith("online_d")]) == 2 * 5 * 3  # d, width, seed
    assert len([n for n in names if n.startswith("online_long")]) == 2 * 5  # seed 0 only
    assert [cfg.schedule_for(None, w).max_steps for w in (4, 8, 64)] == [2000, 4000, 32000]
    assert cfg.schedule_for(None, 64, 3).max_steps == 96000
    # a config without the new fields keeps its old schedule: every width online_steps
    v1 = MANIFOLD_PRESETS["theorem-v1"]
    assert {v1.schedule_for(None, w).max_steps for w in v1.online_widths} == {v1.online_steps}


def test_online_only_needs_online_runs() -> None:
    with pytest.raises(ConfigError, match="online_only needs online runs"):
        TINY.replace(online_dims=(), online_widths=()).validate()


def test_tripled_steps_check_on_a_real_sweep(tmp_path: Path) -> None:
    table = run_manifold_sweep(TINY, tmp_path / "s", quiet=True)
    online = table[table["task"] == "online"]
    long = table[table["task"] == "online_long"]
    assert sorted(online["seed"].unique()) == [0, 1] and set(long["seed"]) == {0}
    steps = online[online["seed"] == 0].set_index("n_embd")["steps"]
    assert steps.to_dict() == {4: 40, 8: 80, 16: 160}
    assert long.set_index("n_embd")["steps"].to_dict() == {4: 120, 8: 240, 16: 480}
    (check,) = online_checks(table)
    # the rule, recomputed here: |log(long / base)| at seed 0 below that width's seed sd
    # (two seeds: sd = |difference| / sqrt(2))
    logs = np.log(online.pivot(index="n_embd", columns="seed", values="test_mse_capped"))
    sd = (logs[0] - logs[1]).abs() / math.sqrt(2)
    change = np.log(long.set_index("n_embd")["test_mse_capped"]) - logs[0]
    want = [int(w) for w, c in change.items() if abs(c) < sd[w]]
    assert check.approx_limited == want
    assert sorted(check.approx_limited + check.steps_limited) == [4, 8, 16]
    assert check.steps_check.endswith(f"(seed sd {', '.join(f'{s:.2f}' for s in sd)})")


def test_a_width_that_more_steps_improve_is_optimisation_limited() -> None:
    rows = []
    for w, err in ((4, 0.4), (8, 0.2), (16, 0.1), (32, 0.05)):
        for seed, jitter in ((0, 1.0), (1, 1.05)):
            rows.append({"task": "online", "d": 2, "beta": 1.0, "n_embd": w, "seed": seed,
                         "params": 60 * w * w, "test_mse_capped": err * jitter,
                         "steps": 10, "best_step": 10})  # fmt: skip
        # 3x the steps: the widest halves its error, the rest move by 1%
        rows.append({"task": "online_long", "d": 2, "beta": 1.0, "n_embd": w, "seed": 0,
                     "test_mse_capped": err * (0.5 if w == 32 else 0.99)})  # fmt: skip
    (check,) = online_checks(pd.DataFrame(rows))
    assert check.approx_limited == [4, 8, 16] and check.steps_limited == [32]


def test_an_unstable_width_does_not_pass_the_others_changes_as_noise() -> None:
    """Seen at d = 2 (docs/benchmarks/manifold.md § 4): width 64 diverged on two of three
    seeds, and the sd pooled over widths (0.64) let width 4's change (−0.44) pass as noise."""
    rows = []
    for w, err, spread in ((4, 0.05, 1.1), (8, 0.02, 1.1), (16, 0.006, 1.1), (64, 0.007, 20.0)):
        for seed, jitter in ((0, 1.0), (1, spread), (2, 1 / spread)):
            rows.append({"task": "online", "d": 2, "beta": 1.0, "n_embd": w, "seed": seed,
                         "params": 16 * w * w, "test_mse_capped": err * jitter,
                         "steps": 10, "best_step": 10})  # fmt: skip
        # 3x the steps cut every stable width's error by half (log change −0.69)
        rows.append({"task": "online_long", "d": 2, "beta": 1.0, "n_embd": w, "seed": 0,
                     "test_mse_capped": err * (0.5 if w < 64 else 60.0)})  # fmt: skip
    table = pd.DataFrame(rows)
    (check,) = online_checks(table)
    assert check.approx_limited == [] and check.steps_limited == [4, 8, 16, 64]
    # the same changes against the sd pooled over widths would call the stable widths
    # approximation-limited: the case this rule guards against
    online = table[table["task"] == "online"]
    logs = np.log(online.pivot(index="n_embd", columns="seed", values="test_mse_capped"))
    pooled = math.sqrt(float(logs.var(axis=1, ddof=1).mean()))
    assert pooled > math.log(2) and logs.loc[4].std(ddof=1) < math.log(2) / 5
