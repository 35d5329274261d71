"""The steps of `scalelab validate`, each a public function with typed inputs and outputs, so a
notebook can run them one by one (docs/python.md) and `run_pipeline` composes them:

    prep = prepare(out, cfg, references)          # store, refusals, synthetic check
    given = measure_references(prep)              # d before any training
    data = run_data_sweep(prep, pool)             # claims the folder, then trains
    own, along = measure_own(prep, data), measure_along(prep, data)
    data_check = check(prep, data, pool)  # computes the one fit range
    models = run_model_sweep(prep, data, pool)    # then check(prep, models, pool)
    fits = fit(prep, data, models, [own, *given], data_check)

Nothing is shared but what a step returns (the dataclasses of `pipeline.results`); every
step leaves a finished artefact under `prep.out` that a re-run finds and skips.

A new fit-range rule: the rule is `laws.regime.rules.fit_range` (its ends and reasons,
constants in `RegimeConfig`); its inputs are gathered once here, in `data_fit_range`; the
constant's old value goes in a new format step of `runs.migrate`. The check's refits, the fit
and the report read the one `FitRange` it returns (docs/architecture.md).
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from scalelab.errors import InputError
from scalelab.io import atomic_write_json, read_json
from scalelab.laws.regime.rules import FitRange
from scalelab.lm.config import GPTConfig, TrainConfig
from scalelab.pipeline.config import PipelineConfig
from scalelab.pipeline.results import Along, Check, Fits, Regime, Request, SideFit
from scalelab.probe.estimate import EstimateConfig
from scalelab.probe.references import Reference, measure, parse_reference, unique_labels
from scalelab.runs import outdir
from scalelab.runs.sweep import Pool
from scalelab.sweeps.data import DataSweepConfig
from scalelab.sweeps.result import SweepResult
from scalelab.text.store import Store

CONFIG = "pipeline.json"
OWN_LABEL = "own reference (largest data-sweep run)"
MAX_PASSES = 4  # more passes over the data at the tested step: the model may be data-limited
Say = Callable[[str], None]


def _silent(_msg: str) -> None:
    """A `say` that prints nothing."""


@dataclasses.dataclass(frozen=True)
class Prepared:
    """What `prepare` made: the folder and its request, the token store, the data sweep's
    model and training configs, its sizes, how d is measured, the synthetic check."""

    out: Path
    cfg: PipelineConfig
    request: Request  # cfg and the reference models: pipeline.json
    data_dir: Path
    model_cfg: GPTConfig  # the data sweep's model
    train_cfg: TrainConfig  # every sweep run starts from it
    grid: tuple[int, ...]
    estimate: EstimateConfig  # d of every model
    synthetic: dict[str, Any]
    references: tuple[Reference, ...] = ()  # the given reference models, parsed
    quiet: bool = True
    unigram_entropy: float | None = None  # of the scored test tokens: the fit range's floor
    store: Store | None = None  # the store at data_dir, opened once (this process's steps)


def base_configs(cfg: PipelineConfig, data_dir: Path | Store) -> tuple[GPTConfig, TrainConfig]:
    """The data sweep's model and training configs for `cfg` on the store `data_dir`."""
    from scalelab.lm.config import configs_for_preset
    from scalelab.sweeps.model import parse_model

    model_cfg, train_cfg = configs_for_preset(
        "tiny", data_dir, **dataclasses.asdict(cfg.train), seed=cfg.seed
    )
    return parse_model(cfg.model, model_cfg)[1], train_cfg


def estimate_config(cfg: PipelineConfig) -> EstimateConfig:
    """The EstimateConfig with which `cfg` measures d of its own models."""
    part = cfg.id
    return EstimateConfig(
        per_doc=part.per_doc,
        max_documents=part.max_documents,
        k=part.k,
        batch_size=part.batch_size,
        dtype=part.dtype,
        seed=cfg.seed,
    )


