"""`report_sweep`: a sweep folder's report page. The analysis that the folder's kind names in
`report.build.KINDS` runs here, and `report.build` draws the object it is handed: report/
computes nothing (bench/imports.py forbids it to import `sweeps.analysis` or
`manifold.results` at run time)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING

from scalelab.report.build import KINDS, build_report, sweep_kind

if TYPE_CHECKING:
    from scalelab.manifold.results import ManifoldAnalysis
    from scalelab.runs.experiment import ExperimentAnalysis
    from scalelab.sweeps.analysis import SweepAnalysis


def analyse(sweep_dir: str | Path) -> SweepAnalysis | ManifoldAnalysis | ExperimentAnalysis | None:
    """The analysed object that `build_report` draws for `sweep_dir`: the fits of a data or
    model sweep, the exponents and checks of a manifold sweep; None for the kinds whose
    section draws the folder's tables (induction, depth)."""
    kind, _ = sweep_kind(Path(sweep_dir))
    name = KINDS[kind].analyse
    if name is None:
        return None
    module, function = name.split(":")
    return getattr(importlib.import_module(module), function)(Path(sweep_dir))


def report_sweep(sweep_dir: str | Path, out_dir: str | Path | None = None) -> tuple[Path, Path]:
    """Analyse `sweep_dir` and write its `report.html` and `report.md` into `out_dir` (default
    `SWEEP_DIR/report`); returns both paths."""
    return build_report(sweep_dir, out_dir, analysis=analyse(sweep_dir))
