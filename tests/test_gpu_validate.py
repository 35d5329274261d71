"""The named validate presets (gpu, cpu-hour, model-side); bench/gpu_validate.py at toy size."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from test_sweeps_data import make_store

import scalelab.pipeline.run as pipeline_run
from scalelab.errors import ConfigError, InputError
from scalelab.lm.model import GPT, GPTConfig
from scalelab.pipeline import PipelineConfig
from scalelab.pipeline.config import VALIDATE_PRESETS, flat_defaults
from scalelab.sweeps.model import parse_model

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "bench" / "gpu_validate.py"


def _bench():
    spec = importlib.util.spec_from_file_location("gpu_validate", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _non_embedding(cfg: PipelineConfig, shape: str) -> int:
    """Counted on the real model (on the meta device: no memory, no init cost)."""
    base = GPTConfig(vocab_size=cfg.vocab_size, block_size=cfg.train.block_size)
    with torch.device("meta"):
        return GPT(parse_model(shape, base)[1]).num_params(non_embedding=True)


def test_gpu_preset_spans_the_reliable_scale() -> None:
    cfg = PipelineConfig.from_preset("gpu")
    sizes = [_non_embedding(cfg, s) for s in (cfg.model, *cfg.model_sweep.models)]
    assert all(4e6 <= n <= 100e6 for n in sizes), sizes
    assert 10e6 <= cfg.min_tokens < cfg.max_tokens <= 1e9
    assert 10e6 <= cfg.model_sweep_tokens <= 1e9
    # The data sweep's model is one of the model sweep's (its run is reused, not retrained).
    assert cfg.model in cfg.model_sweep.models


def test_cpu_hour_preset_resolves_and_fits_shakespeare() -> None:
    cfg = PipelineConfig.from_preset("cpu-hour")
    assert cfg.max_tokens <= 1_577_799  # shakespeare's train split with BPE 2048
    sizes = sorted(_non_embedding(cfg, s) for s in cfg.model_sweep.models)
    assert math.log10(sizes[-1] / sizes[0]) >= 1.5  # widths over >= 1.5 decades
    assert cfg.model in cfg.model_sweep.models


def test_model_side_preset_is_dominated_by_non_embedding_and_never_data_limited(
    tmp_path: Path,
) -> None:
    from scalelab.pipeline.steps import MAX_PASSES
    from scalelab.pipeline.store import refuse_small_store

    cfg = PipelineConfig.from_preset("model-side")
    base = GPTConfig(vocab_size=cfg.vocab_size, block_size=cfg.train.block_size)
    for shape in cfg.model_sweep.models:
        with torch.device("meta"):
            model = GPT(parse_model(shape, base)[1])
        total = sum(p.numel() for p in model.parameters())
        non_emb = model.num_params(non_embedding=True)
        assert non_emb > total - non_emb, shape  # more than half of every model
    sizes = sorted(_non_embedding(cfg, s) for s in cfg.model_sweep.models)
    assert math.log10(sizes[-1] / sizes[0]) >= 1.5
    # The step cap bounds the passes at the best step: at most MAX_PASSES for every model.
    cap = cfg.schedule.step_cap
    assert cap * cfg.train.batch_size * cfg.train.block_size <= MAX_PASSES * cfg.model_sweep_tokens
    # A store smaller than the model sweep's tokens is refused, with the fix.
    store = make_store(tmp_path / "store")
    with pytest.raises(InputError, match="fewer than the model sweep's 2,048,000"):
        small = PipelineConfig.from_options(cfg, id_batch_size=64, train_block_size=64)
        refuse_small_store(store, small, [200, 400])


def test_from_preset_overrides_and_refuses_unknown_names() -> None:
    cfg = PipelineConfig.from_preset("gpu", max_tokens=50_000_000, points=5)
    assert (cfg.max_tokens, cfg.points, cfg.train.block_size) == (50_000_000, 5, 512)
    assert VALIDATE_PRESETS["gpu"]["max_tokens"] == 100_000_000  # the preset itself is unchanged
    with pytest.raises(ConfigError, match=r"unknown preset 'huge'.*cpu-hour"):
        PipelineConfig.from_preset("huge")
    with pytest.raises(ConfigError, match="min_tokens < max_tokens"):
        PipelineConfig.from_preset("gpu", max_tokens=5_000_000)


class _Stop(Exception):
    pass


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], {"model": "4x320x5", "points": 4, "max_tokens": 100_000_000, "train_block_size": 512}),
        # Given on the command line, even at PipelineConfig's own default (7), it wins.
        (["--points", "7", "--model", "2x64"], {"points": 7, "model": "2x64", "vocab_size": 4096}),
        (["--model-sweep", ""], {"model_sweep": (), "min_tokens": 10_000_000}),
    ],
)
def test_cli_preset_with_explicit_options(monkeypatch, tmp_path, run_cli, args, expected) -> None:
    seen = {}

    def fake(out, cfg, **_kw):
        seen["cfg"] = cfg
        raise _Stop

    monkeypatch.setattr(pipeline_run, "run_pipeline", fake)
    with pytest.raises(_Stop):
        run_cli("validate", "--preset", "gpu", "--corpus", "x", "--out", tmp_path / "o", *args)
    assert {k: flat_defaults(seen["cfg"])[k] for k in expected} == expected


def test_cli_refuses_a_corpus_too_small_for_the_gpu_preset(tmp_path, run_cli) -> None:
    store = make_store(tmp_path / "store")
    out = tmp_path / "out"
    result = run_cli("validate", "--preset", "gpu", "--corpus", store, "--out", out, "--quiet")
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "give a larger corpus" in result.stderr and "use --max-tokens" in result.stderr
    assert "100,000,000" in result.stderr and not out.exists()
    result = run_cli("validate", "--preset", "tiny-gpu", "--corpus", store, "--out", out)
    assert result.returncode == 2 and "unknown preset" in result.stderr and not out.exists()


def test_code_corpus_keeps_one_copy_of_each_file(tmp_path: Path) -> None:
    bench = _bench()
    for name, text in [("a/x.py", "x = 1\n"), ("b/x.py", "x = 1\n"), ("b/y.py", "y = 2\n")]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "b" / "bad.py").write_bytes(b"caf\xe9\n")  # not UTF-8: skipped
    (tmp_path / "b" / "empty.py").write_text("\n")
    dest = bench.python_code_corpus(tmp_path / "c.jsonl", [tmp_path / "a", tmp_path / "b"])
    docs = [json.loads(line) for line in dest.read_text().splitlines()]
    assert sorted(d["text"] for d in docs) == ["x = 1\n", "y = 2\n"]


def test_flops_per_token_closed_form() -> None:
    # 1 layer, width 32, vocab 512, context 32, by hand: 6 (12 * 32^2 + 512 * 32) + 12 * 32 * 32
    cfg = GPTConfig(vocab_size=512, block_size=32, n_layer=1, n_head=1, n_embd=32)
    assert cfg.train_flops_per_token == 6 * (12_288 + 16_384) + 12_288


def _script(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "SCALELAB_CPU_BF16": "0"}
    cmd = [sys.executable, str(SCRIPT), *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.slow
def test_toy_mode_runs_the_whole_path_on_the_cpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    done = _script("--toy", "--out", tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads((tmp_path / "gpu_validate.json").read_text())
    assert result["mode"] == "toy" and result["device"] == "cpu"
    assert [r["train_tokens"] for r in result["runs"]] == [1000, 2000, 4000]
    losses = [r["test_loss_nats"] for r in result["runs"]]
    assert all(math.isfinite(x) and x > 0 for x in losses)
    per_token = 6 * (12 * 32**2 + 512 * 32) + 12 * 32 * 32
    for row in result["plan"]:
        assert row["budget_tokens"] == row["max_steps"] * 8 * 32
        assert row["budget_flops"] == pytest.approx(row["budget_tokens"] * per_token)
    d = result["d_largest"]["dimension"]
    assert math.isfinite(d) and d > 0
    assert result["alpha_D_predicted"] == pytest.approx(2 / (2 + d))
    lo, hi = result["alpha_D_observed_ci95"]
    assert lo <= result["alpha_D_observed"] <= hi
    assert result["reference_matmul_flops"] > 0 and result["sweep_wall_s"] > 0
    # The preset's refusal of a too-small corpus, through the script's main() in this process
    # (the run above went through the script itself): one line, exit 2.
    store = tmp_path / "work" / "data"
    argv = ["--toy", "--out", tmp_path / "big", "--corpus", store, "--max-tokens", "9999999"]
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), *map(str, argv)])
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # what main() sets, undone after the test
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        _bench().main()
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1, err
    assert "give a larger corpus" in err and not (tmp_path / "big" / "gpu_validate.json").exists()