def prepare(
    out: str | Path,
    cfg: PipelineConfig,
    references: Sequence[str] = (),
    *,
    quiet: bool = True,
    say: Say = _silent,
) -> Prepared:
    """Step 1: refuse a folder made with another config, a bad corpus or a store too small for
    the sweeps (before `out` exists); tokenize the corpus once; lock `out`; check the
    estimator on a manifold of known d."""
    from scalelab.pipeline import store
    from scalelab.sweeps.data import geometric_grid

    out = Path(out)
    given = tuple(unique_labels([parse_reference(r) for r in references]))  # bad paths: first
    request = Request(cfg, tuple(str(Path(r).resolve()) for r in references))
    say(f"[1/7] corpus {cfg.corpus!r} → token store (BPE {cfg.vocab_size} unless a store)")
    if outdir.check(out, CONFIG, request) is None:  # a changed config is refused here
        store.refuse_unreadable_corpus(cfg)  # missing, empty, non-UTF-8: before any folder
    grid = tuple(geometric_grid(cfg.min_tokens, cfg.max_tokens, cfg.points))
    # A new store is tokenized in a temporary folder outside `out` and checked there, then
    # moved in; a store refused as too small is kept in OUT/data (nothing else is written).
    staging = None
    if not store.is_token_store(cfg.corpus) and not store.reusable_store(cfg, out):
        staging = Path(tempfile.mkdtemp(prefix="scalelab-store-"))
    try:
        data_dir = store.prepare_data(cfg, staging or out, quiet=quiet)
        tokens = Store(data_dir)  # opened once here, and once more where it is moved
        try:
            per_doc = store.refuse_small_store(tokens, cfg, list(grid))
        except InputError as err:  # a store made here is kept: the rerun does not tokenise
            if store.is_token_store(cfg.corpus):
                raise
            raise store.StoreKept(f"{err}; {store.keep_store(data_dir, out)}") from None
        outdir.lock(out)  # a second process on this folder is refused from here on
        if staging is not None:
            data_dir = store.move_store(data_dir, out)
            tokens = Store(data_dir)
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    model_cfg, train_cfg = base_configs(cfg, tokens)
    syn = synthetic_check(out, cfg.seed)
    say(
        f"      synthetic check: MLE on {syn['manifold']} ({syn['n']} points) "
        f"d = {syn['dimension']:.2f} (true {syn['true_dimension']})"
    )
    if per_doc != cfg.id.per_doc:
        say(store.per_doc_note(cfg, per_doc))
    est = estimate_config(cfg)
    from scalelab.text.floors import store_unigram_entropy

    unigram = store_unigram_entropy(tokens, cfg.train.block_size, cfg.train.test_tokens)
    return Prepared(
        out,
        cfg,
        request,
        data_dir,
        model_cfg,
        train_cfg,
        grid,
        est,
        syn,
        given,
        quiet,
        unigram,
        tokens,
    )


def synthetic_check(out: Path, seed: int) -> dict[str, Any]:
    """MLE (K = 20) on 4096 points of a curved 8-sphere in R^768 should read close to 8
    before any compute is spent on the corpus (cached in OUT/synthetic.json)."""
    path = out / "synthetic.json"
    if path.exists():
        return read_json(path)
    from scalelab.intrinsic import PAPER_BATCH_SIZE, PAPER_K
    from scalelab.intrinsic.mle import MLE
    from scalelab.intrinsic.synthetic import curved_manifold

    points = curved_manifold(PAPER_BATCH_SIZE, 8, 768, seed=seed)
    row = {"manifold": "curved S^8 in R^768", "n": PAPER_BATCH_SIZE, "true_dimension": 8}
    row["dimension"] = float(MLE(k=PAPER_K).fit(points).dimension_)
    atomic_write_json(path, row)
    return row


def _measure(
    prep: Prepared, model: Reference, where: Path, say: Say, *, given: bool = False
) -> dict[str, Any]:
    """d of one reference model; a given one reads the declared subset of documents
    (`id.reference_documents`) of the pipeline's store, the sweep's own models every test
    document of their own store."""
    est_cfg, corpus = prep.estimate, None
    if given:
        corpus = prep.data_dir
        if prep.cfg.id.reference_documents is not None:
            est_cfg = est_cfg.replace(max_documents=prep.cfg.id.reference_documents)
    row = measure(model, corpus, est_cfg, where, quiet=prep.quiet)
    lo, hi = row["dimension_range"]
    se = row["dimension_se"]
    say(
        f"      {row['label']}: d = {row['dimension']:.2f}"
        + (f" ± {se:.2f} (SE)" if se is not None else "")
        + (f" ({row['batches']})" if row.get("batches") else "")
        + f", batch/K range [{lo:.2f}, {hi:.2f}] → "
        f"alpha_D = {row['alpha_D']:.3f}, alpha_N = {row['alpha_N']:.3f}"
    )
    return row


