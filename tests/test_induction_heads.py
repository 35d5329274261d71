"""Head scores: planted heads score ≈ 1 where planted and low elsewhere; the scalelab path and
the Hugging Face path agree on the same weights; bad inputs fail with one line."""

import math

import numpy as np
import pytest
import torch

from scalelab.errors import ConfigError, InputError
from scalelab.lm.config import GPTConfig
from scalelab.lm.model import GPT
from scalelab.probe.heads import (
    HeadScoreConfig,
    from_gpt,
    from_hf,
    head_scores,
    icl_score,
    scores_from_patterns,
)

VOCAB, CTX = 16, 40


def _pair(w: torch.Tensor, row: int, col: int, value: float) -> None:
    """Write `value` into a ±pair of coordinates (rows/cols 2r, 2r + 1) so every embedding
    keeps zero mean, which makes LayerNorm a fixed rescaling."""
    w[2 * row, 2 * col] += value
    w[2 * row + 1, 2 * col + 1] += value


def planted_gpt() -> GPT:
    """Two layers, two heads each. Layer 0 head 0: previous-token head (positions on a half
    circle; the query rotates back by one step). Layer 1 head 0: induction head (query = own
    token, key = the previous token that layer 0 copied). Heads 1 attend uniformly; MLPs off.

    Residual coordinates (each a ± pair): tokens 0..15 → pairs 0..15, previous token →
    pairs 16..31, position (cos, sin) → pairs 32, 33."""
    cfg = GPTConfig(vocab_size=VOCAB, block_size=CTX, n_layer=2, n_head=2, n_embd=68 * 2)
    gpt = GPT(cfg)
    c, hd = cfg.n_embd, cfg.n_embd // cfg.n_head
    theta = math.pi / CTX
    with torch.no_grad():
        for p in gpt.parameters():
            p.zero_()
        for blk in gpt.blocks:
            blk.ln_1.weight.fill_(1.0)
            blk.ln_2.weight.fill_(1.0)
        gpt.ln_f.weight.fill_(1.0)
        for t in range(VOCAB):
            gpt.wte.weight[t, 2 * t], gpt.wte.weight[t, 2 * t + 1] = 1.0, -1.0
        j = torch.arange(CTX, dtype=torch.float32)
        for k, f in ((32, torch.cos), (33, torch.sin)):
            gpt.wpe.weight[:, 2 * k], gpt.wpe.weight[:, 2 * k + 1] = f(theta * j), -f(theta * j)
        beta = 4000.0
        # layer 0, head 0: q_i = β·R(−θ)·pos_i, k_j = pos_j → score β cos(θ(i − 1 − j))
        a0 = gpt.blocks[0].attn.c_attn.weight  # rows: q (0..c), k (c..2c), v (2c..3c)
        cos, sin = math.cos(theta), math.sin(theta)
        a0[0, 64], a0[0, 66] = beta * cos, beta * sin
        a0[1, 66], a0[1, 64] = beta * cos, -beta * sin
        a0[c + 0, 64], a0[c + 1, 66] = 1.0, 1.0
        for t in range(VOCAB):  # value: the token; output: into the previous-token pairs
            a0[2 * c + 2 * t, 2 * t], a0[2 * c + 2 * t + 1, 2 * t + 1] = 1.0, 1.0
            proj = gpt.blocks[0].attn.c_proj.weight
            proj[32 + 2 * t, 2 * t], proj[33 + 2 * t, 2 * t + 1] = 1.0, 1.0
        # layer 1, head 0: q_i = β·token_i, k_j = previous token at j
        a1 = gpt.blocks[1].attn.c_attn.weight
        for t in range(VOCAB):
            a1[2 * t, 2 * t], a1[2 * t + 1, 2 * t + 1] = 50.0, 50.0
            a1[c + 2 * t, 32 + 2 * t], a1[c + 2 * t + 1, 33 + 2 * t] = 1.0, 1.0
    assert hd >= 2 * VOCAB
    return gpt.eval()


def test_planted_heads_score_where_planted() -> None:
    gpt = planted_gpt()
    res = head_scores(from_gpt(gpt), HeadScoreConfig(half_len=12, n_sequences=16))
    ind, prev = np.asarray(res["induction"]), np.asarray(res["previous_token"])
    assert prev[0, 0] > 0.99  # the planted previous-token head
    assert ind[1, 0] > 0.95  # the planted induction head (key 0 also matches at i = L)
    others_prev = np.delete(prev.ravel(), 0)
    others_ind = np.delete(ind.ravel(), 2)
    assert others_prev.max() < 0.25 and others_ind.max() < 0.25


