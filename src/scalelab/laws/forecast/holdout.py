"""Forecasts scored on held-out runs: fit each method on a corpus's smallest k runs, forecast
every larger run, and report the absolute relative error (ARE = |forecast − observed| /
observed) on the largest run and per 10× step beyond the fitted range.

Methods per corpus: free log-log; free `E + A·n^-α`; α fixed from each d source of the corpus;
α fixed at a constant (a baseline that ignores d); α fixed at the leave-one-out mean of the
other corpora's observed log-log exponents (fitted on all their runs), when there are others.
Each fixed α is fitted as `E + A·n^-α` and (`score_without_floor`) also as `A·n^-α`.
`score_corpora` returns a `ScoreResult`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from scalelab.config import Record
from scalelab.errors import InputError
from scalelab.laws.forecast.config import ForecastConfig
from scalelab.laws.forecast.fits import Exponent, PowerForecast, fit_forecast

LOGLOG, FREE, CONSTANT, LOO = "log-log free", "E+A free", "constant", "LOO mean"


@dataclass(frozen=True)
class CorpusRuns:
    """One corpus's data sweep (sizes `x`, losses `y`, sorted by size) and its d sources."""

    name: str
    x: np.ndarray
    y: np.ndarray
    sources: tuple[Exponent, ...] = ()

    def __post_init__(self) -> None:
        x, y = np.asarray(self.x, float), np.asarray(self.y, float)
        if x.shape != y.shape or x.ndim != 1:
            raise InputError(f"{self.name}: sizes and losses differ in shape")
        if not (np.all(np.isfinite(x) & np.isfinite(y)) and np.all(x > 0) and np.all(y > 0)):
            raise InputError(f"{self.name}: sizes and losses must be positive numbers")
        order = np.argsort(x, kind="stable")
        object.__setattr__(self, "x", x[order])
        object.__setattr__(self, "y", y[order])


def observed_exponent(runs: CorpusRuns) -> float:
    """The log-log exponent over all of a corpus's runs (what its scaling table reports)."""
    lx, ly = np.log(runs.x), np.log(runs.y)
    xc = lx - lx.mean()
    return float(-(ly @ xc) / (xc @ xc))


def loo_exponent(corpora: list[CorpusRuns], name: str) -> Exponent | None:
    """Mean of the other corpora's observed exponents (their min-max as the interval)."""
    others = [observed_exponent(c) for c in corpora if c.name != name]
    if not others:
        return None
    return Exponent(LOO, float(np.mean(others)), (float(min(others)), float(max(others))))


def method_forecasts(
    runs: CorpusRuns, k: int, loo: Exponent | None, cfg: ForecastConfig
) -> list[tuple[str, PowerForecast]]:
    """(method name, forecast) for every method, each fitted on the smallest `k` runs."""
    if not 3 <= k < runs.x.size:
        raise InputError(
            f"{runs.name}: fitting on k = {k} of {runs.x.size} runs leaves nothing to forecast "
            "or too little to fit (need 3 <= k < runs): choose another k or add runs"
        )
    x, y = runs.x[:k], runs.y[:k]
    kw = {"n_boot": cfg.n_boot, "level": cfg.level, "seed": cfg.seed}
    out = [
        (LOGLOG, fit_forecast(x, y, method="log-log", **kw)),
        (FREE, fit_forecast(x, y, method="free", **kw)),
    ]
    fixed = [*runs.sources, Exponent(f"{CONSTANT} {cfg.constant_alpha:g}", cfg.constant_alpha)]
    if loo is not None:
        fixed.append(loo)
    for source in fixed:
        name = source.label if source.label.startswith((CONSTANT, LOO)) else f"d: {source.label}"
        out.append((name, fit_forecast(x, y, method="fixed", exponent=source, **kw)))
        if cfg.score_without_floor:
            fc = fit_forecast(x, y, method="fixed, E=0", exponent=source, **kw)
            out.append((f"{name}, E=0", fc))
    return out


@dataclass(frozen=True)
class Fan:
    """What the report draws of one corpus: every method's forecast from its `k` smallest
    runs, k the smallest of the scored ones that leaves runs to forecast."""

    runs: CorpusRuns
    k: int
    forecasts: list[tuple[str, PowerForecast]]


def forecast_fans(corpora: list[CorpusRuns], cfg: ForecastConfig) -> list[Fan]:
    """One `Fan` per corpus, for `report.forecast` (which draws, and fits nothing)."""
    fans = []
    for runs in corpora:
        k = min(k for k in cfg.ks if 3 <= k < runs.x.size)
        fans.append(Fan(runs, k, method_forecasts(runs, k, loo_exponent(corpora, runs.name), cfg)))
    return fans


