"""The training engine: schedule, sampler state, early stopping, checkpoints, exact resume after
SIGKILL of a real process, DDP with 2 gloo processes vs 1 process, and CLI errors (exit 2)."""

from __future__ import annotations

import importlib.util
import io
import itertools
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from scalelab.cli import main
from scalelab.errors import CheckpointError, ConfigError
from scalelab.lm.checkpoint import load_model, save_weights
from scalelab.lm.config import GPTConfig, TrainConfig, lr_at, planned_steps
from scalelab.lm.data import WindowSampler, tiling_starts, unigram_loss
from scalelab.lm.distributed import DistContext
from scalelab.lm.model import GPT
from scalelab.lm.stopping import StopRule
from scalelab.lm.train import evaluate, train
from scalelab.runs.migrate import FORMAT, KEY
from scalelab.text.corpora import Corpus, Document
from scalelab.text.store import TokenStore, prepare_corpus

SINGLE_THREAD = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small real token store: paragraphs of a few standard-library modules, BPE 384."""
    import argparse
    import json as json_mod
    import textwrap as tw

    paragraphs = []
    for mod in (argparse, json_mod.decoder, json_mod.encoder, tw):
        text = Path(mod.__file__).read_text(encoding="utf-8")
        paragraphs += [p for p in text.split("\n\n") if p.strip()]
    docs = tuple(Document(f"p{i}", p) for i, p in enumerate(paragraphs))
    corpus = Corpus("stdlib-mini", "PSF-2.0", "test", docs)
    out = tmp_path_factory.mktemp("lm") / "store"
    return prepare_corpus(corpus, out, vocab_size=384, seed=0, test_fraction=0.1, quiet=True)


def _train_args(store: Path, out: Path, *extra: str) -> list[str]:
    return [
        "train", "--data", str(store), "--preset", "tiny", "--out", str(out), "--block-size",
        "32", "--batch-size", "4", "--eval-batches", "2", "--test-tokens", "2048",
        "--warmup-steps", "5", "--quiet", *extra,
    ]  # fmt: skip


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Run `scalelab ...` in-process through `main()` (errors -> exit 2); (code, stderr)."""
    old = sys.argv
    sys.argv = ["scalelab", *args]
    try:
        with pytest.raises(SystemExit) as exit_info:
            main()
    finally:
        sys.argv = old
    return exit_info.value.code or 0, capsys.readouterr().err


