"""The hand-set two-layer construction: exact on every position (exhaustively at small n,
on 1,000 random + 1,000 hard instances at n = 1024), and its precision measured."""

import itertools
import math

import numpy as np
import torch

from scalelab.induction.construction import (
    count_errors,
    evaluation_instances,
    smallest_exact_bits,
    two_layer_construction,
)
from scalelab.induction.precision import Precision
from scalelab.induction.task import solve


def test_construction_is_exact_on_every_sequence_of_length_6_over_3_symbols() -> None:
    seqs = np.array(list(itertools.product(range(3), repeat=6)), dtype=np.int64)  # 729
    model = two_layer_construction(3, 6)
    pred = model.predict(torch.from_numpy(seqs)).numpy()
    np.testing.assert_array_equal(pred, solve(seqs))
    assert model.cfg.n_layer == 2 and model.cfg.n_head == 1 and not model.cfg.mlp


def test_construction_is_exact_at_n_1024_on_1000_random_and_1000_hard() -> None:
    model = two_layer_construction(3, 1024)
    seqs = evaluation_instances(1024, 3, n_random=1000, n_hard=1000, seed=7)
    assert seqs.shape == (2000, 1024)
    wrong_positions, wrong_sequences = count_errors(model, seqs, chunk=50)
    assert (wrong_positions, wrong_sequences) == (0, 0)


def test_construction_width_does_not_grow_with_n() -> None:
    widths = {two_layer_construction(5, n).cfg.d_model for n in (8, 256, 2048)}
    assert widths == {3 * 5 + 5}


def test_precision_is_measured_and_grows_like_log_n() -> None:
    scans = [smallest_exact_bits(n, 3, "float", n_random=32, n_hard=32) for n in (16, 64)]
    for scan in scans:
        p = scan["smallest_exact_bits"]
        assert p is not None and p <= 2 * math.log2(scan["n"]) + 3
        assert scan["exact_up_to"] >= p
        # one bit fewer really fails somewhere (so the number is measured, not assumed)
        model = two_layer_construction(3, scan["n"])
        seqs = evaluation_instances(scan["n"], 3, 32, 32, 0)
        assert count_errors(model, seqs, Precision(p - 1, "float"))[0] > 0
    assert scans[1]["smallest_exact_bits"] > scans[0]["smallest_exact_bits"]