def _score_one(runs: CorpusRuns, k: int, name: str, fc: PowerForecast) -> dict[str, Any]:
    held_x, held_y = runs.x[k:], runs.y[k:]
    pred = fc.predict(held_x)
    lo, hi = fc.interval(held_x)
    are = np.abs(pred - held_y) / held_y
    decades = np.log10(held_x / runs.x[k - 1])
    steps = np.ceil(decades - 1e-9).astype(int)
    by_step = {int(s): float(are[steps == s].mean()) for s in np.unique(steps)}
    return {
        "corpus": runs.name,
        "k": k,
        "method": name,
        "alpha": fc.alpha,
        "E": fc.E,
        "A": fc.A,
        "fit_upto": float(runs.x[k - 1]),
        "largest": float(held_x[-1]),
        "decades_beyond": float(decades[-1]),
        "are_largest": float(are[-1]),
        "covered_largest": bool(lo[-1] <= held_y[-1] <= hi[-1]),
        "are_by_step": by_step,
        "held_out": [
            {
                "n": float(n),
                "observed": float(o),
                "forecast": float(p),
                "lo": float(a),
                "hi": float(b),
                "are": float(e),
            }
            for n, o, p, a, b, e in zip(held_x, held_y, pred, lo, hi, are, strict=True)
        ],
    }


@dataclass(frozen=True)
class ScoreResult(Record):
    """Every method scored on every corpus: the config used, each corpus's observed log-log
    exponent (in corpus order), `rows` (one per corpus, k and method, each with its held-out
    runs) and `summary` (mean ARE per method, best first; see `summarize`). Rows are plain
    dicts: table rows, flattened per corpus by `tables`."""

    config: ForecastConfig
    observed_exponents: dict[str, float]
    rows: list[dict[str, Any]]
    summary: list[dict[str, Any]]

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        """Per corpus, its flat table (`corpus_table`): what the CLI prints."""
        return {name: corpus_table(self.rows, name) for name in self.observed_exponents}


def score_corpora(corpora: list[CorpusRuns], cfg: ForecastConfig = ForecastConfig()) -> ScoreResult:
    """Every method on every corpus for each k in `cfg.ks` (k skipped where it leaves no run
    to forecast)."""
    if not corpora:
        raise InputError("no corpus to score: give at least one sweep with >= 4 runs")
    names = [c.name for c in corpora]
    if len(set(names)) != len(names):
        raise InputError(f"corpus names must differ, got {names}")
    rows = []
    for runs in corpora:
        ks = [k for k in cfg.ks if 3 <= k < runs.x.size]
        if not ks:
            raise InputError(
                f"{runs.name}: {runs.x.size} runs; scoring needs at least 4 (fit 3, forecast 1)"
            )
        loo = loo_exponent(corpora, runs.name)
        for k in ks:
            for name, fc in method_forecasts(runs, k, loo, cfg):
                rows.append(_score_one(runs, k, name, fc))
    return ScoreResult(
        config=cfg,
        observed_exponents={c.name: observed_exponent(c) for c in corpora},
        rows=rows,
        summary=summarize(rows),
    )


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean ARE on the largest run per method, per k and over all k, across corpora."""
    methods = list(dict.fromkeys(r["method"] for r in rows))
    ks = sorted({r["k"] for r in rows})
    out = []
    for m in methods:
        mine = [r for r in rows if r["method"] == m]
        row: dict[str, Any] = {"method": m, "corpora": len({r["corpus"] for r in mine})}
        for k in ks:
            vals = [r["are_largest"] for r in mine if r["k"] == k]
            row[f"k={k}"] = float(np.mean(vals)) if vals else math.nan
        row["mean"] = float(np.mean([r["are_largest"] for r in mine]))
        row["covered"] = f"{sum(r['covered_largest'] for r in mine)}/{len(mine)}"
        out.append(row)
    return sorted(out, key=lambda r: r["mean"])


def corpus_table(rows: list[dict[str, Any]], corpus: str) -> list[dict[str, Any]]:
    """Flat rows for one corpus (what the report and the CLI print): ARE on the largest run
    (`ARE_last`), mean ARE of the held-out runs j−1 to j decades beyond the largest fitted
    size (`ARE_decj`), and whether the band held the largest run (`in_band`)."""
    mine = [r for r in rows if r["corpus"] == corpus]
    steps = sorted({s for r in mine for s in r["are_by_step"]})
    return [
        {
            "k": r["k"],
            "method": r["method"],
            "alpha": r["alpha"],
            "E": r["E"],
            "ARE_last": r["are_largest"],
            **{f"ARE_dec{s}": r["are_by_step"].get(s, math.nan) for s in steps},
            "in_band": r["covered_largest"],
        }
        for r in mine
    ]
