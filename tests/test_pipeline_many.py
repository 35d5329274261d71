"""`validate-many` on fake validate folders (summary.json, d/*/source.json, a token store and
a tiny run where the second theory needs them): nothing is trained."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from scalelab.errors import InputError
from scalelab.io import atomic_write_json, read_json
from scalelab.laws.compare.baselines import CONSTANT, LOO
from scalelab.lm.checkpoint import save_weights
from scalelab.lm.config import GPTConfig
from scalelab.lm.model import GPT
from scalelab.pipeline import run as run_module
from scalelab.pipeline.declaration import entries, read_declaration
from scalelab.pipeline.many import preflight, validate_many
from scalelab.pipeline.predictors import CALIBRATED, EXTRAPOLATED, STATISTICS
from scalelab.probe import position_loss as position_loss_module
from scalelab.text.corpora import load_corpus
from scalelab.text.store import prepare_corpus

OBSERVED = {"A": 0.08, "B": 0.10, "C": 0.12}
PREDICTED = {"A": 0.09, "B": 0.11, "C": 0.10}
# d at batch 1000 / 2000 (K 20): 10 and 12 -> d_inf = 14 (1/b fit by hand), alpha 2/16
SENSITIVITY = [
    {"batch_size": 1000, "k": 20, "dimension": 10.0},
    {"batch_size": 2000, "k": 20, "dimension": 12.0},
    {"batch_size": 2000, "k": 10, "dimension": 9.0},
]


def _fake_validate(folder: Path, name: str, with_extras: bool) -> None:
    """The keys validate-many reads from a validate folder (see pipeline/run.py _summary)."""
    p = PREDICTED[name]
    source = {"label": "M", "dimension": 2 / p - 2, "alpha_D": p,
              "alpha_D_range": [p - 0.01, p + 0.01], "k": 20, "batch_size": 1000,
              "sensitivity": SENSITIVITY}  # fmt: skip
    o = OBSERVED[name]
    summary = {
        "sources": [source],
        "fits": {"data": {"power": {"exponent": o, "exponent_ci95": [o - 0.01, o + 0.01]}}},
        "runs": [{"run": "n0000001000", "train_tokens": 1000}, {"run": "big", "train_tokens": 9}],
        "config": {"corpus": "fake"},
    }
    atomic_write_json(folder / "summary.json", summary)
    if with_extras:
        d = folder / "d" / "01-M"
        d.mkdir(parents=True)
        atomic_write_json(d / "source.json", source)
        x = np.random.default_rng(0).random((2000, 4)).astype(np.float32)
        save_file({"embeddings": x}, str(d / "embeddings.safetensors"))


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("many")
    out = {}
    for name in OBSERVED:
        out[name] = root / name
        out[name].mkdir()
        _fake_validate(out[name], name, with_extras=name == "A")
    rng = np.random.default_rng(0)
    words = ["".join(rng.choice(list("abcdefgh"), rng.integers(2, 5))) for _ in range(80)]
    text = root / "a.txt"
    text.write_text(
        "\n\n".join(" ".join(rng.choice(words, rng.integers(80, 140))) for _ in range(150)),
        encoding="utf-8",
    )
    prepare_corpus(load_corpus(text), out["A"] / "data", vocab_size=300, quiet=True)
    run = out["A"] / "sweep" / "runs" / "n0000001000"
    run.mkdir(parents=True)
    gpt = GPT(GPTConfig(vocab_size=300, block_size=24, n_layer=1, n_head=1, n_embd=8), seed=0)
    save_weights(gpt, run / "checkpoint.safetensors")
    cfg = {"model": gpt.config.to_dict(), "train": {}, "data_dir": str(out["A"] / "data")}
    atomic_write_json(run / "config.json", cfg)
    return out


def _curve(_model, _store, *, context_len, **_kw):
    """A loss-vs-context curve with γ = 0.5 exactly (a random tiny model's curve is flat;
    the real curve is tested in test_language_statistics.py)."""
    n = np.arange(1.0, context_len)
    return {"context": n.tolist(), "loss_nats": (3.0 + 2.0 * n**-0.5).tolist()}


def test_scores_table_and_report_from_reused_folders(folders, tmp_path, monkeypatch):
    def refuse(*_a, **_k):
        raise AssertionError("a folder with summary.json must be read, not rerun")

    monkeypatch.setattr(run_module, "run_pipeline", refuse)
    monkeypatch.setattr(position_loss_module, "position_loss", _curve)
    out = tmp_path / "many"
    res = validate_many(out, inputs=[str(folders[n]) for n in OBSERVED], run=False, say=print)
    m = res["scores"]["M"]
    # |errors| .01, .01, .02 -> 0.04/3; constant .015, .005, .025 -> 0.015;
    # leave-one-out .11, .10, .09 -> |errors| .03, 0, .03 -> 0.02
    assert m["mae"] == pytest.approx(0.04 / 3)
    assert m["baselines"][CONSTANT]["mae"] == pytest.approx(0.015)
    assert m["baselines"][LOO]["mae"] == pytest.approx(0.02)
    # paired gains over the constant .005, -.005, .005: of the 27 resamples the extremes
    # (probability 1/27 each) are the interval's ends, [-.005, +.005]: not informative
    assert m["best_baseline"] == CONSTANT
    assert m["margin_ci95"] == pytest.approx([-0.005, 0.005])
    assert m["informative"] is False
    assert set(res["scores_by_kind"]) == {"all", "real"}  # plain inputs are real corpora
    rows = read_json(out / "table.json")
    ext = [r for r in rows if r["source"] == "M" + EXTRAPOLATED]
    assert len(ext) == 3 and ext[0]["d"] == pytest.approx(14.0)
    assert ext[0]["predicted_alpha_D"] == pytest.approx(2 / 16)
    cal = [r for r in rows if r["source"] == "M" + CALIBRATED]
    assert [r["corpus"] for r in cal] == ["A"]  # only A has saved points
    assert 3.5 < cal[0]["d"] < 4.5  # a 4-cube, 2 batches of 1,000
    stats = read_json(out / "cache" / "A" / "statistics.json")
    two = [r for r in rows if r["source"] == STATISTICS]
    g, b = stats["gamma"]["gamma"], stats["beta"]["beta"]
    assert g == pytest.approx(0.5, abs=1e-3) and stats["gamma"]["loss_inf"] == pytest.approx(3)
    assert stats["correlations"]["distance"][0] == 1.0 and stats["correlations"]["split"] == "train"
    assert [r["corpus"] for r in two] == ["A"]
    assert two[0]["predicted_alpha_D"] == pytest.approx(g / (2 * b))
    assert "error" in read_json(out / "cache" / "B" / "statistics.json")  # B has no store
    csv_head = (out / "table.csv").read_text().splitlines()[0]
    assert csv_head.startswith("corpus,kind,source,d,predicted_alpha_D")
    md = (out / "report" / "report.md").read_text()
    # MAE .04/3 with interval [.01, .02] (extreme resamples, 8/27 and 1/27); rho 0.5 by hand
    glance = "| M | 3 | 0.013 [0.010, 0.020] | constant | +0.002 [-0.005, +0.005] | 0.50"
    assert md.splitlines()[2].startswith("*all corpora: paired bootstrap over corpora")
    assert glance in md and "| not informative |" in md
    assert "On all corpora: M: MAE 0.0133 on 3 corpora" in md
    assert (out / "report" / "report_files" / "figure1.png").is_file()


def test_declaration_names_the_primary_and_unrun_folders_are_refused(folders, tmp_path):
    decl = tmp_path / "declared.toml"
    lines = ['[declaration]\nprimary = "M"\nband = 0.02\ndecision = "beat both"\n']
    for n in ("B", "C"):
        lines.append(f'[[corpus]]\nname = "{n}"\nfolder = "{folders[n]}"\n')
    decl.write_text("\n".join(lines), encoding="utf-8")
    res = validate_many(tmp_path / "out", declaration=decl, run=False, say=print)
    md = (tmp_path / "out" / "report" / "report.md").read_text().splitlines()
    assert md[2] == (
        "Declared primary source of d: M: not judged (fewer than 3 corpora) by the declared "
        "interval rule; margin +0.0000 over the constant 0.095, 95% interval [-0.0050, +0.0050]."
    )
    assert res["primary"] == "M"
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "pipeline.json").write_text("{}")
    with pytest.raises(InputError, match=r"no summary\.json"):
        validate_many(tmp_path / "o2", inputs=[str(empty), str(folders["A"])], run=False)


def test_cli_runs_and_refuses_bad_input(folders, tmp_path, run_cli):
    ok = run_cli("validate-many", folders["B"], folders["C"], "--out", tmp_path / "c", "--no-run")
    assert ok.returncode == 0, ok.stderr
    # B, C: |errors| .01, .02 -> MAE 0.015; constant .005, .025 -> 0.015 (a tie)
    assert "M: MAE 0.0150 on 2 corpora (95% interval [0.0100, 0.0200])" in ok.stdout
    assert "not judged: fewer than 3 corpora" in ok.stdout
    bad = run_cli("validate-many", "--out", tmp_path / "d")
    assert bad.returncode == 2 and "declaration" in bad.stderr


def test_flagged_observations_are_left_out_of_every_score_and_listed(tmp_path, monkeypatch):
    """A corpus without a power-law regime, and one the check calls BUDGET-LIMITED, are left
    out of the scores (listed with the reason, rows kept in the table); the two others are
    scored by hand: |errors| of M .01 and .01."""
    monkeypatch.setattr(position_loss_module, "position_loss", _curve)
    observed = {"A": 0.08, "B": 0.10, "C": 0.12, "D": 0.11}
    folders = []
    for name, o in observed.items():
        folder = tmp_path / name
        folder.mkdir()
        p = o + 0.01
        source = {"label": "M", "dimension": 2 / p - 2, "alpha_D": p,
                  "alpha_D_range": [p - 0.01, p + 0.01], "sensitivity": []}  # fmt: skip
        fits = {"power": {"exponent": o, "exponent_ci95": [o - 0.01, o + 0.01]}}
        fits["regime"] = {"power_law": name != "C", "outcome": "POWER LAW"}
        if name == "C":
            fits["regime"].update(outcome="UNDECIDED", power={"power": 0.19})
        summary = {
            "sources": [source],
            "fits": {"data": fits},
            "convergence": {"data": {"labels": ["BUDGET-LIMITED"] if name == "D" else []}},
            "runs": [{"run": "r", "train_tokens": 9}],
            "config": {"corpus": "fake"},
        }
        atomic_write_json(folder / "summary.json", summary)
        folders.append(str(folder))
    res = validate_many(tmp_path / "many", inputs=folders, run=False, say=lambda _m: None)
    assert res["left_out"] == {"C": "UNDECIDED (power 0.19)", "D": "budget-limited"}
    assert res["scores"]["M"]["corpora"] == ["A", "B"]
    assert res["scores"]["M"]["mae"] == pytest.approx(0.01)
    rows = read_json(tmp_path / "many" / "table.json")
    assert {r["corpus"]: r["excluded"] for r in rows if r["source"] == "M"} == {
        "A": "", "B": "", "C": "UNDECIDED (power 0.19)", "D": "budget-limited"
    }  # fmt: skip


def test_second_theory_is_scored_on_the_excess_exponent_beside_baselines_on_it(
    tmp_path, monkeypatch
):
    """The counts-based γ/(2β) is scored against each corpus's excess-loss exponent (not its
    plain slope), beside baselines computed on the excess exponents; a corpus whose E is not
    estimable is left out of that score only. By hand: excess .30, .40, .50 (D: E at its
    bound), predictions .32, .38, .55 -> |errors| .02, .02, .05, MAE .03; the leave-one-out
    mean of the excess exponents .45, .40, .35 -> |errors| .15, 0, .15, MAE .10."""
    from scalelab.pipeline.predictors import EXCESS, PLAIN, SECOND_THEORY
    from scalelab.probe import statistics as statistics_module

    monkeypatch.setattr(position_loss_module, "position_loss", _curve)
    excess = {"A": 0.30, "B": 0.40, "C": 0.50, "D": 0.45}
    predicted = {"A": 0.32, "B": 0.38, "C": 0.55, "D": 0.40}

    def counts(store, budget, cfg):
        p = predicted[Path(store).parent.name]
        return {"alpha_D": p, "alpha_D_range": [p - 0.01, p + 0.01], "budget": budget}

    monkeypatch.setattr(statistics_module, "predict_from_counts", counts)
    folders = []
    for name, x in excess.items():
        folder = tmp_path / name
        folder.mkdir()
        o = 0.1
        source = {"label": "M", "dimension": 18.0, "alpha_D": 0.1,
                  "alpha_D_range": [0.09, 0.11], "sensitivity": []}  # fmt: skip
        regime = {"power_law": True, "excess": {"exponent": x, "exponent_ci95": [x - 0.1, x + 0.1],
                                                "estimable": name != "D"}}  # fmt: skip
        fits = {"power": {"exponent": o, "exponent_ci95": [o - 0.01, o + 0.01]}, "regime": regime}
        runs = [{"run": "r", "train_tokens": 9}]
        summary = {"sources": [source], "fits": {"data": fits}, "runs": runs,
                   "config": {"corpus": "fake"}}  # fmt: skip
        atomic_write_json(folder / "summary.json", summary)
        folders.append(str(folder))
    res = validate_many(tmp_path / "many", inputs=folders, run=False, say=lambda _m: None)
    second = res["scores"][SECOND_THEORY]
    assert second["corpora"] == ["A", "B", "C"]
    assert second["mae"] == pytest.approx(0.03)
    assert second["baselines"][LOO]["mae"] == pytest.approx(0.10)
    assert res["left_out_excess"] == {"D": "excess exponent not estimable (E at its bound)"}
    assert res["scores"]["M"]["corpora"] == ["A", "B", "C", "D"]  # the plain side keeps D
    rows = read_json(tmp_path / "many" / "table.json")
    kinds = {(r["source"], r["observable"]) for r in rows}
    assert (SECOND_THEORY, EXCESS) in kinds and ("M", PLAIN) in kinds
    assert {r["observed_alpha_D"] for r in rows if r["source"] == SECOND_THEORY} == set(
        excess.values()
    )


def test_no_corpus_in_a_regime_is_a_reported_outcome_not_an_error(tmp_path, run_cli):
    """Every corpus without a power-law regime: nothing is scored, and the table, the report
    and the verdict list each corpus with its reason (exit 0: a measured outcome)."""
    folders = []
    for name in ("A", "B"):
        folder = tmp_path / name
        folder.mkdir()
        source = {"label": "M", "dimension": 18.0, "alpha_D": 0.1,
                  "alpha_D_range": [0.09, 0.11], "sensitivity": []}  # fmt: skip
        fits = {"power": {"exponent": 0.1, "exponent_ci95": [0.09, 0.11]},
                "regime": {"power_law": False}}  # fmt: skip
        atomic_write_json(folder / "summary.json", {
            "sources": [source], "fits": {"data": fits}, "runs": [{"run": "r", "train_tokens": 9}],
            "config": {"corpus": "fake"}})  # fmt: skip
        folders.append(folder)
    res = run_cli("validate-many", *folders, "--out", tmp_path / "m", "--no-run")
    assert res.returncode == 0, res.stderr
    assert "Not scored: 0 corpora can be scored" in res.stdout
    assert "A: NOT POWER LAW (tested before the three outcomes); B: NOT POWER LAW" in res.stdout
    rows = read_json(tmp_path / "m" / "table.json")
    assert {r["corpus"] for r in rows} == {"A", "B"} and all(r["excluded"] for r in rows)
    md = (tmp_path / "m" / "report" / "report.md").read_text()
    assert "Left out of every score, never replaced (2)" in md
    # at a glance: each source with how many corpora it predicts and how many are left out
    assert "| M | 2 | 2 | not scored |" in md and "Margins against every baseline" not in md
    assert "Left out of every score, shown and not judged" in md  # the figure, for reading


def test_the_plain_observation_is_the_slope_over_the_fit_range(tmp_path):
    """With a regime analysis the scored slope is the one over the fit range by rule
    (`regime.plain`), not the fit over every size (`fits.data.power`)."""
    folders = []
    for name, (whole, ranged) in {"A": (0.20, 0.08), "B": (0.30, 0.12)}.items():
        folder = tmp_path / name
        folder.mkdir()
        source = {"label": "M", "dimension": 18.0, "alpha_D": 0.1,
                  "alpha_D_range": [0.09, 0.11], "sensitivity": []}  # fmt: skip
        plain = {"exponent": ranged, "exponent_ci95": [ranged - 0.01, ranged + 0.01]}
        regime = {"power_law": True, "plain": plain}
        fits = {"power": {"exponent": whole, "exponent_ci95": [whole - 0.01, whole + 0.01]},
                "regime": regime}  # fmt: skip
        atomic_write_json(folder / "summary.json", {
            "sources": [source], "fits": {"data": fits}, "runs": [{"run": "r", "train_tokens": 9}],
            "config": {"corpus": "fake"}})  # fmt: skip
        folders.append(str(folder))
    res = validate_many(tmp_path / "m", inputs=folders, run=False, say=lambda _m: None)
    assert res["scores"]["M"]["mae"] == pytest.approx((0.02 + 0.02) / 2)  # |0.1 − .08|, |.1 − .12|


# a sweep, model sweep and ID batch small enough for the 60-document corpus below
FITS = (
    "vocab_size = 300, min_tokens = 500, max_tokens = 2000, points = 3, id_batch_size = 64, "
    "model_sweep_tokens = 2000"
)


def test_every_corpus_is_checked_before_any_training(folders, tmp_path):
    """A corpus too small for the sweep and a missing one are both refused, in one message,
    before anything trains (the finished folder is reused, not checked; the corpus that
    passes is prepared, then removed again with the output folder: nothing is left)."""
    small = tmp_path / "small.jsonl"
    rng = np.random.default_rng(0)
    words = ["".join(rng.choice(list("abcdefghij"), 4)) for _ in range(200)]
    docs = [" ".join(rng.choice(words, 60)) for _ in range(60)]  # ~18,000 characters
    small.write_text("".join(f'{{"text": "{d}"}}\n' for d in docs), encoding="utf-8")
    decl = tmp_path / "declared.toml"
    decl.write_text(
        '[declaration]\nprimary = "M"\n'
        f'[[corpus]]\nname = "B"\nfolder = "{folders["B"]}"\n'
        f'[[corpus]]\nname = "fits"\ncorpus = "{small}"\noptions = {{ {FITS} }}\n'
        f'[[corpus]]\nname = "small"\ncorpus = "{small}"\noptions = {{ vocab_size = 300 }}\n'
        f'[[corpus]]\nname = "gone"\ncorpus = "{tmp_path / "gone.jsonl"}"\n',
        encoding="utf-8",
    )
    said: list[str] = []
    with pytest.raises(InputError) as err:
        validate_many(tmp_path / "out", declaration=decl, say=said.append)
    msg = str(err.value)
    assert msg.startswith("2 corpora refused before any training")
    assert "small: the corpus's train split has" in msg and "gone: " in msg
    assert "\n" not in msg and said == [
        "checking 3 corpora before any training (token stores, sizes, ID points)"
    ]
    assert "fits:" not in msg and not (tmp_path / "out").exists()
    # with only the corpus that fits, the check passes and leaves its token store
    decl.write_text(
        f'[declaration]\nprimary = "M"\n[[corpus]]\nname = "fits"\ncorpus = "{small}"\n'
        f"options = {{ {FITS} }}\n",
        encoding="utf-8",
    )
    entry = read_declaration(decl)
    items = entries(entry, tmp_path / "out")
    preflight(tmp_path / "out", items, [], said.append)
    assert (tmp_path / "out" / "corpora" / "fits" / "data" / "meta.json").is_file()
