"""A second theory of alpha_D: Cagnetta, Raventós, Ganguli & Wyart (2026, arXiv 2602.07488).

It predicts the data-limited exponent from two statistics of the corpus, with no free
parameter: alpha_D = γ / (2β), where
- β is the decay exponent of token-token correlations with distance, ‖C_t‖ ∝ t^-β
  (counted by `scalelab.text.correlations`);
- γ is the decay exponent of the next-token conditional entropy with context length n,
  L(n) = L_∞ + c·n^-γ, read here from a model's mean test loss at context length n
  (`scalelab.probe.position_loss`).
The argument: with P training tokens a correlation at distance t is resolved only while it
stands above the sampling noise ∝ P^-1/2, so the usable context grows as n* ∝ P^{1/(2β)}, and
the loss falls with it as n*^-γ. Pure: arrays in, exponents out.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from scalelab.errors import InputError
from scalelab.laws.fit.power_law import fit_power_law

NOISE_FACTOR = 4.0  # a distance enters the β fit when ‖C_t‖² ≥ this × its noise floor


def fit_beta(
    distance: Any,
    norm: Any,
    noise_sq: Any | None = None,
    *,
    t_range: tuple[float, float] = (1.0, float("inf")),
    n_boot: int = 200,
    seed: int = 0,
) -> dict[str, Any]:
    """β from ‖C_t‖ ∝ t^-β by least squares in log-log over the distances in `t_range`
    whose norm² is at least NOISE_FACTOR times its noise floor (when `noise_sq` is given)."""
    t, c = np.asarray(distance, float), np.asarray(norm, float)
    use = (t >= t_range[0]) & (t <= t_range[1]) & (c > 0)
    if noise_sq is not None:
        use &= c**2 >= NOISE_FACTOR * np.asarray(noise_sq, float)
    if use.sum() < 3:
        raise InputError(
            f"only {int(use.sum())} distance(s) in {t_range} stand above the sampling noise; "
            "a β fit needs 3: use more tokens or shorter distances"
        )
    fit = fit_power_law(t[use], c[use], form="power", n_boot=n_boot, seed=seed)
    return {
        "beta": fit.exponent,
        "beta_ci95": list(fit.exponent_ci95),
        "distances_used": t[use].tolist(),
        "fit": fit.to_dict(),
    }


def fit_gamma(
    context: Any,
    loss: Any,
    *,
    n_range: tuple[float, float] = (1.0, float("inf")),
    n_boot: int = 200,
    seed: int = 0,
) -> dict[str, Any]:
    """γ and L_∞ from L(n) = L_∞ + c·n^-γ (least squares on log L, 0 ≤ L_∞ < min L) over
    the context lengths in `n_range`."""
    n, y = np.asarray(context, float), np.asarray(loss, float)
    use = (n >= n_range[0]) & (n <= n_range[1])
    if use.sum() < 4:
        raise InputError(f"only {int(use.sum())} context length(s) in {n_range}; γ needs 4")
    fit = fit_power_law(n[use], y[use], form="power+E", n_boot=n_boot, seed=seed)
    return {
        "gamma": fit.exponent,
        "gamma_ci95": list(fit.exponent_ci95),
        "loss_inf": fit.E,
        "fit": fit.to_dict(),
    }


def predict_alpha_D(gamma: float, beta: float) -> float:
    """alpha_D = γ / (2β)."""
    if not (np.isfinite(gamma) and np.isfinite(beta)) or beta <= 0 or gamma <= 0:
        raise InputError(f"γ = {gamma}, β = {beta}: both must be positive and finite")
    return float(gamma / (2.0 * beta))


def predict_interval(gamma_ci: Any, beta_ci: Any) -> list[float | None]:
    """The range of γ/(2β) over the two intervals (each treated as independent bounds);
    no upper end (None) when the β interval reaches 0."""
    (g_lo, g_hi), (b_lo, b_hi) = gamma_ci, beta_ci
    hi = float(g_hi / (2 * b_lo)) if b_lo > 0 else None
    return [float(max(g_lo, 0.0) / (2 * b_hi)), hi]


def horizon(
    distance: Any, norm: Any, noise: Any, n_pairs: Any, budget_tokens: float
) -> dict[str, Any]:
    """The lags a training budget resolves, and the horizon n*(P) they give.

    The noise floor of a norm counted from M pairs falls as M^-1/2 (measured at the counted
    M: `noise`, from shuffled pairs); with P training tokens it stands at noise·√(M/P). A lag
    is resolved at P when its norm is at least √NOISE_FACTOR times that floor (the rule of
    `fit_beta`, on norms instead of squares); n*(P) is the largest lag below which every
    measured lag is resolved (0 when the first is not)."""
    t, c, m = (np.asarray(v, float) for v in (distance, norm, n_pairs))
    if budget_tokens <= 0 or not (t.shape == c.shape == m.shape == np.shape(noise)):
        raise InputError("horizon needs one norm, noise and pair count per lag and a budget > 0")
    floor = np.asarray(noise, float) * np.sqrt(m / budget_tokens)
    ok = (c > 0) & (c >= np.sqrt(NOISE_FACTOR) * floor)
    order = np.argsort(t)
    first_bad = np.flatnonzero(~ok[order])
    last = order[: first_bad[0]] if len(first_bad) else order
    return {
        "resolved": t[ok].tolist(),
        "horizon": float(t[last].max()) if len(last) else 0.0,
        "floor": floor.tolist(),
    }


def gamma_from_entropies(n: Any, entropy: Any, resolved: Any, n_max: float) -> dict[str, Any]:
    """γ and H_∞ from H_n = H_∞ + c·n^-γ over 1 ≤ n ≤ `n_max` (the horizon the budget
    resolves), on the n whose plug-in estimate is resolved (`text.entropy`)."""
    n, h, ok = np.asarray(n, float), np.asarray(entropy, float), np.asarray(resolved, bool)
    use = ok & (n >= 1) & (n <= n_max)
    fit = fit_gamma(n[use], h[use], n_boot=200, seed=0)
    return {**fit, "n_used": n[use].tolist(), "entropy_inf": fit["loss_inf"]}
