"""Where the seed-to-seed noise of a regression run comes from: the data draw or the init.

A seed changes both the training sample and the initialisation (with the batch order). On a
crossed design, samples s = 1 … S each trained from inits i = 1 … I (the same I inits for
every sample), log error is split as in a two-way random-effects ANOVA without replication:

    log e_si = μ + a_s + b_i + ε_si,  a ~ (0, σ²_data), b ~ (0, σ²_init), ε ~ (0, σ²_rest)

- `init_sd`: sd across inits on one sample, pooled, sqrt(σ²_init + σ²_rest): the
  optimisation noise, which averaging over inits (an ensemble) cuts;
- `data_sd`: sd across samples from one init, pooled, sqrt(σ²_data + σ²_rest);
- `seed_sd`: what one seed (new sample and new init) varies by, sqrt(σ²_data + σ²_init + σ²_rest);
- the components from the mean squares (E MS_sample = I σ²_data + σ²_rest, and alike), clipped
  at 0 where sampling noise makes an estimate negative.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from scalelab.config import Record
from scalelab.errors import InputError


@dataclass(frozen=True)
class NoiseSplit(Record):
    """The split of one crossed design (module docstring); sds of natural-log error."""

    samples: int
    inits: int
    init_sd: float
    data_sd: float
    seed_sd: float
    data_component_sd: float
    init_component_sd: float
    rest_sd: float


def noise_split(log_error: np.ndarray) -> NoiseSplit:
    """The split of log errors [S samples, I inits] (S, I >= 2, all finite)."""
    y = np.asarray(log_error, dtype=np.float64)
    if y.ndim != 2 or min(y.shape) < 2 or not np.all(np.isfinite(y)):
        raise InputError(
            f"the noise split needs finite log errors of >= 2 samples x >= 2 inits, got shape "
            f"{y.shape}; run more seeds or ensemble members"
        )
    n_s, n_i = y.shape
    row, col, grand = y.mean(1, keepdims=True), y.mean(0, keepdims=True), y.mean()
    ms_sample = n_i * float(((row - grand) ** 2).sum()) / (n_s - 1)
    ms_init = n_s * float(((col - grand) ** 2).sum()) / (n_i - 1)
    ms_rest = float(((y - row - col + grand) ** 2).sum()) / ((n_s - 1) * (n_i - 1))
    var_data = max(0.0, (ms_sample - ms_rest) / n_i)
    var_init = max(0.0, (ms_init - ms_rest) / n_s)
    within_sample = float(((y - row) ** 2).sum()) / (n_s * (n_i - 1))
    within_init = float(((y - col) ** 2).sum()) / (n_i * (n_s - 1))
    return NoiseSplit(
        samples=n_s,
        inits=n_i,
        init_sd=math.sqrt(within_sample),
        data_sd=math.sqrt(within_init),
        seed_sd=math.sqrt(var_data + var_init + ms_rest),
        data_component_sd=math.sqrt(var_data),
        init_component_sd=math.sqrt(var_init),
        rest_sd=math.sqrt(ms_rest),
    )
