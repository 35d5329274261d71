"""`scalelab forecast` as a library call: read runs, forecast larger ones from the smaller,
answer "data needed for loss X", the compute-optimal split for a budget, and score every
method on held-out runs; optionally write forecast.json, and with a `draw` (the CLI passes
`report.forecast.write_forecast_report`: report/ stands above laws/) the report, to a folder.

Nothing is written unless every computation succeeded; the folder's files are each written
atomically (forecast.json last).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from scalelab.errors import InputError
from scalelab.io import atomic_write_json, provenance
from scalelab.laws.forecast import Exponent, fit_forecast, forecast_table
from scalelab.laws.forecast_config import ForecastConfig
from scalelab.laws.forecast_inputs import LOSS, SIZE, load_corpora, load_grid, pick_source
from scalelab.laws.forecast_score import CorpusRuns, corpus_table, forecast_fans, score_corpora


@dataclass(frozen=True)
class ExponentChoice:
    """Where the exponent comes from: a number (`alpha`), a d (`d`), a d source of the input
    (`source`), or none of them (free); with a fixed exponent, `floor` keeps the term E."""

    alpha: float | None = None
    d: float | None = None
    source: str | None = None
    floor: bool = True  # fit E + A·n^-α with a fixed α (False: A·n^-α)

    def __post_init__(self) -> None:
        given = [v for v in (self.alpha, self.d, self.source) if v is not None]
        if len(given) > 1:
            raise InputError("give at most one of --alpha, --d, --source (none: exponent free)")
        for name, v in (("--alpha", self.alpha), ("--d", self.d)):
            if v is not None and not v > 0:
                raise InputError(f"{name} must be a positive number, got {v}")

    def exponent(self, runs: CorpusRuns) -> Exponent | None:
        if self.alpha is not None:
            return Exponent(f"alpha {self.alpha:g}", self.alpha)
        if self.d is not None:
            return Exponent.from_d(f"d {self.d:g}", self.d)
        if self.source is not None:
            return pick_source(runs, self.source)
        return None


def _fit_part(runs: CorpusRuns, fit_upto: float | None, k: int | None) -> int:
    """How many of the smallest runs the fit uses."""
    if fit_upto is not None and k is not None:
        raise InputError("give --fit-upto or --k, not both")
    n = runs.x.size if k is None else k
    if fit_upto is not None:
        n = int(np.sum(runs.x <= fit_upto * (1 + 1e-12)))
    if runs.x.size < 3:
        raise InputError(
            f"{runs.name}: {runs.x.size} run(s); a forecast needs at least 3: add runs"
        )
    if not 3 <= n <= runs.x.size:
        raise InputError(
            f"{runs.name}: the fit would use {n} of {runs.x.size} runs; choose --fit-upto or "
            f"--k so that it uses 3 to {runs.x.size} runs (or add runs)"
        )
    return n


def forecast_one(
    runs: CorpusRuns,
    choice: ExponentChoice,
    cfg: ForecastConfig,
    *,
    fit_upto: float | None = None,
    k: int | None = None,
    at: list[float] | None = None,
    loss: float | None = None,
) -> dict[str, Any]:
    """Fit on the smallest runs, forecast `at` (default: the runs left out, else 10× the
    largest), with observed losses and ARE where a run exists there."""
    n = _fit_part(runs, fit_upto, k)
    exp = choice.exponent(runs)
    fc = fit_forecast(
        runs.x[:n],
        runs.y[:n],
        method=("fixed" if choice.floor else "fixed, E=0") if exp else "free",
        exponent=exp,
        n_boot=cfg.n_boot,
        level=cfg.level,
        seed=cfg.seed,
    )
    sizes = at or (runs.x[n:].tolist() or [10.0 * runs.x[-1]])
    rows = forecast_table(fc, sizes)
    observed = dict(zip(runs.x.tolist(), runs.y.tolist(), strict=True))
    for row in rows:
        obs = observed.get(row["n"])
        row["observed"] = obs
        row["are"] = abs(row["loss"] - obs) / obs if obs else None
    out = {"corpus": runs.name, "forecast": fc.to_dict(), "at": rows}
    if loss is not None:
        out["data_needed"] = fc.data_needed(loss)
    return out


def joint_split(
    grid_path: str | Path,
    budgets: list[float],
    choice: ExponentChoice,
    runs: Any = None,
    **cols: Any,
) -> dict[str, Any]:
    """The joint law on a data × model grid and its compute-optimal split per budget. From d
    both exponents are fixed (a = 2/d, b = 2/(2+d)); from --alpha only b (the data one)."""
    from scalelab.laws.joint_forecast import fit_joint

    g = load_grid(grid_path, **cols)
    a = b = None
    if choice.source is not None and runs is None:
        raise InputError("--source needs a validate folder as input (its d/ holds the sources)")
    exp = choice.exponent(runs)  # runs is read only for a source
    if exp is not None and exp.d is not None:
        a, b = 2.0 / exp.d, exp.alpha
    elif exp is not None:
        b = exp.alpha
    fit = fit_joint(g["N"], g["D"], g["L"], a=a, b=b)
    return {
        "grid": str(grid_path),
        "fit": fit.to_dict(),
        "compute_optimal": fit.compute_optimal(budgets),
    }


def run_forecast(
    inputs: list[str | Path],
    choice: ExponentChoice = ExponentChoice(),
    cfg: ForecastConfig = ForecastConfig(),
    *,
    x: str = SIZE,
    y: str = LOSS,
    fit_upto: float | None = None,
    k: int | None = None,
    at: list[float] | None = None,
    loss: float | None = None,
    budgets: list[float] | None = None,
    grid: str | Path | None = None,
    grid_cols: dict[str, Any] | None = None,
    score: bool = False,
    corpus: str | None = None,
    out: str | Path | None = None,
    draw: Callable[..., tuple[Path, Path]] | None = None,
) -> dict[str, Any]:
    """Everything `scalelab forecast` prints, as one dict (also OUT/forecast.json). `corpus`
    limits the forecasts (not the scoring, whose leave-one-out needs every corpus) to one.
    `draw(score, fans, cfg, out)` writes the report of a --score run into `out` (the CLI
    passes `scalelab.report.forecast.write_forecast_report`); None: forecast.json alone."""
    result: dict[str, Any] = {"config": cfg.to_dict(), "choice": choice.__dict__}
    corpora = (
        []
        if (budgets and grid is None and not score and _grid_only(inputs))
        else (load_corpora(list(inputs), x, y))
    )
    chosen = [c for c in corpora if corpus is None or c.name == corpus]
    if corpus is not None and not chosen:
        have = ", ".join(c.name for c in corpora)
        raise InputError(f"no corpus {corpus!r} in the input (corpora: {have}); name one of those")
    result["forecasts"] = [
        forecast_one(c, choice, cfg, fit_upto=fit_upto, k=k, at=at, loss=loss) for c in chosen
    ]
    if budgets:
        src = grid if grid is not None else inputs[0]
        runs = corpora[0] if corpora and Path(inputs[0]).is_dir() else None
        result["joint"] = joint_split(src, budgets, choice, runs, y=y, **(grid_cols or {}))
    if score:
        result["score"] = score_corpora(corpora, cfg)
        result["score"]["tables"] = {
            c.name: corpus_table(result["score"]["rows"], c.name) for c in corpora
        }
    if out is not None:
        _write(Path(out), result, corpora, cfg, draw)
    return result


def _grid_only(inputs: list[str | Path]) -> bool:
    """With --budget and no --grid, a single table input is the grid (e.g. Epoch's Chinchilla
    data), not a data sweep to forecast."""
    return len(inputs) == 1 and Path(inputs[0]).is_file()


def _write(out: Path, result: dict[str, Any], corpora: list[CorpusRuns], cfg, draw) -> None:
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} is a file; give a folder")
    if "score" in result and draw is not None:
        html, md = draw(result["score"], forecast_fans(corpora, cfg), cfg, out)
        result["report"] = {"html": str(html), "md": str(md)}
    atomic_write_json(out / "forecast.json", {**result, "provenance": provenance()})
