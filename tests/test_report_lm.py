"""The LM-sweep report on synthetic sweep folders with known exponents, and the dispatcher's
handling of folders it cannot report on."""

from __future__ import annotations

import base64
import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scalelab.errors import InputError
from scalelab.intrinsic.protocol import BatchedEstimate
from scalelab.io import atomic_write_json, read_json
from scalelab.laws.fit.power_law import fit_power_law
from scalelab.laws.theory import predict_exponents
from scalelab.pipeline.report import report_sweep
from scalelab.probe.dimension import Dimension
from scalelab.probe.result import EstimateResult

SCHEDULE = {
    "policy": "converge",
    "patience": 4,
    "max_epochs": 40.0,
    "min_steps": 200,
    "step_cap": 20000,
}


def make_sweep(
    root: Path,
    kind: str = "data",
    *,
    exponent: float = 0.15,
    d: float | None = 8.0,
    ablation: bool = True,
) -> tuple[Path, np.ndarray, np.ndarray]:
    """A sweep folder as the sweeps write it: sweep.json, runs.csv, estimate.json, ablations."""
    sweep = root / f"{kind}-sweep"
    sizes = np.geomspace(2e4, 2e6, 7).round() if kind == "data" else np.geomspace(1e5, 1e7, 5)
    loss = 12.0 * sizes**-exponent * np.exp(np.random.default_rng(0).normal(0, 0.01, sizes.size))
    atomic_write_json(
        sweep / "sweep.json",
        {
            "kind": kind,
            "config": {"data_dir": "/x", "schedule": SCHEDULE},
            "provenance": {"git_revision": "abc123", "argv": ["scalelab", "sweep", kind]},
        },
    )
    runs = pd.DataFrame(
        {
            "run": [f"r{i}" for i in range(sizes.size)],
            "train_tokens": sizes.astype(int) if kind == "data" else 2_000_000,
            "params_non_embedding": 800_000 if kind == "data" else sizes.astype(int),
            "test_loss_nats": loss,
            "best_val_loss_nats": loss * 1.01,
            "stop_reason": ["patience"] * (sizes.size - 1) + ["max_steps"],
            "steps": 300,
        }
    )
    runs.to_csv(sweep / "runs.csv", index=False)
    if d is not None:
        batches = BatchedEstimate(
            dimension=d, dimension_se=0.4, batch_dimensions=[d - 0.4, d + 0.4], n_points=8192,
            n_duplicates_removed=0, batch_size=4096, n_points_used=8192, n_points_left_out=0,
            estimator="MLE", metric="euclidean", k=20,
        )  # fmt: skip
        saved = EstimateResult.measured(
            Dimension(batches, predict_exponents(d, 0.4)), beta=1.0, layer=-1,
            layer_name="final", settings={}, model={}, corpus={}, counts={}, timing={},
            files={}, request={}, provenance={},
        )  # fmt: skip
        atomic_write_json(sweep / "estimate.json", saved)
    if ablation:
        atomic_write_json(
            sweep / "ablations" / "layers.json",
            {
                "ablation": "layers",
                "rows": [{"layer": i, "dimension": 5.0 + i, "dimension_se": 0.2} for i in range(4)],
            },
        )
    return sweep, sizes, loss


def few_boots(sweep: Path) -> Path:
    """100 bootstrap resamples (fits.json, as the pipeline writes it) for a test that reads
    no interval: the bootstraps of both fit forms are most of a report's time."""
    atomic_write_json(sweep / "fits.json", {"power": {"n_boot": 100, "seed": 0}})
    return sweep


