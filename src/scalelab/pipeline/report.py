"""`report_sweep`: a sweep folder's report page. The analysis runs here, and `report.build`
draws the object it is handed: report/ computes nothing (bench/imports.py forbids it to
import `sweeps.analysis` or `manifold.results` at run time)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from scalelab.manifold import results as manifold_results
from scalelab.report.build import build_report, sweep_kind
from scalelab.sweeps import analysis as sweep_analysis

#: The analysis of each kind whose section draws an analysed object (`report.build.ANALYSED`).
ANALYSES: dict[str, Callable[[Path], object]] = {
    "data": sweep_analysis.analyse_sweep,
    "model": sweep_analysis.analyse_sweep,
    "manifold": manifold_results.analyse_sweep,
}


def analyse(
    sweep_dir: str | Path,
) -> sweep_analysis.SweepAnalysis | manifold_results.ManifoldAnalysis | None:
    """The analysed object that `build_report` draws for `sweep_dir`: the fits of a data or
    model sweep, the exponents and checks of a manifold sweep; None for the kinds whose
    section draws the folder's tables (induction, depth)."""
    kind, _ = sweep_kind(Path(sweep_dir))
    analyse_kind = ANALYSES.get(kind)
    return analyse_kind(Path(sweep_dir)) if analyse_kind else None


def report_sweep(sweep_dir: str | Path, out_dir: str | Path | None = None) -> tuple[Path, Path]:
    """Analyse `sweep_dir` and write its `report.html` and `report.md` into `out_dir` (default
    `SWEEP_DIR/report`); returns both paths."""
    return build_report(sweep_dir, out_dir, analysis=analyse(sweep_dir))
