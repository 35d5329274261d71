"""The regressor is Definition 1 / 3 / 4 of the paper, evaluated directly, and it can fit."""

import math

import numpy as np
import pytest
import torch

from scalelab.errors import ConfigError
from scalelab.manifold.config import FitConfig, RegressorConfig
from scalelab.manifold.model import TransformerRegressor
from scalelab.manifold.problem import Problem, ProblemConfig
from scalelab.manifold.train import fit_regressor


def _relu_attention_direct(h: np.ndarray, heads: list[tuple], w_o: np.ndarray) -> np.ndarray:
    """MHA(H) = W_O concat_j(A_j(H)), A(h_i) = Σ_j σ(<Q h_i, K h_j>) V h_j, with plain loops
    over tokens (columns h_i of H), as written in Definition 4."""
    n_tok = h.shape[1]
    outs = []
    for q, k, v in heads:
        a = np.zeros((v.shape[0], n_tok))
        for i in range(n_tok):
            for j in range(n_tok):
                a[:, i] += max(0.0, float((q @ h[:, i]) @ (k @ h[:, j]))) * (v @ h[:, j])
        outs.append(a)
    return w_o @ np.concatenate(outs, axis=0)


def test_relu_attention_block_matches_definition_4() -> None:
    torch.manual_seed(0)
    cfg = RegressorConfig(D=6, n_head=2, n_embd=8, attention="relu")
    mha = TransformerRegressor(cfg).blocks[0].mha.double()
    h = torch.randn(1, 6, 8, dtype=torch.float64)  # [batch, l, n_embd]; H = h[0].T
    got = mha(h)[0].T.detach().numpy()
    dh, scale = mha.d_head, 1.0 / (6 * math.sqrt(mha.d_head))
    wq, wk, wv = (m.weight.detach().numpy() for m in (mha.q, mha.k, mha.v))
    # head j uses rows j*dh:(j+1)*dh of each projection; the 1/(l sqrt(dh)) factor goes in V
    heads = [(wq[s], wk[s], scale * wv[s]) for s in (slice(j * dh, (j + 1) * dh) for j in range(2))]
    want = _relu_attention_direct(h[0].T.numpy(), heads, mha.out.weight.detach().numpy())
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("attention", ["relu", "softmax"])
def test_block_and_decoder_follow_definitions_1_and_3(attention: str) -> None:
    torch.manual_seed(1)
    cfg = RegressorConfig(D=5, n_layer=2, n_embd=8, n_head=2, attention=attention)
    model = TransformerRegressor(cfg).double()
    x = torch.randn(3, 5, dtype=torch.float64)
    h = model.embed(x)
    # tokens: column i is E' x^i + PE_i with E' = sqrt(D) e_1 and PE zero in the data row
    np.testing.assert_allclose(h[:, :, 0].numpy(), math.sqrt(5) * x.numpy())
    np.testing.assert_array_equal(h[0, :, 1:].numpy(), model.pe[:, 1:].double().numpy())
    for block in model.blocks:
        a = block.mha(h)
        h = block.ffn(a + h) + a + h  # B(H) = FFN(MHA(H) + H) + MHA(H) + H
    np.testing.assert_allclose(model(x).detach().numpy(), h[:, -1, 0].detach().numpy())


@pytest.mark.parametrize("attention", ["relu", "softmax"])
def test_regressor_drives_training_error_near_zero(attention: str) -> None:
    """32 noisy points: training MSE falls far below the label variance (it interpolates)."""
    torch.manual_seed(0)
    problem = Problem(ProblemConfig(d=2, D=8, noise_std=0.5))
    s = problem.sample(32, np.random.default_rng(0))
    cfg = RegressorConfig(D=8, n_embd=32, ffn_width=128, attention=attention)
    model = TransformerRegressor(cfg)
    fit = FitConfig(lr=3e-3, batch_size=32, max_steps=800, patience=10**6, min_eval_steps=100)
    out = fit_regressor(model, s.x, s.y, s.x, s.y, fit, generator=torch.Generator())
    assert out["train_mse"] < 1e-3 * np.var(s.y)


def test_bad_regressor_config_raises() -> None:
    with pytest.raises(ConfigError, match="divisible"):
        RegressorConfig(n_embd=30, n_head=4)
    with pytest.raises(ConfigError, match="attention"):
        RegressorConfig(attention="linear")
