"""MLE and TwoNN against scikit-dimension 0.5.0 run inside the test, known dimensions,
the cosine/Euclidean identity, and explicit duplicate handling."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from scalelab.errors import EstimationError, InputError
from scalelab.intrinsic.mle import MLE, TwoNN, drop_duplicates, local_mle
from scalelab.intrinsic.synthetic import curved_manifold, known_manifold

skdim = pytest.importorskip("skdim")


@pytest.fixture(scope="module")
def cloud() -> np.ndarray:
    return curved_manifold(2000, 10, 128, seed=7)


def test_mean_aggregate_equals_skdim_fit_transform(cloud: np.ndarray) -> None:
    ref = skdim.id.MLE().fit_transform(cloud.astype(np.float64), n_neighbors=20)
    assert MLE(k=20).fit_transform(cloud) == pytest.approx(ref, rel=1e-6)


def test_harmonic_aggregate_equals_skdim_fit(cloud: np.ndarray) -> None:
    ref_est = skdim.id.MLE().fit(cloud.astype(np.float64), n_neighbors=20)
    ours = MLE(k=20, aggregate="harmonic").fit(cloud)
    assert ours.dimension_ == pytest.approx(ref_est.dimension_, rel=1e-6)
    np.testing.assert_allclose(ours.dimension_pw_, ref_est.dimension_pw_, rtol=1e-6)


def test_unbiased_and_other_k_equal_skdim(cloud: np.ndarray) -> None:
    x64 = cloud.astype(np.float64)
    ref = skdim.id.MLE(unbiased=True).fit_transform(x64, n_neighbors=10)
    assert MLE(k=10, unbiased=True).fit_transform(cloud) == pytest.approx(ref, rel=1e-6)


def test_twonn_equals_skdim_defaults(cloud: np.ndarray) -> None:
    ref = skdim.id.TwoNN().fit(cloud.astype(np.float64)).dimension_
    assert TwoNN().fit_transform(cloud) == pytest.approx(ref, rel=1e-6)
    ref_mle = skdim.id.TwoNN(method="mle").fit(cloud.astype(np.float64)).dimension_
    assert TwoNN(method="mle").fit_transform(cloud) == pytest.approx(ref_mle, rel=1e-6)


def test_local_mle_closed_form() -> None:
    # R_j = j^(1/m) exactly: sum_j log(R_k/R_j) = (1/m) sum_j log(k/j), so m_i = (k-1) m / S.
    k, m = 6, 3.0
    r = np.arange(1, k + 1) ** (1 / m)
    s = np.log(k / np.arange(1, k + 1)).sum()
    assert local_mle(r[None, :])[0] == pytest.approx((k - 1) * m / s, rel=1e-14)


def test_cosine_is_half_of_euclidean_on_unit_vectors(cloud: np.ndarray) -> None:
    unit = cloud.astype(np.float64)
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    euclid = MLE(k=20).fit(unit)
    cosine = MLE(k=20, metric="cosine").fit(unit)
    assert cosine.dimension_ == pytest.approx(euclid.dimension_ / 2, rel=1e-12)
    np.testing.assert_allclose(cosine.dimension_pw_, euclid.dimension_pw_ / 2, rtol=1e-12)


# (kind, d, TwoNN also within 10%). At n = 4096 both estimators read a 10-cube low (8.7):
# the finite-sample bias that scalelab.intrinsic.calibrated removes.
CASES = [
    ("sphere", 2, True),
    ("sphere", 5, True),
    ("sphere", 10, False),
    ("torus", 2, True),
    ("torus", 3, True),
    ("swiss-roll", 2, True),
    ("subspace", 3, True),
    ("subspace", 6, False),
]


@pytest.mark.parametrize(("kind", "d", "twonn"), CASES)
def test_known_manifolds_recovered_within_10_percent(kind: str, d: int, twonn: bool) -> None:
    # The subspace lives in R^768 with small isotropic noise; the others in R^64.
    if kind == "subspace":
        x = known_manifold(kind, 4096, d, 768, noise=1e-4, seed=1)
    else:
        x = known_manifold(kind, 4096, d, 64, seed=1)
    assert MLE(k=20).fit_transform(x) == pytest.approx(d, rel=0.10)
    if twonn:
        assert TwoNN().fit_transform(x) == pytest.approx(d, rel=0.10)


def test_duplicates_removed_and_counted() -> None:
    x = curved_manifold(600, 4, 32, seed=2)
    noisy = np.concatenate([x, x[:40], x[:40]])
    est = MLE(k=10).fit(noisy)
    assert est.n_duplicates_removed_ == 80 and est.n_points_ == 600
    assert est.dimension_ == MLE(k=10).fit(x).dimension_
    # skdim on the same data silently averages in zeros (its m_i is 0 for a duplicate)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = skdim.id.MLE().fit_transform(noisy.astype(np.float64), n_neighbors=10)
    assert ref < est.dimension_ * 0.95


def test_keeping_duplicates_is_an_error_not_a_number() -> None:
    x = curved_manifold(300, 4, 32, seed=2)
    with pytest.raises(EstimationError, match="distance 0"):
        MLE(k=10, remove_duplicates=False).fit(np.concatenate([x, x[:1]]))
    with pytest.raises(EstimationError, match="distance 0"):
        TwoNN(remove_duplicates=False).fit(np.concatenate([x, x[:1]]))
    assert MLE(k=10, remove_duplicates=False).fit(x).n_duplicates_removed_ == 0


def test_drop_duplicates_keeps_first_occurrences_in_order() -> None:
    x = np.array([[1.0, 2.0], [3.0, 4.0], [1.0, 2.0], [5.0, 6.0], [3.0, 4.0]])
    unique, removed = drop_duplicates(x)
    np.testing.assert_array_equal(unique, [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    assert removed == 2


def test_lattice_ties_are_an_error() -> None:
    # On a square grid every point's 4 nearest neighbours tie: sum log(R_k/R_j) = 0.
    g = np.stack(np.meshgrid(np.arange(12.0), np.arange(12.0)), -1).reshape(-1, 2)
    with pytest.raises(EstimationError, match="same"):
        MLE(k=4).fit(np.concatenate([g, 100 + g]))


@pytest.mark.parametrize(
    ("make", "x", "message"),
    [
        (lambda: MLE(k=1), None, "k >= 2"),
        (lambda: MLE(aggregate="median"), None, "aggregate"),
        (lambda: MLE(metric="l1"), None, "metric"),
        (lambda: TwoNN(discard_fraction=1.0), None, "discard_fraction"),
        (lambda: MLE(k=5), np.ones((50, 3)), "identical"),
        (lambda: MLE(k=5), np.arange(10.0).reshape(5, 2), "at least k"),
    ],
)
def test_bad_parameters(make, x, message: str) -> None:
    with pytest.raises(InputError, match=message):
        make().fit(x)


def test_hash_collisions_cannot_merge_distinct_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    import scalelab.intrinsic.mle as mle

    monkeypatch.setattr(mle, "_row_hashes", lambda bits: np.zeros(len(bits), dtype=np.uint64))
    x = np.array([[1.0, 2.0], [3.0, 4.0], [1.0, 2.0], [5.0, 6.0]], dtype=np.float32)
    unique, removed = mle.drop_duplicates(x)
    np.testing.assert_array_equal(unique, [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    assert removed == 1


def test_estimators_follow_the_scikit_learn_parameter_contract() -> None:
    """get_params/set_params as scikit-learn defines them: `sklearn.base.clone` rebuilds an
    equal, unfitted estimator, and the clone gives the same dimension."""
    base = pytest.importorskip("sklearn.base")
    from scalelab.intrinsic.calibrated import CalibratedMLE

    x = curved_manifold(600, 3, 10, seed=1)
    for est in (MLE(k=7, aggregate="harmonic"), TwoNN(method="mle"), CalibratedMLE(k=6)):
        twin = base.clone(est)
        assert twin.get_params() == est.get_params() and twin is not est
        assert twin.fit(x).dimension_ == est.fit(x).dimension_
    est = MLE().set_params(k=9)
    assert est.k == 9 and repr(est).startswith("MLE(k=9")
    with pytest.raises(InputError, match="no parameter 'n_neighbors'"):
        MLE().set_params(n_neighbors=5)


@pytest.mark.parametrize(("kind", "d"), [("sphere", 5), ("torus", 3)])
def test_cpu_searches_give_the_same_estimate_as_skdim_on_known_dimensions(
    kind: str, d: int
) -> None:
    """The torch-free default and the torch bf16 search: identical local estimates, equal to
    skdim's (which runs sklearn's own neighbour search), and near the known dimension."""
    x = known_manifold(kind, 2500, d, 96, seed=4)
    ours = MLE(k=20).fit(x)
    bf16 = MLE(k=20, precision="bf16").fit(x)
    np.testing.assert_array_equal(ours.dimension_pw_, bf16.dimension_pw_)
    ref = skdim.id.MLE().fit_transform(x.astype(np.float64), n_neighbors=20)
    assert ours.dimension_ == pytest.approx(ref, rel=1e-6)
    assert ours.dimension_ == pytest.approx(d, rel=0.15)
