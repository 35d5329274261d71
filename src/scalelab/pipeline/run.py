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

import dataclasses
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from scalelab.errors import ScalelabError
from scalelab.io import atomic_write_json, provenance, read_json
from scalelab.pipeline.config import PipelineConfig
from scalelab.probe.sources import Source, measure, parse_source, unique_labels
from scalelab.runs import outdir
from scalelab.runs.sweep import Backend

CONFIG = "pipeline.json"
SUMMARY = "summary.json"
OWN_LABEL = "own reference (largest data-sweep run)"


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


@dataclasses.dataclass
class Stages:
    """What the stages of one validation share: the request, then what each stage made."""

    out: Path
    cfg: PipelineConfig
    pool: dict[str, Any]
    quiet: bool
    say: Callable[[str], None]
    data_dir: Path | None = None
    model_cfg: Any = None  # GPTConfig of the data sweep
    train_cfg: Any = None  # TrainConfig every sweep run starts from
    grid: list[int] = dataclasses.field(default_factory=list)
    est_cfg: Any = None  # EstimateConfig of every source of d
    sweep_dir: Path | None = None
    specs: list[Any] = dataclasses.field(default_factory=list)
    table: Any = None  # the data sweep's runs.csv
    synthetic: dict[str, Any] = dataclasses.field(default_factory=dict)