def measure_references(prep: Prepared, *, say: Say = _silent) -> list[dict[str, Any]]:
    """Step 2: d from each reference model given to `prepare` (a run folder, a Hugging Face
    folder or a .gguf file) on the test split, before any training: the prediction first."""
    say(f"[2/7] d from {len(prep.references)} given reference model(s), before any training")
    return [
        _measure(prep, s, prep.out / "d" / f"{i + 1:02d}-{s.label}", say, given=True)
        for i, s in enumerate(prep.references)
    ]


def data_sweep_config(prep: Prepared) -> DataSweepConfig:
    """The data sweep `run_data_sweep` trains (its runs: `sweeps.data.specs`), without
    training: the one assembly the pipeline and the benchmarks share."""
    from scalelab.sweeps import data as data_sweep

    return data_sweep.make_config(
        prep.data_dir,
        prep.model_cfg,
        prep.train_cfg,
        prep.cfg.schedule,
        prep.grid,
        seeds=prep.cfg.seeds_per_size,
    )


def run_data_sweep(prep: Prepared, pool: Pool = Pool(), *, say: Say = _silent) -> SweepResult:
    """Step 3: claim the folder (pipeline.json), then train the data sweep: the data sweep's
    model on nested prefixes of the train split; its largest run is the own reference."""
    from scalelab.sweeps import data as data_sweep

    outdir.claim(prep.out, CONFIG, prep.request)
    sweep_cfg = data_sweep_config(prep)
    m, grid = prep.model_cfg, prep.grid
    say(
        f"[3/7] data sweep: {m.n_layer} layers × {m.n_embd}, ctx {m.block_size}, "
        f"{len(grid)} nested training sets of {grid[0]:,} … {grid[-1]:,} tokens "
        f"({pool.workers} worker(s)); the largest run is the own reference"
    )
    sweep_dir = prep.out / "sweep"
    table = data_sweep.data_sweep(
        sweep_dir, sweep_cfg, workers=pool.workers, backend=pool.backend, quiet=prep.quiet
    )
    result = SweepResult(sweep_dir, tuple(data_sweep.specs(sweep_cfg)), table, "train_tokens")
    for row in result.ordered().itertuples():
        say(
            f"      {row.train_tokens:>10,} tokens: test loss {row.test_loss_nats:.4f} "
            f"({row.stop_reason}, {row.steps}/{row.max_steps} steps)"
        )
    return result


def measure_own(prep: Prepared, data: SweepResult, *, say: Say = _silent) -> dict[str, Any]:
    """Step 4a: d of the own reference model (the data sweep's largest run)."""
    say("[4/7] d of the own reference model, and d along the sweep (same test positions)")
    own = Reference(OWN_LABEL, str(data.run_dir()))
    return _measure(prep, own, prep.out / "d" / "00-own", say)


def measure_along(prep: Prepared, data: SweepResult) -> Along:
    """Step 4b: d of every run of the data sweep on the same test positions, and its trend."""
    from scalelab.probe.along import d_along_sweep

    rows = data.ordered()
    runs = [
        {
            "run": s.name,
            "run_dir": str(data.sweep_dir / "runs" / s.name),
            "train_tokens": s.params["train_tokens"],
            "test_loss_nats": float(rows.loc[s.name, "test_loss_nats"]),
        }
        for s in data.specs
    ]
    along = d_along_sweep(runs, prep.estimate, prep.out / "along", quiet=prep.quiet)
    return Along(along["rows"], along["trend"])


def check(prep: Prepared, sweep: SweepResult, pool: Pool = Pool(), *, say: Say = _silent) -> Check:
    """Step 5 (and 6's end): the convergence check of one sweep, in the validation's one check
    folder (shared by both sweeps, so a run they share is checked once). For the data sweep
    it perturbs the runs from the fit range's lower end on, then computes the fit range (its
    upper end needs the check's wider model) and refits over it: `Check.fit_range`."""
    from scalelab.sweeps.check import assess, model_limited, run_check

    data_side = sweep.size == "train_tokens"
    checked = from_range_start(prep, sweep) if data_side else sweep
    # a wider model at the largest size: the data sweep's question (is it model-limited?)
    rule = prep.cfg.check if data_side else prep.cfg.check.replace(width_factor=None)
    rows = run_check(
        checked.sweep_dir,
        prep.out / "check",
        checked.specs,
        rule,
        workers=pool.workers,
        backend=pool.backend,
        quiet=prep.quiet,
    )
    rng = data_fit_range(prep, sweep, model_limited(rows)) if data_side else None
    result = Check(assess(checked, rows, rng), rng)
    say(f"      {result.text}")
    return result


