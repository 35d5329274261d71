"""The second theory's statistics: β from a sequence whose correlation decay is known in
closed form, γ from a synthetic loss curve, and the loss-vs-context curve of a saved model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from scalelab.errors import ConfigError, InputError
from scalelab.io import atomic_write_json
from scalelab.laws.language_statistics import (
    fit_beta,
    fit_gamma,
    predict_alpha_D,
    predict_interval,
)
from scalelab.lm.checkpoint import save_weights
from scalelab.lm.config import GPTConfig
from scalelab.lm.load import load_model_for_embedding
from scalelab.lm.model import GPT
from scalelab.probe.corpus import load_corpus_tokens
from scalelab.probe.position_loss import position_loss, window_tokens
from scalelab.text.corpora import load_corpus
from scalelab.text.correlations import correlation_decay, correlation_norm
from scalelab.text.store import prepare_corpus


def test_correlation_norm_matches_the_dense_matrix():
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 7, 500), rng.integers(0, 5, 500)
    b[::3] = a[::3] % 5  # some dependence
    joint = np.zeros((7, 7))
    np.add.at(joint, (a, b), 1.0 / 500)
    dense = joint - joint.sum(1)[:, None] * joint.sum(0)[None, :]
    norm, noise = correlation_norm(a, b, 7)
    assert norm == pytest.approx(np.linalg.norm(dense), rel=1e-9)
    p, q = joint.sum(1), joint.sum(0)
    assert noise == pytest.approx((1 - p @ p) * (1 - q @ q) / 500)


def _fgn(n_docs: int, n: int, hurst: float, rng: np.random.Generator):
    """Fractional Gaussian noise (Davies-Harte circulant embedding) and its exact
    autocorrelation ρ(k) = ½(|k+1|^2H − 2|k|^2H + |k−1|^2H) ~ H(2H−1) k^(2H−2)."""
    k = np.arange(n + 1)
    rho = 0.5 * ((k + 1.0) ** (2 * hurst) - 2 * k ** (2 * hurst) + np.abs(k - 1.0) ** (2 * hurst))
    circ = np.concatenate([rho, rho[-2:0:-1]])
    lam = np.clip(np.fft.fft(circ).real, 0, None)
    z = rng.standard_normal((n_docs, len(circ))) + 1j * rng.standard_normal((n_docs, len(circ)))
    return np.fft.fft(np.sqrt(lam / len(circ)) * z, axis=1).real[:, :n], rho


def test_beta_is_recovered_from_a_sequence_with_a_known_correlation_decay():
    # Tokens = sign of fractional Gaussian noise (H = 0.8). For ±1 variables with correlation
    # r the connected 2x2 matrix has entries ±r/4, so ‖C_t‖ = r/2, and for thresholded
    # Gaussians r = (2/π) arcsin ρ(t): ‖C_t‖ = arcsin(ρ(t))/π, decaying as t^-0.4.
    x, rho = _fgn(256, 4096, 0.8, np.random.default_rng(0))
    tokens = (x > 0).astype(np.int64).ravel()
    offsets = np.arange(0, tokens.size + 1, 4096)
    d = np.array([1, 2, 4, 8, 16, 32, 64])
    rows = correlation_decay(tokens, offsets, d)
    exact = np.arcsin(rho[d]) / np.pi
    np.testing.assert_allclose(rows["norm"], exact, rtol=0.08)
    fit = fit_beta(d, rows["norm"], rows["noise_sq"], t_range=(4, 64), n_boot=0)
    truth = fit_beta(d, exact, t_range=(4, 64), n_boot=0)["beta"]  # 0.405 over this range
    assert truth == pytest.approx(0.4, abs=0.01)
    assert fit["beta"] == pytest.approx(truth, abs=0.02)
    assert rows["n_pairs"][-1] == 256 * (4096 - 64)  # no pair spans two documents


def test_pairs_never_cross_documents_or_excluded_tokens():
    tokens = np.array([1, 2, 9, 3, 4, 9, 5])
    rows = correlation_decay(tokens, [0, 3, 6, 7], [1, 2], exclude=[9])
    # within docs and without the 9s: (1,2), (3,4) at distance 1; none at distance 2
    assert rows["n_pairs"] == [2.0, 0.0]
    assert rows["norm"][1] == 0.0
    with pytest.raises(InputError, match="stand above the sampling noise"):
        fit_beta(rows["distance"], rows["norm"], rows["noise_sq"])
    with pytest.raises(InputError, match="offsets"):
        correlation_decay(tokens, [0, 3, 6], [1])


def test_gamma_is_recovered_from_a_synthetic_loss_curve():
    n = np.arange(1.0, 256.0)
    noise = 1 + 0.002 * np.random.default_rng(0).standard_normal(len(n))
    loss = (2.0 + 1.5 * n**-0.4) * noise
    fit = fit_gamma(n, loss, n_boot=0)
    assert fit["gamma"] == pytest.approx(0.4, abs=0.03)
    assert fit["loss_inf"] == pytest.approx(2.0, abs=0.05)
    assert predict_alpha_D(0.4, 0.8) == pytest.approx(0.25)
    assert predict_interval([0.3, 0.5], [0.5, 1.0]) == pytest.approx([0.15, 0.5])
    assert predict_interval([0.3, 0.5], [-0.1, 1.0])[1] is None


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("position")
    rng = np.random.default_rng(0)
    letters = np.array(list("abcdefghij"))
    lexicon = ["".join(rng.choice(letters, rng.integers(2, 6))) for _ in range(100)]
    docs = [" ".join(rng.choice(lexicon, rng.integers(60, 120))) for _ in range(200)]
    text = root / "corpus.txt"
    text.write_text("\n\n".join(docs), encoding="utf-8")
    store = prepare_corpus(load_corpus(text), root / "store", vocab_size=300, quiet=True)
    run = root / "run"
    run.mkdir()
    gpt = GPT(GPTConfig(vocab_size=300, block_size=32, n_layer=1, n_head=2, n_embd=16), seed=0)
    save_weights(gpt, run / "checkpoint.safetensors")
    atomic_write_json(
        run / "config.json", {"model": gpt.config.to_dict(), "train": {}, "data_dir": str(store)}
    )
    return {"run": run, "store": store}


def test_position_loss_of_a_saved_model_matches_prefix_by_prefix_forwards(tiny_run):
    model = load_model_for_embedding(tiny_run["run"])
    out = position_loss(model, tiny_run["store"], context_len=16, max_windows=10, seed=3)
    assert out["context"] == list(map(float, range(1, 16)))
    assert out["n_windows"] == 10
    docs = load_corpus_tokens(tiny_run["store"], model.tokenizer).docs
    win = torch.from_numpy(window_tokens(docs, 16, 10, 3))
    for n in (1, 7, 15):  # the loss at context n from a forward pass over n tokens only
        with torch.no_grad():
            logits = model.module(win[:, :n])[0][:, -1].float()
        ce = torch.nn.functional.cross_entropy(logits, win[:, n])
        assert out["loss_nats"][n - 1] == pytest.approx(float(ce), rel=1e-5)
    with pytest.raises(ConfigError, match="maximum context"):
        position_loss(model, tiny_run["store"], context_len=64)
    with pytest.raises(InputError, match="hold 300 tokens"):
        window_tokens(docs, 300, None, 0)
