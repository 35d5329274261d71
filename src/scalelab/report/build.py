"""`build_report`: one report page for a sweep folder, whatever kind of sweep made it.

The folder's `sweep.json` names its kind; `KINDS`, the one registry, says which section
module draws that kind and which function analyses its folder. Every section has one
protocol, `draw(analysis, report, sweep_dir)`: a data, model or manifold sweep's section draws
the analysis it is handed, which the caller computed (`scalelab.pipeline.report.report_sweep`
runs the kind's `analyse`; report/ computes nothing); an induction sweep's section, whose
kind has no analysis, draws its folder's tables. An experiment's folder (kind "experiment", in
its marker `experiment.json`, not sweep.json) is one generic section: `analyse_experiment`
reads it back through the experiments' registry and `report.experiment` draws it. Every page
ends with the sweep's config and provenance and the report's own. Nothing is written unless
the whole page built.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from scalelab.errors import InputError
from scalelab.io import provenance, read_json
from scalelab.report.document import Report
from scalelab.runs.experiment import MARKER
from scalelab.runs.migrate import migrate

if TYPE_CHECKING:
    from scalelab.manifold.results import ManifoldAnalysis
    from scalelab.runs.experiment import ExperimentAnalysis
    from scalelab.sweeps.analysis import SweepAnalysis


@dataclass(frozen=True)
class SweepKind:
    """How one kind of sweep folder becomes a page: the module of `scalelab.report` that draws
    it, and the function ("module:name") that analyses the folder first, or None where the
    section draws the folder's tables. The analysis is named, not imported: report/ may not
    import it (bench/imports.py), and `scalelab.pipeline.report` runs it."""

    section: str
    analyse: str | None = None


#: The one registry of report kinds (a new kind of sweep adds one line here).
KINDS: dict[str, SweepKind] = {
    "data": SweepKind("lm", "scalelab.sweeps.analysis:analyse_sweep"),
    "model": SweepKind("lm", "scalelab.sweeps.analysis:analyse_sweep"),
    "manifold": SweepKind("manifold", "scalelab.manifold.results:analyse_sweep"),
    "induction": SweepKind("induction"),
    # every experiment of `induction.experiments.EXPERIMENTS`: its marker names which
    "experiment": SweepKind("experiment", "scalelab.induction.experiments:analyse_experiment"),
}


def sweep_kind(sweep_dir: Path) -> tuple[str, dict]:
    """The kind and the parsed sweep.json of a sweep folder, or an InputError saying why not."""
    meta_path = sweep_dir / MARKER  # an experiment's folder (compare-depth's has sweep.json too)
    if not meta_path.is_file():
        meta_path = sweep_dir / "sweep.json"
    if not meta_path.is_file():
        raise InputError(
            f"{sweep_dir} has no sweep.json; give a folder made by `scalelab sweep` "
            "(or `scalelab manifold sweep` / `scalelab induction sweep`, or an experiment "
            "such as `scalelab induction separation`)"
        )
    try:
        meta = read_json(meta_path)
    except (OSError, ValueError) as err:
        raise InputError(
            f"cannot read {meta_path} ({err}); the sweep folder is damaged: restore sweep.json "
            "or run the sweep again into a new folder"
        ) from None
    meta = migrate(meta) if isinstance(meta, dict) else meta  # as this version writes it
    kind = meta.get("kind") if isinstance(meta, dict) else None
    if kind == "depth":  # compare-depth before it wrote its experiment marker
        raise InputError(
            f"{sweep_dir} is a compare-depth folder without experiment.json: make it by running "
            f"`scalelab induction compare-depth --data STORE --out {sweep_dir}` with its settings "
            "again (its runs are reused), then report it"
        )
    if kind not in KINDS:
        raise InputError(
            f"{meta_path} has kind {kind!r}; reports exist for {', '.join(sorted(KINDS))}: "
            "give a folder made by one of those sweeps"
        )
    return kind, meta


def build_report(
    sweep_dir: str | Path,
    out_dir: str | Path | None = None,
    *,
    analysis: SweepAnalysis | ManifoldAnalysis | ExperimentAnalysis | None = None,
) -> tuple[Path, Path]:
    """Write `report.html` (self-contained) and `report.md` into `out_dir` (default
    `SWEEP_DIR/report`); returns both paths. `analysis` is the folder's analysed object for a
    data, model or manifold sweep (`scalelab.pipeline.report.analyse` makes it)."""
    sweep_dir = Path(sweep_dir)
    kind, meta = sweep_kind(sweep_dir)
    if KINDS[kind].analyse is not None and analysis is None:
        raise InputError(
            f"a {kind} sweep's report draws its analysis: pass analysis= (from "
            f"scalelab.pipeline.report.analyse({str(sweep_dir)!r})), or call "
            "scalelab.pipeline.report.report_sweep, which analyses the folder first"
        )
    try:
        section = importlib.import_module(f"scalelab.report.{KINDS[kind].section}")
    except ModuleNotFoundError:
        raise InputError(f"this scalelab has no report section for {kind!r} sweeps") from None
    where = sweep_dir.resolve()
    what, saved = f"{kind} sweep", "The sweep's config as saved in sweep.json:"
    if kind == "experiment":
        what = f"{meta.get('experiment')} experiment"
        saved = f"The experiment's config as saved in {MARKER}:"
    report = Report(f"scalelab report: {what} in {where.parent.name}/{where.name}")
    section.draw(analysis, report, sweep_dir)
    report.heading("Configuration and provenance")
    report.paragraph(saved)
    report.json(meta.get("config", {}))
    report.paragraph(
        f"Provenance of the {what.split()[-1]} (versions, git revision, command, time):"
    )
    report.json(meta.get("provenance", {}))
    report.paragraph("Provenance of this report:")
    report.json(provenance())
    return report.write(Path(out_dir) if out_dir is not None else sweep_dir / "report")
