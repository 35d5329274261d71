"""`build_report`: one report page for a sweep folder, whatever kind of sweep made it.

The folder's `sweep.json` names its kind; the section module for that kind fills the page,
and every page ends with the sweep's config and provenance and the report's own. Nothing is
written unless the whole page built. report/ only draws: a data, model or manifold sweep's
section draws the analysis it is handed (`section.draw(analysis, report, ...)`), which the
caller computed (`scalelab.pipeline.report.report_sweep` runs `sweeps.analysis` or
`manifold.results`); induction and depth sections draw their folder's tables
(`section.build(sweep_dir, report)`).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING

from scalelab.errors import InputError
from scalelab.io import provenance, read_json
from scalelab.report.document import Report

if TYPE_CHECKING:
    from scalelab.manifold.results import ManifoldAnalysis
    from scalelab.sweeps.analysis import SweepAnalysis

SECTIONS = {
    "data": "lm",
    "model": "lm",
    "manifold": "manifold",
    "induction": "induction",
    "depth": "heads",
}
#: Kinds whose section draws an analysed object rather than the folder's tables.
ANALYSED = {"data", "model", "manifold"}


def sweep_kind(sweep_dir: Path) -> tuple[str, dict]:
    """The kind and the parsed sweep.json of a sweep folder, or an InputError saying why not."""
    meta_path = sweep_dir / "sweep.json"
    if not meta_path.is_file():
        raise InputError(
            f"{sweep_dir} has no sweep.json; give a folder made by `scalelab sweep` "
            "(or `scalelab manifold sweep` / `scalelab induction sweep`)"
        )
    try:
        meta = read_json(meta_path)
    except (OSError, ValueError) as err:
        raise InputError(
            f"cannot read {meta_path} ({err}); the sweep folder is damaged: restore sweep.json "
            "or run the sweep again into a new folder"
        ) from None
    kind = meta.get("kind") if isinstance(meta, dict) else None
    if kind not in SECTIONS:
        raise InputError(
            f"{meta_path} has kind {kind!r}; reports exist for {', '.join(sorted(SECTIONS))}: "
            "give a folder made by one of those sweeps"
        )
    return kind, meta


def build_report(
    sweep_dir: str | Path,
    out_dir: str | Path | None = None,
    *,
    analysis: SweepAnalysis | ManifoldAnalysis | None = None,
) -> tuple[Path, Path]:
    """Write `report.html` (self-contained) and `report.md` into `out_dir` (default
    `SWEEP_DIR/report`); returns both paths. `analysis` is the folder's analysed object for a
    data, model or manifold sweep (`scalelab.pipeline.report.analyse` makes it)."""
    sweep_dir = Path(sweep_dir)
    kind, meta = sweep_kind(sweep_dir)
    if kind in ANALYSED and analysis is None:
        raise InputError(
            f"a {kind} sweep's report draws its analysis: pass analysis= (from "
            f"scalelab.pipeline.report.analyse({str(sweep_dir)!r})), or call "
            "scalelab.pipeline.report.report_sweep, which analyses the folder first"
        )
    try:
        section = importlib.import_module(f"scalelab.report.{SECTIONS[kind]}")
    except ModuleNotFoundError:
        raise InputError(f"this scalelab has no report section for {kind!r} sweeps") from None
    where = sweep_dir.resolve()
    report = Report(f"scalelab report: {kind} sweep in {where.parent.name}/{where.name}")
    if kind == "manifold":
        section.draw(analysis, report)
    elif kind in ANALYSED:
        section.draw(analysis, report, sweep_dir)  # an LM sweep's ablations are its files
    else:
        section.build(sweep_dir, report)
    report.heading("Configuration and provenance")
    report.paragraph("The sweep's config as saved in sweep.json:")
    report.json(meta.get("config", {}))
    report.paragraph("Provenance of the sweep (versions, git revision, command, time):")
    report.json(meta.get("provenance", {}))
    report.paragraph("Provenance of this report:")
    report.json(provenance())
    return report.write(Path(out_dir) if out_dir is not None else sweep_dir / "report")
