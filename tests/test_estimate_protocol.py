"""The embedding protocol: windows, positions, extraction, and a model with a known
intrinsic dimension."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import scalelab.probe.sample as sample_module
from scalelab.errors import ConfigError
from scalelab.lm.config import GPTConfig
from scalelab.lm.model import GPT
from scalelab.probe.config import EstimateConfig
from scalelab.probe.estimate import estimate_dimension, shuffle_cap
from scalelab.probe.sample import (
    TokenDocuments,
    extract,
    resolve_layer,
    same_prefix_points,
    sample_positions,
    sample_protocol,
    sample_windows,
    tokens_to_run,
)

SPECIAL = 0  # the "EOS" id of these tests


def _docs(seed: int = 0, n: int = 60, vocab: int = 50) -> TokenDocuments:
    """Documents of random lengths 0..90 with some special tokens inside."""
    rng = np.random.default_rng(seed)
    return TokenDocuments.from_list([rng.integers(0, vocab, rng.integers(0, 90)) for _ in range(n)])


def test_windows_lie_inside_documents_and_short_documents_are_whole():
    docs = _docs()
    s = sample_protocol(docs, context_len=32, per_doc=8, seed=3, special_ids=[SPECIAL])
    w = s.windows
    lengths = docs.lengths
    assert set(w.doc) == set(np.flatnonzero(lengths > 0))  # every non-empty document, once
    assert len(np.unique(w.doc)) == len(w.doc)
    assert np.all(w.start >= 0) and np.all(w.start + w.length <= lengths[w.doc])
    np.testing.assert_array_equal(w.length, np.minimum(lengths[w.doc], 32))
    assert np.all(w.start[lengths[w.doc] <= 32] == 0)
    # the window tokens are the document's tokens at those places
    for i in range(len(w.doc)):
        a, b = s.window_offsets[i], s.window_offsets[i + 1]
        doc = docs.tokens[docs.offsets[w.doc[i]] : docs.offsets[w.doc[i] + 1]]
        np.testing.assert_array_equal(s.window_tokens[a:b], doc[w.start[i] : w.start[i] + 32])


def test_positions_follow_the_protocol():
    docs = _docs(1)
    per_doc = 8
    s = sample_protocol(docs, context_len=32, per_doc=per_doc, seed=5, special_ids=[SPECIAL])
    p = s.positions
    assert np.all(p.offset < s.windows.length[p.window])
    tokens = s.window_tokens[s.window_offsets[p.window] + p.offset]
    assert not np.any(tokens == SPECIAL)  # no EOS/padding position is ever kept
    for i in range(len(s.windows.doc)):
        mine = p.offset[p.window == i]
        a, b = s.window_offsets[i], s.window_offsets[i + 1]
        n_valid = int((s.window_tokens[a:b] != SPECIAL).sum())
        assert len(mine) == min(per_doc, n_valid)  # count per document
        assert len(np.unique(mine)) == len(mine)  # distinct positions


def test_sampling_is_reproducible_by_seed():
    docs = _docs(2)
    a = sample_protocol(docs, context_len=16, per_doc=4, seed=7, special_ids=[SPECIAL])
    b = sample_protocol(docs, context_len=16, per_doc=4, seed=7, special_ids=[SPECIAL])
    c = sample_protocol(docs, context_len=16, per_doc=4, seed=8, special_ids=[SPECIAL])
    for x, y in ((a.windows.start, b.windows.start), (a.positions.offset, b.positions.offset)):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a.windows.start, c.windows.start)
    np.testing.assert_array_equal(shuffle_cap(100, 10, 1), shuffle_cap(100, 10, 1))


def test_window_starts_and_positions_are_uniform():
    """Frequencies against the uniform law: starts of a length-10 window in a 16-token
    document take 7 values; 3 of 12 positions are each kept with probability 1/4."""
    rng = np.random.default_rng(0)
    n = 14000
    w = sample_windows(np.full(n, 16), 10, rng)
    counts = np.bincount(w.start, minlength=7)
    assert len(counts) == 7
    expected = n / 7
    assert np.all(np.abs(counts - expected) < 4 * np.sqrt(expected))
    lengths = np.full(4000, 12)
    p = sample_positions(lengths, np.ones(lengths.sum(), bool), 3, rng)
    freq = np.bincount(p.offset, minlength=12) / 4000
    assert np.all(np.abs(freq - 0.25) < 4 * np.sqrt(0.25 * 0.75 / 4000))


def test_position_groups_cover_equal_ranges():
    lengths = np.array([64, 64, 40, 10])
    p = sample_positions(
        lengths, np.ones(lengths.sum(), bool), 5, np.random.default_rng(0), groups=4, context_len=64
    )
    np.testing.assert_array_equal(p.group, p.offset * 4 // 64)
    cells = np.bincount(p.window * 4 + p.group, minlength=16).reshape(4, 4)
    # full windows: 5 per range; the 40-token window has 16+16+8 tokens; the 10-token one 10
    np.testing.assert_array_equal(cells, [[5, 5, 5, 5], [5, 5, 5, 5], [5, 5, 5, 0], [5, 0, 0, 0]])


def test_layer_names_and_range():
    assert resolve_layer("final", 6) == 5
    assert resolve_layer("final-pre-ln", 6) == 4
    assert resolve_layer("embeddings", 6) == 0
    assert resolve_layer("-3", 6) == 3
    with pytest.raises(ConfigError, match="out of range"):
        resolve_layer(6, 6)
    with pytest.raises(ConfigError, match="neither"):
        resolve_layer("last", 6)


def test_extraction_equals_one_window_at_a_time():
    """Batched, padded, cut-after-the-last-position extraction == each window run alone."""
    torch.manual_seed(0)
    gpt = GPT(GPTConfig(vocab_size=50, block_size=32, n_layer=2, n_head=2, n_embd=16), seed=1)
    gpt.eval()
    docs = _docs(3)
    s = sample_protocol(docs, context_len=32, per_doc=6, seed=0, special_ids=[SPECIAL])
    s = s.subset(shuffle_cap(s.n_points, 150, 0))  # shuffled order, some windows dropped
    x = extract(lambda idx, mask: gpt.hidden_states(idx), s, [0, 2, 3], batch_tokens=100)
    assert tokens_to_run(s) < int(s.windows.length.sum())
    with torch.no_grad():
        for n in range(s.n_points):
            i, o = s.positions.window[n], s.positions.offset[n]
            a, b = s.window_offsets[i], s.window_offsets[i + 1]
            states = gpt.hidden_states(torch.as_tensor(s.window_tokens[a:b])[None])
            for j, layer in enumerate([0, 2, 3]):
                np.testing.assert_allclose(x[j, n], states[layer][0, o].numpy(), atol=2e-5)


def _brute_force_same_prefix(s) -> tuple[list[int], list[int]]:
    seen: dict[tuple[int, ...], int] = {}
    dup, rep = [], []
    for n, (w, o) in enumerate(zip(s.positions.window, s.positions.offset, strict=True)):
        a = s.window_offsets[w]
        prefix = tuple(s.window_tokens[a : a + o + 1].tolist())
        if prefix in seen:
            dup.append(n)
            rep.append(seen[prefix])
        else:
            seen[prefix] = n
    return dup, rep


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_same_prefix_points_equal_a_dictionary_of_prefixes(seed):
    """Three token kinds and short documents: many windows share prefixes."""
    rng = np.random.default_rng(seed)
    docs = TokenDocuments.from_list([rng.integers(0, 3, rng.integers(1, 12)) for _ in range(400)])
    s = sample_protocol(docs, context_len=8, per_doc=4, seed=seed)
    s = s.subset(shuffle_cap(s.n_points, s.n_points, seed))
    dup, rep = same_prefix_points(s)
    want_dup, want_rep = _brute_force_same_prefix(s)
    assert len(want_dup) > 100
    assert dup.tolist() == want_dup and rep.tolist() == want_rep


def test_same_prefix_points_are_exact_duplicates_whatever_the_batch_shape(monkeypatch):
    """A states function that rounds by batch shape, as GPU kernels do (an H200 gave a few ulps
    between copies of one prefix, and d moved 1%): copies still come out bit-identical, so the
    MLE removes them as it does on the CPU, and d equals the exact states' d."""
    gpt = GPT(GPTConfig(vocab_size=8, block_size=16, n_layer=1, n_head=2, n_embd=16), seed=0)
    gpt.eval()
    rng = np.random.default_rng(0)
    docs = TokenDocuments.from_list([rng.integers(0, 8, rng.integers(2, 40)) for _ in range(900)])
    s = sample_protocol(docs, context_len=16, per_doc=6, seed=0)
    s = s.subset(shuffle_cap(s.n_points, s.n_points, 0))

    def exact(idx, mask):
        return gpt.hidden_states(idx)

    def by_shape(idx, mask):  # a relative error of ~1e-7 that depends on the batch length
        return [h * (1 + 1e-7 * idx.shape[1]) for h in gpt.hidden_states(idx)]

    cfg = EstimateConfig(batch_size=1024)
    ref = extract(exact, s, [-1], batch_tokens=200)[0]
    got = extract(by_shape, s, [-1], batch_tokens=200)[0]
    dup, rep = same_prefix_points(s)
    assert len(dup) > 500 and np.array_equal(got[dup], got[rep])
    ref_est, got_est = estimate_dimension(ref, cfg), estimate_dimension(got, cfg)
    assert (
        got_est.estimate.n_duplicates_removed == ref_est.estimate.n_duplicates_removed >= len(dup)
    )
    assert got_est.d == pytest.approx(ref_est.d, rel=1e-5)
    # without the copying, the rounding leaves near-duplicates that move d
    none = np.zeros(0, dtype=np.int64)
    monkeypatch.setattr(sample_module, "same_prefix_points", lambda sample: (none, none))
    raw_est = estimate_dimension(extract(by_shape, s, [-1], batch_tokens=200)[0], cfg)
    assert raw_est.estimate.n_duplicates_removed < ref_est.estimate.n_duplicates_removed
    assert abs(raw_est.d / ref_est.d - 1) > 1e-3


