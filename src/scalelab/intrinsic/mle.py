"""Nearest-neighbour intrinsic-dimension estimators: Levina–Bickel MLE and TwoNN.

Semantics follow scikit-dimension 0.5.0 exactly (the paper's code called
`skdim.id.MLE().fit_transform(X, n_neighbors=20)`), with two deliberate differences:
duplicates are handled explicitly instead of silently giving 0/inf, and `aggregate` names
which mean is taken instead of depending on whether `fit` or `fit_transform` was called:

- `MLE(aggregate="mean")` = skdim `MLE().fit_transform(X, n_neighbors=k)` (arithmetic mean of
  the local estimates; what the paper's code reports);
- `MLE(aggregate="harmonic")` = skdim `MLE().fit(X, n_neighbors=k).dimension_`
  (MacKay–Ghahramani: 1 / mean(1 / m_i)).
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, Self

import numba
import numpy as np

from scalelab.errors import EstimationError, InputError
from scalelab.intrinsic import PAPER_K
from scalelab.intrinsic.neighbors import METRICS, PRECISIONS, as_matrix, is_tensor, knn

if TYPE_CHECKING:  # annotations only: the estimators run without torch
    import torch

AGGREGATES = ("mean", "harmonic")


def drop_duplicates(X: np.ndarray | torch.Tensor) -> tuple[np.ndarray, int]:
    """Rows of `X` without exact repeats (first occurrences, original order), and the count
    removed. Identical points give zero neighbour distances, which make MLE estimates 0 or inf.

    A 64-bit hash per row finds the rows that may repeat; only those are compared exactly,
    so hash collisions cannot merge distinct rows.
    """
    x = as_matrix(X)
    h = _row_hashes(x.view(np.uint32 if x.dtype == np.float32 else np.uint64))
    order = np.argsort(h, kind="stable")
    same = h[order[1:]] == h[order[:-1]]
    if not same.any():
        return x, 0
    suspects = np.unique(np.concatenate([order[1:][same], order[:-1][same]]))
    rows = np.ascontiguousarray(x[suspects])
    _, first = np.unique(rows.view(np.dtype((np.void, rows.strides[0]))), return_index=True)
    keep = np.ones(len(x), dtype=bool)
    keep[suspects] = False
    keep[suspects[first]] = True
    return x[keep], int(len(x) - keep.sum())


@numba.njit(parallel=True, cache=True)
def _row_hashes(bits: np.ndarray) -> np.ndarray:
    """FNV-1a over each row's words."""
    out = np.empty(bits.shape[0], dtype=np.uint64)
    for i in numba.prange(bits.shape[0]):
        acc = np.uint64(14695981039346656037)
        for f in range(bits.shape[1]):
            acc = (acc ^ np.uint64(bits[i, f])) * np.uint64(1099511628211)
        out[i] = acc
    return out


def prepare_points(
    X: np.ndarray | torch.Tensor, k: int, *, remove_duplicates: bool = True
) -> tuple[np.ndarray, int]:
    """Validated points for a k-NN estimator: (points, number of duplicates removed)."""
    if k < 2:
        raise InputError(f"k = {k}: nearest-neighbour estimators need k >= 2")
    x = as_matrix(X)
    n_removed = 0
    if remove_duplicates:
        x, n_removed = drop_duplicates(x)
        if len(x) == 1:
            raise InputError(
                f"all {n_removed + 1} points are identical: there is no dimension to estimate"
            )
    if len(x) < k + 1:
        extra = f" after removing {n_removed} duplicates" if n_removed else ""
        raise InputError(f"{len(x)} points{extra} but k = {k}: give at least k + 1 points")
    return x, n_removed


