"""The settings of `scalelab id`: an estimator, its k-NN search, the batch protocol and the β
of the exponents it predicts. Torch-free (the CLI reads the defaults without the estimators),
as `lm.config` is for the language models."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from scalelab.config import Config, option
from scalelab.errors import ConfigError
from scalelab.fields import positive_int
from scalelab.intrinsic import ESTIMATORS, PAPER_BATCH_SIZE


@dataclasses.dataclass(frozen=True)
class IdConfig(Config):
    """How d is estimated from a point cloud: `make()` gives the estimator (options left
    None take its own defaults; options it does not have are refused), `batch_size` the
    protocol's batches, `beta` the smoothness of the predicted exponents."""

    estimator: str = option("mle", f"One of: {', '.join(ESTIMATORS)}.")
    k: int | None = option(None, "Neighbours (default: the estimator's).", flag="--k")
    metric: str = option("euclidean", "euclidean, cosine (1 - cos) or angular.")
    aggregate: str | None = option(
        None, "mean (skdim fit_transform, the paper's) or harmonic (skdim fit)."
    )
    batch_size: int = option(PAPER_BATCH_SIZE, "Points per batch (the paper's code used 3600).")
    unbiased: bool = option(False, "MLE with k-2 instead of k-1.")
    keep_duplicates: bool = option(
        False, "Keep exact duplicate rows (then any zero distance is an error)."
    )
    beta: float = option(1.0, "Hölder smoothness β for the predicted exponents.")
    precision: str = option(
        "auto",
        "Products of the CPU k-NN search: auto (= fp32, numpy, does not load torch), fp64, or "
        "bf16 (torch; faster products where the CPU has bf16 units, but torch takes ~1.4 s to "
        "load). Exact either way.",
    )
    device: str | None = option(
        None,
        "Run the k-NN search as torch ops on this device (cuda, cuda:1). Default: the CPU "
        "search in numpy, which does not load torch.",
    )
    seed: int = option(0, "Random seed (recorded with the results).")

    def validate(self) -> None:
        """The protocol's own settings; the estimator's (its name, k, metric, search, and
        which options it has) are checked where `make()` builds it, by the estimator."""
        positive_int(self.batch_size, "batch_size")
        if not math.isfinite(self.beta) or self.beta <= 0:
            raise ConfigError(f"beta {self.beta}: use a positive number")

    def make(self) -> Any:
        """The estimator these settings name (`intrinsic.protocol.make_estimator`)."""
        from scalelab.intrinsic.protocol import make_estimator

        return make_estimator(
            self.estimator,
            k=self.k,
            aggregate=self.aggregate,
            metric=self.metric,
            unbiased=self.unbiased,
            remove_duplicates=not self.keep_duplicates,
            seed=self.seed,
            device=self.device,
            precision=self.precision,
        )
