"""A prediction of alpha_D scored as a predictor, beside two baselines that ignore it.

Why: agreement within ±0.02 on a few corpora whose exponents all lie close together says
nothing if a predictor that ignores the corpus does as well. So every source of predicted
exponents is scored on the same corpora as

- `constant`: Kaplan et al. (2020)'s data exponent for language models, 0.095, everywhere;
- `leave-one-out mean`: for each corpus, the mean observed exponent of the *other* corpora;

and a source counts as *informative* only where its mean absolute error is below both
baselines'. Scores: MAE, the slope (and intercept) of observed on predicted by least squares
(1 for a calibrated predictor), Spearman's rho (does it order the corpora?), and the count
within ±`band` of the observation. Pure: arrays and dicts in, numbers and words out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy.stats import rankdata

from scalelab.errors import InputError

KAPLAN_ALPHA_D = 0.095  # Kaplan et al. 2020, L(D) ∝ D^-0.095
BAND = 0.02
CONSTANT = "constant 0.095"
LOO = "leave-one-out mean"
BASELINES = (CONSTANT, LOO)
TIE = 1e-12  # MAEs closer than this are a tie, and a tie does not beat a baseline


def _vector(values: Any, name: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise InputError(f"{name} must be numbers ({err}); fix the table") from None
    if arr.ndim != 1 or not np.all(np.isfinite(arr)):
        raise InputError(f"{name} must be a one-dimensional list of finite numbers")
    return arr


def spearman_rho(x: Any, y: Any) -> float | None:
    """Spearman's rank correlation (ties get average ranks); None when either side is
    constant or there are fewer than 3 pairs (no ordering to compare)."""
    xr, yr = rankdata(_vector(x, "x")), rankdata(_vector(y, "y"))
    if len(xr) < 3 or np.ptp(xr) == 0 or np.ptp(yr) == 0:
        return None
    return float(np.corrcoef(xr, yr)[0, 1])


def slope_of_observed(predicted: Any, observed: Any) -> tuple[float | None, float | None]:
    """Least-squares `observed ≈ intercept + slope·predicted`; (None, None) when the
    predictions do not vary (a constant has no slope)."""
    p, o = _vector(predicted, "predicted"), _vector(observed, "observed")
    if len(p) < 2 or np.ptp(p) == 0:
        return None, None
    pc = p - p.mean()
    slope = float(pc @ (o - o.mean()) / (pc @ pc))
    return slope, float(o.mean() - slope * p.mean())


def score(predicted: Any, observed: Any, band: float = BAND) -> dict[str, Any]:
    """MAE, slope and intercept of observed on predicted, Spearman's rho, count within
    ±band, for one predictor on the corpora where it has a prediction."""
    p, o = _vector(predicted, "predicted"), _vector(observed, "observed")
    if len(p) != len(o) or len(p) == 0:
        raise InputError(f"{len(p)} predictions for {len(o)} observations: give one per corpus")
    slope, intercept = slope_of_observed(p, o)
    err = np.abs(p - o)
    return {
        "n": len(p),
        "mae": float(err.mean()),
        "slope": slope,
        "intercept": intercept,
        "rho": spearman_rho(p, o),
        "within": int(np.sum(err <= band + 1e-12)),
    }


def baseline_predictions(observed: Any, constant: float = KAPLAN_ALPHA_D) -> dict[str, np.ndarray]:
    """The two predictors that ignore d: the constant, and each corpus's leave-one-out mean
    of the other corpora's observed exponents (needs at least 2 corpora)."""
    o = _vector(observed, "observed")
    if len(o) < 2:
        raise InputError("the leave-one-out baseline needs at least 2 corpora; add corpora")
    return {CONSTANT: np.full(len(o), float(constant)), LOO: (o.sum() - o) / (len(o) - 1)}


def score_sources(
    observed: Mapping[str, float],
    predicted: Mapping[str, Mapping[str, float | None]],
    band: float = BAND,
    constant: float = KAPLAN_ALPHA_D,
) -> dict[str, Any]:
    """Score every source of `predicted` ({source: {corpus: alpha_D or None}}) against
    `observed` ({corpus: alpha_D}), each beside the baselines on the same corpora.

    The leave-one-out mean uses every observed corpus except the one predicted, also where a
    source has no prediction for some corpora. A source is informative when its MAE is below
    both baselines' MAE on its corpora."""
    corpora = list(observed)
    loo = baseline_predictions([observed[c] for c in corpora], constant)
    out: dict[str, Any] = {}
    for source, preds in predicted.items():
        have = [i for i, c in enumerate(corpora) if preds.get(c) is not None]
        if not have:
            continue
        o = np.array([observed[corpora[i]] for i in have])
        row = score([preds[corpora[i]] for i in have], o, band)
        row["corpora"] = [corpora[i] for i in have]
        row["baselines"] = {name: score(v[have], o, band) for name, v in loo.items()}
        maes = [row["baselines"][b]["mae"] for b in BASELINES]
        row["informative"] = bool(row["mae"] < min(maes) - TIE)
        row["margin"] = float(min(maes) - row["mae"])  # > 0: beats the better baseline
        out[source] = row
    return out


def _fmt(v: float | None, digits: int = 3) -> str:
    return "n/a" if v is None else f"{v:.{digits}f}"


def verdict_line(source: str, row: Mapping[str, Any], band: float = BAND) -> str:
    """One sentence: does this source beat both baselines on MAE, and by how much."""
    b = row["baselines"]
    head = (
        f"{source}: MAE {row['mae']:.4f} on {row['n']} corpora against "
        f"{b[CONSTANT]['mae']:.4f} ({CONSTANT}) and {b[LOO]['mae']:.4f} ({LOO})"
    )
    if row["informative"]:
        judged = f"informative: beats the better baseline by {row['margin']:.4f}"
    else:
        beaten = [name for name in BASELINES if b[name]["mae"] <= row["mae"] + TIE]
        judged = f"not informative: it does not beat the {' or the '.join(beaten)}"
    return (
        f"{head}; {judged}. Slope of observed on predicted {_fmt(row['slope'], 2)}, "
        f"Spearman rho {_fmt(row['rho'], 2)}, {row['within']} of {row['n']} within ±{band:g}."
    )


def verdict(scores: Mapping[str, Mapping[str, Any]], band: float = BAND) -> str:
    """The one-paragraph verdict in words: a sentence per source, then the count."""
    if not scores:
        return "No source has a prediction for any scored corpus: nothing was scored."
    lines = [verdict_line(s, r, band) for s, r in scores.items()]
    good = [s for s, r in scores.items() if r["informative"]]
    tail = f"{len(good)} of {len(scores)} source(s) beat both baselines that ignore the corpus" + (
        f" ({', '.join(good)})." if good else "."
    )
    return " ".join([*lines, tail])