def run_pipeline(
    out: str | Path,
    cfg: PipelineConfig,
    *,
    references: list[str] | tuple[str, ...] = (),
    workers: int = 2,
    backend: Backend | None = None,
    quiet: bool = False,
    say: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run (or resume) every stage under `out`; return the summary (also summary.json).
    Sweep runs go to `workers` local processes, or to `backend` (e.g. Ray) when given. The
    folder's lock is released when this returns or raises."""
    st = Stages(Path(out), cfg, {"workers": workers, "backend": backend}, quiet, say)
    try:
        return _run(st, references)
    finally:
        outdir.release_under(st.out)


def _run(st: Stages, references: list[str] | tuple[str, ...]) -> dict[str, Any]:
    out, cfg, say = st.out, st.cfg, st.say
    sources = unique_labels([parse_source(r) for r in references])
    request = {**cfg.to_dict(), "references": [str(Path(r).resolve()) for r in references]}
    clock = _Clock()
    created = not out.exists()
    try:
        _prepare(st, request)
        clock.lap("prepare")
        st.est_cfg = estimate_config(cfg)
        say(f"[2/7] d from {len(sources)} given reference model(s), before any training")
        given = [
            _measure(st, s, st.data_dir, out / "d" / f"{i + 1:02d}-{s.label}", reference=True)
            for i, s in enumerate(sources)
        ]
    except ScalelabError:
        if created and out.exists():  # refused before any training: leave nothing behind
            outdir.release(out)
            shutil.rmtree(out, ignore_errors=True)
        raise
    outdir.claim(out, CONFIG, request)
    clock.lap("reference_models")

    _data_sweep(st)
    clock.lap("data_sweep")

    say("[4/7] d of the own reference model, and d along the sweep (same test positions)")
    ref_dir = st.sweep_dir / "runs" / st.specs[-1].name
    own = _measure(st, Source(OWN_LABEL, str(ref_dir)), None, out / "d" / "00-own")
    along = _along(st)
    clock.lap("dimension")

    say(
        f"[5/7] convergence check: the {cfg.check_largest} largest run(s), perturbed "
        f"(stopping {cfg.check_factor}x stricter, a cooldown, another seed)"
    )
    data_check = _check(st, st.sweep_dir, st.specs, st.table, "train_tokens")
    say(f"      {data_check['text']}")
    clock.lap("data_check")

    model = _model_side(st)
    clock.lap("model_sweep")

    say("[7/7] fits and report")
    fits = _fits(st.table, model, [own, *given], cfg)
    fits["convergence"] = {"data": data_check, "model": model["check"] if model else None}
    atomic_write_json(out / "fits.json", fits)
    from scalelab.report.validate import build_validate_report

    html, md = build_validate_report(out)
    clock.lap("report")
    return _summary(st, model, fits, along, [own, *given], clock, html, md)


def _prepare(st: Stages, request: dict) -> None:
    """Stage 1: refuse a changed config, a bad corpus or store; prepare the token store;
    the synthetic check of the estimator."""
    from scalelab.pipeline.checks import (
        check_store,
        is_token_store,
        load_for_check,
        prepare_data,
    )
    from scalelab.sweeps import data as data_sweep

    cfg, out = st.cfg, st.out
    st.say(f"[1/7] corpus {cfg.corpus!r} → token store (BPE {cfg.vocab_size} unless a store)")
    if outdir.check(out, CONFIG, request) is None:  # a changed config is refused here
        load_for_check(cfg)  # missing, empty, non-UTF-8: refused before any folder exists
    st.grid = data_sweep.geometric_grid(cfg.min_tokens, cfg.max_tokens, cfg.points)
    # A new store is tokenized in a temporary folder outside --out and checked there (too few
    # tokens or ID points is refused before --out exists), then moved in.
    staging = None
    if not is_token_store(cfg.corpus) and not (out / "data" / "meta.json").exists():
        staging = Path(tempfile.mkdtemp(prefix="scalelab-store-"))
    try:
        data = prepare_data(cfg, staging or out, quiet=st.quiet)
        check_store(data, cfg, cfg.context_len, st.grid)
        outdir.lock(out)  # a second process on this folder is refused from here on
        if staging is not None:
            shutil.rmtree(out / "data", ignore_errors=True)  # an unfinished store, no meta.json
            shutil.move(str(data), str(out / "data"))
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    st.data_dir = prepare_data(cfg, out, quiet=st.quiet)  # the store in place: read, not made
    st.model_cfg, st.train_cfg = base_configs(cfg, st.data_dir)
    st.synthetic = syn = synthetic_check(out, cfg.seed)
    st.say(
        f"      synthetic check: MLE on {syn['manifold']} ({syn['n']} points) "
        f"d = {syn['dimension']:.2f} (true {syn['true_dimension']})"
    )


def synthetic_check(out: Path, seed: int) -> dict[str, Any]:
    """MLE (K = 20) on 4096 points of a curved 8-sphere in R^768 should read close to 8
    before any compute is spent on the corpus (cached in OUT/synthetic.json)."""
    path = out / "synthetic.json"
    if path.exists():
        return read_json(path)
    from scalelab.intrinsic.mle import MLE
    from scalelab.intrinsic.synthetic import curved_manifold

    points = curved_manifold(4096, 8, 768, seed=seed)
    row = {"manifold": "curved S^8 in R^768", "n": 4096, "true_dimension": 8}
    row["dimension"] = float(MLE(k=20).fit(points).dimension_)
    atomic_write_json(path, row)
    return row


def _measure(
    st: Stages, source: Source, corpus: Path | None, where: Path, *, reference: bool = False
) -> dict[str, Any]:
    """d of one source; a given reference model reads the declared subset of documents
    (`id_reference_documents`), the sweep's own models every test document."""
    est_cfg = st.est_cfg
    if reference and st.cfg.id_reference_documents is not None:
        est_cfg = est_cfg.replace(max_documents=st.cfg.id_reference_documents)
    row = measure(source, corpus, est_cfg, where, quiet=st.quiet)
    lo, hi = row["dimension_range"]
    se = row["dimension_se"]
    st.say(
        f"      {row['label']}: d = {row['dimension']:.2f}"
        + (f" ± {se:.2f} (SE)" if se is not None else "")
        + f", batch/K range [{lo:.2f}, {hi:.2f}] → alpha_D = {row['alpha_D']:.3f}, "
        f"alpha_N = {row['alpha_N']:.3f}"
    )
    return row


def base_configs(cfg: PipelineConfig, data_dir: Path) -> tuple[Any, Any]:
    """The data sweep's model and training configs for `cfg` on the store `data_dir`."""
    from scalelab.lm.config import configs_for_preset
    from scalelab.sweeps.model import parse_model

    model_cfg, train_cfg = configs_for_preset(
        "tiny",
        data_dir,
        block_size=cfg.context_len,
        batch_size=cfg.batch_size,
        lr=cfg.lr,
        min_lr=cfg.min_lr,
        seed=cfg.seed,
        eval_interval=cfg.eval_interval,
        eval_batches=cfg.eval_batches,
        test_tokens=cfg.test_tokens,
    )
    return parse_model(cfg.model, model_cfg)[1], train_cfg


def estimate_config(cfg: PipelineConfig) -> Any:
    """The EstimateConfig with which `cfg` measures d of its own models."""
    from scalelab.probe.estimate import EstimateConfig

    return EstimateConfig(
        per_doc=cfg.id_per_doc,
        max_documents=cfg.id_max_documents,
        k=cfg.id_k,
        batch_size=cfg.id_batch_size,
        precision=cfg.id_precision,
        seed=cfg.seed,
    )


def _data_sweep(st: Stages) -> None:
    from scalelab.runs.sweep import open_sweep
    from scalelab.sweeps import data as data_sweep
    from scalelab.sweeps.schedule import Schedule
    from scalelab.sweeps.worker import run_specs

    schedule = Schedule.from_dict(st.cfg.schedule)
    sweep_cfg = data_sweep.make_config(st.data_dir, st.model_cfg, st.train_cfg, schedule, st.grid)
    st.sweep_dir = open_sweep(st.out / "sweep", data_sweep.KIND, sweep_cfg.to_dict())
    st.specs = data_sweep.specs(sweep_cfg)
    m, grid = st.model_cfg, st.grid
    st.say(
        f"[3/7] data sweep: {m.n_layer} layers × {m.n_embd}, ctx {m.block_size}, "
        f"{len(st.specs)} nested training sets of {grid[0]:,} … {grid[-1]:,} tokens "
        f"({st.pool['workers']} worker(s)); the largest run is the own reference"
    )
    st.table = run_specs(st.sweep_dir, st.specs, **st.pool, only=None, quiet=st.quiet)
    for row in st.table.itertuples():
        st.say(
            f"      {row.train_tokens:>10,} tokens: test loss {row.test_loss_nats:.4f} "
            f"({row.stop_reason}, {row.steps}/{row.max_steps} steps)"
        )


def _along(st: Stages) -> dict[str, Any]:
    from scalelab.probe.along import d_along_sweep

    by_run = st.table.set_index("run")
    runs = [
        {
            "run": s.name,
            "run_dir": str(st.sweep_dir / "runs" / s.name),
            "train_tokens": s.params["train_tokens"],
            "test_loss_nats": float(by_run.loc[s.name, "test_loss_nats"]),
        }
        for s in st.specs
    ]
    return d_along_sweep(runs, st.est_cfg, st.out / "along", quiet=st.quiet)


def _exponent(x: np.ndarray, y: np.ndarray) -> float:
    from scalelab.laws.fit import fit_power_law

    return fit_power_law(x, y, form="power", n_boot=0).exponent


def _check(st: Stages, sweep_dir: Path, specs: list, table: Any, size: str) -> dict[str, Any]:
    """The convergence check of one sweep, in the validation's one check folder (shared by
    both sweeps, so a run they share is checked once)."""
    cfg = st.cfg
    return check_sweep(
        sweep_dir,
        st.out / "check",
        specs,
        table,
        size,
        largest=cfg.check_largest,
        factor=cfg.check_factor,
        pool=st.pool,
        quiet=st.quiet,
    )


def check_sweep(
    sweep_dir: Path,
    check_dir: Path,
    specs: list,
    table: Any,
    size: str,
    *,
    largest: int,
    factor: int,
    pool: dict[str, Any],
    quiet: bool = True,
) -> dict[str, Any]:
    """Train the perturbations of the `largest` runs of a finished sweep (`table`, its
    runs.csv) under `check_dir`, refit the log-log exponent over `size` with each, and give
    the verdict (systematic interval, BUDGET-/PROTOCOL-LIMITED)."""
    from scalelab.sweeps import convergence

    rows = convergence.run_check(
        sweep_dir, check_dir, specs, largest=largest, factor=factor, **pool, quiet=quiet
    )
    names = [s.name for s in specs]
    ordered = table.set_index("run").loc[names]
    x = ordered[size].to_numpy(float)
    y = ordered["test_loss_nats"].to_numpy(float)
    perturbed = {}
    for p in convergence.PERTURBATIONS:
        y_p = y.copy()
        for r in rows:
            if r["perturbation"] == p:
                y_p[names.index(r["run"])] = r["test_loss_nats_perturbed"]
        perturbed[p] = _exponent(x, y_p)
    checked = {r["run"] for r in rows}
    ended = [
        n
        for n, why in zip(names, ordered["stop_reason"], strict=True)
        if n not in checked and why != "patience"
    ]
    return convergence.verdict(_exponent(x, y), perturbed, rows, unchecked_ended=ended)


def _model_side(st: Stages) -> dict[str, Any] | None:
    """The model-size sweep on `model_tokens` (the data sweep's largest run is reused when it
    is one of the shapes), and its convergence check."""
    cfg = st.cfg
    if not cfg.model_sweep:
        st.say("[6/7] model-size sweep: none configured")
        return None
    from scalelab.runs.sweep import open_sweep
    from scalelab.sweeps import model as model_sweep
    from scalelab.sweeps.schedule import Schedule
    from scalelab.sweeps.worker import run_specs

    tokens = cfg.model_tokens or cfg.max_tokens
    schedule = Schedule.from_dict(cfg.schedule)
    sweep_cfg = model_sweep.make_config(
        st.data_dir, cfg.model_sweep, st.model_cfg, st.train_cfg, schedule, train_tokens=tokens
    )
    mdir = open_sweep(st.out / "model-sweep", model_sweep.KIND, sweep_cfg.to_dict())
    specs = sorted(model_sweep.specs(sweep_cfg), key=_size_key)
    st.say(
        f"[6/7] model-size sweep: {', '.join(cfg.model_sweep)} on {tokens:,} tokens; then "
        f"the convergence check of its {cfg.check_largest} largest"
    )
    reuse_runs(st.sweep_dir, [st.specs[-1]], mdir, specs)
    table = run_specs(mdir, specs, **st.pool, only=None, quiet=st.quiet)
    table["passes_at_best"] = table["best_step"] * _tokens_per_step(specs[0]) / tokens
    for row in table.set_index("run").loc[[s.name for s in specs]].itertuples():
        flag = " DATA-LIMITED?" if row.passes_at_best > MAX_PASSES else ""
        st.say(
            f"      {row.label:>12} ({row.params_non_embedding:>8,} params): test loss "
            f"{row.test_loss_nats:.4f} ({row.stop_reason}, {row.steps}/{row.max_steps} steps, "
            f"{row.passes_at_best:.1f} passes at best){flag}"
        )
    check = _check(st, mdir, specs, table, "params_non_embedding")
    st.say(f"      {check['text']}")
    return {"sweep_dir": str(mdir), "table": table, "specs": specs, "check": check}


MAX_PASSES = 4  # more passes over the data at the tested step: the model may be data-limited


def _tokens_per_step(spec: Any) -> int:
    t, m = spec.params["train"], spec.params["model"]
    return t["batch_size"] * t["grad_accum"] * m["block_size"]


def _size_key(spec: Any) -> int:
    m = spec.params["model"]
    return 12 * m["n_layer"] * m["n_embd"] ** 2


def reuse_runs(src_dir: Path, src_specs: list, dst_dir: Path, specs: list) -> int:
    """Copy each finished run of `src_specs` (under the sweep folder `src_dir`) into the sweep
    folder `dst_dir` as every run of `specs` with exactly the same configuration (shape, data,
    budget): training it again would repeat the same steps. Returns the runs matched."""
    matched = 0
    for src_spec in src_specs:
        src = src_dir / "runs" / src_spec.name
        if not (src / "result.json").exists():
            continue
        for spec in specs:
            same = spec.params["model"] == src_spec.params["model"]
            if not (same and spec.params["train"] == src_spec.params["train"]):
                continue
            matched += 1
            dst = dst_dir / "runs" / spec.name
            if not dst.exists():
                tmp = dst.with_name(f".{dst.name}.tmp")
                shutil.rmtree(tmp, ignore_errors=True)
                shutil.copytree(src, tmp, ignore=shutil.ignore_patterns(outdir.LOCK))
                tmp.rename(dst)
    return matched


def _fits(table, model, sources, cfg) -> dict[str, Any]:
    """Observed exponents (both forms) and, per source, predicted minus observed."""
    from scalelab.laws.fit import fit_power_law

    out: dict[str, Any] = {"sources": sources}
    sides = [("data", table, "train_tokens")]
    if model is not None:
        sides.append(("model", model["table"], "params_non_embedding"))
    for side, t, size in sides:
        t = t.sort_values(size)
        x, y = t[size].to_numpy(float), t["test_loss_nats"].to_numpy(float)
        out[side] = {}
        for form in ("power", "power+E"):
            if form == "power+E" and len(x) < 4:
                out[side][form] = None
                continue
            out[side][form] = fit_power_law(
                x, y, form=form, n_boot=cfg.n_boot, seed=cfg.seed
            ).to_dict()
    return out


def _summary(st: Stages, model, fits, along, sources, clock, html, md) -> dict[str, Any]:
    cols = ["run", "train_tokens", "steps", "max_steps", "stop_reason", "test_loss_nats"]
    model_cols = ["run", "label", "params_non_embedding", *cols[2:], "passes_at_best"]
    summary = {
        "report_html": str(html),
        "report_md": str(md),
        "synthetic": st.synthetic,
        "sources": sources,
        "fits": {k: fits[k] for k in ("data", "model") if k in fits},
        "convergence": fits["convergence"],
        "runs": st.table[cols].to_dict("records"),
        "model_runs": model["table"][model_cols].to_dict("records") if model else [],
        "along": along["rows"],
        "along_trend": along["trend"],
        "stage_wall_s": clock.wall,
        "stage_cpu_s": clock.cpu,
        "wall_s": round(time.perf_counter() - clock.t0, 2),
        "cpu_s": round(_cpu_s() - clock.c0, 2),
        "config": st.cfg.to_dict(),
        "provenance": provenance(),
    }
    path = st.out / SUMMARY
    earlier = read_json(path).get("invocations", []) if path.exists() else []
    this = {k: summary[k] for k in ("stage_wall_s", "stage_cpu_s", "wall_s", "cpu_s")}
    summary["invocations"] = [*earlier, {**this, "time_utc": summary["provenance"]["time_utc"]}]
    atomic_write_json(path, summary)
    return summary
