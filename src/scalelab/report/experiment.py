"""Report section for an experiment's folder (marker `experiment.json`, kind "experiment"):
the experiment's name and help line, the figure its `draw` makes, redrawn from the result
read back from the folder (or the PNGs the folder holds where the result cannot be read
back), and the tables its command prints. One section for every experiment of
`induction.experiments.EXPERIMENTS`; `analyse_experiment` reads the folder, this draws."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from scalelab.report.document import Report

if TYPE_CHECKING:
    from scalelab.runs.experiment import ExperimentAnalysis


def draw(analysis: ExperimentAnalysis, report: Report, sweep_dir: Path) -> None:
    """Add the section of the experiment `analysis` read back from `sweep_dir` to `report`."""
    command = f"scalelab induction {analysis.name}"
    report.heading(f"Experiment: {command}")
    report.paragraph(analysis.help)
    if analysis.result is not None:
        with tempfile.TemporaryDirectory() as tmp:  # the folder's own PNG is left as it is
            png = analysis.experiment.draw(analysis.result, Path(tmp))
            report.image(png.read_bytes(), f"{png.name}. Drawn by `{command}` from its result.")
    else:
        report.paragraph(
            "This experiment's result is not read back from its folder (its record has no "
            "load); the figures below are the PNG files the command saved, and it has no tables."
        )
        for png in sorted(Path(sweep_dir).glob("*.png")):
            report.image(png.read_bytes(), f"{png.name}. As `{command}` saved it.")
    for title, rows in analysis.tables:
        report.heading(title, level=3)
        report.table(rows, caption=f"The table `{command}` prints.")
