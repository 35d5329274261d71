"""`scalelab forecast` through the real `main()`: a CSV of a known law, a validate-shaped
folder with a d source, held-out scoring with its report, the compute-optimal split, and bad
input as one line with exit code 2 and nothing written."""

import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

X = np.geomspace(2500, 250000, 7).round()


def law(x, e=1.5, a=12.0, alpha=0.2):
    return e + a * np.asarray(x, float) ** -alpha


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    from scalelab.cli import main

    def call(*args: object) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["scalelab", "forecast", *map(str, args)])
        with pytest.raises(SystemExit) as info:
            main()
        out, err = capsys.readouterr()
        return info.value.code or 0, out, err

    return call


def _csv(path: Path, **cols) -> Path:
    pd.DataFrame(cols).to_csv(path, index=False)
    return path


def test_csv_forecast_with_fixed_alpha_is_exact_and_inverts(tmp_path: Path, cli) -> None:
    table = _csv(tmp_path / "runs.csv", train_tokens=X, test_loss_nats=law(X))
    code, out, err = cli(table, "--alpha", 0.2, "--k", 4, "--loss", 2.0, "--json")
    assert code == 0, err
    res = json.loads(out)["forecasts"][0]
    rows = res["at"]
    assert [r["n"] for r in rows] == X[4:].tolist()
    np.testing.assert_allclose([r["loss"] for r in rows], law(X[4:]), rtol=1e-9)
    assert max(r["are"] for r in rows) < 1e-9
    assert res["data_needed"]["n"] == pytest.approx((12.0 / 0.5) ** (1 / 0.2), rel=1e-8)
    # the same request from a file (ForecastRequest's keys), an option given beside it winning
    request = tmp_path / "request.toml"
    request.write_text("alpha = 0.2\nk = 3\nloss = 2.0\n")
    code, again, err = cli(table, "--config", request, "--k", 4, "--json")
    assert code == 0, err
    assert json.loads(again)["forecasts"] == json.loads(out)["forecasts"]


def test_validate_folder_source_and_score_report(tmp_path: Path, cli) -> None:
    """A folder shaped like `scalelab validate`'s: the d source's α = 2/(2+d) is used, and
    --score writes forecast.json and the report."""
    val = tmp_path / "val"
    (val / "sweep").mkdir(parents=True)
    (val / "d" / "01-ref").mkdir(parents=True)
    _csv(val / "sweep" / "runs.csv", train_tokens=X, test_loss_nats=law(X), stop_reason="patience")
    src = {"label": "ref", "dimension": 8.0, "dimension_range": [7.0, 9.0]}
    (val / "d" / "01-ref" / "source.json").write_text(json.dumps(src))
    code, out, err = cli(val, "--source", "ref", "--k", 3, "--n-boot", 50, "--json")
    assert code == 0, err
    assert json.loads(out)["forecasts"][0]["forecast"]["alpha"] == pytest.approx(0.2)
    out_dir = tmp_path / "report"
    code, out, err = cli(val, "--score", "--n-boot", 50, "--out", out_dir)
    assert code == 0, err
    saved = json.loads((out_dir / "forecast.json").read_text())
    methods = {r["method"] for r in saved["score"]["summary"]}
    fixed = {"d: ref", "constant 0.095"}
    assert methods == {"log-log free", "E+A free", *fixed, *(f"{m}, E=0" for m in fixed)}
    d_rows = [r for r in saved["score"]["rows"] if r["method"] == "d: ref"]
    assert [r["k"] for r in d_rows] == [3, 4, 5]
    assert max(r["are_largest"] for r in d_rows) < 1e-6  # d = 8 gives the true α = 0.2
    assert (out_dir / "report.html").is_file() and (out_dir / "report.md").is_file()
    assert "summary: mean ARE" in out or "wrote" in out


def test_budget_split_from_a_grid_with_d(tmp_path: Path, cli) -> None:
    """--d 8 fixes a = 2/8, b = 2/10; N_opt follows the closed form."""
    n, d = (v.ravel() for v in np.meshgrid(np.geomspace(1e5, 1e8, 4), np.geomspace(1e6, 1e9, 4)))
    loss = 1.2 + 30.0 * n**-0.25 + 80.0 * d**-0.2
    grid = _csv(tmp_path / "grid.csv", N=n, C=6 * n * d, L=loss)
    code, out, err = cli(
        grid, "--budget", "1e18", "--d", 8, "--n-col", "N", "--c-col", "C", "--y", "L", "--json"
    )
    assert code == 0, err
    joint = json.loads(out)["joint"]
    assert joint["fit"]["E"] == pytest.approx(1.2, rel=1e-6)
    g = (0.25 * 30.0 / (0.2 * 80.0)) ** (1 / 0.45)
    assert joint["compute_optimal"][0]["N_opt"] == pytest.approx(
        g * (1e18 / 6) ** (0.2 / 0.45), rel=1e-6
    )
    assert math.isfinite(joint["compute_optimal"][0]["loss"])


@pytest.mark.parametrize(
    ("rows", "args", "needle"),
    [
        (2, ["--alpha", "0.2"], "at least 3"),
        (7, ["--source", "nope"], "no single d source"),
        (7, ["--k", "9"], "uses 3 to 7 runs"),
        (7, ["--alpha", "0.2", "--d", "8"], "at most one"),
    ],
)
def test_bad_input_is_one_line_exit_2_nothing_written(
    tmp_path: Path, cli, rows: int, args: list[str], needle: str
) -> None:
    table = _csv(tmp_path / "runs.csv", train_tokens=X[:rows], test_loss_nats=law(X[:rows]))
    out_dir = tmp_path / "out"
    code, _, err = cli(table, *args, "--out", out_dir)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and needle in err
    assert not out_dir.exists()


def test_non_positive_sizes_exit_2(tmp_path: Path, cli) -> None:
    table = _csv(
        tmp_path / "runs.csv", train_tokens=[0, 10, 100, 1000], test_loss_nats=[5, 4, 3, 2]
    )
    code, _, err = cli(table)
    assert code == 2 and "positive" in err and len(err.strip().splitlines()) == 1
