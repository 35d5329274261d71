"""The induction-heads task: solvers against hand-worked answers, generators' hard instances,
metrics, and p-bit rounding against exact rational arithmetic."""

from fractions import Fraction

import numpy as np
import pytest
import torch

from scalelab.errors import ConfigError, InputError
from scalelab.induction.precision import Precision, round_to_bits
from scalelab.induction.task import (
    BOTTOM,
    QUERY_TOKEN,
    accuracy_metrics,
    hard_instances,
    hard_instances_k,
    mixture_instances,
    solve,
    solve_reference,
    uniform_instances,
)

B = BOTTOM
HAND_CASES = [
    ([], []),
    ([5], [B]),
    ([0, 0, 0], [B, 0, 0]),  # repeats: the match is the previous position itself
    ([0, 1, 0, 1, 1, 2, 0], [B, B, 1, 0, 1, B, 1]),
    ([3, 1, 4, 1, 5, 9, 2, 6, 5, 3], [B, B, B, 4, B, B, B, B, 9, 1]),
    ([1, 2, 1, 3, 1], [B, B, 2, B, 3]),  # the rightmost previous occurrence wins
    ([7, 7, 8, 7], [B, 7, B, 8]),
]


@pytest.mark.parametrize(("seq", "expected"), HAND_CASES)
def test_solvers_match_hand_worked_answers(seq: list[int], expected: list[int]) -> None:
    assert solve_reference(seq).tolist() == expected
    if seq:
        assert solve(np.array([seq])).tolist() == [expected]


def test_vectorised_solver_equals_reference_on_random_batches() -> None:
    rng = np.random.default_rng(0)
    for alphabet, n in [(2, 1), (2, 50), (3, 17), (16, 200), (300, 64)]:
        seqs = uniform_instances(40, n, alphabet, rng)
        expected = np.stack([solve_reference(s) for s in seqs])
        np.testing.assert_array_equal(solve(seqs), expected)


def test_solver_rejects_bad_input() -> None:
    with pytest.raises(InputError):
        solve(np.array([[0, -1, 2]]))
    with pytest.raises(InputError):
        solve(np.array([[0.5, 1.0]]))


def test_hard_instances_have_the_index_answer() -> None:
    rng = np.random.default_rng(1)
    inst = hard_instances_k(500, 7, rng)
    seqs = inst.seqs
    assert seqs.shape == (500, 15)
    e, f = seqs[:, 0:-1:2], seqs[:, 1:-1:2]
    np.testing.assert_array_equal(f, inst.f)
    assert ((e == QUERY_TOKEN).sum(axis=1) == 1).all()  # exactly one e_i = ?
    assert (np.argmax(e == QUERY_TOKEN, axis=1) == inst.istar).all()
    assert set(np.unique(e)) <= {0, QUERY_TOKEN} and set(np.unique(f)) <= {0, 1}
    assert (seqs[:, -1] == QUERY_TOKEN).all()
    # the answer at the last position is f_{i*}, by the independent solver
    np.testing.assert_array_equal(solve(seqs)[:, -1], inst.answers)
    assert set(np.unique(inst.answers)) == {0, 1}


def test_hard_instances_over_a_larger_alphabet_use_every_symbol_but_the_query() -> None:
    inst = hard_instances_k(2000, 9, np.random.default_rng(3), alphabet_size=6)
    f = inst.seqs[:, 1:-1:2]
    assert set(np.unique(f)) == {0, 1, 3, 4, 5}  # Σ ∖ {?}, ? = 2
    e = inst.seqs[:, 0:-1:2]
    assert ((e == QUERY_TOKEN).sum(axis=1) == 1).all()
    np.testing.assert_array_equal(solve(inst.seqs)[:, -1], inst.answers)
    # |Σ| = 3 keeps the paper's bits and the old random stream: f from integers(0, 2)
    old = np.random.default_rng(4).integers(0, 2, size=(50, 9), dtype=np.int64)
    np.testing.assert_array_equal(hard_instances_k(50, 9, np.random.default_rng(4)).f, old)


