"""The forecast report: per corpus a table of held-out errors and a forecast fan (fitted
runs, held-out runs, each method's forecast with its band); a summary table across corpora."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FormatStrFormatter

from scalelab.laws.forecast.config import ForecastConfig
from scalelab.laws.forecast.holdout import CorpusRuns, Fan, ScoreResult, corpus_table
from scalelab.report.document import Report
from scalelab.report.plots import new_figure


def forecast_figure(runs: CorpusRuns, k: int, forecasts: list[tuple[str, Any]]) -> Figure:
    """Log-log fan: the k fitted runs (filled), the held-out runs (open), each method's
    forecast from the smallest run to beyond the largest, with its interval as a band."""
    fig, ax = new_figure(6.4, 4.4)
    grid = np.geomspace(runs.x[0], runs.x[-1] * 1.5, 200)
    for i, (name, fc) in enumerate(forecasts):
        color = f"C{i % 10}"
        ax.plot(grid, fc.predict(grid), color=color, lw=1.2, label=f"{name} (α = {fc.alpha:.3f})")
        lo, hi = fc.interval(grid)
        ax.fill_between(grid, lo, hi, color=color, alpha=0.10, lw=0)
    ax.plot(runs.x[:k], runs.y[:k], "ko", ms=5, label=f"fitted ({k} smallest runs)")
    ax.plot(runs.x[k:], runs.y[k:], "o", mfc="white", mec="k", ms=6, label="held out")
    ax.axvline(runs.x[k - 1], color="0.6", lw=0.8, ls=":")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FormatStrFormatter("%.1f"))  # the range is under a decade:
    ax.yaxis.set_minor_formatter(FormatStrFormatter("%.1f"))  # label the minor ticks too
    ax.set_xlabel("training tokens")
    ax.set_ylabel("test loss (nats/token)")
    ax.set_title(f"{runs.name}: forecasts from the {k} smallest runs")
    ax.legend(fontsize=7, loc="lower left")
    return fig


def write_forecast_report(
    result: ScoreResult, fans: list[Fan], cfg: ForecastConfig, out_dir: str | Path
) -> tuple[Path, Path]:
    """report.html and report.md (figures beside the Markdown) for a scoring result and the
    forecast fan of each corpus (`laws.forecast.holdout.forecast_fans`)."""
    rep = Report("Forecasts scored on held-out runs")
    rep.paragraph(
        "Each method is fitted on a corpus's k smallest runs and forecasts every larger run. "
        "ARE = |forecast − observed| / observed; ARE_last is the largest run's, ARE_decj the mean "
        "over the held-out runs j−1 to j decades beyond the largest fitted size. Bands: "
        f"{cfg.level:.0%} bootstrap (residuals, and the exponent's interval where it has one)."
    )
    rep.heading("Summary across corpora (mean ARE on the largest run)")
    rep.table(result.summary, caption="sorted by the mean over k; covered: band held it")
    observed = result.observed_exponents
    for fan in fans:
        runs, k = fan.runs, fan.k
        rep.heading(f"{runs.name} (observed log-log exponent {observed[runs.name]:.4f})")
        rep.table(corpus_table(result.rows, runs.name))
        rep.figure(
            forecast_figure(runs, k, fan.forecasts), caption=f"{runs.name}: forecast fan, k = {k}"
        )
    rep.heading("Config")
    rep.json(result.config)
    return rep.write(out_dir)
