"""Relative positions (the scheme that lets a model trained short run at the target n), the
bound's arithmetic for the chosen size, and the small version of the trained comparison."""

import json
import math

import numpy as np
import pytest
import torch

from scalelab.errors import ConfigError
from scalelab.induction.config import InductionConfig, InductionTrainConfig
from scalelab.induction.model import InductionTransformer
from scalelab.induction.protocol import run_protocol
from scalelab.induction.task import hard_instances
from scalelab.induction.trained_separation import (
    TrainedSeparationConfig,
    plan,
    run_trained_separation,
)


def relative_model(seed: int, **kw) -> InductionTransformer:
    base = dict(alphabet_size=4, max_len=200, n_head=2, n_embd=16, positions="relative")
    cfg = InductionConfig(**{**base, "rel_distances": 5, **kw})
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = InductionTransformer(cfg).double()
        with torch.no_grad():
            for p in model.parameters():
                p.normal_(0.0, 1.0)
    return model


def test_position_bias_is_the_clamped_distance_table() -> None:
    attn = relative_model(0).blocks[0].attn
    for tq, tk in [(9, 9), (1, 9), (3, 12)]:
        i = torch.arange(tk - tq, tk)[:, None]
        j = torch.arange(tk)[None, :]
        want = attn.rel[:, (i - j).clamp(0, 5)]
        assert torch.equal(attn.position_bias(tq, tk), want)


def test_evaluation_path_equals_the_masked_softmax() -> None:
    """Without autograd the attention is split into a flash part and R near keys; it must
    give what the plain T × T masked softmax gives (that path runs while training)."""
    model = relative_model(1, n_layer=2)
    x = torch.randint(0, 4, (3, 150))
    masked = model(x)  # autograd on: the T x T mask
    with torch.no_grad():
        split = model(x)
    assert torch.allclose(masked, split, atol=1e-10, rtol=0)


def test_protocol_reproduces_a_relative_one_layer_model() -> None:
    """The bias of the last query is a fixed function of the key's position, so Alice's
    message still reproduces the head output within 2^-p."""
    model = relative_model(2, n_layer=1, mlp=True)
    inst = hard_instances(100, 129, np.random.default_rng(0))
    res = run_protocol(model, inst, 16)
    assert res.within_bound and res.answers_identical


def test_the_default_size_is_one_the_bound_forbids() -> None:
    """4·h·m·p = 4·1·16·25 = 1,600 bits < k = 2,048 at n = 4,097; the ceiling is the a
    with 1 − H2(1 − a) = 1600/2048, found here by bisection."""
    got = plan(TrainedSeparationConfig())
    assert (got["message_bits"], got["k"], got["bound_bites"]) == (1600, 2048, True)

    def need(a: float) -> float:
        e = 1 - a
        return 1 + e * math.log2(e) + (1 - e) * math.log2(1 - e)

    lo, hi = 0.5, 1 - 1e-12
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if need(mid) <= 1600 / 2048 else (lo, mid)
    assert got["one_layer_ceiling"] == pytest.approx(lo, abs=3e-4)
    assert got["one_layer_ceiling"] < 0.99


def test_small_version_two_layers_beat_one_and_resume(tmp_path, run_cli) -> None:
    """`scalelab induction trained-separation --preset quick`: the two-layer model beats the
    one-layer model of the same size on the same hard instances; a second run resumes."""
    res = run_cli("induction", "trained-separation", "--out", tmp_path, "--preset", "quick",
                  "--quiet", "--json")  # fmt: skip
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    acc = {r["n_layer"]: r["acc_hard"] for r in doc["rows"] if r["kind"] == "trained-relative"}
    assert acc[2] >= 0.9 and acc[1] <= 0.75
    assert doc["margins"][0]["margin_lo"] > 0  # paired 95% interval above 0
    one = next(r for r in doc["rows"] if r["kind"] == "trained-relative" and r["n_layer"] == 1)
    assert one["protocol_answers_identical"]
    assert (tmp_path / "trained_separation.png").read_bytes()[:4] == b"\x89PNG"
    stamp = (tmp_path / "runs" / "L2_seed0" / "result.json").stat().st_mtime_ns
    again = run_trained_separation(TrainedSeparationConfig().quick(), tmp_path)
    assert again["rows"] == doc["rows"]  # runs reused: the same numbers, nothing retrained
    assert (tmp_path / "runs" / "L2_seed0" / "result.json").stat().st_mtime_ns == stamp


def test_cli_refuses_lengths_out_of_order(tmp_path, run_cli) -> None:
    res = run_cli("induction", "trained-separation", "--out", tmp_path, "--min-train-n", "500")
    assert res.returncode == 2
    assert "min_train_n" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    "kw",
    [
        {"min_train_n": 300},  # above train_n
        {"train_n": 5000},  # above n
        {"seeds": ()},
        {"hard_fraction": 0.0},  # no INDEX rows: nothing to separate
        {"rel_scale": 0.0},
    ],
)
def test_bad_settings_are_refused(kw: dict) -> None:
    with pytest.raises(ConfigError):
        TrainedSeparationConfig(**kw)


def test_train_config_refuses_bad_lengths_and_weights() -> None:
    with pytest.raises(ConfigError, match="min_n"):
        InductionTrainConfig(n=32, min_n=64)
    with pytest.raises(ConfigError, match="last_weight"):
        InductionTrainConfig(last_weight=-1.0)