def data_fit_range(
    prep: Prepared, data: SweepResult, width: dict[str, Any] | None = None
) -> FitRange:
    """The data sweep's fit range by rule (`laws.regime.rules.fit_range`), computed once: from the
    first size below the unigram entropy of the scored test tokens, up to below the first
    run that is budget- or model-limited (`limited_runs`; `width`: the check's wider-model
    reading, `sweeps.check.model_limited`)."""
    from scalelab.laws.regime.rules import fit_range

    x, y = data.curve()
    limited = limited_runs(data, width)
    flags = np.array([name in limited for name in data.names])
    margin = prep.cfg.regime.unigram_margin
    return fit_range(x, y, unigram_entropy=prep.unigram_entropy, limited=flags, margin=margin)


def from_range_start(prep: Prepared, data: SweepResult) -> SweepResult:
    """The data sweep from the fit range's lower end on (the first run below the unigram
    entropy by the declared margin, `laws.regime.rules.fit_range`), so that the check perturbs the
    smallest run of the fitted range; the whole sweep where no run is below (the range is
    empty and the regime verdict says so)."""
    from scalelab.laws.regime.rules import fit_range

    x, y = data.curve()
    margin = prep.cfg.regime.unigram_margin
    rng = fit_range(x, y, unigram_entropy=prep.unigram_entropy, margin=margin)
    start = 0 if rng.empty else int(np.searchsorted(x, rng.x_lo))
    if start == 0 or len(data.specs) - start < 2:
        return data
    specs = data.specs[start:]
    keep = {s.name for s in specs}
    return dataclasses.replace(data, specs=specs, table=data.table[data.table["run"].isin(keep)])


def run_model_sweep(
    prep: Prepared, data: SweepResult, pool: Pool = Pool(), *, say: Say = _silent
) -> SweepResult | None:
    """Step 6: the model-size sweep on the model sweep's tokens (the data sweep's largest run
    is reused when it is one of the shapes); None when none is configured. Its table gains
    `passes_at_best`: passes over the data at the tested step."""
    from scalelab.runs.sweep import open_sweep
    from scalelab.sweeps import model as model_sweep
    from scalelab.sweeps.worker import reuse_runs, run_specs

    cfg = prep.cfg
    shapes = cfg.model_sweep.models
    if not shapes:
        say("[6/7] model-size sweep: none configured")
        return None
    tokens = cfg.model_sweep_tokens
    sweep_cfg = model_sweep.make_config(
        prep.data_dir, shapes, prep.model_cfg, prep.train_cfg, cfg.schedule, train_tokens=tokens
    )
    mdir = open_sweep(prep.out / "model-sweep", model_sweep.KIND, sweep_cfg)
    specs = sorted(model_sweep.specs(sweep_cfg), key=_size_key)
    say(
        f"[6/7] model-size sweep: {', '.join(shapes)} on {tokens:,} tokens; then "
        f"the convergence check of its {cfg.check.largest} largest"
    )
    reuse_runs(data.sweep_dir, [data.specs[-1]], mdir, specs)
    table = run_specs(
        mdir, specs, workers=pool.workers, backend=pool.backend, only=None, quiet=prep.quiet
    )
    table["passes_at_best"] = table["best_step"] * specs[0].tokens_per_step / tokens
    result = SweepResult(mdir, tuple(specs), table, "params_non_embedding")
    for row in result.ordered().itertuples():
        flag = " DATA-LIMITED?" if row.passes_at_best > MAX_PASSES else ""
        say(
            f"      {row.label:>12} ({row.params_non_embedding:>8,} params): test loss "
            f"{row.test_loss_nats:.4f} ({row.stop_reason}, {row.steps}/{row.max_steps} steps, "
            f"{row.passes_at_best:.1f} passes at best){flag}"
        )
    return result


def _size_key(spec: Any) -> int:
    return 12 * spec.model.n_layer * spec.model.n_embd**2


