"""compare-depth, the train on_eval hook, the separation table, and the new commands' bad
inputs (one line on stderr, exit 2, nothing written)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from scalelab.induction.compare_depth import DepthConfig, compare_depth
from scalelab.induction.separation import (
    SeparationConfig,
    binary_entropy,
    gather_rows,
    index_ceiling,
)
from scalelab.lm.config import GPTConfig, TrainConfig
from scalelab.lm.train import train
from scalelab.text.corpora import Corpus, Document
from scalelab.text.store import prepare_corpus


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import argparse

    text = Path(argparse.__file__).read_text(encoding="utf-8")
    docs = tuple(Document(f"p{i}", p) for i, p in enumerate(text.split("\n\n")) if p.strip())
    out = tmp_path_factory.mktemp("depth") / "store"
    corpus = Corpus("argparse", "PSF-2.0", "test", docs)
    return prepare_corpus(corpus, out, vocab_size=300, seed=0, test_fraction=0.1, quiet=True)


def test_on_eval_adds_fields_and_leaves_training_unchanged(store: Path, tmp_path: Path) -> None:
    model_cfg = GPTConfig(  # dropout: training consumes the global RNG the hook also draws
        vocab_size=300, block_size=32, n_layer=1, n_head=2, n_embd=16, dropout=0.1
    )
    train_cfg = TrainConfig(batch_size=4, max_steps=6, eval_interval=3, warmup_steps=1)
    calls = []

    def on_eval(model: torch.nn.Module) -> dict:
        calls.append(model.training)
        torch.randn(3)  # even a careless hook: the trainer's RNG state is not affected
        return {"extra": 1.5}

    a = train(model_cfg, train_cfg, store, tmp_path / "a", quiet=True, on_eval=on_eval)
    b = train(model_cfg, train_cfg, store, tmp_path / "b", quiet=True)
    assert a.test_loss_nats == b.test_loss_nats
    rows = [json.loads(x) for x in (tmp_path / "a" / "metrics.jsonl").read_text().splitlines()]
    assert [r["extra"] for r in rows] == [1.5, 1.5] and calls == [False, False]


def test_compare_depth_equal_params_and_curves(store: Path, tmp_path: Path) -> None:
    cfg = DepthConfig(
        block_size=16,
        n_embd=16,
        n_head=2,
        max_steps=4,
        eval_interval=2,
        batch_size=4,
        n_sequences=2,
        icl_windows=2,
    )
    assert cfg.one_layer_n_embd == 22  # ≈ √2 · 16, a multiple of 2
    summary = compare_depth(store, tmp_path / "d", cfg, quiet=True)
    one, two = summary["models"][1], summary["models"][0]
    assert two["model"].startswith("2 layers") and one["model"].startswith("1 layer")
    # 12·m² per layer (+ small terms): 22² ≈ 2·16²
    assert abs(one["params_non_embedding"] / two["params_non_embedding"] - 1) < 0.1
    for rows in summary["curves"].values():
        assert [r["step"] for r in rows] == [2, 4]
        assert all(0 <= r["induction_max"] <= 1 and np.isfinite(r["icl_score"]) for r in rows)
    # rerun: finished runs are reused, same numbers
    again = compare_depth(store, tmp_path / "d", cfg, quiet=True)
    assert again["models"] == summary["models"]
    from scalelab.pipeline.report import report_sweep

    html, md = report_sweep(tmp_path / "d")
    assert html.is_file()
    text = md.read_text()  # the experiments' one section: the command's table, its figure
    assert "## Experiment: scalelab induction compare-depth" in text
    assert "head formed at" in text and "depth.png" in text
    with pytest.raises(Exception, match="different config"):
        compare_depth(store, tmp_path / "d", cfg.replace(max_steps=6), quiet=True)


def test_compare_depth_command_resumes_the_library_folder(
    store: Path, tmp_path: Path, run_cli
) -> None:
    """The registered command on a folder the library made: both runs are reused (same
    numbers), the table is printed and the figure and marker written; another store is
    refused by the marker before any work."""
    cfg = DepthConfig(
        block_size=16, n_embd=16, n_head=2, max_steps=2, eval_interval=2, batch_size=4,
        n_sequences=2, icl_windows=2,
    )  # fmt: skip
    summary = compare_depth(store, tmp_path / "d", cfg, quiet=True)
    args = ["--block-size", "16", "--width", "16", "--n-head", "2", "--steps", "2"]
    args += ["--eval-interval", "2", "--batch-size", "4", "--sequences", "2", "--icl-windows", "2"]
    res = run_cli("induction", "compare-depth", "--data", store, "--out", tmp_path / "d", *args)
    assert res.returncode == 0, res.stderr
    assert "head formed at" in res.stdout and (tmp_path / "d" / "depth.png").is_file()
    marker = json.loads((tmp_path / "d" / "experiment.json").read_text())
    assert marker["experiment"] == "compare-depth" and marker["config"]["data"] == str(store)
    again = json.loads((tmp_path / "d" / "depth.json").read_text())
    assert again["models"] == summary["models"]
    other = tmp_path / "other"
    shutil.copytree(store, other)
    res = run_cli("induction", "compare-depth", "--data", other, "--out", tmp_path / "d", *args)
    assert res.returncode == 2 and "is not the one" in res.stderr, res.stderr


def test_heads_command_on_a_run_folder(store: Path, tmp_path: Path, run_cli) -> None:
    """`induction heads` end to end on a trained run: lm.load, ICL on its token store, the
    report; the scores match the library called on the same weights."""
    from scalelab.lm.checkpoint import load_model
    from scalelab.probe.heads import HeadScoreConfig, from_gpt, head_scores

    cfg = DepthConfig(
        block_size=16,
        n_embd=16,
        n_head=2,
        max_steps=2,
        eval_interval=2,
        batch_size=4,
        n_sequences=2,
        icl_windows=2,
    )
    compare_depth(store, tmp_path / "d", cfg, quiet=True)
    run = tmp_path / "d" / "runs" / "L2"
    res = run_cli(
        "induction",
        "heads",
        "--model",
        run,
        "--corpus",
        store,
        "--out",
        tmp_path / "h",
        "--sequences",
        "4",
        "--icl-windows",
        "4",
    )
    assert res.returncode == 0, res.stderr
    saved = json.loads((tmp_path / "h" / "heads.json").read_text())
    assert (tmp_path / "h" / "report.html").is_file()
    assert (saved["icl_early"], saved["icl_late"]) == (2, 15)
    from scalelab.text.tokenizer import load_tokenizer

    scored = from_gpt(load_model(run)[0], load_tokenizer(store / "tokenizer.json"))
    direct = head_scores(scored, HeadScoreConfig(n_sequences=4))
    np.testing.assert_allclose(saved["induction"], direct["induction"], rtol=1e-6)


def test_index_ceiling_closed_form() -> None:
    """Ceiling a solves 1 − H₂(1 − a) = 4·x·n/k; 1 once the message reaches k bits."""
    n = 201
    k = (n - 1) / 2
    x = 0.05
    a = index_ceiling(np.array([x]), n)[0]
    assert 1 - binary_entropy(np.array(1 - a)) == pytest.approx(4 * x * n / k, abs=2e-3)
    assert index_ceiling(np.array([0.2]), n)[0] == 1.0
    assert index_ceiling(np.array([1e-6]), n)[0] == pytest.approx(0.5, abs=0.01)


def test_gather_rows_exact_at_build_precision() -> None:
    rows = gather_rows(SeparationConfig(gather_ns=(17,), eval_instances=64))
    top = max(rows, key=lambda r: r["p"])
    assert top["acc_hard"] == 1.0 and top["h"] == 1 and top["m"] == 10
    assert top["hmp_over_n"] == pytest.approx(10 * top["p"] / 17)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["heads", "--model", "no/such/folder"], "does not exist"),
        (["gather", "--n", "65", "--bits", "3", "--mode", "fixed"], "needs at least 7 bits"),
        (["gather", "--alphabet", "2"], "three symbols"),
        (["compare-depth", "--data", "no/such", "--out", "OUT"], "not a token store"),
        (["separation", "--out", "OUT", "--mode", "bogus"], "mode must be one of"),
    ],
)
def test_bad_inputs_exit_2(run_cli, tmp_path: Path, args: list[str], message: str) -> None:
    args = [str(tmp_path / "out") if a == "OUT" else a for a in args]
    res = run_cli("induction", *args)
    assert res.returncode == 2
    assert message in res.stderr and res.stderr.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_heads_refuses_a_file_as_out(run_cli, tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    res = run_cli("induction", "heads", "--model", str(tmp_path), "--out", str(tmp_path / "f"))
    assert res.returncode == 2 and "is a file" in res.stderr