def test_data_sweep_report_shows_known_exponent_prediction_and_warnings(tmp_path: Path) -> None:
    sweep, sizes, loss = make_sweep(tmp_path)
    html_path, md_path = report_sweep(sweep)
    assert html_path == sweep / "report" / "report.html"
    md, page = md_path.read_text(), html_path.read_text()
    truth = fit_power_law(sizes, loss, n_boot=1000, seed=0)
    assert truth.exponent == pytest.approx(0.15, abs=0.01)
    rows = [line for line in md.splitlines() if line.startswith("| observed alpha_D")]
    assert len(rows) == 2  # both fit forms, each named
    assert f"| {truth.exponent:.4g} |" in rows[0] and "no E" in rows[0]
    lo, hi = truth.exponent_ci95
    assert f"[{lo:.3f}, {hi:.3f}]" in rows[0]
    assert "fit L = E + A·n^-α" in rows[1]
    pred = [line for line in md.splitlines() if line.startswith("| predicted alpha_D")]
    assert len(pred) == 1 and "| 0.2 |" in pred[0]  # 2/(2+8)
    # observed − predicted for the plain fit
    assert f"{truth.exponent - 0.2:.4g}" in rows[0]
    assert "WARNING: 1 run(s) (r6) ended without early stopping" in md
    assert "Training-length policy: converge" in md
    assert "abc123" in md and '"git_revision"' in md
    pngs = re.findall(r"base64,([A-Za-z0-9+/=]+)'", page)
    assert len(pngs) == 2  # loss vs data, and the layers ablation
    assert all(base64.b64decode(p)[:4] == b"\x89PNG" for p in pngs)
    assert (sweep / "report" / "report_files" / "figure2.png").exists()
    assert "Extrapolation check" in md


def test_model_sweep_report_uses_parameters_and_alpha_n(tmp_path: Path) -> None:
    sweep, sizes, loss = make_sweep(tmp_path, "model", exponent=0.3, d=6.0, ablation=False)
    out = tmp_path / "elsewhere"
    _, md_path = report_sweep(few_boots(sweep), out)
    assert md_path == out / "report.md" and not (sweep / "report").exists()
    md = md_path.read_text()
    truth = fit_power_law(sizes, loss, n_boot=100, seed=0)
    row = next(line for line in md.splitlines() if line.startswith("| observed alpha_N"))
    assert f"| {truth.exponent:.4g} |" in row
    pred = next(line for line in md.splitlines() if line.startswith("| predicted alpha_N"))
    assert f"| {2 / 6:.4g} |" in pred


def test_without_estimate_the_report_says_so(tmp_path: Path) -> None:
    sweep, _, _ = make_sweep(tmp_path, d=None, ablation=False)
    md = report_sweep(few_boots(sweep))[1].read_text()
    assert "No estimate.json" in md and "predicted alpha_D" not in md
    assert "observed alpha_D" in md


def test_too_few_runs_still_reports_runs(tmp_path: Path) -> None:
    sweep, _, _ = make_sweep(tmp_path, ablation=False)
    runs = pd.read_csv(sweep / "runs.csv").head(2)
    runs.to_csv(sweep / "runs.csv", index=False)
    md = report_sweep(sweep)[1].read_text()
    assert "No power fit" in md and "at least 3" in md
    assert "| r1 |" in md


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda d: None, "no sweep.json"),
        (lambda d: (d / "sweep.json").write_text("{not json"), "cannot read"),
        (lambda d: atomic_write_json(d / "sweep.json", {"kind": "weird"}), "kind 'weird'"),
        (lambda d: atomic_write_json(d / "sweep.json", {"kind": "data"}), "no readable runs.csv"),
    ],
)
def test_bad_sweep_folders_raise_and_write_nothing(tmp_path: Path, setup, message) -> None:
    folder = tmp_path / "s"
    folder.mkdir()
    setup(folder)
    with pytest.raises(InputError, match=re.escape(message)):
        report_sweep(folder)
    assert not (folder / "report").exists()


def test_runs_table_missing_loss_column(tmp_path: Path) -> None:
    sweep, _, _ = make_sweep(tmp_path, ablation=False)
    pd.read_csv(sweep / "runs.csv").drop(columns="test_loss_nats").to_csv(
        sweep / "runs.csv", index=False
    )
    with pytest.raises(InputError, match="test_loss_nats"):
        report_sweep(sweep)


def test_cli_report_success_and_bad_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from scalelab.cli import main

    def call(*args: object) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["scalelab", "report", *map(str, args)])
        with pytest.raises(SystemExit) as info:
            main()
        out, err = capsys.readouterr()
        return info.value.code or 0, out, err

    sweep, _, _ = make_sweep(tmp_path, ablation=False)
    code, out, err = call(few_boots(sweep), "--out", tmp_path / "r", "--json")
    assert code == 0, err
    assert json.loads(out)["html"] == str(tmp_path / "r" / "report.html")
    code, out, err = call(tmp_path / "missing")
    assert code == 2 and "no sweep.json" in err and err.count("\n") == 1


