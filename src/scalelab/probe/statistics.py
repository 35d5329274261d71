"""The second theory's prediction for one corpus: β from the token store's counts, γ from a
model's loss against context length, alpha_D = γ/(2β) (Cagnetta et al. 2026).

Settings (`StatisticsConfig`, declared before any corpus was scored): correlations on the
store's train split at ~20 geometric distances 1 … context_len − 1, β fitted over every one
of them whose ‖C_t‖² stands at least 4× above its sampling-noise floor; the loss curve over
context lengths 1 … context_len − 1 on at most 512 test windows, γ from L_∞ + c·n^-γ over all
of them. context_len defaults to the model's maximum context (the data sweep's 128 for the
own reference model): the models whose α_D is observed never see farther.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from scalelab.laws.language_statistics import (
    fit_beta,
    fit_gamma,
    predict_alpha_D,
    predict_interval,
)
from scalelab.text.correlations import store_correlation_decay


@dataclass(frozen=True)
class StatisticsConfig:
    """How β and γ are measured (see the module docstring for why)."""

    context_len: int | None = None
    n_distances: int = 20
    max_windows: int = 512
    n_boot: int = 100
    seed: int = 0


def geometric_distances(max_distance: int, n: int) -> list[int]:
    """About `n` distinct integers from 1 to `max_distance`, evenly spaced in log."""
    return np.unique(np.round(np.geomspace(1, max_distance, n)).astype(int)).tolist()


def predict_from_statistics(
    store: str | Path,
    model: str | Path,
    cfg: StatisticsConfig | None = None,
    *,
    weights: str | None = None,
) -> dict[str, Any]:
    """β (counts of `store`'s train split), γ (`model`'s loss on its test split) and the
    prediction alpha_D = γ/(2β) with the range the two intervals give."""
    from scalelab.lm.load import load_model_for_embedding
    from scalelab.probe.position_loss import position_loss

    cfg = cfg or StatisticsConfig()
    loaded = load_model_for_embedding(model, weights=weights)
    ctx = cfg.context_len or loaded.max_context
    curve = position_loss(
        loaded, store, context_len=ctx, max_windows=cfg.max_windows, seed=cfg.seed
    )
    gamma = fit_gamma(curve["context"], curve["loss_nats"], n_boot=cfg.n_boot, seed=cfg.seed)
    counts = store_correlation_decay(store, geometric_distances(ctx - 1, cfg.n_distances))
    beta = fit_beta(
        counts["distance"],
        counts["norm"],
        counts["noise_sq"],
        n_boot=cfg.n_boot,
        seed=cfg.seed,
    )
    return {
        "alpha_D": predict_alpha_D(gamma["gamma"], beta["beta"]),
        "alpha_D_range": predict_interval(gamma["gamma_ci95"], beta["beta_ci95"]),
        "beta": beta,
        "gamma": gamma,
        "correlations": counts,
        "loss_curve": curve,
        "config": asdict(cfg),
    }


@dataclass(frozen=True)
class CountsConfig:
    """The second theory's instruments as declared (docs/fitting.md, "as its authors define
    them"): β by the operator norm at ~`n_distances` geometric lags 1 … `context_len` − 1, the
    fit over the lags the sweep's largest budget resolves; γ from plug-in n-gram entropies
    H_n on the full train split over 1 ≤ n ≤ that horizon, where resolved."""

    context_len: int = 128
    n_distances: int = 20
    n_boot: int = 100
    seed: int = 0


def predict_from_counts(
    store: str | Path, budget_tokens: float, cfg: CountsConfig | None = None
) -> dict[str, Any]:
    """β, the horizon n*(P) at `budget_tokens`, γ and the predicted exponent of the excess
    loss γ/(2β), all counted on `store`'s train split (end-of-text excluded). Where the
    counts cannot resolve β or γ, the result has an "error" naming the instrument and why,
    beside what was measured."""
    from scalelab.errors import InputError
    from scalelab.laws.language_statistics import gamma_from_entropies, horizon
    from scalelab.text.correlations import operator_norm_decay
    from scalelab.text.entropy import conditional_entropies
    from scalelab.text.store import TokenStore

    cfg = cfg or CountsConfig()
    train = TokenStore(store, "train")
    tokens, exclude = np.asarray(train.tokens), [train.eot_id]
    lags = geometric_distances(cfg.context_len - 1, cfg.n_distances)
    op = operator_norm_decay(tokens, train.offsets, lags, exclude=exclude, seed=cfg.seed)
    hz = horizon(op["distance"], op["norm"], op["noise"], op["n_pairs"], budget_tokens)
    out: dict[str, Any] = {"budget_tokens": float(budget_tokens), "horizon": hz,
                           "correlations": op, "config": asdict(cfg)}  # fmt: skip
    try:
        out["beta"] = fit_beta(op["distance"], op["norm"], np.square(op["noise"]),
                               t_range=(1, hz["horizon"]), n_boot=cfg.n_boot,
                               seed=cfg.seed)  # fmt: skip
    except InputError as err:
        return {**out, "error": f"β not measured: {err} (horizon n* = {hz['horizon']:g})"}
    h = conditional_entropies(tokens, train.offsets, int(hz["horizon"]), exclude=exclude)
    out["entropies"] = h
    try:
        gamma = gamma_from_entropies(h["n"], h["H"], h["resolved"], hz["horizon"])
    except InputError as err:
        resolved = [n for n, ok in zip(h["n"], h["resolved"], strict=True) if ok and n >= 1]
        return {**out, "error": f"γ not measured: the plug-in H_n is resolved only at n = "
                f"{resolved or 'none'} of 1 … {hz['horizon']:g} (the horizon), and its fit "
                f"needs 4 ({str(err).split(';')[0]})"}  # fmt: skip
    return {
        **out,
        "gamma": gamma,
        "alpha_D": predict_alpha_D(gamma["gamma"], out["beta"]["beta"]),
        "alpha_D_range": predict_interval(gamma["gamma_ci95"], out["beta"]["beta_ci95"]),
    }
