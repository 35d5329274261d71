"""One call from a loss-vs-size table to what can be said about its exponent: the local
slopes, the fit range by rule, the curvature test over it with its three outcomes (POWER LAW,
CURVED, UNDECIDED) and its power, the plan that would decide an UNDECIDED one, the regime
verdict in words, and the plain and excess exponents over the range (`scalelab fit` prints
this).

Each observable gets its own outcome: the plain slope tests log L; the excess exponent tests
log(L − E), with E exact where the corpus gives it (the facts family) and otherwise the
power+E fit's, its interval carried into the test (`curvature_test_over_floor`). With a fitted
E the excess test asks only whether the curve is consistent with E + A·n^-α: subtracting a
floor straightens a convex curve, never a concave one."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scalelab.config import Record
from scalelab.laws.fit.fitted import PowerLawFit
from scalelab.laws.fit.power_law import fit_power_law
from scalelab.laws.regime.excess import ExcessFit, excess_exponent
from scalelab.laws.regime.power import N_SIM, Plan, Power, cost_model, decision_plan, regime_power
from scalelab.laws.regime.rules import (
    CURVED,
    POWER_LAW,
    UNDECIDED,
    CurvatureTest,
    FitRange,
    LocalSlopes,
    RegimeConfig,
    by_size,
    curvature_test,
    curvature_test_over_floor,
    local_slopes,
)
from scalelab.laws.regime.rules import fit_range as find_range

#: The label of the ideal learner's exponent over the fitted range among the predictions.
IDEAL = "ideal learner, excess loss over the fitted range"
#: Fewest sizes in the range for the plain log-log fit and for the power+E fit.
_PLAIN_MIN, _POWER_E_MIN = 3, 4


@dataclass(frozen=True)
class RegimeAnalysis(Record):
    """Everything `analyse_regime` measured. `outcome`: the curvature test's on the test loss
    (`power_law`: it is POWER LAW); `power`: the chance an exact power law would have passed
    there; `plan`: what would decide it (UNDECIDED only); the `excess_*` fields: the same for
    L − E; `verdict`: all of it in words."""

    power_law: bool
    verdict: str
    sizes: list[float]
    losses: list[float]
    local_slopes: LocalSlopes
    fit_range: FitRange
    curvature: CurvatureTest | None
    plain: PowerLawFit | None
    excess: ExcessFit | None
    excess_curvature: CurvatureTest | None = None
    excess_slopes: LocalSlopes | None = None
    predictions: dict[str, float] = field(default_factory=dict)
    config: RegimeConfig = field(default_factory=RegimeConfig)
    outcome: str = UNDECIDED
    power: Power | None = None
    plan: Plan | None = None
    excess_outcome: str | None = None
    excess_power: Power | None = None
    excess_plan: Plan | None = None

    @property
    def excess_power_law(self) -> bool:
        return self.excess_outcome == POWER_LAW

    def to_dict(self) -> dict[str, Any]:
        """The fields in order, with `excess_power_law` after `excess_slopes` (as saved)."""
        out = super().to_dict()
        keys = list(out)
        at = keys.index("predictions")
        first = {k: out[k] for k in keys[:at]}
        return {
            **first,
            "excess_power_law": self.excess_power_law,
            **{k: out[k] for k in keys[at:]},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RegimeAnalysis:
        """A saved analysis; `excess_power_law` is derived from `excess_outcome`."""
        return super().from_dict({k: v for k, v in data.items() if k != "excess_power_law"})


def analyse_regime(
    x: Any,
    y: Any,
    *,
    unigram_entropy: float | None = None,
    limited: Any = None,
    floor: float | None = None,
    floor_source: str = "given",
    predictions: dict[str, float] | None = None,
    ideal_exponent: Callable[[float, float], float] | None = None,
    cpu_s: Any = None,
    config: RegimeConfig = RegimeConfig(),
    n_boot: int = 1000,
    seed: int = 0,
    power_sims: int = N_SIM,
    fit_range: FitRange | None = None,
) -> RegimeAnalysis:
    """Local slopes over the whole table; range, test, power and exponents over the fitted
    range. `floor`: the corpus's exact E when known (synthetic corpora), else the power+E
    fit's. `predictions`: theory exponents to show beside the observation; `ideal_exponent(lo,
    hi)` adds one computed over the fitted range (the facts family's ideal learner). `cpu_s`:
    CPU seconds per row, the plan's cost model. `power_sims`: simulated power laws per power
    (0: no power, no plan). `fit_range`: the range a caller computed (validate: once,
    `pipeline.steps`); else from `unigram_entropy`, `limited` and the config's margin."""
    slopes = local_slopes(x, y, n_boot=n_boot, seed=seed)
    sizes, loss, _ = by_size(x, y)
    xa, ya = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    rng = fit_range or find_range(
        x, y, unigram_entropy=unigram_entropy, limited=limited, margin=config.unigram_margin
    )
    common = {
        "sizes": sizes.tolist(),
        "losses": loss.tolist(),
        "local_slopes": slopes,
        "fit_range": rng,
        "predictions": dict(predictions or {}),
        "config": config,
    }
    if rng.empty:
        verdict = f"{UNDECIDED}: no fit range ({rng.lower_reason}; {rng.upper_reason})"
        return RegimeAnalysis(False, verdict, curvature=None, plain=None, excess=None, **common)
    if ideal_exponent is not None:
        common["predictions"][IDEAL] = float(ideal_exponent(rng.x_lo, rng.x_hi))
    keep, rows = rng.mask(sizes), rng.mask(xa)
    xs, ys = sizes[keep], loss[keep]
    test = curvature_test(xa[rows], ya[rows], config=config, n_boot=n_boot, seed=seed)
    plain = fit_power_law(xs, ys, n_boot=n_boot, seed=seed) if xs.size >= _PLAIN_MIN else None
    excess, excess_test = _excess(
        xs, ys, xa[rows], ya[rows], floor, floor_source, config=config, n_boot=n_boot, seed=seed
    )
    excess_slopes = None
    above = loss > (excess.E if excess is not None else np.inf)
    if excess is not None and excess.estimable and above.sum() >= 2:  # every size above E
        excess_slopes = local_slopes(sizes[above], loss[above] - excess.E, n_boot=n_boot, seed=seed)
    costs = None
    if cpu_s is not None:
        costs = cost_model(xa, np.asarray(cpu_s, dtype=np.float64))
    power, plan = _power_and_plan(test, costs, config, power_sims, seed)
    e_power, e_plan = _power_and_plan(excess_test, costs, config, power_sims, seed)
    where = f"{rng.x_lo:,.0f} … {rng.x_hi:,.0f} ({rng.decades:.2f} decades, {rng.n_points} sizes)"
    verdict = _words(test, power, plan, f"test loss over {where}")
    if excess_test is not None:
        what = f"excess loss L − E (E = {excess.E:.4g}, {excess.E_source}) over {where}"
        verdict += f". {_words(excess_test, e_power, e_plan, what)}"
    return RegimeAnalysis(
        test.passed,
        verdict,
        curvature=test,
        plain=plain,
        excess=excess,
        excess_curvature=excess_test,
        excess_slopes=excess_slopes,
        outcome=test.outcome,
        power=power,
        plan=plan,
        excess_outcome=None if excess_test is None else excess_test.outcome,
        excess_power=e_power,
        excess_plan=e_plan,
        **common,
    )


def _excess(
    xs: np.ndarray,
    ys: np.ndarray,
    x_rows: np.ndarray,
    y_rows: np.ndarray,
    floor: float | None,
    floor_source: str,
    *,
    config: RegimeConfig,
    n_boot: int,
    seed: int,
) -> tuple[ExcessFit | None, CurvatureTest | None]:
    """The excess exponent over the range (E given, else the power+E fit's) and the curvature
    test of L − E, E's interval carried in where E was fitted."""
    excess = None
    if floor is not None and xs.size >= _PLAIN_MIN:
        excess = excess_exponent(
            xs, ys, floor=floor, floor_source=floor_source, n_boot=n_boot, seed=seed
        )
    elif floor is None and xs.size >= _POWER_E_MIN:
        excess = excess_exponent(xs, ys, n_boot=n_boot, seed=seed)
    if excess is None or not excess.estimable:
        return excess, None
    floors = [excess.E] if floor is not None else _floors(excess, float(ys.min()))
    test = curvature_test_over_floor(
        x_rows, y_rows, floors, config=config, n_boot=n_boot, seed=seed
    )
    return excess, test


def _floors(excess: ExcessFit, min_loss: float) -> list[float]:
    """The fitted E, then five points spanning its 95% interval (kept below the smallest loss)."""
    lo, hi = excess.E_ci95
    top = min_loss * (1 - 1e-6)
    grid = [float(e) for e in np.linspace(lo, hi, 5) if math.isfinite(e) and 0 <= e < top]
    return [excess.E, *grid]


def _power_and_plan(
    test: CurvatureTest | None,
    costs: Callable[[float], float] | None,
    config: RegimeConfig,
    n_sim: int,
    seed: int,
) -> tuple[Power | None, Plan | None]:
    """The test's power at its own sizes, runs, slope and noise; for UNDECIDED, the plan."""
    if test is None or n_sim <= 0 or not test.exponent_mid > 0 or not test.noise_log >= 0:
        return None, None
    args = (test.sizes, test.runs_per_size, test.exponent_mid, test.noise_log)
    power = regime_power(*args, config=config, n_sim=n_sim, seed=seed)
    plan = None
    if test.outcome == UNDECIDED:
        lo, hi = test.x_range
        # the test's quadratic: its exponent moves by the change across ln(hi/lo)
        bend = -(test.exponent_hi_end - test.exponent_lo_end) / (2 * math.log(hi / lo))
        plan = decision_plan(
            *args,
            cpu_s_per_run=costs,
            bend=(bend, math.sqrt(lo * hi)),
            config=config,
            n_sim=max(n_sim // 2, 10),
            seed=seed,
        )
    return power, plan


def _words(test: CurvatureTest, power: Power | None, plan: Plan | None, what: str) -> str:
    text = f"{test.outcome}: {what}: {test.reason}"
    if power is not None:
        text += f"; power {power.power:.2f} (an exact power law at this slope and noise passes"
        text += f" {power.power:.0%} of the time)"
    if test.outcome == CURVED:
        text += "; curved: the exponent changes by more than the tolerance across the range"
    if plan is not None:
        text += f"; {plan.words()}"
    return text


def outcome_of(regime: dict[str, Any], *, excess: bool = False) -> str:
    """The outcome saved in an analysis's `to_dict()` (`excess`: of L − E); a folder analysed
    before the three outcomes has only pass/fail, read back as POWER LAW or NOT POWER LAW."""
    key, old = ("excess_outcome", "excess_power_law") if excess else ("outcome", "power_law")
    if regime.get(key):
        return str(regime[key])
    if excess and not regime.get("excess_curvature"):
        return ""
    return POWER_LAW if regime.get(old) else "NOT POWER LAW (tested before the three outcomes)"


def power_words(regime: dict[str, Any], *, excess: bool = False) -> str:
    """'power 0.14' from an analysis's `to_dict()`, or '' where none was computed."""
    power = regime.get("excess_power" if excess else "power")
    return f"power {power['power']:.2f}" if power else ""
