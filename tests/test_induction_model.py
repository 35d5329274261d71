"""Induction models: causal, rounding where claimed, a short training run that learns the
task with two layers, checkpoints, sweeps, the report, and the CLI's error handling."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from scalelab.errors import CheckpointError, ConfigError, InputError
from scalelab.induction.config import InductionConfig
from scalelab.induction.model import InductionTransformer
from scalelab.induction.precision import Precision, round_to_bits
from scalelab.induction.train import (
    InductionTrainConfig,
    evaluate,
    load_induction_model,
    lr_at,
    train_induction,
)


def _model(**kw) -> InductionTransformer:
    cfg = InductionConfig(**{"alphabet_size": 5, "max_len": 12, "n_layer": 2, **kw})
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return InductionTransformer(cfg).double().eval()


@pytest.mark.parametrize("kw", [{}, {"mlp": True, "positions": "sinusoidal", "bos": False}])
def test_model_is_causal(kw: dict) -> None:
    model = _model(**kw)
    x = torch.randint(0, 5, (4, 12), generator=torch.Generator().manual_seed(1))
    y = x.clone()
    y[:, 7:] = (y[:, 7:] + 1) % 5
    with torch.no_grad():
        a, b = model(x), model(y)
    assert a.shape == (4, 12, 6)
    torch.testing.assert_close(a[:, :7], b[:, :7], rtol=0, atol=1e-12)
    assert (a[:, 7:] - b[:, 7:]).abs().max() > 1e-6


def test_rounding_happens_at_the_embedding_qkv_and_head_outputs() -> None:
    """Recompute a one-layer forward by hand with explicit softmax and rounding."""
    model = _model(n_layer=1, layer_norm=False, bias=False, n_head=2, n_embd=8)
    prec = Precision(5, "float")
    x = torch.randint(0, 5, (3, 10), generator=torch.Generator().manual_seed(2))
    r = lambda t: round_to_bits(t, 5, "float")  # noqa: E731
    idx = model.with_bos(x)
    h = r(model.tok.weight[idx] + model.pos[: idx.shape[1]])
    a = model.blocks[0].attn
    heads = lambda t: t.view(3, 11, 2, 4).transpose(1, 2)  # noqa: E731
    q, k, v = (r(heads(h @ w.weight.T)) for w in (a.q, a.k, a.v))
    s = (q @ k.transpose(-1, -2)) / 2.0
    s = s.masked_fill(torch.ones(11, 11, dtype=torch.bool).triu(1), float("-inf"))
    y = r(torch.softmax(s, -1) @ v).transpose(1, 2).reshape(3, 11, 8)
    expected = (h + y @ a.o.weight.T) @ model.head.weight.T
    with torch.no_grad():
        got = model(x, prec)
    torch.testing.assert_close(got, expected[:, 1:], rtol=1e-9, atol=1e-9)


def test_learning_rate_is_the_shared_schedule_by_hand() -> None:
    cfg = InductionTrainConfig(lr=1e-3, warmup_steps=4, max_steps=14)
    # warm-up (step + 1)/(warmup + 1), peak at step 4, cosine to lr/10 at the last step (13)
    assert [lr_at(s, cfg) for s in range(4)] == pytest.approx([2e-4, 4e-4, 6e-4, 8e-4])
    assert lr_at(4, cfg) == pytest.approx(1e-3) and lr_at(13, cfg) == pytest.approx(1e-4)
    assert lr_at(4 + 9 / 2, cfg) == pytest.approx(1e-4 + 0.5 * 9e-4)  # half-way: the mean


def test_model_rejects_bad_tokens_and_lengths() -> None:
    model = _model()
    with pytest.raises(InputError, match="max_len"):
        model(torch.zeros(1, 13, dtype=torch.long))
    with pytest.raises(InputError, match="token ids"):
        model(torch.full((1, 4), 5))
    with pytest.raises(ConfigError):
        InductionConfig(n_embd=10, n_head=3)


def test_two_layers_learn_the_task_and_checkpoints_round_trip(tmp_path: Path) -> None:
    mcfg = InductionConfig(alphabet_size=4, max_len=16, n_layer=2, n_head=2, n_embd=64)
    tcfg = InductionTrainConfig(n=16, max_steps=600, target_acc=0.97, eval_interval=25)
    model, result = train_induction(mcfg, tcfg, tmp_path / "run")
    assert result["stop_reason"] == "target" and result["acc_all"] >= 0.97
    # held-out check with a fresh generator, on the metric that separates the models
    fresh = evaluate(model, 16, np.random.default_rng(123), 512)
    assert fresh["acc_all"] > 0.9 and fresh["acc_hard"] > 0.9
    for name in ("config.json", "metrics.jsonl", "model.safetensors", "result.json"):
        assert (tmp_path / "run" / name).exists()
    loaded = load_induction_model(tmp_path / "run")
    x = torch.randint(0, 4, (8, 16), generator=torch.Generator().manual_seed(3))
    assert torch.equal(loaded.predict(x), model.predict(x))
    with pytest.raises(CheckpointError):
        load_induction_model(tmp_path / "missing")


def test_straight_through_training_at_p_bits_updates_the_weights(tmp_path: Path) -> None:
    mcfg = InductionConfig(alphabet_size=3, max_len=9, n_layer=1, n_head=1, n_embd=8)
    tcfg = InductionTrainConfig(n=9, max_steps=5, eval_interval=5, train_bits=3)
    model, result = train_induction(mcfg, tcfg, tmp_path)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        init = InductionTransformer(mcfg)
    pairs = zip(model.parameters(), init.parameters(), strict=True)
    moved = [not torch.equal(a, b) for a, b in pairs]
    assert all(moved)  # every parameter got a gradient through the rounding
    assert json.loads((tmp_path / "config.json").read_text())["train"]["train_bits"] == 3
    assert result["steps"] == 5


def _cli(capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch, *args: str):
    """Run the real entry point (`scalelab.cli.main`) in-process: (exit code, out, err)."""
    from scalelab.cli import main

    monkeypatch.setattr(sys, "argv", ["scalelab", "induction", *args])
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_solve_and_generate(capsys, monkeypatch) -> None:
    code, out, _ = _cli(capsys, monkeypatch, "solve", "0", "1", "0", "1", "1", "2", "0", "--json")
    assert code == 0
    assert json.loads(out)["output"] == [None, None, 1, 0, 1, None, 1]
    _, gen, _ = _cli(capsys, monkeypatch, "generate", "--kind", "hard", "--n", "9", "--json")
    rows = json.loads(gen)
    assert len(rows["inputs"]) == 3 and all(r[-1] == 2 for r in rows["inputs"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["generate", "--kind", "zigzag"], "--kind must be"),
        (["generate", "--kind", "hard", "--n", "2"], "n >= 3"),
        (["protocol", "--k", "4,x"], "--k must be comma-separated"),
        (
            ["evaluate", "/nonexistent/run"],
            "point at a folder written by `scalelab induction train`",
        ),
        (["train", "--out", "OUT", "--n", "10", "--alphabet", "2"], "alphabet_size >= 3"),
        (["construct", "--n", "0"], "max_len >= 1"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(
    args: list, message: str, tmp_path: Path, capsys, monkeypatch
) -> None:
    args = [str(tmp_path / "o") if a == "OUT" else a for a in args]
    code, _, err = _cli(capsys, monkeypatch, *args)
    assert code == 2
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o" / "result.json").exists()


def test_cli_entry_point_in_a_subprocess() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "scalelab", "induction", "generate", "--kind", "zigzag"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 2 and out.stderr.startswith("error: --kind must be")


def test_sweep_resumes_and_report_builds(tmp_path: Path) -> None:
    from scalelab.induction.config import InductionSweepConfig
    from scalelab.induction.sweep import run_induction_sweep
    from scalelab.report.document import Report
    from scalelab.report.induction import draw

    cfg = InductionSweepConfig(
        ns=(8,),
        alphabet_sizes=(3,),
        layers=(1, 2),
        eval_bits=(6,),
        max_steps=10,
        eval_samples=32,
    )
    table = run_induction_sweep(tmp_path, cfg, quiet=True)
    assert len(table) == 3 and set(table["model"]) == {"trained", "construction"}
    built = table.set_index("run").loc["S3_n8_construction"]
    assert built["acc_all"] == 1.0 and built["acc_hard"] == 1.0 and built["acc_hard_p6"] == 1.0
    result = tmp_path / "runs" / "S3_n8_L1_h2_m64_full_s0" / "result.json"
    stamp = result.stat().st_mtime_ns
    again = run_induction_sweep(tmp_path, cfg, quiet=True)  # resumes: nothing redone
    assert result.stat().st_mtime_ns == stamp
    pd.testing.assert_frame_equal(again, table)
    with pytest.raises(ConfigError):
        run_induction_sweep(tmp_path, cfg.replace(max_steps=11), quiet=True)
    report = Report("induction")
    draw(None, report, tmp_path)
    _, md = report.write(tmp_path / "report")
    text = md.read_text()
    assert "acc_hard" in text and "S3_n8_construction" in text and "figure1.png" in text
