"""A prediction of alpha_D scored as a predictor, beside baselines that ignore it, with
paired bootstrap intervals over corpora.

Why: agreement within ±0.02 on a few corpora whose exponents all lie close together says
nothing if a predictor that ignores the corpus does as well, and a margin without its
interval is not a verdict. So every source of predicted exponents is scored on the same
corpora as four predictors that ignore d:

- `constant`: Kaplan et al. (2020)'s data exponent for language models, 0.095, everywhere;
- `leave-one-out mean`: for each corpus, the mean observed exponent of the *other* corpora;
- `leave-one-out mean within kind`: the same mean over the other corpora of the corpus's own
  kind (real or synthetic): a predictor that knows only the kind. A corpus alone in its kind
  gets the pooled leave-one-out mean (there is nothing of its kind to average);
- `leave-one-out median`: the median of the other corpora's exponents (robust to one far
  corpus, which the pooled mean is not: its error on corpus i is n/(n−1) times i's distance
  from the pooled mean).

The *best* baseline is the one with the lowest MAE on the source's corpora. A source counts as
*informative* only where the paired bootstrap 95% interval (`laws.compare.bootstrap`, over
corpora) of its margin MAE_best − MAE_source lies entirely above 0, on at least `MIN_CORPORA`
corpora.
Scores: MAE (and its interval), the slope (and intercept) of observed on predicted by least
squares (1 for a calibrated predictor), Spearman's rho (and its interval: does it order the
corpora?), and the count within ±`band` of the observation. Pure: arrays and dicts in,
numbers and words out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy.stats import rankdata

from scalelab.errors import InputError
from scalelab.laws.compare import bootstrap
from scalelab.laws.compare.bootstrap import N_BOOT, SEED

KAPLAN_ALPHA_D = 0.095  # Kaplan et al. 2020, L(D) ∝ D^-0.095
BAND = 0.02
CONSTANT = "constant 0.095"
LOO = "leave-one-out mean"
LOO_KIND = "leave-one-out mean within kind"
LOO_MEDIAN = "leave-one-out median"
BASELINES = (CONSTANT, LOO, LOO_KIND, LOO_MEDIAN)
KINDS = ("real", "synthetic")
MIN_CORPORA = 3  # fewer corpora give a bootstrap of at most a handful of distinct resamples
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


def _loo_within(o: np.ndarray, kinds: list[str], pooled: np.ndarray) -> np.ndarray:
    """Each corpus's mean over the other corpora of its kind (pooled where it is alone)."""
    out = pooled.copy()
    for kind in set(kinds):
        mine = np.array([k == kind for k in kinds])
        if mine.sum() >= 2:
            out[mine] = (o[mine].sum() - o[mine]) / (mine.sum() - 1)
    return out


def baseline_predictions(
    observed: Any, constant: float = KAPLAN_ALPHA_D, kinds: list[str] | None = None
) -> dict[str, np.ndarray]:
    """The predictors that ignore d, one prediction per corpus: the constant, the
    leave-one-out mean, the leave-one-out mean within the corpus's kind (`kinds`, one per
    corpus; all alike when None) and the leave-one-out median. Needs at least 2 corpora."""
    o = _vector(observed, "observed")
    if len(o) < 2:
        raise InputError("the leave-one-out baseline needs at least 2 corpora; add corpora")
    kinds = list(kinds) if kinds is not None else ["real"] * len(o)
    if len(kinds) != len(o):
        raise InputError(f"{len(kinds)} kinds for {len(o)} corpora: give one kind per corpus")
    loo = (o.sum() - o) / (len(o) - 1)
    median = np.array([np.median(np.delete(o, i)) for i in range(len(o))])
    return {
        CONSTANT: np.full(len(o), float(constant)),
        LOO: loo,
        LOO_KIND: _loo_within(o, kinds, loo),
        LOO_MEDIAN: median,
    }


def _intervals(row: dict, p: np.ndarray, o: np.ndarray, base: dict, idx: np.ndarray) -> None:
    """Add the bootstrap intervals (same resamples `idx` for the source and every baseline)
    and the verdict to a source's row."""
    err = np.abs(p - o)
    row["mae_ci95"] = bootstrap.mae_interval(err, idx)
    rho = bootstrap.rho_interval(p, o, idx)
    row["rho_ci95"], row["rho_undefined_share"] = rho["ci95"], rho["undefined_share"]
    for name, v in base.items():
        row["baselines"][name]["margin"] = bootstrap.mae_margin(err, np.abs(v - o), idx)
    best = min(BASELINES, key=lambda b: row["baselines"][b]["mae"])
    m = row["baselines"][best]["margin"]
    row["best_baseline"] = best
    row["margin"], row["margin_ci95"], row["p_not_above_0"] = (
        m["margin"],
        m["ci95"],
        m["p_not_above_0"],
    )
    row["informative"] = bool(row["n"] >= MIN_CORPORA and m["ci95"][0] > TIE)


