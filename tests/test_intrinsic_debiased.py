"""d extrapolated in the batch size, and the calibrated MLE on the protocol's batches."""

from __future__ import annotations

import numpy as np
import pytest

from scalelab.errors import InputError
from scalelab.intrinsic.debiased import (
    batch_points,
    calibrated_in_batches,
    extrapolate_in_batch,
)
from scalelab.intrinsic.mle import MLE


def test_two_points_by_hand():
    # 1/b = 0.001, 0.0005; slope = (12 − 10)/(0.0005 − 0.001) = −4000; d_inf = 12 + 4000·0.0005
    fit = extrapolate_in_batch([1000, 2000], [10.0, 12.0])
    assert fit["d_inf"] == pytest.approx(14.0)
    assert fit["c"] == pytest.approx(4000.0)
    assert fit["per_doubling"] == pytest.approx(2.0)
    assert fit["residuals"] == pytest.approx([0.0, 0.0], abs=1e-9)


def test_the_model_is_recovered_and_its_misfit_shown():
    b = np.array([2048, 4096, 8192])
    fit = extrapolate_in_batch(b, 25.0 - 10000.0 / b)
    assert fit["d_inf"] == pytest.approx(25.0) and fit["c"] == pytest.approx(10000.0)
    # d rising by the same step per doubling is not 1/b-shaped: the residuals say so
    bent = extrapolate_in_batch(b, [18.0, 19.0, 20.0])
    assert bent["per_doubling"] == pytest.approx(1.0)
    assert max(np.abs(bent["residuals"])) > 0.1
    with pytest.raises(InputError, match="at least 2"):
        extrapolate_in_batch([4096, 4096], [19.0, 19.1])


def test_batch_points_reads_the_protocols_k_only():
    rows = [
        {"batch_size": 8192, "k": 20, "dimension": 20.2},
        {"batch_size": 2048, "k": 20, "dimension": 18.1},
        {"batch_size": 4096, "k": 10, "dimension": 17.0},
        {"batch_size": 4096, "k": 20, "dimension": 19.3},
    ]
    assert batch_points(rows, 20) == ([2048, 4096, 8192], [18.1, 19.3, 20.2])


def test_calibrated_batches_read_a_cube_closer_to_its_dimension_than_the_mle():
    # 10-cube, 2 batches of 1,024: the plain MLE (K = 20) reads 8.3, the calibrated one 9.5
    x = np.random.default_rng(0).random((2048, 10))
    cal = calibrated_in_batches(x, 1024, seed=0)
    raw = MLE(k=20).fit(x[:1024]).dimension_
    assert cal["n_batches"] == 2
    assert abs(cal["dimension"] - 10) < 0.8 < abs(raw - 10)
