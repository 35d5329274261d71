"""CalibratedMLE: known dimensions, the raw statistic vs skdim, the inversion, duplicates."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scalelab.errors import EstimationError, InputError
from scalelab.intrinsic import calibrated as cal
from scalelab.intrinsic.calibrated import CalibratedMLE, invert_reference
from scalelab.intrinsic.mle import MLE, TwoNN
from scalelab.intrinsic.protocol import estimate_in_batches


def _rotate_into(x: np.ndarray, dim: int, rng: np.random.Generator) -> np.ndarray:
    """Embed points isometrically into R^dim with a random orthonormal frame."""
    q, _ = np.linalg.qr(rng.standard_normal((dim, x.shape[1])))
    return x @ q.T


def _uniform_ball(n, d, rng):
    g = rng.standard_normal((n, d))
    g /= np.linalg.norm(g, axis=1, keepdims=True)
    return g * rng.random(n)[:, None] ** (1.0 / d)


def _sphere(n, d, rng):
    g = rng.standard_normal((n, d + 1))
    return g / np.linalg.norm(g, axis=1, keepdims=True)


def _torus(n, d, rng):
    t = rng.uniform(0, 2 * np.pi, (n, d))
    return np.concatenate([np.cos(t), np.sin(t)], axis=1)


def _swiss_roll(n, rng):
    t = 1.5 * np.pi * (1 + 2 * rng.random(n))
    h = 21 * rng.random(n)
    return np.stack([t * np.cos(t), h, t * np.sin(t)], axis=1)


@pytest.mark.parametrize(
    ("name", "d"),
    [("sphere", 5), ("torus", 4), ("swiss", 2), ("subspace", 8), ("cube", 10)],
)
def test_recovers_known_low_dimensions(name, d):
    rng = np.random.default_rng(1)
    n = 4096
    if name == "sphere":
        x = _rotate_into(_sphere(n, d, rng), 20, rng)
    elif name == "torus":
        x = _torus(n, d, rng)
    elif name == "swiss":
        x = _swiss_roll(n, rng)
    elif name == "subspace":
        x = _rotate_into(rng.random((n, d)), 100, rng) + 1e-4 * rng.standard_normal((n, 100))
    else:
        x = rng.random((n, d))
    est = CalibratedMLE().fit(x)
    assert abs(est.dimension_ - d) / d < 0.10, (name, est.dimension_)


def test_corrects_the_high_dimensional_bias_of_mle_and_twonn():
    # A 30-dim cube rotated into R^40: the plain MLE reads far too low at n = 2048.
    rng = np.random.default_rng(2)
    x = _rotate_into(rng.random((2048, 30)), 40, rng)
    plain = MLE(k=20).fit(x).dimension_
    twonn = TwoNN().fit(x).dimension_
    est = CalibratedMLE().fit(x)
    assert plain < 0.8 * 30 and twonn < 0.85 * 30, (plain, twonn)
    assert abs(est.dimension_ - 30) / 30 < 0.08, est.dimension_
    assert est.raw_dimension_ < est.dimension_


def test_raw_statistic_matches_skdim_mle():
    skdim = pytest.importorskip("skdim")
    rng = np.random.default_rng(3)
    x = _rotate_into(_sphere(1500, 6, rng), 12, rng)
    for aggregate in ("harmonic", "mean"):
        est = CalibratedMLE(k=7, aggregate=aggregate).fit(x)
        ref = skdim.id.MLE()
        if aggregate == "mean":
            expected = ref.fit_transform(x, n_neighbors=7)
        else:
            expected = ref.fit(x, n_neighbors=7).dimension_
        assert est.raw_dimension_ == pytest.approx(expected, rel=1e-6)


def test_calibration_reproduces_a_fresh_uniform_ball():
    # The reference curve is built from other samples (seeded by n and m): an independent
    # 15-ball of the same size must map back close to 15 although the raw MLE is far lower.
    x = _uniform_ball(2000, 15, np.random.default_rng(12345))
    est = CalibratedMLE().fit(x)
    assert est.raw_dimension_ < 13.5
    assert est.dimension_ == pytest.approx(15, rel=0.03)


def test_invert_reference_on_a_closed_form_curve():
    def g(m):
        return 3.0 * math.sqrt(m)

    for target in (1.7, 10.0, 37.25, 199.0):
        stat = 3.0 * math.sqrt(target)
        d, seen = invert_reference(stat, g, 500)
        lo = math.floor(target)
        # linear interpolation between the bracketing integers
        expected = lo + (stat - g(lo)) / (g(lo + 1) - g(lo))
        assert d == pytest.approx(expected, rel=1e-12)
        assert lo in seen and lo + 1 in seen
        assert len(seen) <= 2 * math.ceil(math.log2(500)) + 3
    d, _ = invert_reference(0.5 * g(1), g, 500)
    assert d == pytest.approx(0.5)
    d, _ = invert_reference(g(500) + 1, g, 500)
    assert d == 500.0


def test_estimate_is_capped_at_the_ambient_dimension():
    # A full-dimensional Gaussian reads higher than a uniform ball of the same dimension.
    x = np.random.default_rng(4).standard_normal((1024, 6))
    est = CalibratedMLE(k=5).fit(x)
    assert est.dimension_ <= 6.0
    assert CalibratedMLE(max_dim=3).fit(x).dimension_ == 3.0


def test_cosine_metric_matches_euclidean_on_unit_vectors():
    rng = np.random.default_rng(5)
    x = _rotate_into(_sphere(1500, 7, rng), 30, rng)
    e = CalibratedMLE().fit(x)
    c = CalibratedMLE(metric="cosine").fit(x)
    assert c.raw_dimension_ == pytest.approx(e.raw_dimension_, rel=1e-9)
    assert c.dimension_ == pytest.approx(e.dimension_, rel=1e-9)


def test_deterministic_and_independent_of_the_cache():
    x = np.random.default_rng(6).random((600, 8))
    first = CalibratedMLE().fit(x).dimension_
    cal._REFERENCE_CACHE.clear()
    assert CalibratedMLE().fit(x).dimension_ == first
    assert CalibratedMLE(seed=1).fit(x).dimension_ != first


def test_duplicates_are_removed_and_counted_or_refused():
    x = np.random.default_rng(7).random((800, 5))
    xd = np.concatenate([x, x[:40]])
    est = CalibratedMLE().fit(xd)
    assert est.n_duplicates_removed_ == 40
    assert est.dimension_ == CalibratedMLE().fit(x).dimension_
    with pytest.raises(EstimationError, match="distance 0"):
        CalibratedMLE(remove_duplicates=False).fit(xd)


def test_works_in_the_batched_protocol():
    x = np.random.default_rng(8).random((2400, 6))
    res = estimate_in_batches(x, CalibratedMLE(), batch_size=1200, seed=0)
    assert res.estimator == "mle-calibrated-harmonic"
    assert len(res.batch_dimensions) == 2
    assert res.dimension == pytest.approx(6, rel=0.1)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"aggregate": "median"}, "aggregate"),
        ({"max_dim": 0}, "max_dim"),
        ({"k": 1}, "k >= 2"),
        ({"metric": "manhattan"}, "metric"),
    ],
)
def test_bad_parameters(kwargs, match):
    est = CalibratedMLE(**kwargs)  # scikit-learn style: stored as given, checked in fit
    assert est.get_params()[next(iter(kwargs))] == next(iter(kwargs.values()))
    with pytest.raises(InputError, match=match):
        est.fit(np.random.default_rng(0).random((50, 3)))


def test_too_few_points():
    with pytest.raises(InputError, match="k \\+ 1"):
        CalibratedMLE(k=5).fit(np.random.default_rng(0).random((5, 3)))


def test_reference_curve_is_increasing_and_near_identity_in_low_dimensions():
    g = np.array([cal.reference_statistic(1024, 5, "harmonic", m) for m in range(1, 17)])
    assert np.all(np.diff(g) > 0), np.round(np.diff(g), 3)
    # In 1-3 dimensions boundary effects are small: the MLE is nearly unbiased there.
    np.testing.assert_allclose(g[:3], [1, 2, 3], rtol=0.06)
    # ... and far too low in 16 dimensions at this sample size (the bias being corrected).
    assert g[-1] < 0.85 * 16


def test_beats_mle_and_twonn_on_high_dimensional_benchmark_manifolds():
    skdim = pytest.importorskip("skdim")
    pytest.importorskip("pandas")
    bm = skdim.datasets.BenchmarkManifolds(random_state=0)
    names = ["M9_Affine", "M10b_Cubic", "Mn1_Nonlinear"]  # d = 20, 17, 18
    data = bm.generate(n=2048)
    errors = {"mle": [], "twonn": [], "calibrated": []}
    for name in names:
        x, d = data[name], bm.truth.loc[name, "Intrinsic Dimension"]
        errors["mle"].append(abs(MLE(k=20).fit(x).dimension_ - d) / d)
        errors["twonn"].append(abs(TwoNN().fit(x).dimension_ - d) / d)
        errors["calibrated"].append(abs(CalibratedMLE().fit(x).dimension_ - d) / d)
    mean = {key: float(np.mean(v)) for key, v in errors.items()}
    assert mean["calibrated"] < 0.10, mean
    assert mean["calibrated"] < 0.5 * min(mean["mle"], mean["twonn"]), mean
