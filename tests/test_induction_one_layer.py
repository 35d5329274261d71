"""The one-layer gather construction: exact at its stated (h, m, p), for several n and |Σ|."""

import numpy as np
import pytest
import torch

from scalelab.errors import ConfigError, InputError
from scalelab.induction.construction import count_errors, evaluation_instances
from scalelab.induction.one_layer import GatherLayout, one_layer_construction
from scalelab.induction.precision import Precision
from scalelab.induction.task import hard_instances, solve


@pytest.mark.parametrize(
    ("alphabet", "n", "mode"),
    [(2, 33, "float"), (3, 65, "fixed"), (3, 129, "float"), (8, 64, "fixed"), (16, 100, "float")],
)
def test_exact_at_the_stated_precision(alphabet: int, n: int, mode: str) -> None:
    """Every position of uniform and hard instances is exact at the least p the layout
    allows, and at a few more bits (the packing changes with p)."""
    seqs = evaluation_instances(n, alphabet, 48, 48 if alphabet >= 3 else 0, seed=n)
    least = GatherLayout.least_bits(n, alphabet, mode)
    for bits in (least, least + 2, least + 5):
        model = one_layer_construction(alphabet, n, bits, mode)
        assert count_errors(model, seqs, Precision(bits, mode)) == (0, 0)


def test_sizes_as_stated() -> None:
    """h = 1, m = 1 + ⌈n/b⌉ with b = ⌊(p−1)/β⌋ (float) or ⌊p/β⌋ (fixed); h·m·p/n → β."""
    lay = GatherLayout(1000, 3, 21, "float")  # β = 2, b = 10
    assert (lay.digit_bits, lay.per_coordinate, lay.width) == (2, 10, 101)
    fixed = GatherLayout(1000, 3, 21, "fixed")  # b = 10 as well (21 // 2)
    assert fixed.width == 101 and fixed.hmp == 101 * 21
    assert GatherLayout.least_bits(1000, 3, "fixed") == 10  # 1000 < 2^10
    big = GatherLayout(100_000, 3, 41, "float")
    assert 2.0 < big.hmp / big.n < 2.1


def test_too_few_bits_breaks_it() -> None:
    """Below the precision it was built for, rounding corrupts the gathered digits."""
    n, s = 64, 8
    seqs = evaluation_instances(n, s, 64, 0, seed=0)
    model = one_layer_construction(s, n, 7, "float")  # b = 2 digits of 3 bits per coordinate
    wrong, _ = count_errors(model, seqs, Precision(5, "float"))
    assert wrong > 0


def test_hard_instances_read_f_at_i_star() -> None:
    rng = np.random.default_rng(3)
    inst = hard_instances(200, 201, rng)
    model = one_layer_construction(3, 201, 9, "fixed")
    pred = model.predict(torch.from_numpy(inst.seqs), Precision(9, "fixed")).numpy()
    assert np.array_equal(pred[:, -1], inst.answers)
    assert np.array_equal(pred, solve(inst.seqs))


def test_bad_layouts() -> None:
    with pytest.raises(ConfigError, match="needs at least 7 bits"):
        GatherLayout(100, 3, 4, "fixed")
    with pytest.raises(ConfigError, match="mode"):
        GatherLayout(10, 3, 8, "bogus")
    model = one_layer_construction(3, 8, 8)
    with pytest.raises(InputError, match="exceeds"):
        model.predict(torch.zeros(1, 9, dtype=torch.long))
