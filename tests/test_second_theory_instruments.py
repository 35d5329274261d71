"""The second theory's instruments against closed forms: the operator norm of the lagged
one-hot covariance of a Markov chain, the n-gram conditional entropies of sources whose
H_n is known, and the horizon a budget resolves."""

from __future__ import annotations

import numpy as np
import pytest

from scalelab.errors import InputError
from scalelab.laws.language_statistics import gamma_from_entropies, horizon
from scalelab.text import correlations
from scalelab.text.correlations import correlation_decay, operator_norm, operator_norm_decay
from scalelab.text.entropy import conditional_entropies

K, STAY = 10, 0.8


def sticky_chain(n: int, k: int, s: float, lag: int = 1, seed: int = 0) -> np.ndarray:
    """x_i = x_{i-lag} with probability s, else a uniform draw from k states."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, k, n)
    keep = rng.random(n) < s
    for i in range(lag, n):  # vectorised per lag class would hide the rule; n is small
        if keep[i]:
            x[i] = x[i - lag]
    return x


@pytest.fixture(scope="module")
def chain() -> np.ndarray:
    return sticky_chain(300_000, K, STAY)


def test_operator_norm_of_a_markov_chain_matches_the_closed_form(chain):
    """Transition T = sI + (1-s)J/k, uniform π: C_t = diag(π)T^t − ππᵀ = (s^t/k)(I − J/k),
    whose eigenvalues are s^t/k (k−1 times) and 0: ‖C_t‖_op = s^t/k, ‖C_t‖_F = √(k−1)·s^t/k."""
    t = np.arange(1, 9)
    got = operator_norm_decay(chain, [0, len(chain)], t)
    truth = STAY**t / K
    norm, noise = np.array(got["norm"]), np.array(got["noise"])
    assert np.all(np.abs(norm - truth) <= 3 * noise + 1e-4), (norm, truth, noise)
    assert np.all(noise < 0.02 * truth[0]) and np.all(norm > 2 * noise)
    # where the signal is 50× the noise the two norms differ by the closed form's √(k−1)
    fro = np.array(correlation_decay(chain, [0, len(chain)], t[:4])["norm"])
    assert fro / norm[:4] == pytest.approx(np.full(4, np.sqrt(K - 1)), rel=0.05)


def test_the_sparse_path_agrees_with_the_dense_norm(monkeypatch):
    """Zipf marginals: with uniform ones the rank-one term p qᵀ hardly moves the norm."""
    rng = np.random.default_rng(3)
    w = 1 / np.arange(1, 401) ** 1.2
    a = rng.choice(400, 20_000, p=w / w.sum())
    b = np.where(rng.random(20_000) < 0.3, a, rng.choice(400, 20_000, p=w / w.sum()))
    joint = np.zeros((400, 400))
    np.add.at(joint, (a, b), 1 / len(a))
    c = joint - np.outer(joint.sum(1), joint.sum(0))
    reference = np.linalg.svd(c, compute_uv=False)[0]
    assert len(np.unique(np.concatenate([a, b]))) > correlations.DENSE_MAX  # the sparse path
    assert operator_norm(a, b) == pytest.approx(reference, rel=1e-8)
    monkeypatch.setattr(correlations, "DENSE_MAX", 10_000)  # the dense path
    assert operator_norm(a, b) == pytest.approx(reference, rel=1e-8)


def test_pairs_never_cross_a_document_or_an_excluded_token():
    tok = [5, 5, 9, 5, 5, 6, 6]
    # documents [5 5 9 5] [5 6 6], 9 excluded: lag-1 pairs (5,5) in the first, (5,6) (6,6)
    got = operator_norm_decay(tok, [0, 4, 7], [1], exclude=[9])
    assert got["n_pairs"] == [3.0]
    h = conditional_entropies(tok, [0, 4, 7], 1, exclude=[9])
    assert h["windows"] == [6, 3]


H_ROW = -(0.775 * np.log(0.775) + 3 * 0.075 * np.log(0.075))  # stay .7 + .3/4, else .075


def test_conditional_entropies_of_markov_sources_match_their_closed_forms():
    """k = 4, s = 0.7: a first-order chain has H_0 = ln 4 and H_n = H_row for n ≥ 1; a
    source that copies the token two back has H_0 = H_1 = ln 4 (its odd and even tokens are
    independent chains) and H_n = H_row for n ≥ 2."""
    one = sticky_chain(200_000, 4, 0.7, lag=1, seed=1)
    two = sticky_chain(200_000, 4, 0.7, lag=2, seed=2)
    h1 = conditional_entropies(one, [0, len(one)], 3)["H"]
    h2 = conditional_entropies(two, [0, len(two)], 3)["H"]
    assert h1 == pytest.approx([np.log(4), H_ROW, H_ROW, H_ROW], abs=0.01)
    assert h2 == pytest.approx([np.log(4), np.log(4), H_ROW, H_ROW], abs=0.01)


def test_horizon_is_the_last_lag_before_the_first_unresolved_one():
    # floors at P = 100 pairs' worth: noise·√(10000/100) = 10·noise
    got = horizon([1, 2, 4, 8], [0.5, 0.3, 0.05, 0.3], [0.01] * 4, [10_000] * 4, 100)
    # needed: norm ≥ 2 × 0.1: lags 1, 2 and 8 resolved, 4 not: n* = 2 (8 is past a gap)
    assert got["resolved"] == [1.0, 2.0, 8.0] and got["horizon"] == 2.0
    more = horizon([1, 2, 4, 8], [0.5, 0.3, 0.05, 0.3], [0.01] * 4, [10_000] * 4, 10_000)
    assert more["horizon"] == 8.0
    with pytest.raises(InputError, match="budget"):
        horizon([1], [0.1], [0.01], [10], 0)


def test_gamma_is_read_only_below_the_horizon_and_where_resolved():
    n = np.arange(0, 11)
    h = np.where(n > 0, 1.0 + 0.5 * np.maximum(n, 1) ** -0.7, 3.0)  # H_0 is no power law
    h[8:] = 0.2  # beyond the horizon: a curve the fit must not see
    resolved = n != 3
    got = gamma_from_entropies(n, h, resolved, n_max=7)
    assert got["n_used"] == [1, 2, 4, 5, 6, 7]
    assert got["gamma"] == pytest.approx(0.7, abs=1e-3)
    assert got["entropy_inf"] == pytest.approx(1.0, abs=1e-3)


def test_counts_prediction_is_the_instruments_composed_at_the_budget(tmp_path):
    """predict_from_counts: β over the lags the budget resolves, γ from the resolved H_n up
    to that horizon, γ/(2β); recomputed here from the instruments by hand."""
    from scalelab.laws.language_statistics import fit_beta
    from scalelab.probe.statistics import CountsConfig, geometric_distances, predict_from_counts
    from scalelab.text.corpora import load_corpus
    from scalelab.text.store import TokenStore, prepare_corpus

    spec = "synth:facts:a=1.0,words=4,key_len=2,value_len=2,facts_per_doc=4,tokens=6000"
    store = prepare_corpus(load_corpus(spec), tmp_path / "s", vocab_size=262, quiet=True)
    got = predict_from_counts(store, 2_000, CountsConfig(context_len=64, n_boot=20))
    train = TokenStore(store, "train")
    tok = np.asarray(train.tokens)
    eot = [train.eot_id]
    op = operator_norm_decay(tok, train.offsets, geometric_distances(63, 20), exclude=eot)
    hz = horizon(op["distance"], op["norm"], op["noise"], op["n_pairs"], 2_000)
    beta = fit_beta(op["distance"], op["norm"], np.square(op["noise"]),
                    t_range=(1, hz["horizon"]), n_boot=20)  # fmt: skip
    h = conditional_entropies(tok, train.offsets, int(hz["horizon"]), exclude=eot)
    gamma = gamma_from_entropies(h["n"], h["H"], h["resolved"], hz["horizon"])
    assert got["horizon"]["horizon"] == hz["horizon"] > 1
    assert got["beta"]["beta"] == pytest.approx(beta["beta"])
    assert got["gamma"]["gamma"] == pytest.approx(gamma["gamma"])
    assert got["alpha_D"] == pytest.approx(gamma["gamma"] / (2 * beta["beta"]))
    # a budget too small to resolve three lags: β is not measured, and the result says why
    tiny = predict_from_counts(store, 1, CountsConfig(context_len=64, n_boot=20))
    assert tiny["error"].startswith("β not measured") and "alpha_D" not in tiny
