"""`scalelab validate` / `scalelab demo`: will this corpus scale as its d predicts?

prepare (any corpus) → refuse bad input → d from each given reference model (before any
training: the prediction comes first) → data sweep (its largest run is the own reference
model) → d of the own reference and d along the sweep (every run, the same positions) →
convergence check of the data sweep → model-size sweep and its convergence check → fits →
report. Every stage leaves a finished artefact that a re-run finds and skips; `pipeline.json`
holds the config, and a re-run with other options is refused.

Folder: `data/` (token store, unless a store was given), `d/NN-label/` (one per source of d),
`sweep/` (data sweep), `along/`, `model-sweep/`, `check/` (the perturbed runs of both sweeps'
convergence checks), `fits.json`, `report/`, `summary.json`.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from scalelab.errors import ScalelabError
from scalelab.io import atomic_write_json, provenance, read_json
from scalelab.pipeline import steps
from scalelab.pipeline.config import PipelineConfig
from scalelab.pipeline.results import SUMMARY, Along, Fits, Summary
from scalelab.pipeline.steps import Prepared
from scalelab.runs import outdir
from scalelab.runs.sweep import WORKERS, Backend, Pool
from scalelab.sweeps.result import SweepResult


class _Clock:
    """Wall and CPU seconds per stage (this process and its finished worker processes)."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.t0, self.c0 = time.perf_counter(), _cpu_s()
        self._t, self._c = self.t0, self.c0

    def lap(self, name: str) -> None:
        t, c = time.perf_counter(), _cpu_s()
        self.wall[name] = round(t - self._t, 2)
        self.cpu[name] = round(c - self._c, 2)
        self._t, self._c = t, c


def _cpu_s() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def run_pipeline(
    out: str | Path,
    cfg: PipelineConfig,
    *,
    references: Sequence[str] = (),
    workers: int = WORKERS,
    backend: Backend | None = None,
    quiet: bool = False,
    say: Callable[[str], None] = print,
) -> Summary:
    """Run (or resume) every step (`scalelab.pipeline.steps`) under `out`; return the summary
    (also summary.json). Sweep runs go to `workers` local processes, or to `backend` (e.g.
    Ray) when given. The folder's lock is released when this returns or raises."""
    out = Path(out)
    try:
        return _run(out, cfg, tuple(references), Pool(workers, backend), quiet, say)
    finally:
        outdir.release_under(out)


def _run(
    out: Path,
    cfg: PipelineConfig,
    references: tuple[str, ...],
    pool: Pool,
    quiet: bool,
    say: Callable[[str], None],
) -> Summary:
    clock = _Clock()
    created = not out.exists()
    try:
        add_references(out, cfg, references, say)
        prep = steps.prepare(out, cfg, references, quiet=quiet, say=say)
        clock.lap("prepare")
        given = steps.measure_references(prep, say=say)
    except ScalelabError as err:
        if created and out.exists():  # refused before any training: leave nothing behind
            outdir.release(out)  # but the token store of a corpus refused as too small
            from scalelab.pipeline.store import StoreKept

            if isinstance(err, StoreKept):
                for path in out.iterdir():
                    if path.name != "data":
                        shutil.rmtree(path, ignore_errors=True)
                        path.unlink(missing_ok=True)
            else:
                shutil.rmtree(out, ignore_errors=True)
        raise
    clock.lap("reference_models")

    data = steps.run_data_sweep(prep, pool, say=say)
    clock.lap("data_sweep")

    own = steps.measure_own(prep, data, say=say)
    along = steps.measure_along(prep, data)
    clock.lap("dimension")

    c = cfg.check
    wider = f", a {c.width_factor}x wider model" if c.width_factor else ""
    say(
        f"[5/7] convergence check: the {c.largest} largest run(s), perturbed (stopping "
        f"{c.factor}x stricter, a cooldown, another seed{wider}), and the {c.smallest} "
        "smallest (stricter, another seed)"
    )
    data_check = steps.check(prep, data, pool, say=say)
    clock.lap("data_check")

    models = steps.run_model_sweep(prep, data, pool, say=say)
    model_check = None if models is None else steps.check(prep, models, pool, say=say)
    clock.lap("model_sweep")

    say("[7/7] fits and report")
    fits = steps.fit(prep, data, models, [own, *given], data_check, model_check)
    atomic_write_json(out / "fits.json", fits)
    from scalelab.report.validate import build_validate_report

    html, md = build_validate_report(out)
    clock.lap("report")
    return _summary(prep, data, models, fits, along, clock, html, md)


def add_references(
    out: Path, cfg: PipelineConfig, references: Sequence[str], say: Callable[[str], None]
) -> None:
    """A folder made with the same config and the first of these reference models takes the
    others as new sources of d: pipeline.json is rewritten with them, and the rerun measures
    only their d (the sweeps and checks are finished runs, reused) and scores the verdict
    again. Any other change is refused, by `steps.prepare`."""
    from scalelab.pipeline.results import Request

    path = out / steps.CONFIG
    if not path.is_file():
        return
    wanted = tuple(str(Path(r).resolve()) for r in references)
    saved = tuple(read_json(path).get("references", ()))
    if len(wanted) <= len(saved) or wanted[: len(saved)] != saved:
        return
    outdir.same_config(read_json(path), Request(cfg, saved), out)  # the rest as it was
    outdir.lock(out)
    outdir.write_meta(path, Request(cfg, wanted))
    say(f"      {len(wanted) - len(saved)} reference model(s) added; finished runs are reused")


def _summary(
    prep: Prepared,
    data: SweepResult,
    models: SweepResult | None,
    fits: Fits,
    along: Along,
    clock: _Clock,
    html: Path,
    md: Path,
) -> Summary:
    cols = ["run", "train_tokens", "steps", "max_steps", "stop_reason", "test_loss_nats"]
    model_cols = ["run", "label", "params_non_embedding", *cols[2:], "passes_at_best"]
    times = {"stage_wall_s": clock.wall, "stage_cpu_s": clock.cpu}
    times["wall_s"] = round(time.perf_counter() - clock.t0, 2)
    times["cpu_s"] = round(_cpu_s() - clock.c0, 2)
    prov = provenance()
    path = prep.out / SUMMARY
    earlier = read_json(path).get("invocations", []) if path.exists() else []
    summary = Summary(
        report_html=str(html.resolve()),  # not relative to the caller's directory
        report_md=str(md.resolve()),
        synthetic=prep.synthetic,
        references=fits.references,
        fits=fits.sides(),
        checks=fits.checks(),
        runs=data.table[cols].to_dict("records"),
        model_runs=models.table[model_cols].to_dict("records") if models else [],
        along=along.rows,
        along_trend=along.trend,
        **times,
        config=prep.cfg,
        provenance=prov,
        invocations=[*earlier, {**times, "time_utc": prov["time_utc"]}],
    )
    atomic_write_json(path, summary)
    return summary