def score_sources(
    observed: Mapping[str, float],
    predicted: Mapping[str, Mapping[str, float | None]],
    band: float = BAND,
    constant: float = KAPLAN_ALPHA_D,
    *,
    kinds: Mapping[str, str] | None = None,
    n_boot: int = N_BOOT,
    seed: int = SEED,
) -> dict[str, Any]:
    """Score every source of `predicted` ({source: {corpus: alpha_D or None}}) against
    `observed` ({corpus: alpha_D}), each beside the baselines on the same corpora, with
    paired bootstrap intervals over those corpora (`n_boot` resamples, `seed`).

    The leave-one-out baselines use every observed corpus except the one predicted (within
    kind: of its `kinds` entry), also where a source has no prediction for some corpora."""
    corpora = list(observed)
    kind_list = [(kinds or {}).get(c, "real") for c in corpora]
    base = baseline_predictions([observed[c] for c in corpora], constant, kind_list)
    out: dict[str, Any] = {}
    for source, preds in predicted.items():
        have = [i for i, c in enumerate(corpora) if preds.get(c) is not None]
        if not have:
            continue
        o = np.array([observed[corpora[i]] for i in have])
        p = np.array([preds[corpora[i]] for i in have], dtype=float)
        row = score(p, o, band)
        row["corpora"] = [corpora[i] for i in have]
        row["baselines"] = {name: score(v[have], o, band) for name, v in base.items()}
        idx = bootstrap.resample_indices(len(have), n_boot, seed)
        _intervals(row, p, o, {k: v[have] for k, v in base.items()}, idx)
        out[source] = row
    return out


def score_by_kind(
    observed: Mapping[str, float],
    predicted: Mapping[str, Mapping[str, float | None]],
    kinds: Mapping[str, str],
    band: float = BAND,
    constant: float = KAPLAN_ALPHA_D,
    *,
    n_boot: int = N_BOOT,
    seed: int = SEED,
) -> dict[str, dict[str, Any]]:
    """`score_sources` on all corpora together ("all") and on each kind alone ("real",
    "synthetic"), the baselines recomputed inside each subset; a kind with fewer than 2
    observed corpora is left out (no leave-one-out baseline)."""
    out = {"all": score_sources(observed, predicted, band, constant, kinds=kinds,
                                n_boot=n_boot, seed=seed)}  # fmt: skip
    for kind in KINDS:
        sub = {c: v for c, v in observed.items() if kinds.get(c, "real") == kind}
        if len(sub) >= 2:
            out[kind] = score_sources(sub, predicted, band, constant, kinds=kinds,
                                      n_boot=n_boot, seed=seed)  # fmt: skip
    return out


def _fmt(v: float | None, digits: int = 3) -> str:
    return "n/a" if v is None else f"{v:.{digits}f}"


def fmt_interval(ci: list[float] | None, digits: int = 3, sign: bool = False) -> str:
    """[lo, hi] as text ('n/a' when there is none)."""
    if ci is None:
        return "n/a"
    f = f"{{:+.{digits}f}}" if sign else f"{{:.{digits}f}}"
    return "[" + ", ".join(f.format(v) for v in ci) + "]"


def judged(row: Mapping[str, Any]) -> str:
    """The verdict of one row in a few words."""
    if row["informative"]:
        return "informative"
    if row["n"] < MIN_CORPORA:
        return f"not judged (fewer than {MIN_CORPORA} corpora)"
    return "not informative"


def verdict_line(source: str, row: Mapping[str, Any], band: float = BAND) -> str:
    """One sentence: does this source beat the best baseline that ignores d, with what
    interval on the margin."""
    best = row["best_baseline"]
    head = (
        f"{source}: MAE {row['mae']:.4f} on {row['n']} corpora "
        f"(95% interval {fmt_interval(row['mae_ci95'], 4)}); the best baseline that ignores "
        f"d is the {best}, MAE {row['baselines'][best]['mae']:.4f}; margin "
        f"{row['margin']:+.4f}, 95% interval {fmt_interval(row['margin_ci95'], 4, True)}, "
        f"P(margin ≤ 0) = {row['p_not_above_0']:.2f}"
    )
    if row["informative"]:
        words = "informative: the interval of the margin lies above 0"
    elif row["n"] < MIN_CORPORA:
        words = f"not judged: fewer than {MIN_CORPORA} corpora"
    else:
        words = "not informative: the interval of the margin does not lie above 0"
    return (
        f"{head}; {words}. Spearman rho {_fmt(row['rho'], 2)} "
        f"{fmt_interval(row['rho_ci95'], 2)}, slope of observed on predicted "
        f"{_fmt(row['slope'], 2)}, {row['within']} of {row['n']} within ±{band:g}."
    )


def verdict(scores: Mapping[str, Mapping[str, Any]], band: float = BAND) -> str:
    """The verdict in words: a sentence per source, then the count."""
    if not scores:
        return "No source has a prediction for any scored corpus: nothing was scored."
    lines = [verdict_line(s, r, band) for s, r in scores.items()]
    good = [s for s, r in scores.items() if r["informative"]]
    tail = (
        f"{len(good)} of {len(scores)} source(s) beat the best baseline that ignores d with a "
        "margin whose 95% interval lies above 0" + (f" ({', '.join(good)})." if good else ".")
    )
    return " ".join([*lines, tail])
