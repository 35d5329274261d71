"""The INDEX protocol of the lower bound on random one-layer models: Bob's head output is
within 2^-p of the model's and his decoded answer is the model's."""

import numpy as np
import pytest
import torch

from scalelab.errors import ConfigError
from scalelab.induction.config import InductionConfig
from scalelab.induction.model import InductionTransformer
from scalelab.induction.protocol import message_bits_vs_k, round_fixed, run_protocol
from scalelab.induction.task import hard_instances, hard_instances_k


def random_one_layer(seed: int, **kw) -> InductionTransformer:
    cfg = InductionConfig(alphabet_size=3, max_len=65, n_layer=1, **kw)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = InductionTransformer(cfg)
        with torch.no_grad():
            for p in model.parameters():
                p.normal_(0.0, 1.0)  # sharp, uneven attention: a demanding case
    return model


@pytest.mark.parametrize("bits", [8, 16])
@pytest.mark.parametrize(
    "arch",
    [
        {"n_head": 2, "n_embd": 16},
        {"n_head": 4, "n_embd": 16, "mlp": True},
        {"n_head": 1, "n_embd": 8, "layer_norm": False, "positions": "sinusoidal"},
    ],
)
def test_bob_reproduces_the_model_within_2_to_minus_p(bits: int, arch: dict) -> None:
    model = random_one_layer(bits, **arch)
    inst = hard_instances(300, 64, np.random.default_rng(bits))  # even n: padded
    res = run_protocol(model, inst, bits)
    assert res.max_abs_value <= 2**bits  # the appendix's assumption holds here
    assert res.max_abs_error <= res.paper_bound <= 2.0**-bits
    assert res.within_bound and res.answers_identical and res.n_answer_mismatches == 0
    assert res.bob_acc_hard == res.model_acc_hard


def test_alices_message_carries_the_information() -> None:
    """Control: a message computed from other bits f' moves Bob's output far off, so the
    agreement above is not automatic."""
    model = random_one_layer(3, n_head=2, n_embd=16)
    rng = np.random.default_rng(0)
    inst = hard_instances_k(200, 16, rng)
    flipped = inst.seqs.copy()
    flipped[:, 1:-1:2] = 1 - flipped[:, 1:-1:2]
    model64 = model.double()
    with torch.no_grad():
        a = model64(torch.from_numpy(inst.seqs))[:, -1]
        b = model64(torch.from_numpy(flipped))[:, -1]
    assert (a - b).abs().max() > 1e-2  # outputs depend on f, which only Alice knows


def test_message_length_grows_only_with_log_k() -> None:
    model = random_one_layer(4, n_head=2, n_embd=16)
    rows = message_bits_vs_k(model, [2, 8, 32], 8, np.random.default_rng(1), batch=32)
    bits = [r["message_bits"] for r in rows]
    numbers = 2 * (8 + 1)  # h (d_head + 1)
    assert rows[0]["message_numbers"] == numbers
    assert all(numbers * 25 <= b <= numbers * 40 for b in bits)  # sign + int + 3p bits each
    assert bits[-1] - bits[0] < 20  # ~log k growth, nowhere near the +30 bits of k


def test_round_fixed_error_is_at_most_half_an_ulp() -> None:
    x = torch.randn(1000, dtype=torch.float64) * 7
    for frac in (3, 24):
        assert (round_fixed(x, frac) - x).abs().max() <= 2.0 ** -(frac + 1)


def test_protocol_refuses_two_layer_models() -> None:
    cfg = InductionConfig(alphabet_size=3, max_len=9, n_layer=2)
    with pytest.raises(ConfigError, match="one-layer"):
        run_protocol(InductionTransformer(cfg), hard_instances_k(2, 4, np.random.default_rng()), 8)
