"""One call from a loss-vs-size table to what can be said about its exponent: the local
slopes, the fit range by rule, the curvature test over it, the regime verdict in words,
and the plain and excess exponents over the range (`scalelab fit` prints this)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scalelab.laws.excess import ExcessFit, excess_exponent
from scalelab.laws.fit import PowerLawFit, fit_power_law
from scalelab.laws.regime import (
    NO_REGIME,
    CurvatureTest,
    FitRange,
    LocalSlopes,
    RegimeConfig,
    by_size,
    curvature_test,
    fit_range,
    local_slopes,
)

#: The label of the ideal learner's exponent over the fitted range among the predictions.
IDEAL = "ideal learner, excess loss over the fitted range"
#: Fewest sizes in the range for the plain log-log fit and for the power+E fit.
_PLAIN_MIN, _POWER_E_MIN = 3, 4


@dataclass(frozen=True)
class RegimeAnalysis:
    """Everything `analyse_regime` measured. `power_law`: the curvature test passed on the
    test loss; `excess_curvature`: the same test on L − E, run when E is given (exact);
    `verdict`: both in words."""

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

    def to_dict(self) -> dict[str, Any]:
        def d(obj: Any) -> Any:
            return None if obj is None else obj.to_dict()

        return {
            "power_law": self.power_law,
            "verdict": self.verdict,
            "sizes": list(self.sizes),
            "losses": list(self.losses),
            "local_slopes": self.local_slopes.to_dict(),
            "fit_range": self.fit_range.to_dict(),
            "curvature": d(self.curvature),
            "plain": d(self.plain),
            "excess": d(self.excess),
            "excess_curvature": d(self.excess_curvature),
            "excess_slopes": d(self.excess_slopes),
            "excess_power_law": bool(self.excess_curvature and self.excess_curvature.passed),
            "predictions": dict(self.predictions),
            "config": self.config.to_dict(),
        }


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
    config: RegimeConfig = RegimeConfig(),
    n_boot: int = 1000,
    seed: int = 0,
) -> RegimeAnalysis:
    """Local slopes over the whole table; range, test and exponents over the fitted range.
    `floor`: the corpus's exact E when known (synthetic corpora), else the power+E fit's.
    `predictions`: theory exponents to show beside the observation; `ideal_exponent(lo, hi)`
    adds one computed over the fitted range (the facts family's ideal learner)."""
    slopes = local_slopes(x, y, n_boot=n_boot, seed=seed)
    sizes, loss, _ = by_size(x, y)
    rng = fit_range(
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
        verdict = f"{NO_REGIME} ({rng.lower_reason}; {rng.upper_reason})"
        return RegimeAnalysis(False, verdict, curvature=None, plain=None, excess=None, **common)
    if ideal_exponent is not None:
        common["predictions"][IDEAL] = float(ideal_exponent(rng.x_lo, rng.x_hi))
    keep = rng.mask(sizes)
    xs, ys = sizes[keep], loss[keep]
    test = curvature_test(xs, ys, config=config, n_boot=n_boot, seed=seed)
    plain = fit_power_law(xs, ys, n_boot=n_boot, seed=seed) if xs.size >= _PLAIN_MIN else None
    excess = None
    if floor is not None and xs.size >= _PLAIN_MIN:
        excess = excess_exponent(
            xs, ys, floor=floor, floor_source=floor_source, n_boot=n_boot, seed=seed
        )
    elif floor is None and xs.size >= _POWER_E_MIN:
        excess = excess_exponent(xs, ys, n_boot=n_boot, seed=seed)
    # The excess curve is tested only against a given E: the power+E fit makes L − Ê
    # straight by construction, so the test would pass on any curve it can bend.
    excess_test = None
    if floor is not None and excess is not None:
        excess_test = curvature_test(xs, ys - floor, config=config, n_boot=n_boot, seed=seed)
    excess_slopes = None
    above = loss > (excess.E if excess is not None else np.inf)
    if excess is not None and excess.estimable and above.sum() >= 2:  # every size above E
        excess_slopes = local_slopes(sizes[above], loss[above] - excess.E, n_boot=n_boot, seed=seed)
    where = f"{rng.x_lo:,.0f} … {rng.x_hi:,.0f} ({rng.decades:.2f} decades, {rng.n_points} sizes)"
    verdict = _words(test, f"test loss over {where}")
    if excess_test is not None:
        verdict += f". {_words(excess_test, f'excess loss L − E (E = {floor:.4g}) over {where}')}"
    return RegimeAnalysis(
        test.passed,
        verdict,
        curvature=test,
        plain=plain,
        excess=excess,
        excess_curvature=excess_test,
        excess_slopes=excess_slopes,
        **common,
    )


def _words(test: CurvatureTest, what: str) -> str:
    if test.passed:
        return f"power law: {what}: {test.reason}"
    return f"{NO_REGIME} ({what}: {test.reason})"
