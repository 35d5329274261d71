"""`manifold combine`: each curve from the sweep that decides it, on the field its runs were
trained on, with the same checks as in its own sweep."""

import json
from pathlib import Path

import pandas as pd
import pytest

from scalelab.errors import ConfigError, InputError
from scalelab.manifold.combine import MARKER, combine_sweeps, read_sources, select_by_validation
from scalelab.manifold.plan import MANIFOLD_PRESETS, config_from_json
from scalelab.manifold.sweep import run_manifold_sweep
from scalelab.manifold.theorem import summarise
from scalelab.runs.outdir import read_meta

SMALL = MANIFOLD_PRESETS["theorem-quick"].replace(
    dims=(1, 2), n_values=(24, 48, 96), seeds=(0,), n_test=256, val_size=32, n_embd=8,
    n_head=2, ffn_width=16, max_steps=20, patience=2, wide_width=16, id_points=300,
    hidden_id=False, ensemble=1,
)  # fmt: skip
# d = 1 again, with another design: more sizes (so another field cap), seeds and step cap
LONGER = SMALL.replace(dims=(1,), n_values=(24, 48, 96, 192), seeds=(0, 1), max_steps=30)


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("combine")
    run_manifold_sweep(SMALL, root / "a", quiet=True)
    run_manifold_sweep(LONGER, root / "b", quiet=True)
    return root / "a", root / "b"


def _curve(table: pd.DataFrame, d: int) -> pd.DataFrame:
    rows = table[table["task"].isin(["data", "wide"]) & (table["d"] == d)]
    return rows.sort_values("run").reset_index(drop=True)


def _checks(folder: Path) -> dict:
    cfg = config_from_json(read_meta(folder / "sweep.json")["config"])
    s = summarise(pd.read_csv(folder / "runs.csv"), cfg, folder)
    return {(c.kind, c.d): c for c in s.paired + s.data}


def test_each_curve_comes_from_its_last_source_with_its_own_field(
    sweeps: tuple[Path, Path], tmp_path: Path
) -> None:
    a, b = sweeps
    out = tmp_path / "combined"
    curves = combine_sweeps([a, b], out)
    assert [(c.d, c.source, c.runs, c.field_cap) for c in curves] == [
        (1, str(b), 8, 192), (2, str(a), 3, 96),
    ]  # fmt: skip
    table = pd.read_csv(out / "runs.csv")
    for d, src in ((1, b), (2, a)):
        pd.testing.assert_frame_equal(_curve(table, d), _curve(pd.read_csv(src / "runs.csv"), d))
        for run in _curve(table, d)["run"]:
            saved = (out / "runs" / run / "result.json").read_bytes()
            assert saved == (src / "runs" / run / "result.json").read_bytes()
    ids = table[table["task"] == "id"]
    assert sorted(ids["run"]) == ["id_d1", "id_d2"]
    assert (out / "runs/id_d1/result.json").read_bytes() == (
        b / "runs/id_d1/result.json"
    ).read_bytes()
    # the field each curve was trained on, not the one the union's largest n would cap
    cfg = config_from_json(read_meta(out / "sweep.json")["config"])
    assert cfg.problem(1, 1.0) == LONGER.problem(1, 1.0)
    assert cfg.problem(2, 1.0) == SMALL.problem(2, 1.0)
    assert cfg.replace(field_caps=()).problem(2, 1.0) != SMALL.problem(2, 1.0)
    # the checks of a curve are the ones its own sweep gives (paired and raw)
    mine, first, second = _checks(out), _checks(a), _checks(b)
    for (kind, d), check in mine.items():
        own = (second if d == 1 else first)[(kind, d)]
        assert (check.outcome, check.exponent, check.bayes_ratios) == (
            own.outcome, own.exponent, own.bayes_ratios,
        ), (kind, d)  # fmt: skip
    # the order decides: with a last, d = 1 comes from it
    combine_sweeps([b, a], out)
    sources = json.loads((out / MARKER).read_text())["curves"]
    assert [(c["d"], c["source"], c["runs"]) for c in sources] == [(1, str(a), 3), (2, str(a), 3)]
    assert not list(tmp_path.glob(".combined*"))  # nothing left beside it