def test_report_uses_the_pipelines_bootstrap_settings(tmp_path: Path) -> None:
    sweep, sizes, loss = make_sweep(tmp_path, ablation=False)
    atomic_write_json(sweep / "fits.json", {"power": {"n_boot": 200, "seed": 5}})
    md = report_sweep(sweep)[1].read_text()
    lo, hi = fit_power_law(sizes, loss, n_boot=200, seed=5).exponent_ci95
    row = next(line for line in md.splitlines() if line.startswith("| observed alpha_D"))
    assert f"[{lo:.3f}, {hi:.3f}]" in row and "200 resamples, seed 5" in md


def test_dispatcher_calls_the_section_of_the_saved_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One registry (`KINDS`), one protocol: the kind's analysis runs on the folder and its
    section draws what it returned, `draw(analysis, report, sweep_dir)`."""
    import types

    from scalelab.report import build as build_mod

    calls = []
    section = types.ModuleType("scalelab.report.toy_section")
    analysis = types.ModuleType("toy_analysis")

    def draw(a: dict, report, sweep_dir: Path) -> None:
        calls.append((a, sweep_dir))
        report.paragraph(f"toy section body, width {a['width']}")

    section.draw = draw
    analysis.analyse = lambda folder: {"width": read_json(folder / "sweep.json")["config"]["width"]}
    monkeypatch.setitem(sys.modules, "scalelab.report.toy_section", section)
    monkeypatch.setitem(sys.modules, "toy_analysis", analysis)
    kind = build_mod.SweepKind("toy_section", "toy_analysis:analyse")
    monkeypatch.setitem(build_mod.KINDS, "toy", kind)
    folder = tmp_path / "toy"
    atomic_write_json(folder / "sweep.json", {"kind": "toy", "config": {"width": 7}})
    md = report_sweep(folder)[1].read_text()
    assert calls == [({"width": 7}, folder)]
    assert "toy section body, width 7" in md and '"width": 7' in md
    assert md.index("toy section body") < md.index("Configuration and provenance")


def test_build_report_draws_only_an_analysis_it_is_handed(tmp_path: Path) -> None:
    """report/ starts no analysis: `build_report` on a data sweep without `analysis=` refuses
    and writes nothing; handed `pipeline.report.analyse`'s object it draws that object."""
    from scalelab.pipeline.report import analyse
    from scalelab.report.build import build_report

    sweep = few_boots(make_sweep(tmp_path, ablation=False)[0])
    with pytest.raises(InputError, match="draws its analysis: pass analysis="):
        build_report(sweep)
    assert not (sweep / "report").exists()
    a = analyse(sweep)
    md = build_report(sweep, analysis=a)[1].read_text()
    assert f"| {a.fits[0].exponent:.4g} |" in md


def test_the_report_draws_the_analysis_it_is_given(tmp_path: Path) -> None:
    """report/ fits nothing: `sweeps.analysis.analyse_sweep` fits (both forms, the log-log one
    equal to `fit_power_law` on the finished runs; the holdout check per form), and
    `report.lm.draw` shows the fit it is handed: a fit replaced by hand is what the page shows."""
    from dataclasses import replace

    from scalelab.report.document import Report
    from scalelab.report.lm import draw
    from scalelab.sweeps.analysis import analyse_sweep

    sweep, sizes, loss = make_sweep(tmp_path, ablation=False)
    a = analyse_sweep(few_boots(sweep))
    truth = fit_power_law(sizes, loss, n_boot=100, seed=0)
    assert [f.form for f in a.fits] == ["power", "power+E"]
    assert a.fits[0].exponent == truth.exponent and a.fits[0].exponent_ci95 == truth.exponent_ci95
    assert [form for form, _ in a.holdout] == ["power", "power+E"]
    page = Report("hand")
    draw(replace(a, fits=[replace(a.fits[0], exponent=0.1234)]), page, sweep)
    md = page.write(tmp_path / "page")[1].read_text()
    observed = [line for line in md.splitlines() if line.startswith("| observed alpha_D")]
    assert len(observed) == 1 and "| 0.1234 |" in observed[0]
    assert f"{truth.exponent:.4g}" not in md
