"""Where a loss-vs-size curve is a power law: local slopes, a curvature test that can fail,
and the fit range chosen by declared rules.

Why: a log-log slope fitted over a concave curve is set by where the sweep starts and
stops, not by the corpus. So an exponent is reported as a power law's only where the curve
is measurably straight over at least `RegimeConfig.min_decades` decades of size.

Noise model (local-slope bands and the curvature test): a **residual bootstrap** of the
quadratic fit of log loss on log size. Sweeps record no per-run standard error of the test
loss (`lm.train` scores the test split without one), and the noise that matters (seed,
stopping point) is not in any column: it shows as scatter about a smooth curve, which the
quadratic's residuals measure. Several runs at one size (seeds) are averaged in log first.

Curvature test (an equivalence test, so that passing needs evidence of straightness):
fit `log L = b0 + b1 u + b2 u²` with `u = log n` centred on the range's midpoint. The
exponent at `u` is `-(b1 + 2 b2 u)`; across the range it changes by
`Δ = -2 b2 (u_max − u_min)`; relative to the exponent at the midpoint, `r = Δ / (−b1)`.
The test has three outcomes (declared in docs/fitting.md#three-outcomes before it was applied
to any committed sweep):
- POWER LAW: the `level` (90%) studentized-bootstrap interval of `r` lies inside
  `(−tolerance, +tolerance)` (two one-sided 5% tests), with at least `MIN_POINTS` sizes over
  at least `min_decades` decades and a decreasing curve. An interval that merely includes 0
  is not enough: with few points or much noise the test does not pass.
- CURVED: the interval lies wholly beyond the tolerance (`r` > +tolerance or < −tolerance,
  one-sided 5%): the exponent is shown to change by more than the tolerance. A wider range
  would only change it more, so this needs `MIN_POINTS` sizes but not `min_decades`.
- UNDECIDED: neither. The data cannot tell a power law from a curve; its power
  (`laws.regime.power`) says how often an exact power law would have passed, and what would decide.

Seeds: where some size has several runs, the quadratic is fitted to every run (the same
coefficients as a fit of the per-size means in log when each size has as many runs) and the
residuals (seed-to-seed scatter and any misfit, pooled) are resampled per run.

The fit range's one rule is `fit_range` (its ends and why). A new rule of the range: its
logic here, with its constant in `RegimeConfig`; its inputs gathered in
`pipeline.steps.data_fit_range` (validate computes the range there once, and the check's
refits, the fit and the report use that `FitRange`); and the constant's old value in
a new format step of `runs.migrate`, so folders saved before it resume (docs/architecture.md).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scalelab.config import Config, Record, option
from scalelab.errors import ConfigError, InputError

#: Fewest distinct sizes the curvature test runs on: a quadratic (3 parameters) with two
#: residual degrees of freedom left for the noise.
MIN_POINTS = 5
#: The three outcomes of the curvature test (module docstring).
POWER_LAW, CURVED, UNDECIDED = "POWER LAW", "CURVED", "UNDECIDED"
#: Float slack on `min_decades`: a grid of exactly 1.5 decades spans 1.4999999999999998.
DECADES_SLACK = 1e-9


@dataclass(frozen=True)
class RegimeConfig(Config):
    """The declared constants of the regime rules (docs/fitting.md#where-the-curve-is-a-power-law).

    - `tolerance` 0.5: the exponent may change across the fitted range by at most half its
      own value. Then moving the range within it moves a fitted slope by at most about
      ±25% of itself, the width of the ±0.02 band verdicts are scored in at exponents near
      0.08. Declared before the rule was applied to any sweep, from the synthetic tests:
      an exact power law (α = 0.3, 9 sizes over two decades, 2% noise) passes on 99% of
      noise seeds at 0.5 (84% at 0.35, 64% at 0.3), and the concave table whose local
      slopes rise 0.03 → 0.11 (a change of 1.33 of its exponent) fails below about 1.1.
    - `level` 0.90: the interval of two one-sided 5% tests (an equivalence test).
    - `min_decades` 1.5: the issue's requirement for calling an exponent a power law's.
    - `unigram_margin` 0.1 nats: the fit starts at the first size whose test loss is this
      far below the unigram entropy of the test tokens: over four times the largest
      seed-to-seed change of a converged test loss in the committed checks (0.001–0.023
      nats, docs/benchmarks/forecast/range.check.json), small beside the 2–3 nats a sweep
      spans.
    """

    tolerance: float = option(0.5, "Largest change of the exponent across the range, relative.")
    level: float = option(0.90, "Interval level of the curvature test.")
    min_decades: float = option(1.5, "Decades the range must span to be called a power law.")
    unigram_margin: float = option(0.1, "Nats below the unigram entropy where the range starts.")

    def validate(self) -> None:
        if not 0 < self.tolerance < 10:
            raise ConfigError(f"tolerance must be in (0, 10), got {self.tolerance}; try 0.5")
        if not 0.5 <= self.level < 1:
            raise ConfigError(f"level must be in [0.5, 1), got {self.level}; try 0.9")
        if not 0 < self.min_decades <= 10:
            raise ConfigError(f"min_decades must be in (0, 10], got {self.min_decades}")
        if not 0 <= self.unigram_margin < 10:
            raise ConfigError(f"unigram_margin must be in [0, 10) nats, got {self.unigram_margin}")


def by_size(x: Any, y: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct sizes (ascending), the geometric-mean loss at each, and runs per size."""
    xa = np.asarray(x, dtype=np.float64)
    ya = np.asarray(y, dtype=np.float64)
    if xa.ndim != 1 or xa.shape != ya.shape:
        raise InputError(
            f"sizes and losses must be 1-d and equal in length ({xa.shape}, {ya.shape})"
        )
    ok = np.isfinite(xa) & np.isfinite(ya) & (xa > 0) & (ya > 0)
    if not ok.all():
        raise InputError(
            f"{int((~ok).sum())} non-positive or non-finite size/loss value(s); "
            "drop or fix those rows"
        )
    sizes, inverse, counts = np.unique(xa, return_inverse=True, return_counts=True)
    mean_log = np.bincount(inverse, weights=np.log(ya)) / counts
    return sizes, np.exp(mean_log), counts


def quadratic_fit(u: np.ndarray, ly: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Least squares of `ly` (rows: data sets) on (1, u, u²): coefficients [R, 3], fitted
    values and residuals [R, n]."""
    design = np.stack([np.ones_like(u), u, u * u], axis=1)
    pinv = np.linalg.pinv(design)
    coef = ly @ pinv.T
    fitted = coef @ design.T
    return coef, fitted, ly - fitted


def _resampled_residuals(
    u: np.ndarray, resid: np.ndarray, n_boot: int, rng: np.random.Generator
) -> np.ndarray:
    """Leverage-corrected, centred residuals of the quadratic, drawn with replacement [B, n]."""
    design = np.stack([np.ones_like(u), u, u * u], axis=1)
    hat = design @ np.linalg.pinv(design)
    adj = resid / np.sqrt(np.clip(1.0 - np.diag(hat), 1e-12, None))
    adj = adj - adj.mean()
    return adj[rng.integers(0, u.size, size=(n_boot, u.size))]


@dataclass(frozen=True)
class LocalSlopes(Record):
    """`-Δlog L / Δlog n` between neighbouring sizes, with bootstrap bands (`level`)."""

    x_lo: list[float]
    x_hi: list[float]
    slope: list[float]
    lo: list[float]
    hi: list[float]
    level: float
    noise_log: float
    method: str

    @property
    def x_mid(self) -> np.ndarray:
        return np.sqrt(np.asarray(self.x_lo) * np.asarray(self.x_hi))


def local_slopes(
    x: Any, y: Any, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> LocalSlopes:
    """Local slopes of a loss-vs-size table; bands resample the residuals of the table's
    log-log quadratic onto the observed losses (no bands below 4 sizes: NaN)."""
    sizes, loss, _ = by_size(x, y)
    if sizes.size < 2:
        raise InputError(f"{sizes.size} distinct size(s); local slopes need at least two")
    lx, ly = np.log(sizes), np.log(loss)
    slope = -np.diff(ly) / np.diff(lx)
    lo = hi = np.full(slope.size, math.nan)
    noise = math.nan
    if sizes.size >= 4 and n_boot > 0:
        u = lx - 0.5 * (lx.min() + lx.max())
        _, _, resid = quadratic_fit(u, ly[None, :])
        noise = float(np.sqrt((resid[0] ** 2).sum() / max(sizes.size - 3, 1)))
        draws = ly + _resampled_residuals(u, resid[0], n_boot, np.random.default_rng(seed))
        boot = -np.diff(draws, axis=1) / np.diff(lx)
        q = (1.0 - level) / 2.0
        lo, hi = np.quantile(boot, [q, 1.0 - q], axis=0)
    return LocalSlopes(
        x_lo=sizes[:-1].tolist(),
        x_hi=sizes[1:].tolist(),
        slope=slope.tolist(),
        lo=np.asarray(lo).tolist(),
        hi=np.asarray(hi).tolist(),
        level=level,
        noise_log=noise,
        method="residual bootstrap of the log-log quadratic over the table",
    )


@dataclass(frozen=True)
class CurvatureTest(Record):
    """The equivalence test of straightness over one range (module docstring). `passed`:
    the outcome is POWER LAW; `noise_log`: the residual sd of log loss per run about the
    quadratic (the noise the interval is built from); `seed_noise_log`: the pooled
    within-size sd where some size has several runs (None otherwise)."""

    passed: bool
    n_points: int
    decades: float
    x_range: tuple[float, float]
    exponent_mid: float
    exponent_lo_end: float
    exponent_hi_end: float
    relative_change: float
    relative_change_interval: tuple[float, float]
    tolerance: float
    level: float
    min_decades: float
    reason: str
    outcome: str = UNDECIDED
    sizes: tuple[float, ...] = ()
    runs_per_size: tuple[int, ...] = ()
    noise_log: float = math.nan
    seed_noise_log: float | None = None


def curvature_test(
    x: Any,
    y: Any,
    *,
    config: RegimeConfig = RegimeConfig(),
    n_boot: int = 1000,
    seed: int = 0,
) -> CurvatureTest:
    """Does the exponent stay within `config.tolerance` of itself across the range? Three
    outcomes (module docstring); several runs at one size are seeds."""
    sizes, loss, counts = by_size(x, y)
    n = sizes.size
    decades = float((np.log(sizes).max() - np.log(sizes).min()) / math.log(10)) if n else 0.0
    nan2 = (math.nan, math.nan)
    common = {
        "n_points": int(n),
        "decades": decades,
        "x_range": (float(sizes.min()), float(sizes.max())) if n else nan2,
        "tolerance": config.tolerance,
        "level": config.level,
        "min_decades": config.min_decades,
        "sizes": tuple(float(v) for v in sizes),
        "runs_per_size": tuple(int(c) for c in counts),
    }
    if n < MIN_POINTS:
        reason = f"{n} size(s): the test needs {MIN_POINTS}"
        return CurvatureTest(False, **common, **_no_numbers(), reason=reason)
    lx, ly, seed_noise = _rows(sizes, loss, counts, x, y)
    u = lx - 0.5 * (lx.min() + lx.max())
    span = float(u.max() - u.min())
    coef, _, resid = quadratic_fit(u, ly[None, :])
    b1, b2 = float(coef[0, 1]), float(coef[0, 2])
    alpha_mid, change = -b1, -2.0 * b2 * span
    noise = float(np.sqrt((resid[0] ** 2).sum() / (u.size - 3)))
    shape = {
        "exponent_mid": alpha_mid,
        "exponent_lo_end": alpha_mid - change / 2,
        "exponent_hi_end": alpha_mid + change / 2,
        "noise_log": noise,
        "seed_noise_log": seed_noise,
    }
    if not alpha_mid > 0:
        return CurvatureTest(
            False,
            **common,
            **shape,
            relative_change=math.nan,
            relative_change_interval=nan2,
            reason="the loss does not fall over the range: there is no exponent to test",
        )
    interval = _change_interval(u, ly, resid[0], change, span, config.level, n_boot, seed)
    rel = (float(interval[0] / alpha_mid), float(interval[1] / alpha_mid))
    outcome, reason = _outcome(change / alpha_mid, rel, decades, config)
    return CurvatureTest(
        outcome == POWER_LAW,
        **common,
        **shape,
        relative_change=change / alpha_mid,
        relative_change_interval=rel,
        reason=reason,
        outcome=outcome,
    )


def _outcome(
    change: float, rel: tuple[float, float], decades: float, config: RegimeConfig
) -> tuple[str, str]:
    """The outcome of a relative change `change` with interval `rel`, and its words."""
    tol = config.tolerance
    inside = bool(-tol < rel[0] and rel[1] < tol)
    beyond = bool(rel[0] > tol or rel[1] < -tol)
    where = "inside" if inside else ("beyond" if beyond else "neither inside nor beyond")
    reason = (
        f"the exponent changes by {change:+.2f} of itself across the range, "
        f"{config.level:.0%} interval [{rel[0]:+.2f}, {rel[1]:+.2f}] {where} ±{tol:g}"
    )
    outcome = POWER_LAW if inside else (CURVED if beyond else UNDECIDED)
    if inside and decades < config.min_decades - DECADES_SLACK:
        outcome = UNDECIDED
        reason += f"; the range spans {decades:.2f} decades, under {config.min_decades:g}"
    return outcome, reason


def curvature_test_over_floor(
    x: Any,
    y: Any,
    floors: Sequence[float],
    *,
    config: RegimeConfig = RegimeConfig(),
    n_boot: int = 1000,
    seed: int = 0,
) -> CurvatureTest:
    """The test on the excess loss `y − E` with E uncertain: run at every E of `floors` (the
    first is the estimate, the rest span its interval) and judge the union of their
    intervals, so that E's uncertainty widens the interval instead of being ignored."""
    ya = np.asarray(y, dtype=np.float64)
    tests = [curvature_test(x, ya - e, config=config, n_boot=n_boot, seed=seed) for e in floors]
    first = tests[0]
    rels = [t.relative_change_interval for t in tests]
    if first.n_points < MIN_POINTS or any(not t.exponent_mid > 0 for t in tests):
        return first
    rel = (min(r[0] for r in rels), max(r[1] for r in rels))
    outcome, reason = _outcome(first.relative_change, rel, first.decades, config)
    reason += f" (the union over E in [{min(floors):.4g}, {max(floors):.4g}])"
    return dataclasses.replace(
        first,
        passed=outcome == POWER_LAW,
        relative_change_interval=rel,
        reason=reason,
        outcome=outcome,
    )


def _rows(
    sizes: np.ndarray, loss: np.ndarray, counts: np.ndarray, x: Any, y: Any
) -> tuple[np.ndarray, np.ndarray, float | None]:
    """log size and log loss the quadratic is fitted to: the per-size means when every size
    has one run, else every run (sorted by size), with the pooled within-size sd of log loss."""
    if counts.max() == 1:
        return np.log(sizes), np.log(loss), None
    xa, la = np.asarray(x, dtype=np.float64), np.log(np.asarray(y, dtype=np.float64))
    order = np.argsort(xa, kind="stable")
    xa, la = xa[order], la[order]
    inverse = np.searchsorted(sizes, xa)
    within = la - np.log(loss)[inverse]
    seed_noise = float(np.sqrt((within**2).sum() / (xa.size - sizes.size)))
    return np.log(xa), la, seed_noise


def _no_numbers() -> dict[str, Any]:
    return {
        "exponent_mid": math.nan,
        "exponent_lo_end": math.nan,
        "exponent_hi_end": math.nan,
        "relative_change": math.nan,
        "relative_change_interval": (math.nan, math.nan),
    }


def _change_interval(
    u: np.ndarray,
    ly: np.ndarray,
    resid: np.ndarray,
    change: float,
    span: float,
    level: float,
    n_boot: int,
    seed: int,
) -> tuple[float, float]:
    """Studentized residual-bootstrap interval of the exponent change Δ = −2·b2·span
    (a percentile interval is too narrow at 5–9 points, which would make passing easy);
    without resamples, the t interval of least squares."""
    n = u.size
    design = np.stack([np.ones_like(u), u, u * u], axis=1)
    xtx_inv = np.linalg.inv(design.T @ design)
    se_of = 2.0 * span * math.sqrt(xtx_inv[2, 2])  # se(Δ) per unit residual sd

    def sd(r: np.ndarray) -> np.ndarray:
        return np.sqrt((r * r).sum(-1) / (n - 3))

    se = float(sd(resid)) * se_of
    q = (1.0 - level) / 2.0
    if se == 0.0:
        return change, change
    if n_boot <= 0:  # no resamples: the normal-theory interval, t with n − 3 d.o.f.
        from scipy.stats import t as student_t  # scipy.stats takes 0.8 s to import

        t_q = float(student_t.ppf(1.0 - q, n - 3))
        return change - t_q * se, change + t_q * se
    fitted = ly - resid
    draws = fitted + _resampled_residuals(u, resid, n_boot, np.random.default_rng(seed))
    coef, _, r = quadratic_fit(u, draws)
    d_star = -2.0 * coef[:, 2] * span
    se_star = sd(r) * se_of
    ok = se_star > 0
    t = (d_star[ok] - change) / se_star[ok]
    t_lo, t_hi = np.quantile(t, [q, 1.0 - q])
    return float(change - t_hi * se), float(change - t_lo * se)


def batch_outcomes(
    x: Any,
    log_losses: np.ndarray,
    *,
    config: RegimeConfig = RegimeConfig(),
    n_boot: int = 1000,
    seed: int = 0,
) -> np.ndarray:
    """`curvature_test`'s outcome on each row of `log_losses` [S, runs] at the sizes `x`
    (one per run, ascending), vectorised over the rows: the same arithmetic, so that a power
    simulates the test itself. With one row and the same seed it draws the same resamples
    (tests/test_regime_outcomes.py checks the outcomes equal)."""
    xa = np.asarray(x, dtype=np.float64)
    ly = np.atleast_2d(np.asarray(log_losses, dtype=np.float64))
    sizes = np.unique(xa)
    out = np.full(ly.shape[0], UNDECIDED, dtype=object)
    if sizes.size < MIN_POINTS:
        return out
    decades = float((np.log(sizes).max() - np.log(sizes).min()) / math.log(10))
    lx = np.log(xa)
    u = lx - 0.5 * (lx.min() + lx.max())
    span = float(u.max() - u.min())
    n = u.size
    coef, fitted, resid = quadratic_fit(u, ly)
    alpha, change = -coef[:, 1], -2.0 * coef[:, 2] * span
    design = np.stack([np.ones_like(u), u, u * u], axis=1)
    se_of = 2.0 * span * math.sqrt(np.linalg.inv(design.T @ design)[2, 2])
    se = np.sqrt((resid * resid).sum(-1) / (n - 3)) * se_of
    q = (1.0 - config.level) / 2.0
    if n_boot <= 0:
        from scipy.stats import t as student_t  # scipy.stats takes 0.8 s to import

        t_q = float(student_t.ppf(1.0 - q, n - 3))
        lo, hi = change - t_q * se, change + t_q * se
    else:
        hat = design @ np.linalg.pinv(design)
        adj = resid / np.sqrt(np.clip(1.0 - np.diag(hat), 1e-12, None))
        adj = adj - adj.mean(-1, keepdims=True)
        idx = np.random.default_rng(seed).integers(0, n, size=(ly.shape[0], n_boot, n))
        draws = fitted[:, None, :] + np.take_along_axis(adj[:, None, :], idx, axis=-1)
        c_star, _, r_star = quadratic_fit(u, draws)
        d_star = -2.0 * c_star[..., 2] * span
        se_star = np.sqrt((r_star * r_star).sum(-1) / (n - 3)) * se_of
        t = np.where(
            se_star > 0, (d_star - change[:, None]) / np.where(se_star > 0, se_star, 1), np.nan
        )
        t_lo, t_hi = np.nanquantile(t, [q, 1.0 - q], axis=1)
        lo, hi = change - t_hi * se, change - t_lo * se
    lo, hi = np.where(se == 0, change, lo), np.where(se == 0, change, hi)
    falls = alpha > 0
    rel_lo, rel_hi = lo / np.where(falls, alpha, 1), hi / np.where(falls, alpha, 1)
    tol = config.tolerance
    inside = (-tol < rel_lo) & (rel_hi < tol) & falls
    beyond = ((rel_lo > tol) | (rel_hi < -tol)) & falls
    if decades < config.min_decades - DECADES_SLACK:
        inside[:] = False
    out[inside] = POWER_LAW
    out[beyond] = CURVED
    return out


@dataclass(frozen=True)
class FitRange(Record):
    """The sizes the exponent is fitted over, and why each end is where it is."""

    x_lo: float
    x_hi: float
    n_points: int
    decades: float
    lower_reason: str
    upper_reason: str
    unigram_entropy: float | None
    excluded: list[float] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return self.n_points == 0

    def mask(self, x: Any) -> np.ndarray:
        xa = np.asarray(x, dtype=np.float64)
        return (xa >= self.x_lo) & (xa <= self.x_hi)


def fit_range(
    x: Any,
    y: Any,
    *,
    unigram_entropy: float | None = None,
    limited: Any = None,
    margin: float = RegimeConfig.unigram_margin,
) -> FitRange:
    """The fit range by rule. Lower end: the first size whose loss is below
    `unigram_entropy − margin` (the smallest size when no entropy is given). Upper end: the
    size below the first limited size (budget- or model-limited, `limited[i]` per row)
    above the lower end; the largest size when none is."""
    sizes, loss, _ = by_size(x, y)
    flags = np.zeros(np.asarray(x).shape, bool) if limited is None else np.asarray(limited, bool)
    if flags.shape != np.asarray(x).shape:
        raise InputError(f"limited has {flags.size} flag(s) for {np.asarray(x).size} row(s)")
    limited_sizes = np.unique(np.asarray(x, dtype=np.float64)[flags])
    if unigram_entropy is None:
        start, lower = 0, "no unigram entropy given: the lower end is the smallest size, unchecked"
    else:
        below = np.flatnonzero(loss < unigram_entropy - margin)
        if below.size == 0:
            return _empty_range(sizes, unigram_entropy, margin)
        start = int(below[0])
        lower = (
            f"first size with test loss {loss[start]:.3f} below the unigram entropy "
            f"{unigram_entropy:.3f} − {margin:g} nats"
        )
    stop, upper = sizes.size - 1, "the largest size (no run flagged budget- or model-limited)"
    stoppers = [i for i in range(start, sizes.size) if sizes[i] in set(limited_sizes)]
    if stoppers:
        stop = stoppers[0] - 1
        upper = f"below {sizes[stoppers[0]]:g}, the first budget- or model-limited size"
    if stop < start:
        return _empty_range(sizes, unigram_entropy, margin, upper)
    kept = sizes[start : stop + 1]
    return FitRange(
        x_lo=float(kept[0]),
        x_hi=float(kept[-1]),
        n_points=int(kept.size),
        decades=float(math.log10(kept[-1] / kept[0])),
        lower_reason=lower,
        upper_reason=upper,
        unigram_entropy=unigram_entropy,
        excluded=[float(s) for s in sizes if s < kept[0] or s > kept[-1]],
    )


def _empty_range(
    sizes: np.ndarray, entropy: float | None, margin: float, upper: str = ""
) -> FitRange:
    lower = (
        f"no size has a test loss below the unigram entropy {entropy:.3f} − {margin:g} nats"
        if not upper
        else "the lower end is at or above the first limited size"
    )
    return FitRange(
        x_lo=math.nan,
        x_hi=math.nan,
        n_points=0,
        decades=0.0,
        lower_reason=lower,
        upper_reason=upper or "no range",
        unigram_entropy=entropy,
        excluded=[float(s) for s in sizes],
    )
