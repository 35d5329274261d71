"""The GPT model: shapes, causality, parameter counts in closed form, hidden states, overfitting."""

from __future__ import annotations

import pytest
import torch

from scalelab.errors import ConfigError
from scalelab.lm.config import MODEL_PRESETS, GPTConfig, preset_config
from scalelab.lm.model import GPT


def _closed_form_params(c: GPTConfig) -> tuple[int, int]:
    """GPT parameter count by hand: per block 12 d^2 weights + 13 d biases/LN (bias=True)."""
    d = c.n_embd
    per_block = 12 * d * d + 13 * d
    non_embedding = c.n_layer * per_block + 2 * d  # final LayerNorm
    return non_embedding, non_embedding + c.vocab_size * d + c.block_size * d


@pytest.mark.parametrize("name", ["tiny", "small", "medium"])
def test_param_counts_match_closed_form(name: str) -> None:
    cfg = preset_config(name, vocab_size=4096)
    model = GPT(cfg)
    assert (model.num_params(), model.num_params(non_embedding=False)) == _closed_form_params(cfg)


def test_preset_sizes_are_as_documented() -> None:
    sizes = {n: GPT(preset_config(n, 4096)).num_params(False) for n in ("tiny", "small")}
    assert 0.4e6 < sizes["tiny"] < 1.0e6
    assert 3e6 < sizes["small"] < 5e6
    paper = MODEL_PRESETS["paper-125m"][0]
    assert (paper.n_layer, paper.n_head, paper.n_embd, paper.block_size) == (12, 12, 768, 1024)
    # GPT-2 small with the padded vocabulary: 124.5M parameters (nanoGPT prints 124.44M
    # after subtracting position embeddings).
    assert _closed_form_params(paper)[1] == 124_475_904


def test_unknown_preset_and_bad_shape_raise() -> None:
    with pytest.raises(ConfigError, match="unknown preset"):
        preset_config("huge")
    with pytest.raises(ConfigError, match="divisible"):
        GPTConfig(n_embd=100, n_head=3)


def test_causal_and_hidden_states() -> None:
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=50, block_size=16, n_layer=2, n_head=2, n_embd=32)).eval()
    x = torch.randint(0, 50, (3, 16))
    logits, loss = model(x, x)
    assert logits.shape == (3, 16, 50) and loss is not None
    y = x.clone()
    y[:, 10:] = (y[:, 10:] + 1) % 50  # change the future
    logits2, _ = model(y)
    assert torch.equal(logits[:, :10], logits2[:, :10])
    assert not torch.allclose(logits[:, 10:], logits2[:, 10:])
    states = model.hidden_states(x)
    assert len(states) == model.config.n_layer + 2
    assert all(s.shape == (3, 16, 32) for s in states)
    torch.testing.assert_close(model.lm_head(states[-1]), logits)
    emb = model.wte(x) + model.wpe(torch.arange(16))
    torch.testing.assert_close(states[0], emb)


def test_init_is_seeded_and_tied() -> None:
    cfg = GPTConfig(vocab_size=50, block_size=8, n_layer=1, n_head=1, n_embd=8)
    a, b, c = GPT(cfg, seed=1), GPT(cfg, seed=1), GPT(cfg, seed=2)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    assert not torch.equal(a.wte.weight, c.wte.weight)
    assert a.lm_head.weight is a.wte.weight


def test_overfits_one_batch() -> None:
    """A small model memorises one fixed batch: loss from ln(V) to near zero."""
    gen = torch.Generator().manual_seed(0)
    model = GPT(GPTConfig(vocab_size=64, block_size=32, n_layer=2, n_head=2, n_embd=64))
    x = torch.randint(0, 64, (4, 33), generator=gen)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    first = None
    for _ in range(150):
        _, loss = model(x[:, :-1], x[:, 1:])
        first = first if first is not None else loss.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert first > 3.5  # ≈ ln 64 = 4.16
    assert loss.item() < 0.05
