"""How often the regime test would say POWER LAW on an exact power law, and what would decide
an UNDECIDED one.

Why: a test that passes rarely even on a perfect power law reads "not shown" where the data
cannot decide. Its power at the sweep's own sizes, runs per size, slope and noise is the
number that says which it is. Computed by simulation through the same test, seeded
(`laws.regime.rules.batch_outcomes`: `curvature_test`'s arithmetic vectorised over draws):
`L_i = (n_i / n_mid)^-α · exp(ε_i)`, ε_i ~ N(0, σ²) independently per run, σ the test's own
residual sd per run (seed-to-seed scatter and misfit pooled, or the scatter of the means about
the quadratic where each size has one run).

What would decide (`decision_plan`): the power of the same test with more seeds per size,
with the grid extended upward at its own log spacing, or both; each option's cost in CPU time
from a cost model of the caller's (seconds per run of a given size, measured in the sweep).
Power is for exact power laws, so it overstates what more runs do for a curve that bends by
about the tolerance (its interval keeps straddling the tolerance as it narrows). Given the
observed bend (the test's quadratic in log-log), each option also gets its chance to decide
*that* curve, POWER LAW or CURVED, if the bend goes on as fitted (`decision_chance`: the same
simulation with the quadratic term). The cheapest option with power >= `target` and, where
the bend is given, that chance >= `target` is the one to run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from scalelab.config import Record
from scalelab.errors import InputError
from scalelab.laws.regime.rules import (
    POWER_LAW,
    UNDECIDED,
    RegimeConfig,
    batch_outcomes,
)

#: Power an option must reach to be called deciding: the usual 80%.
TARGET_POWER = 0.8
#: Simulated noise draws per power (the interval of a power p is about ±2·sqrt(p(1−p)/n)).
N_SIM = 200
#: Bootstrap resamples inside each simulated test (the committed tables of the issue: 300).
N_BOOT_SIM = 300


@dataclass(frozen=True)
class Power(Record):
    """The share `power` of `n_sim` exact power laws the test calls POWER LAW, with its
    binomial standard error, at these sizes, runs per size, exponent and noise."""

    power: float
    se: float
    n_sim: int
    exponent: float
    noise_log: float
    sizes: tuple[float, ...]
    runs_per_size: tuple[int, ...]


def regime_power(
    sizes: Sequence[float],
    runs_per_size: Sequence[int] | int,
    exponent: float,
    noise_log: float,
    *,
    config: RegimeConfig = RegimeConfig(),
    n_sim: int = N_SIM,
    n_boot: int = N_BOOT_SIM,
    seed: int = 0,
) -> Power:
    """P(POWER LAW) of `curvature_test` on exact power laws with per-run log noise `noise_log`."""
    xs = np.asarray(sizes, dtype=np.float64)
    k = np.broadcast_to(np.asarray(runs_per_size, dtype=int), xs.shape)
    if xs.ndim != 1 or xs.size == 0 or np.any(xs <= 0) or np.any(k < 1):
        raise InputError("power needs positive sizes and at least one run per size")
    if not (math.isfinite(exponent) and math.isfinite(noise_log) and noise_log >= 0):
        raise InputError(f"power needs a finite exponent and noise, got {exponent}, {noise_log}")
    outcomes = _outcomes(xs, k, exponent, noise_log, 0.0, None, config, n_sim, n_boot, seed)
    hits = int((outcomes == POWER_LAW).sum())
    p = hits / n_sim
    return Power(
        power=p,
        se=math.sqrt(p * (1 - p) / n_sim),
        n_sim=n_sim,
        exponent=float(exponent),
        noise_log=float(noise_log),
        sizes=tuple(float(s) for s in xs),
        runs_per_size=tuple(int(c) for c in k),
    )


def decision_chance(
    sizes: Sequence[float],
    runs_per_size: Sequence[int] | int,
    exponent: float,
    noise_log: float,
    bend: float,
    center: float,
    *,
    config: RegimeConfig = RegimeConfig(),
    n_sim: int = N_SIM,
    n_boot: int = N_BOOT_SIM,
    seed: int = 0,
) -> float:
    """P(the test decides: POWER LAW or CURVED) on the curve log L = −exponent·u + bend·u²,
    u = ln(size / center) (the curvature test's quadratic, extended as fitted), with per-run
    log noise `noise_log`."""
    xs = np.asarray(sizes, dtype=np.float64)
    k = np.broadcast_to(np.asarray(runs_per_size, dtype=int), xs.shape)
    outcomes = _outcomes(xs, k, exponent, noise_log, bend, center, config, n_sim, n_boot, seed)
    return float((outcomes != UNDECIDED).mean())


def _outcomes(
    xs: np.ndarray,
    k: np.ndarray,
    exponent: float,
    noise_log: float,
    bend: float,
    center: float | None,
    config: RegimeConfig,
    n_sim: int,
    n_boot: int,
    seed: int,
) -> np.ndarray:
    """The test's outcome on `n_sim` noisy draws of the curve (`k` runs at each size)."""
    order = np.argsort(xs)
    x = np.repeat(xs[order], k[order])
    mid = math.sqrt(xs.min() * xs.max()) if center is None else center
    noise = np.random.default_rng(seed).normal(0.0, noise_log, (n_sim, x.size))
    u = np.log(x / mid)
    log_loss = -exponent * u + (bend * u**2 if bend else 0.0) + noise
    return batch_outcomes(x, log_loss, config=config, n_boot=n_boot, seed=seed)


@dataclass(frozen=True)
class Option(Record):
    """One way to rerun the sweep: `seeds` runs per size over `sizes`; its power, its chance
    to decide the observed curve (`decided`; None without the bend) and the CPU seconds of
    the runs it adds (None without a cost model)."""

    seeds: int
    sizes: tuple[float, ...]
    decades: float
    power: float
    added_cpu_s: float | None
    added_runs: int
    decided: float | None = None

    def words(self) -> str:
        cost = "" if self.added_cpu_s is None else f", ≈ {self.added_cpu_s / 60:.0f} CPU-min more"
        chance = "" if self.decided is None else f", {self.decided:.2f} to decide this curve"
        return (
            f"{self.seeds} seed(s) per size over {self.decades:.2f} decades "
            f"({len(self.sizes)} sizes, {self.sizes[0]:,.0f} … {self.sizes[-1]:,.0f}): "
            f"power {self.power:.2f}{chance}{cost}"
        )

    @property
    def strength(self) -> float:
        """What the option must reach: its power, and its chance to decide where known."""
        return self.power if self.decided is None else min(self.power, self.decided)


@dataclass(frozen=True)
class Plan(Record):
    """The options tried and the cheapest with power >= `target` (`chosen`; None: none)."""

    target: float
    options: tuple[Option, ...]
    chosen: Option | None

    def words(self) -> str:
        if self.chosen is None:
            best = max(self.options, key=lambda o: o.strength, default=None)
            tail = f"; the best tried: {best.words()}" if best else ""
            what = f"power {self.target:.0%}"
            if any(o.decided is not None for o in self.options):
                what += f" and a chance to decide this curve of {self.target:.0%}"
            return f"no option tried reaches {what}{tail}"
        return f"to decide: {self.chosen.words()}"


def decision_plan(
    sizes: Sequence[float],
    runs_per_size: Sequence[int] | int,
    exponent: float,
    noise_log: float,
    *,
    cpu_s_per_run: Callable[[float], float] | None = None,
    bend: tuple[float, float] | None = None,
    seeds: Sequence[int] = (2, 3, 5, 8),
    extra_decades: Sequence[float] = (0.0, 0.5, 1.0),
    target: float = TARGET_POWER,
    config: RegimeConfig = RegimeConfig(),
    n_sim: int = N_SIM // 2,
    n_boot: int = N_BOOT_SIM,
    seed: int = 0,
) -> Plan:
    """Power of reruns with more seeds per size and a grid extended upward (module docstring).
    `cpu_s_per_run(size)`: the CPU seconds one run of that size costs (None: no costs);
    `bend`: the observed curve's quadratic coefficient and center (`decision_chance`), which
    adds each option's chance to decide it."""
    xs = np.sort(np.asarray(sizes, dtype=np.float64))
    k_now = int(np.min(np.broadcast_to(np.asarray(runs_per_size), xs.shape)))
    step = float(np.mean(np.diff(np.log10(xs)))) if xs.size > 1 else 0.25
    options = []
    for extra in extra_decades:
        added = round(extra / step) if step > 0 else 0
        grid = np.concatenate([xs, xs[-1] * 10 ** (step * np.arange(1, added + 1))])
        for k in sorted({k_now, *seeds}):
            if k < k_now or (k == k_now and added == 0):
                continue
            sim = {"config": config, "n_sim": n_sim, "n_boot": n_boot, "seed": seed}
            p = regime_power(grid, k, exponent, noise_log, **sim)
            decided = None
            if bend is not None:
                decided = decision_chance(grid, k, exponent, noise_log, *bend, **sim)
            cost = None
            if cpu_s_per_run is not None:
                new_seeds = sum((k - k_now) * cpu_s_per_run(s) for s in xs)
                new_sizes = sum(k * cpu_s_per_run(s) for s in grid[xs.size :])
                cost = float(new_seeds + new_sizes)
            runs = (k - k_now) * xs.size + k * (grid.size - xs.size)
            decades = float(np.log10(grid[-1] / grid[0]))
            grid_t = tuple(map(float, grid))
            options.append(Option(k, grid_t, decades, p.power, cost, runs, decided))
    ok = [o for o in options if o.strength >= target]
    chosen = min(ok, key=lambda o: (o.added_cpu_s or 0.0, o.added_runs)) if ok else None
    return Plan(target, tuple(options), chosen)


def cost_model(sizes: Sequence[float], cpu_s: Sequence[float]) -> Callable[[float], float]:
    """CPU seconds per run as a power of its size, fitted in log to the sweep's own runs
    (extrapolated above the largest: a planning estimate, said so where it is printed)."""
    x = np.asarray(sizes, dtype=np.float64)
    c = np.asarray(cpu_s, dtype=np.float64)
    ok = np.isfinite(c) & (c > 0) & (x > 0)
    if ok.sum() < 2:
        mean = float(np.nanmean(c)) if ok.any() else math.nan
        return lambda _size: mean
    b, a = np.polyfit(np.log(x[ok]), np.log(c[ok]), 1)
    return lambda size: float(math.exp(a + b * math.log(size)))