class _NeighbourEstimator:
    """Shared parameters and validation of the k-NN estimators, scikit-learn style:
    `__init__` stores the hyper-parameters as given, `fit` validates them (`_validate`),
    `get_params`/`set_params` follow scikit-learn's contract (so `sklearn.base.clone` works)
    without importing scikit-learn."""

    name = "base"

    def __init__(
        self,
        k: int,
        metric: str = "euclidean",
        remove_duplicates: bool = True,
        precision: str = "auto",
        device: str | None = None,
    ) -> None:
        self.k = k
        self.metric = metric
        self.remove_duplicates = remove_duplicates
        self.precision = precision
        self.device = device

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p for p in sig.parameters if p != "self"]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The hyper-parameters by name (scikit-learn's `get_params`)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> Self:
        """Set hyper-parameters by name (scikit-learn's `set_params`); checked at `fit`."""
        valid = self._param_names()
        for name, value in params.items():
            if name not in valid:
                raise InputError(
                    f"{type(self).__name__} has no parameter {name!r}; use one of {valid}"
                )
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def _validate(self) -> None:
        """Refuse bad hyper-parameters with a message naming the fix (called by `fit`)."""
        if self.metric not in METRICS:
            raise InputError(f"unknown metric {self.metric!r}: use one of {', '.join(METRICS)}")
        if self.precision not in PRECISIONS:
            raise InputError(f"unknown precision {self.precision!r}: use {', '.join(PRECISIONS)}")
        if not isinstance(self.k, int) or isinstance(self.k, bool) or self.k < 2:
            raise InputError(f"k = {self.k}: nearest-neighbour estimators need k >= 2")
        aggregate = getattr(self, "aggregate", "mean")
        if aggregate not in AGGREGATES:
            raise InputError(f"unknown aggregate {aggregate!r}: use 'mean' or 'harmonic'")

    def _neighbour_distances(self, X: np.ndarray | torch.Tensor, k: int) -> np.ndarray:
        self._validate()
        device = self.device
        if device is None and is_tensor(X) and X.device.type != "cpu":
            device = str(X.device)  # the k-NN search runs where the points are
        x, self.n_duplicates_removed_ = prepare_points(
            X, max(k, 2), remove_duplicates=self.remove_duplicates
        )
        self.n_points_ = len(x)
        dist, _ = knn(x, k, self.metric, precision=self.precision, device=device)
        zero = int((dist[:, 0] == 0).sum())
        if zero:
            raise EstimationError(
                f"{zero} points have a neighbour at distance 0 (duplicates), which makes the "
                "estimate 0 or inf: let scalelab remove exact duplicates (the default)"
            )
        return dist

    def fit_transform(self, X: np.ndarray | torch.Tensor, y: None = None) -> float:
        """Fit and return `dimension_`."""
        return self.fit(X).dimension_

    def fit(self, X: np.ndarray | torch.Tensor, y: None = None) -> _NeighbourEstimator:
        raise NotImplementedError


class MLE(_NeighbourEstimator):
    """Levina–Bickel MLE: local `m_i = (k-1) / sum_{j<=k} log(R_k / R_j)` (k-2 if `unbiased`).

    Fitted: `dimension_` (the `aggregate` of the local estimates), `dimension_pw_` (the local
    estimates), `n_duplicates_removed_`, `n_points_`. With metric "cosine" the R are 1 - cos
    values, so on unit vectors the estimate is exactly half the Euclidean one.
    """

    name = "mle"

    def __init__(
        self,
        k: int = PAPER_K,
        aggregate: str = "mean",
        unbiased: bool = False,
        metric: str = "euclidean",
        remove_duplicates: bool = True,
        precision: str = "auto",
        device: str | None = None,
    ) -> None:
        super().__init__(k, metric, remove_duplicates, precision, device)
        self.aggregate = aggregate
        self.unbiased = unbiased

    def fit(self, X: np.ndarray | torch.Tensor, y: None = None) -> MLE:
        dist = self._neighbour_distances(X, self.k)
        self.dimension_pw_ = local_mle(dist, unbiased=self.unbiased)
        if self.aggregate == "mean":
            self.dimension_ = float(np.mean(self.dimension_pw_))
        else:
            self.dimension_ = float(1.0 / np.mean(1.0 / self.dimension_pw_))
        if not np.isfinite(self.dimension_):
            bad = int((~np.isfinite(self.dimension_pw_)).sum())
            raise EstimationError(
                f"MLE is not finite: {bad} points have all {self.k} neighbours at the same "
                "distance (lattice-like data); use a larger k or add a tiny jitter"
            )
        return self


def local_mle(dist: np.ndarray, *, unbiased: bool = False) -> np.ndarray:
    """Local MLE per row of ascending neighbour distances `[n, k]` (skdim's formula)."""
    k = dist.shape[1]
    with np.errstate(divide="ignore", invalid="ignore"):
        total = np.log(dist[:, -1:] / dist).sum(axis=1)
        return (k - 2 if unbiased else k - 1) / total


class TwoNN(_NeighbourEstimator):
    """TwoNN (Facco et al. 2017): the ratios mu = r2/r1 follow Pareto(1, d).

    Defaults equal skdim's `TwoNN()`: the largest `discard_fraction` of the ratios dropped and
    a line through the origin fitted to (log mu, -log(1 - F_emp)); `method="mle"` uses skdim's
    censored closed form instead. A global estimator: `dimension_pw_` is None.
    """

    name = "twonn"

    def __init__(
        self,
        discard_fraction: float = 0.1,
        method: str = "linear",
        metric: str = "euclidean",
        remove_duplicates: bool = True,
        precision: str = "auto",
        device: str | None = None,
    ) -> None:
        super().__init__(2, metric, remove_duplicates, precision, device)
        self.discard_fraction = discard_fraction
        self.method = method

    def _validate(self) -> None:
        super()._validate()
        if not 0.0 <= self.discard_fraction < 1.0:
            raise InputError(f"discard_fraction = {self.discard_fraction}: use a value in [0, 1)")
        if self.method not in ("linear", "mle"):
            raise InputError(f"unknown TwoNN method {self.method!r}: use 'linear' or 'mle'")

    def fit(self, X: np.ndarray | torch.Tensor, y: None = None) -> TwoNN:
        dist = self._neighbour_distances(X, 2)
        n = len(dist)
        n_keep = int(n * (1 - self.discard_fraction))
        if n_keep < 2:
            raise InputError(f"only {n_keep} ratios left after discarding: give more points")
        log_mu = np.sort(np.log(dist[:, 1] / dist[:, 0]))[:n_keep]
        if self.method == "mle":
            d = (n_keep - 1) / (log_mu.sum() + (n - n_keep) * log_mu[-1])
        else:
            y_emp = -np.log(1.0 - np.arange(1, n_keep + 1) / n)
            d = float(log_mu @ y_emp / (log_mu @ log_mu))
        self.dimension_ = float(d)
        self.dimension_pw_ = None
        if not np.isfinite(self.dimension_):
            raise EstimationError("TwoNN is not finite: all r2 == r1 (lattice-like data)")
        return self