def test_even_length_hard_instances_keep_the_answer() -> None:
    inst = hard_instances(200, 10, np.random.default_rng(2))
    assert inst.seqs.shape == (200, 10) and inst.k == 4
    np.testing.assert_array_equal(solve(inst.seqs)[:, -1], inst.answers)


def test_mixture_contains_both_kinds() -> None:
    rng = np.random.default_rng(3)
    seqs = mixture_instances(400, 9, 6, rng, hard_fraction=0.5)
    hard_like = (seqs[:, -1] == QUERY_TOKEN) & (seqs[:, 1:-1:2] <= 1).all(axis=1)
    assert 120 < hard_like.sum() < 280
    assert seqs.max() >= 3  # uniform rows use the whole alphabet
    with pytest.raises(ConfigError):
        mixture_instances(4, 9, 2, rng, hard_fraction=0.5)


def test_accuracy_metrics_on_a_known_case() -> None:
    target = np.array([[B, 1, 2, 3], [B, B, 0, 1]])
    pred = np.array([[B, 1, 0, 3], [0, B, 0, 2]])
    m = accuracy_metrics(pred, target)
    assert m["acc_all"] == pytest.approx(5 / 8)
    assert m["acc_non_bottom"] == pytest.approx(3 / 5)  # 1, 3, 0 right; 2, 1 wrong
    assert m["acc_last"] == pytest.approx(1 / 2)


def _nearest_p_bit_float(x: float, p: int) -> set[Fraction]:
    """All p-significant-bit numbers nearest to x, by exact rational search."""
    xf = Fraction(x)
    e = 0
    while abs(xf) >= 2**e:
        e += 1
    while abs(xf) < 2 ** (e - 1):
        e -= 1
    step = Fraction(2) ** (e - p)  # the grid of p-bit numbers with |x| in [2^(e-1), 2^e)
    lo = (xf / step).__floor__() * step
    cands = [lo, lo + step]
    best = min(abs(c - xf) for c in cands)
    return {c for c in cands if abs(c - xf) == best}


@pytest.mark.parametrize("p", [1, 3, 8, 16])
def test_float_rounding_is_round_to_nearest_p_significant_bits(p: int) -> None:
    rng = np.random.default_rng(p)
    x = rng.standard_normal(300) * 10.0 ** rng.integers(-5, 6, 300)
    r = round_to_bits(torch.from_numpy(x), p, "float").numpy()
    for xi, ri in zip(x, r, strict=True):
        assert Fraction(float(ri)) in _nearest_p_bit_float(float(xi), p)
    assert round_to_bits(torch.zeros(3, dtype=torch.float64), p).eq(0).all()


@pytest.mark.parametrize("p", [2, 8])
def test_fixed_rounding_has_p_fractional_bits_and_saturates_at_2_to_p(p: int) -> None:
    x = torch.linspace(-3 * 2**p, 3 * 2**p, 10001, dtype=torch.float64)
    r = round_to_bits(x, p, "fixed")
    assert torch.equal(r * 2**p, torch.round(r * 2**p))  # a multiple of 2^-p
    inside = x.abs() <= 2**p
    assert (r[inside] - x[inside]).abs().max() <= 2.0 ** -(p + 1)
    assert r.abs().max() == 2**p and (r[~inside].abs() == 2**p).all()


def test_straight_through_rounding_passes_gradients_unchanged() -> None:
    x = torch.tensor([0.3, -1.7, 5.55], dtype=torch.float64, requires_grad=True)
    y = Precision(2, "float", straight_through=True)(x)
    (y * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum().backward()
    assert torch.equal(x.grad, torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64))
    assert torch.equal(y.detach(), round_to_bits(x.detach(), 2))
    with pytest.raises(ConfigError):
        Precision(0)
