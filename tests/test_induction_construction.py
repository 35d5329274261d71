"""The hand-set two-layer constructions: the constant-width one (the paper's: width 12 for
every n and |Σ|) exact exhaustively at small n and on random + hard instances at n = 4,096
with |Σ| = n; the one-hot one exact at n = 1024; both precisions measured, not assumed."""

import itertools
import math

import numpy as np
import pytest
import torch

from scalelab.errors import ConfigError
from scalelab.induction.construction import (
    WIDTH,
    build_construction,
    count_errors,
    evaluation_instances,
    smallest_exact_bits,
    two_layer_construction,
)
from scalelab.induction.one_hot import one_hot_construction
from scalelab.induction.precision import Precision
from scalelab.induction.task import solve


@pytest.mark.parametrize("build", [two_layer_construction, one_hot_construction])
@pytest.mark.parametrize("symbols", [3, 5])
def test_construction_is_exact_on_every_sequence_of_length_6(build, symbols: int) -> None:
    seqs = np.array(list(itertools.product(range(symbols), repeat=6)), dtype=np.int64)
    model = build(symbols, 6)
    pred = model.predict(torch.from_numpy(seqs)).numpy()
    np.testing.assert_array_equal(pred, solve(seqs))
    assert model.cfg.n_layer == 2 and model.cfg.n_head == 1 and not model.cfg.mlp


def test_constant_width_construction_is_exact_at_n_4096_with_alphabet_n() -> None:
    n = 4096
    model = two_layer_construction(n, n)
    seqs = evaluation_instances(n, n, n_random=8, n_hard=8, seed=11)
    assert seqs.shape == (16, n) and seqs.max() > n - 50  # the whole alphabet is in play
    hard_f = seqs[8:, 2:-1:2]  # even n: a leading 0, then (e_1, f_1, …)
    assert len(np.unique(hard_f)) > 1000  # hard instances over the large alphabet, not bits
    assert count_errors(model, seqs, chunk=4) == (0, 0)


def test_constant_width_is_the_same_number_at_n_256_and_4096() -> None:
    widths = {two_layer_construction(s, n).cfg.n_embd for n in (256, 4096) for s in (3, 64, n)}
    assert widths == {WIDTH} == {12}


def test_one_hot_construction_is_exact_at_n_1024_and_grows_with_the_alphabet() -> None:
    model = one_hot_construction(3, 1024)
    seqs = evaluation_instances(1024, 3, n_random=300, n_hard=300, seed=7)
    assert count_errors(model, seqs, chunk=50) == (0, 0)
    assert {one_hot_construction(5, n).cfg.n_embd for n in (8, 2048)} == {3 * 5 + 5}
    assert one_hot_construction(64, 8).cfg.n_embd == 3 * 64 + 5


@pytest.mark.parametrize("kind", ["constant-width", "one-hot"])
def test_precision_is_measured_and_grows_like_log_n(kind: str) -> None:
    scans = [smallest_exact_bits(n, 3, "float", 32, 32, kind=kind) for n in (16, 256)]
    for scan in scans:
        p = scan["smallest_exact_bits"]
        assert p is not None and p <= 3 * math.log2(scan["n"])
        assert scan["exact_up_to"] >= p
        # one bit fewer really fails somewhere (so the number is measured, not assumed)
        model = build_construction(kind, 3, scan["n"])
        seqs = evaluation_instances(scan["n"], 3, 32, 32, 0)
        assert count_errors(model, seqs, Precision(p - 1, "float"))[0] > 0
    assert scans[1]["smallest_exact_bits"] > scans[0]["smallest_exact_bits"]


def test_a_high_starting_guess_still_finds_the_smallest_precision() -> None:
    low = smallest_exact_bits(256, 16, "float", 16, 16)
    high = smallest_exact_bits(256, 16, "float", 16, 16, start_bits=30)
    assert low["smallest_exact_bits"] == high["smallest_exact_bits"]


def test_unknown_construction_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown construction"):
        build_construction("sparse", 3, 8)