def _metrics(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def test_lr_schedule_warmup_then_cosine_to_min() -> None:
    cfg = TrainConfig(lr=1e-3, min_lr=1e-4, warmup_steps=10, max_steps=110)
    lrs = [lr_at(s, cfg, 110) for s in range(110)]
    assert lrs[0] == pytest.approx(1e-3 / 11) and lrs[9] == pytest.approx(1e-3 * 10 / 11)
    assert lrs[10] == pytest.approx(1e-3)
    assert lrs[-1] == pytest.approx(1e-4)
    mid = 10 + 99 // 2  # half-way through the decay: the mean of lr and min_lr
    assert lr_at(10 + 99 / 2, cfg, 110) == pytest.approx(5.5e-4)
    assert all(a >= b for a, b in itertools.pairwise(lrs[10:])) and lrs[mid] > 1e-4


def test_max_tokens_sets_the_step_budget() -> None:
    cfg = TrainConfig(batch_size=2, grad_accum=3, max_steps=100, token_budget=1000)
    assert planned_steps(cfg, block_size=16) == (math.ceil(1000 / 96), "token_budget")
    assert planned_steps(cfg.replace(token_budget=10**6), block_size=16) == (100, "max_steps")


def test_config_rejects_out_of_range_values() -> None:
    with pytest.raises(ConfigError, match="learning rate"):
        TrainConfig(lr=2.0)
    with pytest.raises(ConfigError, match="min_lr"):
        TrainConfig(lr=1e-3, min_lr=1e-2)
    with pytest.raises(ConfigError, match="batch_size"):
        TrainConfig(batch_size=0)


def test_sampler_state_continues_the_same_stream() -> None:
    tokens = np.arange(1000, dtype=np.uint16)
    a = WindowSampler(tokens, 16, seed=3)
    a.sample(5)
    saved = a.state()
    x1, y1 = a.sample(7)
    b = WindowSampler(tokens, 16, seed=3)
    b.load_state(saved)
    x2, y2 = b.sample(7)
    assert torch.equal(x1, x2) and torch.equal(y1, y2)
    assert torch.equal(x1[:, 1:], y1[:, :-1])  # targets are inputs shifted by one
    assert torch.equal(y1 - x1, torch.ones_like(x1))  # contiguous windows of arange


def test_unigram_loss_closed_form() -> None:
    train_tokens = np.array([0, 0, 1, 2])  # add-one counts 3, 2, 2 over 3 tokens -> 7
    got = unigram_loss(train_tokens, np.array([0, 1]), vocab_size=3)
    assert got == pytest.approx(-(math.log(3 / 7) + math.log(2 / 7)) / 2)


def test_checkpoint_round_trip_and_corruption(tmp_path: Path) -> None:
    cfg = GPTConfig(vocab_size=40, block_size=16, n_layer=2, n_head=2, n_embd=32)
    model = GPT(cfg, seed=7).eval()
    (tmp_path / "config.json").write_text(json.dumps({"model": cfg.to_dict(), "train": {}}))
    save_weights(model, tmp_path / "checkpoint.safetensors", step=3)
    loaded, run_cfg = load_model(tmp_path)
    x = torch.randint(0, 40, (2, 16), generator=torch.Generator().manual_seed(0))
    assert torch.equal(loaded(x)[0], model(x)[0])
    assert loaded.lm_head.weight is loaded.wte.weight and run_cfg["model"] == cfg.to_dict()
    path = tmp_path / "checkpoint.safetensors"
    path.write_bytes(path.read_bytes()[:-100])  # truncated
    with pytest.raises(CheckpointError, match="corrupted or truncated"):
        load_model(tmp_path)
    path.write_bytes(b"\x00" * 64)  # garbage
    with pytest.raises(CheckpointError, match="corrupted or truncated"):
        load_model(tmp_path)


def test_patience_keeps_and_tests_the_best_weights(
    store: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Few training tokens and a high lr: the model memorises them, validation turns up, the run
    stops by patience; checkpoint and test loss are those of the best validation step. Quiet
    means silent: nothing reaches stderr (a `log` stream receives the step lines instead)."""
    model_cfg = GPTConfig(vocab_size=384, block_size=32, n_layer=2, n_head=2, n_embd=64)
    cfg = TrainConfig(
        batch_size=8, lr=1e-2, min_lr=1e-2, warmup_steps=0, max_steps=400, eval_interval=10,
        eval_batches=2, train_tokens=300, stop=StopRule(2), test_tokens=2048,
    )  # fmt: skip
    result = train(model_cfg, cfg, store, tmp_path / "run", quiet=True)
    assert capfd.readouterr().err == ""  # not a step line, not a warning: nothing
    rows = _metrics(tmp_path / "run")
    assert result.stop_reason == "patience" and result.steps < 400
    log = io.StringIO()
    again = train(model_cfg, cfg.replace(seed=1), store, tmp_path / "logged", quiet=True, log=log)
    assert f"step {again.steps}/" in log.getvalue() and "done: test loss" in log.getvalue()
    assert [r["step"] for r in rows] == list(range(10, result.steps + 1, 10))
    best = min(rows, key=lambda r: r["val_loss_nats"])
    assert result.best_step == best["step"] and rows[-1]["val_loss_nats"] > best["val_loss_nats"]
    assert result.best_val_loss_nats == best["val_loss_nats"]
    model, _ = load_model(tmp_path / "run")
    test = TokenStore(store, "test").tokens
    device = torch.device(result.device)  # recomputed where it ran: CPU and GPU bf16 differ
    ctx = DistContext(0, 1, device)
    model.to(device)
    starts = tiling_starts(len(test), 32, 2048)
    dtype = getattr(torch, result.dtype)  # the run's own precision: bf16 or float32 by CPU
    recomputed = evaluate(model, test, starts, 8, ctx, dtype)
    assert recomputed == result.test_loss_nats
    # a finished run folder is not retrained: the same call returns the saved result
    assert train(model_cfg, cfg, store, tmp_path / "run", quiet=True).wall_time_s == (
        result.wall_time_s
    )


def _weights(run: Path) -> dict[str, torch.Tensor]:
    return load_file(str(run / "checkpoint.safetensors"))


def _scalelab(args: list[str], **kw: object) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "scalelab", *args], env=SINGLE_THREAD, stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL, **kw,
    )  # fmt: skip


def test_sigkill_then_resume_is_bit_exact(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Kill a real training process mid-run (twice), rerun the same command: final weights,
    losses and metrics equal an uninterrupted run exactly. Only the victims are processes (to
    be killed); the reference and the rerun go through `main()` in this process, one torch
    thread either way (the bit-exact match across the two is what tests/test_faults.py relies
    on too)."""
    extra = ["--max-steps", "60", "--eval-interval", "5"]
    ref_dir, run_dir = tmp_path / "ref", tmp_path / "killed"
    assert _cli(_train_args(store, ref_dir, *extra), capsys)[0] == 0
    for min_lines in (2, 6):
        proc = _scalelab(_train_args(store, run_dir, *extra))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            metrics = run_dir / "metrics.jsonl"
            if metrics.exists() and len(metrics.read_text().splitlines()) >= min_lines:
                break
            time.sleep(0.05)
        time.sleep(0.15)  # land somewhere between checkpoints
        proc.send_signal(signal.SIGKILL)
        assert proc.wait() == -signal.SIGKILL, "the run finished before it could be killed"
        assert not (run_dir / "result.json").exists()
    code, err = _cli(_train_args(store, run_dir, *extra), capsys)
    assert code == 0, err
    assert "resuming" in err
    a, b = _weights(ref_dir), _weights(run_dir)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    ra, rb = (json.loads((d / "result.json").read_text()) for d in (ref_dir, run_dir))
    assert ra["test_loss_nats"] == rb["test_loss_nats"] and ra["steps"] == rb["steps"] == 60
    drop = ("wall_time_s", "tokens_per_s")
    ma = [{k: v for k, v in r.items() if k not in drop} for r in _metrics(ref_dir)]
    mb = [{k: v for k, v in r.items() if k not in drop} for r in _metrics(run_dir)]
    assert ma == mb and len(ma) == 12
    if importlib.util.find_spec("tensorboard") is not None:  # scalars: each step once
        from test_scalars import read_scalars

        drawn = read_scalars(run_dir)["loss/val_nats"]
        assert drawn == [(r["step"], pytest.approx(r["val_loss_nats"])) for r in mb]


def test_ddp_two_gloo_processes_match_one_process(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """torchrun with 2 CPU processes (gloo) follows the 1-process loss curve for the same global
    batch (grad_accum 2 = one micro-batch per process); the 1-process run in this process."""
    # gloo on CPU, also on a machine with a GPU
    extra = ["--max-steps", "30", "--eval-interval", "10", "--grad-accum", "2", "--dtype",
             "float32", "--device", "cpu"]  # fmt: skip
    code, err = _cli(_train_args(store, tmp_path / "one", *extra), capsys)
    assert code == 0, err
    two = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
         "-m", "scalelab", *_train_args(store, tmp_path / "two", *extra)],
        env=SINGLE_THREAD, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert two.returncode == 0, two.stderr[-2000:]
    m1, m2 = _metrics(tmp_path / "one"), _metrics(tmp_path / "two")
    assert [r["step"] for r in m1] == [r["step"] for r in m2] == [10, 20, 30]
    for r1, r2 in zip(m1, m2, strict=True):
        assert r2["train_loss_nats"] == pytest.approx(r1["train_loss_nats"], rel=1e-4)
        assert r2["val_loss_nats"] == pytest.approx(r1["val_loss_nats"], rel=1e-4)
    assert m1[-1]["val_loss_nats"] < m1[0]["val_loss_nats"]  # it did learn
    r1, r2 = (json.loads((tmp_path / d / "result.json").read_text()) for d in ("one", "two"))
    assert r2["world_size"] == 2 and r2["tokens_seen"] == r1["tokens_seen"]
    assert r2["test_loss_nats"] == pytest.approx(r1["test_loss_nats"], rel=1e-4)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--preset", "huge"], "unknown preset"),
        (["--lr", "5"], "learning rate 5.0 is out of range"),
        (["--block-size", "100000"], "fewer than context length 100000"),
        (["--batch-size", "0"], "batch_size must be a positive integer"),
        (["--dtype", "fp8"], "dtype 'fp8'"),
    ],
)
def test_cli_bad_input_exits_2_and_writes_nothing(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    code, err = _cli([*_train_args(store, tmp_path / "run"), *extra], capsys)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()


def test_cli_missing_data_and_bad_resume(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _cli(_train_args(tmp_path / "nowhere", tmp_path / "r"), capsys)
    assert code == 2 and "not a token store" in err
    run = tmp_path / "run"
    code, _ = _cli(_train_args(store, run, "--max-steps", "4", "--eval-interval", "2"), capsys)
    assert code == 0 and (run / "result.json").exists()
    # a different config on the same folder: refused, nothing changed
    before = (run / "result.json").read_bytes()
    code, err = _cli(_train_args(store, run, "--max-steps", "4", "--lr", "3e-3"), capsys)
    assert code == 2 and "different config" in err and "train.lr" in err
    assert (run / "result.json").read_bytes() == before
    # an unfinished run with a damaged state file: a one-line error naming the fix
    (run / "result.json").unlink()
    (run / "state.pt").write_bytes((run / "state.pt").read_bytes()[:200])
    code, err = _cli(_train_args(store, run, "--max-steps", "4", "--eval-interval", "2"), capsys)
    assert code == 2 and "state.pt is corrupted or truncated" in err


def test_folder_from_before_newer_fields_resumes_or_names_the_cause(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run folder saved before `patience_fraction`, `min_delta_sd` and `init_from` existed
    resumes with the options that reproduce it; a field with no such value is named."""
    run = tmp_path / "run"
    args = _train_args(store, run, "--max-steps", "4", "--eval-interval", "2")
    assert _cli(args, capsys)[0] == 0
    result = (run / "result.json").read_bytes()
    config = json.loads((run / "config.json").read_text())
    assert config.pop(KEY) == FORMAT  # as format 1 saved it: no format key, and
    for name in ("patience_fraction", "min_delta_sd", "init_from"):
        del config["train"][name]
    (run / "config.json").write_text(json.dumps(config))
    assert _cli(args, capsys)[0] == 0  # resumed: the finished result, untouched
    assert (run / "result.json").read_bytes() == result
    config["train"].pop("dtype")  # no value reproduces a missing dtype: refused, named
    (run / "config.json").write_text(json.dumps(config))
    code, err = _cli(args, capsys)
    assert code == 2 and "train.dtype: saved=(none)" in err and "older scalelab" in err
    assert len(err.strip().splitlines()) == 1
    assert len(err.strip().splitlines()) == 1


def test_train_module_has_no_global_rng_side_effects(store: Path, tmp_path: Path) -> None:
    torch.manual_seed(123)
    before = torch.get_rng_state()
    cfg = TrainConfig(batch_size=2, max_steps=2, eval_interval=2, eval_batches=1, test_tokens=64)
    train(GPTConfig(vocab_size=384, block_size=16, n_layer=1, n_head=1, n_embd=16), cfg, store,
          tmp_path / "r", quiet=True)  # fmt: skip
    assert torch.equal(torch.get_rng_state(), before)