def test_scores_match_the_definition_on_known_patterns() -> None:
    """Patterns built by hand: uniform causal attention gives the closed-form means."""
    half, t = 5, 10
    causal = torch.ones(t, t).tril()
    uniform = (causal / causal.sum(-1, keepdim=True))[None, None]
    out = scores_from_patterns([uniform], half, 0)
    dest = torch.arange(half, 2 * half)
    assert out["induction"].item() == pytest.approx(float((1 / (dest + 1)).mean()))
    assert out["previous_token"].item() == pytest.approx(float((1 / torch.arange(2, t + 1)).mean()))


def test_scalelab_and_hf_paths_agree(tmp_path) -> None:
    """The same weights exported to GPT-2 format give the same scores through HF's eager
    attention outputs (output_attentions=True) as through GPT.attention_probs."""
    from transformers import GPT2LMHeadModel

    from scalelab.lm.hf import export_gpt_to_hf

    gpt = GPT(GPTConfig(vocab_size=64, block_size=32, n_layer=2, n_head=2, n_embd=32), seed=3)
    gpt.eval()
    export_gpt_to_hf(gpt, tmp_path / "hf")
    hf = GPT2LMHeadModel.from_pretrained(tmp_path / "hf", local_files_only=True).eval()
    cfg = HeadScoreConfig(half_len=10, n_sequences=6, batch_size=4)
    ours, theirs = head_scores(from_gpt(gpt), cfg), head_scores(from_hf(hf, bos=False), cfg)
    for key in ("induction", "previous_token"):
        np.testing.assert_allclose(ours[key], theirs[key], atol=1e-5)
    from scalelab.probe.sample import TokenDocuments

    docs = TokenDocuments.from_list([np.arange(200) % 64])
    icl_cfg = cfg.replace(icl_windows=4)
    a, b = icl_score(from_gpt(gpt), docs, icl_cfg), icl_score(from_hf(hf, bos=False), docs, icl_cfg)
    assert (a["icl_early"], a["icl_late"]) == (3, 31)
    assert a["icl_score"] == pytest.approx(b["icl_score"], abs=1e-4)


def test_bad_settings() -> None:
    model = from_gpt(GPT(GPTConfig(vocab_size=64, block_size=32, n_layer=1, n_head=2, n_embd=16)))
    with pytest.raises(ConfigError, match="does not fit"):
        head_scores(model, HeadScoreConfig(half_len=17))
    with pytest.raises(ConfigError, match="icl_early"):
        HeadScoreConfig(icl_early=10, icl_late=5)
    with pytest.raises(ConfigError, match="positive"):
        HeadScoreConfig(n_sequences=0)
    from scalelab.probe.sample import TokenDocuments

    short = TokenDocuments.from_list([np.arange(10)])
    with pytest.raises(InputError, match="no document of the corpus has 32 tokens"):
        icl_score(model, short, HeadScoreConfig())
    with pytest.raises(InputError, match="fewer than one window"):
        icl_score(model, short, HeadScoreConfig(icl_windows_from="stream"))
    with pytest.raises(ConfigError, match="icl_windows_from"):
        HeadScoreConfig(icl_windows_from="middle")


def test_icl_score_closed_form() -> None:
    """A fake model whose logit for the true next token is c·t at position t: the loss at t
    is log(V − 1 + e^(ct)) − ct, so the ICL score has a closed form. Windows start at the
    starts of long-enough documents only."""
    from scalelab.probe.heads import ScoredModel, icl_windows
    from scalelab.probe.sample import TokenDocuments

    vocab, c = 20, 0.05

    def logits(idx: torch.Tensor) -> torch.Tensor:
        out = torch.zeros(*idx.shape, vocab)
        t = torch.arange(idx.shape[1] - 1, dtype=torch.float32)
        out[:, :-1].scatter_(-1, idx[:, 1:, None], (c * t)[None, :, None].expand(len(idx), -1, 1))
        return out

    fake = ScoredModel("fake", 1, 1, 64, vocab, attention=lambda idx: [], logits=logits)
    rng = np.random.default_rng(0)
    docs = TokenDocuments.from_list([rng.integers(0, vocab, n) for n in (70, 30, 80, 64)])
    cfg = HeadScoreConfig(icl_windows=8)
    res = icl_score(fake, docs, cfg)
    assert (res["icl_early"], res["icl_late"], res["icl_windows"]) == (6, 63, 3)

    def loss(pos: int) -> float:
        z = c * (pos - 1)
        return math.log(vocab - 1 + math.exp(z)) - z

    assert res["icl_score"] == pytest.approx(loss(63) - loss(6), rel=1e-6)
    starts = icl_windows(docs, 64, 8, "documents")[:, 0]
    assert list(starts) == [docs.tokens[0], docs.tokens[100], docs.tokens[180]]
