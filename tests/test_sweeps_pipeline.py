"""The demo pipeline end to end at toy size: every artefact written, the predicted exponent is
2/(2+d) of the estimate made with the sweep's largest run, the observed one is the fit of
runs.csv, and a second call redoes nothing (a re-run with other options is refused)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from test_sweeps_data import mini_paragraphs

from scalelab.errors import ConfigError
from scalelab.laws.fit import fit_power_law
from scalelab.pipeline import PipelineConfig, run_pipeline
from scalelab.sweeps.lm import Schedule


def toy_config(corpus: Path, **changes: object) -> PipelineConfig:
    return PipelineConfig(
        corpus=str(corpus),
        vocab_size=384,
        model="1x32x1",
        context_len=32,
        batch_size=4,
        min_tokens=1000,
        max_tokens=9000,
        points=4,
        eval_interval=5,
        eval_batches=2,
        schedule=Schedule(max_epochs=2.0, min_steps=10, step_cap=60, patience=2).to_dict(),
        id_per_doc=8,
        id_batch_size=200,
        n_boot=200,
        **changes,
    )


def test_pipeline_end_to_end_then_resumes_without_redoing(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.txt"  # a user text file: documents split on blank lines
    corpus.write_text("\n\n".join(mini_paragraphs()), encoding="utf-8")
    out = tmp_path / "demo"
    lines: list[str] = []
    cfg = toy_config(corpus)
    summary = run_pipeline(out, cfg, workers=1, quiet=True, say=lines.append)

    sweep = out / "sweep"
    runs = sorted(p.name for p in (sweep / "runs").iterdir())
    assert runs == [
        "n0000001000",
        "n0000002080",
        "n0000004327",
        "n0000009000",
    ]  # reference = largest run
    est = json.loads((sweep / "estimate.json").read_text())
    assert est["request"]["model"] == str((sweep / "runs" / runs[-1]).resolve())
    assert est["alpha_D"] == pytest.approx(2 / (2 + est["dimension"]))
    fits = json.loads((sweep / "fits.json").read_text())
    assert fits["predicted_alpha_D"] == est["alpha_D"]
    x = np.array([r["train_tokens"] for r in summary["runs"]], float)
    y = np.array([r["test_loss_nats"] for r in summary["runs"]], float)
    ols = -np.polyfit(np.log(x), np.log(y), 1)[0]  # the "power" fit is log-log OLS
    assert fits["power"]["exponent"] == pytest.approx(ols, rel=1e-9)
    assert fits["power"]["difference_observed_minus_predicted"] == pytest.approx(
        ols - est["alpha_D"]
    )
    assert fit_power_law(x, y, n_boot=200).exponent_ci95 == tuple(fits["power"]["exponent_ci95"])
    assert set(fits["stop_reasons"]) == set(runs)
    html = Path(summary["report_html"]).read_text(encoding="utf-8")
    assert "2/(2+d" in html and "stop" in html
    assert any(line.startswith("[5/5] report") for line in lines)
    assert json.loads((out / "demo.json").read_text())["wall_s"] > 0

    stamps = {p: p.stat().st_mtime_ns for p in sweep.rglob("*") if p.is_file()}
    again = run_pipeline(out, cfg, workers=1, quiet=True, say=lambda _: None)
    assert again["runs"] == summary["runs"] and again["dimension"] == summary["dimension"]
    assert [i["wall_s"] for i in again["invocations"]] == [summary["wall_s"], again["wall_s"]]
    changed = [p.name for p, t in stamps.items() if p.stat().st_mtime_ns != t]
    assert set(changed) <= {"runs.csv", "fits.json"}, changed  # tables rebuilt, nothing rerun
    with pytest.raises(ConfigError, match="different config"):
        run_pipeline(out, toy_config(corpus, seed=1), workers=1, quiet=True, say=print)
