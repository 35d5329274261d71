"""The seed paper's Figure 4 as measurements: d per hidden state, per context-position range,
per model of a list, and per MLE batch size, on one protocol. Each returns an `Ablation`
(table rows and what they were measured on); `scalelab.report.ablations` draws them and
`scalelab.probe.ablations` writes them, resumably."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from scalelab import seeds
from scalelab.device import resolve_device, resolve_dtype
from scalelab.errors import CheckpointError, ConfigError, InputError
from scalelab.lm.load import LoadedModel, load_model_for_embedding
from scalelab.probe.config import DEFAULT_BATCH_SIZES, POSITION_GROUPS
from scalelab.probe.dimension import Dimension
from scalelab.probe.estimate import (
    EMBEDDINGS,
    EstimateConfig,
    EstimateResult,
    ProbeInputs,
    corpus_key,
    embed_sample,
    estimate,
    estimate_dimension,
    load_embeddings,
    prepare,
    sample_counts,
    shuffle_cap,
)
from scalelab.probe.sample import layer_name, resolve_layer
from scalelab.runs.sweep import Backend, RunSpec, opened_sweep, run_sweep


@dataclass
class Ablation:
    """One ablation's rows (one per setting), the JSON-able `info` saved beside them, and the
    labels a plot needs (`labels`, not saved)."""

    name: str
    rows: list[dict[str, Any]]
    info: dict[str, Any]
    labels: dict[str, Any] = field(default_factory=dict)


#: The numbers of d an ablation's row shows: the keys a `Dimension` saves (and an
#: `EstimateResult` holds, its `estimate` part merged in).
ROW_KEYS = ("dimension", "dimension_se", "n_batches", "n_points", "n_duplicates_removed")
ROW_KEYS += ("alpha_D", "alpha_N")


def _row(result: Dimension | EstimateResult) -> dict[str, Any]:
    saved = result.to_dict()
    if isinstance(result, EstimateResult):
        saved |= saved["estimate"]
    return {k: saved[k] for k in ROW_KEYS}


def _prepare_ablation(
    model: str | Path,
    corpus: str | Path | None,
    cfg: EstimateConfig,
    device: str | None,
    weights: str | None,
    groups: int = 1,
    layers: list[str] | None = None,
) -> tuple[LoadedModel, ProbeInputs, torch.device, list[int]]:
    """The model, the sampled corpus, the device and the layer indices (`layers`, default
    all), every user error raised before the corpus is read."""
    dev = resolve_device(device)
    loaded = load_model_for_embedding(
        model, device=dev, weights=weights, dtype=resolve_dtype(cfg.dtype, dev)
    )
    resolve_layer(cfg.layer, loaded.n_states)
    index = (
        list(range(loaded.n_states))
        if layers is None
        else sorted({resolve_layer(v, loaded.n_states) for v in layers})
    )
    prep = prepare(loaded, corpus, cfg, groups=groups)
    return loaded, prep, dev, index


def measure_layers(
    model: str | Path,
    corpus: str | Path | None,
    cfg: EstimateConfig,
    request: dict[str, Any],
    *,
    layers: list[str] | None = None,
    device: str | None = None,
    weights: str | None = None,
    quiet: bool = False,
) -> Ablation:
    """d at every hidden state of one model (or the listed ones), on the same positions."""
    loaded, prep, dev, index = _prepare_ablation(model, corpus, cfg, device, weights, layers=layers)
    sample = prep.sample.subset(shuffle_cap(prep.sample.n_points, cfg.max_points, cfg.seed))
    x, timing = embed_sample(
        loaded,
        sample,
        index,
        cfg,
        device=dev,
        quiet=quiet,
    )
    rows = []
    for j, layer in enumerate(index):
        result = estimate_dimension(x[j], cfg, device=dev, quiet=quiet)
        rows.append(
            {"layer": layer, "layer_name": layer_name(layer, loaded.n_states), **_row(result)}
        )
    info = _ablation_info(loaded, prep, cfg, request, timing, sample.n_points)
    labels = {
        "model": loaded.path.name,
        "corpus": prep.corpus.info["name"],
        "n_states": loaded.n_states,
    }
    return Ablation("layers", rows, info, labels)


def measure_positions(
    model: str | Path,
    corpus: str | Path | None,
    cfg: EstimateConfig,
    request: dict[str, Any],
    *,
    groups: int = POSITION_GROUPS,
    device: str | None = None,
    weights: str | None = None,
    quiet: bool = False,
) -> Ablation:
    """d per context-position range: the window split into `groups` equal ranges, `per_doc`
    positions drawn in each range of each window, one estimate per range."""
    loaded, prep, dev, _ = _prepare_ablation(model, corpus, cfg, device, weights, groups)
    layer = resolve_layer(cfg.layer, loaded.n_states)
    group = prep.sample.positions.group
    rng = np.random.default_rng([cfg.seed, seeds.SHUFFLE])
    keep = np.concatenate(  # step 4 within each range: shuffle, cap
        [rng.permutation(np.flatnonzero(group == g))[: cfg.max_points] for g in range(groups)]
    )
    counts = np.bincount(group[keep], minlength=groups)
    if counts.max() < cfg.batch_size:
        raise InputError(
            f"no position range has {cfg.batch_size} points (most: {counts.max()}); use fewer "
            "--groups, more documents, more --per-doc or a smaller --batch-size"
        )
    sample = prep.sample.subset(keep)
    x, timing = embed_sample(
        loaded,
        sample,
        [layer],
        cfg,
        device=dev,
        quiet=quiet,
    )
    rows = []
    span = prep.context_len
    for g in range(groups):
        lo, hi = -(-g * span // groups), -(-(g + 1) * span // groups)
        row: dict[str, Any] = {"group": g, "position_from": lo, "position_to": hi}
        sel = np.flatnonzero(group[keep] == g)
        if len(sel) >= cfg.batch_size:
            row.update(_row(estimate_dimension(x[0, sel], cfg, device=dev)))
        else:  # too few points for one batch: shown as a gap, not as a biased number
            row.update({"dimension": None, "dimension_se": None, "n_points": len(sel)})
        rows.append(row)
    info = _ablation_info(loaded, prep, cfg, request, timing, sample.n_points)
    labels = {
        "model": loaded.path.name,
        "layer_name": layer_name(layer, loaded.n_states),
        "groups": groups,
    }
    return Ablation("positions", rows, {**info, "layer": layer}, labels)


def _ablation_info(
    loaded: LoadedModel,
    prep: ProbeInputs,
    cfg: EstimateConfig,
    request: dict[str, Any],
    timing: dict[str, Any],
    kept: int,
) -> dict[str, Any]:
    return {
        "settings": {**cfg.to_dict(), "context_len": prep.context_len},
        "model": loaded.describe(),
        "corpus": prep.corpus.info,
        "counts": sample_counts(prep, kept),
        "timing": timing,
        "request": request,
    }


def _models_worker(params: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """One model of `measure_models` (module level: run_sweep may pickle it)."""
    cfg = EstimateConfig.from_dict(params["config"])
    doc = estimate(
        params["model"],
        params["corpus"],
        cfg,
        run_dir,
        device=params["device"],
        weights=params["weights"],
        quiet=True,
    )
    keys = ("kind", "n_layer", "width", "params", "params_non_embedding")
    return {"model": params["model"], **{k: doc.model[k] for k in keys}, **_row(doc)}


def check_models(models: list[str]) -> None:
    """Refuse an empty or wrong model list before anything is written."""
    if not models:
        raise ConfigError("give at least one --model")
    for m in models:
        if not Path(m).is_dir():
            raise CheckpointError(f"model folder {m} does not exist; check the --model list")


def measure_models(
    models: list[str],
    corpus: str | Path | None,
    cfg: EstimateConfig,
    out_dir: Path,
    request: dict[str, Any],
    *,
    device: str | None = None,
    weights: str | None = None,
    backend: Backend | None = None,
    quiet: bool = False,
) -> Ablation:
    """d for each model of a list (the same corpus and protocol). A resumable sweep under
    `out_dir`: one run folder per model (its estimate.json), finished models are not redone."""
    check_models(models)
    specs = [
        RunSpec(
            f"{i:02d}-{Path(m).resolve().name}",
            {
                "model": str(Path(m).resolve()),
                "corpus": corpus_key(corpus),
                "config": cfg.to_dict(),
                "device": device,
                "weights": weights,
            },
        )
        for i, m in enumerate(models)
    ]
    with opened_sweep(out_dir, "ablate-models", request):
        table = run_sweep(
            out_dir, specs, _models_worker, backend=backend, quiet=quiet, description="models"
        )
    cols = ["run", "model", "kind", "n_layer", "width", "params", "params_non_embedding"]
    cols += ["dimension", "dimension_se", "n_batches", "n_points", "alpha_D", "alpha_N"]
    rows = [{k: _plain(r[k]) for k in cols} for r in table.to_dict("records")]
    return Ablation("models", rows, {"settings": cfg.to_dict(), "request": request})


def _plain(v: Any) -> Any:
    """numpy scalars and NaN from a DataFrame, as JSON-friendly Python values."""
    if isinstance(v, np.generic):
        v = v.item()
    return None if isinstance(v, float) and math.isnan(v) else v


def batch_size_request(
    embeddings: str | Path, cfg: EstimateConfig, batch_sizes: list[int] | None
) -> dict[str, Any]:
    """What a batch-size ablation depends on (a finished folder must match it)."""
    sizes = sorted(set(batch_sizes or DEFAULT_BATCH_SIZES))
    request: dict[str, Any] = {"embeddings": str(Path(embeddings).resolve()), "batch_sizes": sizes}
    request.update({k: v for k, v in cfg.to_dict().items() if k in ("k", "aggregate", "metric")})
    request["seed"] = cfg.seed
    return request


def embed_for_batch_size(
    model: str | Path,
    corpus: str | Path | None,
    cfg: EstimateConfig,
    out_dir: str | Path,
    batch_sizes: list[int],
    *,
    device: str | None = None,
    weights: str | None = None,
    quiet: bool = False,
) -> Path:
    """The embeddings a batch-size ablation reads, made first: `estimate` into
    `out_dir/estimate` (resumable) with batches of the smallest size, so that one batch fits
    every size asked for. Returns the `embeddings.safetensors` path."""
    run_dir = Path(out_dir) / "estimate"
    run_cfg = cfg.replace(batch_size=min(batch_sizes))
    estimate(model, corpus, run_cfg, run_dir, device=device, weights=weights, quiet=quiet)
    return run_dir / EMBEDDINGS


def measure_batch_size(
    embeddings: str | Path, cfg: EstimateConfig, request: dict[str, Any]
) -> Ablation:
    """d against the number of points per MLE batch, on one saved set of embeddings (from
    `estimate`): the estimate moves with the batch size, so the protocol must state it."""
    sizes = request["batch_sizes"]
    x, meta = load_embeddings(embeddings)
    usable = [b for b in sizes if cfg.k < b <= len(x)]
    if not usable:
        raise InputError(
            f"{embeddings} holds {len(x)} points: every batch size {sizes} is above that or "
            f"not above k = {cfg.k}; give batch sizes between {cfg.k + 1} and {len(x)}"
        )
    rows = [{"batch_size": b, **_row(estimate_dimension(x, cfg, batch_size=b))} for b in usable]
    info = {
        "skipped_batch_sizes": [b for b in sizes if b not in usable],
        "source": {k: _maybe_json(v) for k, v in meta.items()},
        "request": request,
    }
    return Ablation("batch_size", rows, info, {"n_points": len(x), "k": cfg.k})


def _maybe_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text
