"""The hand-built Lemma-1 transformer (`manifold.construction`): the dense network equals the
partition-of-unity sum it implements, that sum is a partition of unity, its sup error is within
the lemma's bound, and each misprint of the printed proof (Appendix E.1) fails when built as
printed (`Reading`). Truth here is computed independently: a brute-force sum over every
patch, targets with a known Hölder constant, direct sums of the field."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from scalelab.errors import ConfigError
from scalelab.manifold import construction as con
from scalelab.manifold.construction import (
    D_EMBD,
    Reading,
    build,
    evaluate,
    nodes,
    partition_sum,
    psi,
    sizes,
)
from scalelab.manifold.construction_rate import lattice_points, make_target


def brute_force(x: np.ndarray, values: np.ndarray, G: int) -> np.ndarray:
    """Σ over every patch n of f_n Π_i ψ(3(G − 1)(x^i − c_{n^i})), ψ as min(1, max(0, 2 − |t|))."""
    c = nodes(x.shape[1], G)  # [G^d, d]
    t = 3.0 * (G - 1) * (x[:, None, :] - c[None])
    weights = np.minimum(1.0, np.maximum(0.0, 2.0 - np.abs(t))).prod(-1)
    return weights @ values


def points(d: int, n: int = 6, seed: int = 0) -> np.ndarray:
    """Random points plus the corners 0 and 1 (where a missing bump shows)."""
    x = np.random.default_rng(seed).random((n, d))
    return np.vstack([x, np.zeros(d), np.ones(d)])


@pytest.mark.parametrize(("d", "G"), [(1, 5), (2, 4), (3, 3)])
def test_dense_pass_equals_the_closed_form(d: int, G: int) -> None:
    values = np.random.default_rng(d).standard_normal(G**d)
    model = build(d, G, values)
    x = points(d)
    dense = model.forward(x)
    np.testing.assert_allclose(evaluate(x, values, G), brute_force(x, values, G), atol=1e-12)
    assert np.abs(dense - brute_force(x, values, G)).max() <= 1e-6
    # every head is a full Definition-4 head: its own 5×5 Q, K and V
    for block in model.blocks:
        assert block.q.shape == block.k.shape == block.v.shape == (block.heads, D_EMBD, D_EMBD)


def test_data_rows_stay_within_the_bound_c_is_computed_from() -> None:
    """C is computed for data entries in [0, 1] (`DATA_BOUND`); the trace shows they are,
    at the input of every Interaction-Lemma block."""
    model = build(2, 4, np.random.default_rng(0).standard_normal(16))
    _, inputs = model.forward(points(2), trace=True)
    for block, h in zip(model.blocks, inputs, strict=True):
        if np.isfinite(block.c).all():
            assert h[:, :2].min() >= -1e-9 and h[:, :2].max() <= con.DATA_BOUND + 1e-9


def test_a_smaller_interaction_constant_leaks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The score bound is what makes C large enough: a tenth of it lets heads read tokens
    other than their target, and the network no longer computes f̂."""
    values = np.random.default_rng(1).standard_normal(16)
    x = points(2)
    assert np.abs(build(2, 4, values).forward(x) - evaluate(x, values, 4)).max() <= 1e-6
    real = con.score_bound
    monkeypatch.setattr(con, "score_bound", lambda qb, kb: real(qb, kb) / 10)
    assert np.abs(build(2, 4, values).forward(x) - evaluate(x, values, 4)).max() > 1e-3


def test_float32_loses_what_float64_keeps() -> None:
    """C ≈ 16·S·l²/π² ≈ 1.6·S·l² sits inside every score: float32's 6e-8 relative error
    times C is far above 1e-6 already at l = 86 tokens."""
    values = np.random.default_rng(2).standard_normal(36)
    model = build(2, 6, values)
    x = points(2, 2)
    ref = evaluate(x, values, 6)
    assert np.abs(model.forward(x) - ref).max() <= 1e-6
    assert np.abs(model.forward(x, dtype=torch.float32) - ref).max() > 1e-4


@pytest.mark.parametrize("G", [2, 3, 5, 17])
def test_partition_of_unity(G: int) -> None:
    x = np.linspace(0.0, 1.0, 2001)
    np.testing.assert_allclose(partition_sum(x, G), 1.0, atol=1e-12)
    # and through the network: f ≡ 1 gives 1 everywhere
    if G <= 5:
        np.testing.assert_allclose(build(2, G, np.ones(G * G)).forward(points(2)), 1.0, atol=1e-6)


@pytest.mark.parametrize("beta", [0.5, 1.0])
def test_sup_error_within_the_lemma_bound(beta: float) -> None:
    """f(u) = |u¹ − 0.37|^β + |u² − 0.61|^β has H ≤ 2 (each term has constant 1, and
    |Δu^i| ≤ ‖Δu‖); also the field and multiscale targets with their own H."""
    d, G = 2, 9
    f = lambda u: np.abs(u[:, 0] - 0.37) ** beta + np.abs(u[:, 1] - 0.61) ** beta  # noqa: E731
    u = lattice_points(d, 101, np.array([0.3, 0.7]))
    h = 1.0 / (G - 1)
    rng = np.random.default_rng(3)
    drawn = [make_target(n, d, beta, rng, cap=24) for n in ("field", "multiscale")]
    targets = [(f, 2.0)] + [(t.at, t.holder) for t in drawn]
    for target, holder in targets:
        err = np.abs(evaluate(u, target(nodes(d, G)), G) - target(u)).max()
        sharp = holder * (math.sqrt(d) * 2 * h / 3) ** beta
        lemma = 2**d * d**beta * holder * h**beta
        assert err <= sharp <= lemma