def fit(
    prep: Prepared,
    data: SweepResult,
    models: SweepResult | None,
    references: list[dict[str, Any]],
    data_check: Check | None = None,
    model_check: Check | None = None,
) -> Fits:
    """Step 7: observed exponents of both sweeps (both forms, with bootstrap intervals; the
    data side's over the fit range where that holds 3 sizes, `x_range` says which) beside
    every reference model's d, and the data side's regime (`regime`) over the same range: the one
    `data_check.fit_range` (computed here, without the check's wider model, when there is no
    check)."""
    from scalelab.laws.fit.power_law import fit_power_law

    cfg = prep.cfg
    rng = data_check.fit_range if data_check is not None else None
    if rng is None:
        rng = data_fit_range(prep, data)
    width = None if data_check is None else data_check.verdict.get("width_check")
    sides: dict[str, SideFit] = {}
    for side, sweep in [("data", data)] + ([("model", models)] if models is not None else []):
        t = sweep.table.sort_values(sweep.size)
        x, y = t[sweep.size].to_numpy(float), t["test_loss_nats"].to_numpy(float)
        x_range = (float(x.min()), float(x.max()))
        if side == "data" and rng.n_points >= 3:  # the data side over its fit range by rule
            keep = rng.mask(x)
            x, y = x[keep], y[keep]
            x_range = (rng.x_lo, rng.x_hi)
        power, power_e = (
            fit_power_law(x, y, form=form, n_boot=cfg.n_boot, seed=cfg.seed)
            if form == "power" or len(x) >= 4
            else None
            for form in ("power", "power+E")
        )
        sides[side] = SideFit(x_range, power, power_e)
    analysis = regime(prep, data, references, rng, limited_runs(data, width))
    return Fits(references, sides["data"], sides.get("model"), analysis, data_check, model_check)


def limited_runs(data: SweepResult, width: dict[str, Any] | None) -> dict[str, str]:
    """Runs of the data sweep a fit must stop below, with why: those that ended at their step
    budget (not by the stopping rule), and the largest when the check's wider model found it
    model-limited (`width`: `sweeps.check.model_limited`)."""
    rows = data.ordered()
    out = {
        name: f"ended at its step budget ({why})"
        for name, why in rows["stop_reason"].items()
        if why != "patience"
    }
    if width and width["limited"]:
        out[width["run"]] = (
            f"model-limited (a wider model lowers its loss by {width['gain_nats']:.4f} nats)"
        )
    return out


def run_cpu_seconds(data: SweepResult) -> np.ndarray | None:
    """CPU seconds each run of the sweep took (with its cooldown), in spec order: the cost
    model of the regime test's plan (None where the table does not record them)."""
    rows = data.ordered()
    if "train_cpu_time_s" not in rows:
        return None
    cpu = rows["train_cpu_time_s"].to_numpy(float)
    if "cooldown_cpu_time_s" in rows:
        cpu = cpu + rows["cooldown_cpu_time_s"].fillna(0.0).to_numpy(float)
    return cpu


def regime(
    prep: Prepared,
    data: SweepResult,
    references: list[dict[str, Any]],
    rng: FitRange | None = None,
    limited: dict[str, str] | None = None,
) -> Regime:
    """The data sweep's regime analysis over the fit range `rng` (default: `data_fit_range`
    without a check), with the unigram entropy, the floor E and how each was obtained. E:
    the exact floor for a synthetic facts corpus (per token of this store's tokens), else the
    power+E fit's over the fitted range. `limited`: the runs the range stops below."""
    from scalelab.laws.regime.analysis import analyse_regime
    from scalelab.text.floors import facts_floor

    cfg = prep.cfg
    x, y = data.curve()
    rng = rng if rng is not None else data_fit_range(prep, data)
    limited = limited if limited is not None else limited_runs(data, None)
    floor, floor_source, theory = facts_floor(prep.store or prep.data_dir)
    predictions = {f"alpha_D from {s['label']}": s["alpha_D"] for s in references}
    analysis = analyse_regime(
        x,
        y,
        fit_range=rng,
        floor=floor,
        floor_source="given" if floor is not None else "power+E",
        predictions=predictions,
        ideal_exponent=None if theory is None else theory.effective_exponent,
        cpu_s=run_cpu_seconds(data),
        config=cfg.regime,
        n_boot=cfg.n_boot,
        seed=cfg.seed,
    )
    capacity = None
    if theory is not None and rng.n_points > 0:
        # can the model at the range's top hold what the ideal learner memorises there?
        rows = data.ordered()
        params = int(rows.loc[rows[data.size] == rng.x_hi, "params"].iloc[0])
        capacity = theory.capacity(rng.x_hi, params)
    return Regime(
        analysis,
        unigram_entropy_nats=prep.unigram_entropy,
        unigram_source="the test tokens the runs are scored on (their unigram distribution)",
        floor_nats=floor,
        floor_source=floor_source,
        limited_runs=limited,
        capacity=capacity,
    )