def test_combine_refuses_what_it_cannot_join(sweeps: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = sweeps
    other = tmp_path / "other"
    run_manifold_sweep(SMALL.replace(dims=(2,), n_values=(24, 48), lr=1e-3), other, quiet=True)
    with pytest.raises(InputError, match=r"its lr is 0.001 where .* 0.002; combine sweeps of one"):
        combine_sweeps([a, other], tmp_path / "x")
    assert not (tmp_path / "x").exists()
    with pytest.raises(InputError, match="exists and is not a combined table"):
        combine_sweeps([a], b)
    out = tmp_path / "combined"
    combine_sweeps([a], out)
    with pytest.raises(InputError, match="a combined table itself"):
        combine_sweeps([out], tmp_path / "y")
    (out / MARKER).write_text('{"sources": []}')  # no curves
    with pytest.raises(InputError, match=r"is damaged .*rebuild the table"):
        read_sources(out)
    with pytest.raises(ConfigError, match="built from sweeps"):  # not a sweep to resume
        run_manifold_sweep(config_from_json(read_meta(out / "sweep.json")["config"]), out)


def test_select_takes_each_run_from_the_candidate_with_the_lower_validation_mse(
    sweeps: tuple[Path, Path], tmp_path: Path
) -> None:
    a, _ = sweeps
    other = tmp_path / "one-block"  # another estimator of d = 1 on the same draws
    run_manifold_sweep(SMALL.replace(dims=(1,), n_layer=1), other, quiet=True)
    out = tmp_path / "selected"
    curves = select_by_validation([a, other], out)
    key = ["run", "task"]
    first, second = (pd.read_csv(f / "runs.csv").set_index(key) for f in (a, other))
    runs = _curve(pd.read_csv(other / "runs.csv"), 1)["run"]
    table = pd.read_csv(out / "runs.csv")
    assert sorted(_curve(table, 1)["run"]) == sorted(runs)
    assert not (table["d"] == 2).any()  # one candidate only: not a selection
    wins = 0
    for run in runs:
        x, y = first.xs(run, level="run").iloc[0], second.xs(run, level="run").iloc[0]
        assert x["null_mse"] == y["null_mse"]  # the same test sample under both
        src, win = (a, x) if x["val_mse"] <= y["val_mse"] else (other, y)
        wins += src == a
        got = table[table["run"] == run].iloc[0]
        assert got["test_mse_capped"] == win["test_mse_capped"]
        assert got["cpu_time_s"] == pytest.approx(x["cpu_time_s"] + y["cpu_time_s"])
        saved = (out / "runs" / run / "result.json").read_bytes()
        assert saved == (src / "runs" / run / "result.json").read_bytes()
    assert [(c.d, c.runs, c.chosen) for c in curves] == [
        (1, 3, f"{a.name}: {wins}, {other.name}: {len(runs) - wins}")
    ]
    assert sorted(table.loc[table["task"] == "id", "run"]) == ["id_d1"]
    assert read_sources(out)[0]["chosen"] == curves[0].chosen
    assert {c.d for c in _checks(out).values()} == {1}  # the report's checks run on it
    with pytest.raises(InputError, match="at least two candidate"):
        select_by_validation([a], tmp_path / "x")
    noisy = tmp_path / "noisy"
    run_manifold_sweep(SMALL.replace(dims=(1,), n_values=(24,), noise_std=0.3), noisy, quiet=True)
    with pytest.raises(InputError, match=r"its \(d=1, β=1\) problem differs"):
        select_by_validation([a, noisy], tmp_path / "x")
    assert not (tmp_path / "x").exists()