def _subspace_gpt(d: int, width: int = 32, vocab: int = 4096, seed: int = 0):
    """A one-block GPT whose residual stream lies in a known d-dim subspace U ⊥ 1.

    Token embeddings are Gaussian in U, positions zero; attention is uniform (zero query and
    key weights) with identity value/output maps, so it adds the mean of ln_1(x_s) over the
    prefix, which stays in U because LayerNorm only rescales vectors orthogonal to 1; the MLP
    output is zero. After the final LayerNorm the points lie on a sphere in U: d − 1 dims."""
    g = torch.Generator().manual_seed(seed)
    cfg = GPTConfig(vocab_size=vocab, block_size=64, n_layer=1, n_head=2, n_embd=width)
    gpt = GPT(cfg, seed=seed).eval()
    a = torch.randn(width, d, generator=g, dtype=torch.float64)
    basis, _ = torch.linalg.qr(a - a.mean(0, keepdim=True))
    with torch.no_grad():
        z = torch.randn(vocab, d, generator=g, dtype=torch.float64)
        gpt.wte.weight.copy_((z @ basis.T).float())
        gpt.wpe.weight.zero_()
        block = gpt.blocks[0]
        w = torch.zeros(3 * width, width)
        w[2 * width :] = torch.eye(width)
        block.attn.c_attn.weight.copy_(w)
        block.attn.c_attn.bias.zero_()
        block.attn.c_proj.weight.copy_(torch.eye(width))
        block.attn.c_proj.bias.zero_()
        block.mlp.c_proj.weight.zero_()
        block.mlp.c_proj.bias.zero_()
    return gpt, basis.float().numpy()