def test_field_lattice_by_fft_equals_direct_sums() -> None:
    t = make_target("field", 2, 0.5, np.random.default_rng(4), cap=24)
    shift = np.array([0.25, 0.9])
    np.testing.assert_allclose(t.lattice(7, shift), t.at(lattice_points(2, 7, shift)), atol=1e-10)
    np.testing.assert_allclose(t.on_nodes(5), t.at(nodes(2, 5)), atol=1e-10)


@pytest.mark.parametrize(("d", "G"), [(1, 3), (2, 3), (3, 2), (4, 2), (3, 3)])
def test_sizes_match_the_built_model(d: int, G: int) -> None:
    model = build(d, G, np.zeros(G**d))
    s = sizes(d, G)
    assert (model.tokens, model.heads, len(model.blocks), model.params) == (
        s.tokens, s.heads, s.depth, s.params_dense,
    )  # fmt: skip
    assert s.tokens == d + d * G + d * G**d
    assert max(b.heads for b in model.blocks) == s.max_heads
    assert s.params_appendix_b == s.depth * 25 * (3 * d * G**d + 2)


# ---- the misprints: each printed form, built or evaluated, fails -----------------------------


def test_misprint_psi_printed_trapezoid_is_no_partition_of_unity() -> None:
    """Printed ψ = 1 − |t| on 1 ≤ |t| ≤ 2 jumps from 1 to 0 at |t| = 1 (so no ReLU FFN
    computes it) and its bumps sum to −1 between two centres; 2 − |t| is continuous."""
    eps = 1e-9
    assert psi(1 + eps, printed=True) < psi(1.0, printed=True) - 0.99
    assert abs(psi(1 + eps) - psi(1.0)) < 1e-8
    x = np.linspace(0, 1, 401)
    assert np.abs(partition_sum(x, 5, printed_psi=True) - 1).max() >= 1.99
    np.testing.assert_allclose(partition_sum(x, 5), 1.0, atol=1e-12)


def test_misprint_bump_scale_3n() -> None:
    """Scale 3G: the bumps shrink by (G − 1)/G, gaps open between them: f ≡ 1 is not
    reproduced; 3(G − 1) reproduces it."""
    G, x = 5, np.array([[0.125], [0.3], [0.5]])
    wrong = build(1, G, np.ones(G), reading=Reading(printed_scale=True)).forward(x)
    assert np.abs(wrong - 1).max() > 0.4
    np.testing.assert_allclose(build(1, G, np.ones(G)).forward(x), 1.0, atol=1e-9)


def test_misprint_f_n_read_at_the_cell_centre() -> None:
    """f_n = f(centre of U_n) = f(n/(G − 1)) is one cell away from bump n's centre: f(u) = u
    (H = 1, β = 1) is then off by a whole cell at the nodes, above the bound H·(2/3)/(G − 1)
    that the bump-centre reading meets."""
    G = 6
    x = nodes(1, G)
    f = lambda u: u[:, 0]  # noqa: E731
    printed = Reading(printed_centre=True)
    wrong = build(1, G, f(nodes(1, G, printed)), R=2.0, reading=printed).forward(x)
    right = build(1, G, f(nodes(1, G))).forward(x)
    sharp = (2 / 3) / (G - 1)
    assert np.abs(wrong - f(x)).max() > sharp
    assert np.abs(right - f(x)).max() <= 1e-9  # exact at the nodes


def test_misprint_ffn_outputs_the_token_not_the_increment() -> None:
    """Definition 3 adds FFN(·) to the residual; an FFN that returns the new token (as the
    printed W₇ and the final W₁ do) counts the old rows twice."""
    G, x = 4, points(1)
    wrong = build(1, G, np.ones(G), reading=Reading(printed_ffn=True)).forward(x)
    assert np.abs(wrong - 1).min() > 0.5
    np.testing.assert_allclose(build(1, G, np.ones(G)).forward(x), 1.0, atol=1e-9)


def test_misprint_key_offset_one_bump_over() -> None:
    """The printed key 1 − j/(N − 1) centres bump j at j/(G − 1), one cell right: no bump
    is left at 0, and f ≡ 1 comes out 0 there."""
    G, x = 5, np.array([[0.0], [0.1]])
    wrong = build(1, G, np.ones(G), reading=Reading(printed_key=True)).forward(x)
    assert abs(wrong[0]) < 1e-9
    np.testing.assert_allclose(build(1, G, np.ones(G)).forward(x), 1.0, atol=1e-9)


@pytest.mark.parametrize(("d", "G"), [(0, 4), (2, 1)])
def test_bad_sizes_are_refused(d: int, G: int) -> None:
    with pytest.raises(ConfigError, match="use"):
        build(d, G, np.zeros(max(G, 1) ** max(d, 1)))
