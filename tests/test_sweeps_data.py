"""Data and model sweeps: the size grid, the training-length policies, run specs, a real
(tiny) model sweep in two worker processes, and bad CLI input (one line, exit 2, nothing
written). The kill-and-resume test is in test_sweeps_resume.py."""

from __future__ import annotations

import argparse
import json
import math
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scalelab.cli import main
from scalelab.errors import ConfigError
from scalelab.lm.config import GPTConfig, TrainConfig
from scalelab.lm.stopping import StopRule
from scalelab.sweeps import data as data_sweep
from scalelab.sweeps import model as model_sweep
from scalelab.sweeps.schedule import Schedule
from scalelab.text.corpora import Corpus, Document
from scalelab.text.store import TokenStore, prepare_corpus


def mini_paragraphs() -> list[str]:
    """Paragraphs of a few standard-library modules: a small real corpus (≈ 40k tokens)."""
    paragraphs = []
    for mod in (argparse, json.decoder, json.encoder, textwrap):
        text = Path(mod.__file__).read_text(encoding="utf-8")
        paragraphs += [p for p in text.split("\n\n") if p.strip()]
    return paragraphs


def make_store(out: Path) -> Path:
    """A small real token store of `mini_paragraphs`, BPE 384."""
    docs = tuple(Document(f"p{i}", p) for i, p in enumerate(mini_paragraphs()))
    corpus = Corpus("stdlib-mini", "PSF-2.0", "test", docs)
    return prepare_corpus(corpus, out, vocab_size=384, seed=0, test_fraction=0.1, quiet=True)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_store(tmp_path_factory.mktemp("sweeps") / "store")


def cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`scalelab ...` in-process through main() (library errors -> exit 2)."""
    old = sys.argv
    sys.argv = ["scalelab", *map(str, args)]
    try:
        with pytest.raises(SystemExit) as stop:
            main()
    finally:
        sys.argv = old
    out = capsys.readouterr()
    return stop.value.code or 0, out.out, out.err


TINY = ["--model", "1x32x1", "--block-size", "32", "--batch-size", "4", "--eval-batches", "2"]
TINY += ["--test-tokens", "1024", "--threads", "1", "--quiet"]


def test_geometric_grid_has_constant_ratio_and_exact_ends() -> None:
    sizes = data_sweep.geometric_grid(1_000, 1_000_000, 7)
    assert sizes[0] == 1_000 and sizes[-1] == 1_000_000 and len(sizes) == 7
    ratios = np.diff(np.log(sizes))
    assert np.allclose(ratios, math.log(10) / 2, atol=1e-3)  # 3 decades in 6 steps
    with pytest.raises(ConfigError, match="repeat"):
        data_sweep.geometric_grid(10, 12, 5)
    with pytest.raises(ConfigError, match="0 < min < max"):
        data_sweep.geometric_grid(100, 100, 3)


def test_sizes_must_increase_and_fit_the_split() -> None:
    assert data_sweep.check_sizes([100, 200], 500, 32) == [100, 200]
    for bad, msg in (
        ([200, 100], "not strictly increasing"),
        ([100, 100], "not strictly increasing"),
        ([100], "at least 2"),
        ([20, 100], "context length"),
        ([100, 600], "exceeds the 500"),
    ):
        with pytest.raises(ConfigError, match=msg):
            data_sweep.check_sizes(bad, 500, 32)


def test_policies_set_the_run_length() -> None:
    base = TrainConfig(batch_size=4, grad_accum=2, warmup_steps=50)  # 8 windows per step
    per_step = 8 * 32
    conv = Schedule(max_epochs=10.0, min_steps=20, step_cap=300, stop=StopRule(3, 0.25))
    small, mid, big = (conv.train_config(base, n, 32) for n in (256, 2560, 25600))
    assert (small.max_steps, mid.max_steps, big.max_steps) == (20, 100, 300)  # floor, 10 ep, cap
    assert small.stop.patience == mid.stop.patience == 3 and small.train_tokens == 256
    assert small.warmup_steps == 2 and big.warmup_steps == 30  # warm-up ≤ 10% of the run
    ep = Schedule(policy="epochs", epochs=2.5).train_config(base, 2560, 32)
    assert ep.max_steps == math.ceil(2.5 * 2560 / per_step) and ep.stop.patience is None
    tok = Schedule(policy="tokens", token_budget=10_000)
    assert {tok.train_config(base, n, 32).max_steps for n in (300, 3000)} == {40}
    with pytest.raises(ConfigError, match="token budget"):
        Schedule(policy="tokens")
    with pytest.raises(ConfigError, match="policy"):
        Schedule(policy="forever")


def test_specs_are_nested_prefixes_of_one_model(store: Path) -> None:
    model = GPTConfig(vocab_size=384, block_size=32, n_layer=1, n_head=1, n_embd=32)
    cfg = data_sweep.make_config(store, model, TrainConfig(), Schedule(), [1000, 3000, 9000])
    specs = data_sweep.specs(cfg)
    assert [s.params["train_tokens"] for s in specs] == [1000, 3000, 9000]
    assert [s.train.train_tokens for s in specs] == [1000, 3000, 9000]
    assert all(s.model == model for s in specs)
    assert sorted(s.name for s in specs) == [s.name for s in specs]  # names sort by size
    train = TokenStore(store, "train")
    assert np.array_equal(train.prefix(3000)[:1000], train.prefix(1000))


def test_model_sweep_in_two_workers_records_parameters(store: Path, tmp_path: Path) -> None:
    base = GPTConfig(vocab_size=384, block_size=32, n_layer=1, n_head=1, n_embd=32)
    train = TrainConfig(batch_size=4, eval_interval=5, eval_batches=2, test_tokens=1024)
    sched = Schedule(policy="tokens", token_budget=4 * 32 * 15)
    cfg = model_sweep.make_config(store, ["1x16x1", "2x32"], base, train, sched, 3000)
    table = model_sweep.model_sweep(tmp_path, cfg, workers=2, quiet=True)
    assert list(table["run"]) == ["m00-L1-W16-H1", "m01-L2-W32-H1"]
    assert list(table["n_layer"]) == [1, 2] and list(table["steps"]) == [15, 15]
    for run in table.itertuples():  # each run's own checkpoint has that many parameters
        cfg_run = json.loads((tmp_path / "runs" / run.run / "config.json").read_text())
        d, L = cfg_run["model"]["n_embd"], cfg_run["model"]["n_layer"]
        block = 4 * d * d + 4 * d + 8 * d * d + 5 * d + 4 * d  # attn, mlp, two LayerNorms
        assert run.params_non_embedding == L * block + 2 * d  # + final LayerNorm
        assert run.train_tokens_available == 3000
    assert pd.read_csv(tmp_path / "runs.csv")["run"].is_unique


def test_parse_model_shapes_and_presets() -> None:
    base = GPTConfig(vocab_size=384, block_size=32)
    assert model_sweep.parse_model("4x128", base)[1].n_head == 4
    label, cfg = model_sweep.parse_model("2x96x3", base)
    assert label == "L2-W96-H3" and (cfg.n_layer, cfg.n_embd, cfg.block_size) == (2, 96, 32)
    assert model_sweep.parse_model("tiny", base)[1].vocab_size == 384
    for bad in ("big", "4x100x3", "x12"):
        with pytest.raises(ConfigError):
            model_sweep.parse_model(bad, base)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--sizes", "4000,2000,8000"], "not strictly increasing"),
        (["--sizes", "2000,2000"], "not strictly increasing"),
        (["--sizes", "2000,x"], "comma-separated integers"),
        (["--sizes", "2000,99999999"], "exceeds the"),
        (["--sizes", "1000,2000", "--policy", "tokens"], "token budget"),
        (["--sizes", "1000,2000", "--policy", "forever"], "policy"),
        (["--sizes", "1000,2000", "--only", "n9"], "no run named"),
        (["--min-tokens", "100", "--max-tokens", "90"], "0 < min < max"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2_and_writes_nothing(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list, message: str
) -> None:
    out = tmp_path / "sweep"
    code, _, err = cli(["sweep", "data", "--data", store, "--out", out, *TINY, *extra], capsys)
    assert code == 2 and message in err and err.count("\n") == 1, err
    assert not (out / "runs").exists()


def test_cli_refuses_a_sweep_folder_from_another_config(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sweep"
    args = ["sweep", "data", "--data", store, "--out", out, *TINY, "--policy", "tokens"]
    sizes = ["--token-budget", "640", "--sizes", "1000,2000"]
    code, _, err = cli([*args, *sizes, "--only", "n0000002000"], capsys)  # one scheduler task
    assert code == 0, err
    assert list(pd.read_csv(out / "runs.csv")["run"]) == ["n0000002000"]
    assert not (out / "runs" / "n0000001000").exists()
    code, _, err = cli([*args, *sizes], capsys)
    assert code == 0, err
    assert list(pd.read_csv(out / "runs.csv")["run"]) == ["n0000001000", "n0000002000"]
    before = (out / "sweep.json").read_text()
    code, _, err = cli([*args, "--token-budget", "640", "--sizes", "1000,3000"], capsys)
    assert code == 2 and "different config" in err and err.count("\n") == 1
    code, _, err = cli([*args, "--token-budget", "1280", "--sizes", "1000,2000"], capsys)
    assert code == 2 and "different config" in err
    assert (out / "sweep.json").read_text() == before
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["n0000001000", "n0000002000"]
    code, _, err = cli(["sweep", "data", "--data", tmp_path / "nope", "--out", out], capsys)
    assert code == 2 and "corpus prepare" in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--corpus", "no-such-corpus"], "neither a built-in"),
        (["--points", "2"], "points must be >= 3"),
        (["--min-tokens", "900", "--max-tokens", "800"], "min_tokens < max_tokens"),
        (["--workers", "0"], "--workers"),
    ],
)
def test_demo_bad_input_is_one_line_exit_2_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list, message: str
) -> None:
    out = tmp_path / "demo"
    code, _, err = cli(["demo", "--out", out, *extra], capsys)
    assert code == 2 and message in err and err.count("\n") == 1, err
    assert not out.exists()


def test_cli_model_plan_lists_each_shape(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["sweep", "model", "--data", store, "--out", tmp_path / "m", "--plan", "--json"]
    code, out, err = cli([*args, "--models", "1x16x1,2x32,tiny", "--train-tokens", "3000"], capsys)
    assert code == 0, err
    rows = json.loads(out)
    assert [r["label"] for r in rows] == ["L1-W16-H1", "L2-W32-H1", "tiny"]
    assert {r["train_tokens"] for r in rows} == {3000} and not (tmp_path / "m").exists()
    code, _, err = cli([*args, "--models", "2x32,2x32"], capsys)
    assert code == 2 and "repeat a shape" in err
    code, _, err = cli([*args, "--models", "2x32,4x100x3"], capsys)
    assert code == 2 and "not divisible" in err