@pytest.mark.parametrize("d", [3, 6])
def test_model_on_a_known_subspace_gives_its_dimension_back(d):
    gpt, basis = _subspace_gpt(d)
    rng = np.random.default_rng(d)
    docs = TokenDocuments.from_list([rng.integers(1, 4096, 64) for _ in range(128)])
    s = sample_protocol(docs, context_len=64, per_doc=32, seed=0)
    assert s.n_points == 4096
    x = extract(lambda idx, mask: gpt.hidden_states(idx), s, [1, 2])
    # the construction holds: the residual after the block lies in U
    np.testing.assert_allclose(x[0] - x[0] @ basis @ basis.T, 0.0, atol=1e-5)
    cfg = EstimateConfig(batch_size=4096)
    before_ln = estimate_dimension(x[0], cfg).d
    after_ln = estimate_dimension(x[1], cfg).d
    assert before_ln == pytest.approx(d, rel=0.12)
    assert after_ln == pytest.approx(d - 1, rel=0.2)  # LayerNorm puts the points on a sphere


def test_the_progress_bar_shows_a_rate_in_tokens_per_second(capsys) -> None:
    """Issue 52: the bar printed '442 tokens' (a batch's count) where a rate was meant."""
    docs = _docs(1)
    s = sample_protocol(docs, context_len=32, per_doc=8, seed=0, special_ids=[SPECIAL])
    gpt = GPT(GPTConfig(vocab_size=50, block_size=32, n_layer=1, n_head=2, n_embd=16), seed=0)
    extract(lambda idx, mask: gpt.hidden_states(idx), s, [1], batch_tokens=100, quiet=False)
    err = capsys.readouterr().err
    assert re.search(r"[\d,]+ tokens/s", err) and not re.search(r"\d tokens\b(?!/s)", err), err
