"""The ablations of d as files: each ablation of `scalelab.probe.ablate` measured and written
as `<name>.csv` (one row per setting), `<name>.png` (drawn by the `figure` given: the CLI
passes `scalelab.report.ablations`' figures, since report/ stands above probe/) and
`<name>.json` (rows, settings, fingerprints, provenance), the JSON last: a folder without it
is unfinished and is redone; a finished one with the same request is returned as is."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scalelab.errors import ConfigError
from scalelab.io import atomic_write, atomic_write_json, provenance
from scalelab.probe import ablate
from scalelab.probe.config import DEFAULT_BATCH_SIZES, POSITION_GROUPS, EstimateConfig
from scalelab.probe.estimate import estimate_request, finished_estimate
from scalelab.runs.sweep import Backend

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Draws an ablation's plot (`scalelab.report.ablations`); None writes no plot.
Draw = Callable[[ablate.Ablation], "Figure"] | None


def write_ablation(out_dir: Path, result: ablate.Ablation, figure: Draw) -> dict[str, Any]:
    """The table, the plot (where `figure` draws one), then the JSON (last)."""
    import pandas as pd

    name, rows = result.name, result.rows
    fig = figure(result) if figure is not None else None
    table = pd.DataFrame(rows)
    atomic_write(out_dir / f"{name}.csv", lambda p: table.to_csv(p, index=False))
    if fig is not None:
        atomic_write(out_dir / f"{name}.png", lambda p: fig.savefig(p, format="png", dpi=110))
    doc = {"ablation": name, "rows": rows, **result.info, "provenance": provenance()}
    doc["files"] = {"table": f"{name}.csv"}
    if fig is not None:
        doc["files"]["plot"] = f"{name}.png"
    atomic_write_json(out_dir / f"{name}.json", doc)
    return doc


def _resumable(
    out_dir: str | Path, name: str, request: dict, measure: Callable, figure: Draw
) -> dict[str, Any]:
    """The finished folder's NAME.json where its request is the same; else `measure()`,
    written."""
    out_dir = Path(out_dir)
    done = finished_estimate(out_dir / f"{name}.json", request)
    if done is not None:
        return done
    return write_ablation(out_dir, measure(), figure)


def ablate_along(
    along: str,
    model: str | Path,
    corpus: str | Path | None,
    cfg: EstimateConfig,
    out_dir: str | Path,
    *,
    layers: list[str] | None = None,
    groups: int = POSITION_GROUPS,
    device: str | None = None,
    weights: str | None = None,
    quiet: bool = False,
    figure: Draw = None,
) -> dict[str, Any]:
    """d along one model, on the same positions: at every hidden state (`along` "layers", or
    the listed `layers`) or per context-position range ("positions": `groups` equal ranges)."""
    if along not in ("layers", "positions"):
        raise ConfigError(f"along must be 'layers' or 'positions', got {along!r}")
    extra = {"layers": layers} if along == "layers" else {"groups": groups}
    request = {**estimate_request(model, corpus, weights, cfg), **extra}
    kw = {**extra, "device": device, "weights": weights, "quiet": quiet}
    measure_fn = ablate.measure_layers if along == "layers" else ablate.measure_positions
    measure = partial(measure_fn, model, corpus, cfg, request, **kw)
    return _resumable(out_dir, along, request, measure, figure)


def ablate_models(
    models: list[str],
    corpus: str | Path | None,
    cfg: EstimateConfig,
    out_dir: str | Path,
    *,
    device: str | None = None,
    weights: str | None = None,
    backend: Backend | None = None,
    quiet: bool = False,
    figure: Draw = None,
) -> dict[str, Any]:
    """d for each model of a list: against model size (non-embedding parameters) and width;
    each model one run of a sweep (local or Ray `backend`)."""
    ablate.check_models(models)
    out_dir = Path(out_dir)
    request = estimate_request(list(models), corpus, weights, cfg)
    kw = {"device": device, "weights": weights, "backend": backend, "quiet": quiet}
    measure = partial(ablate.measure_models, models, corpus, cfg, out_dir, request, **kw)
    return _resumable(out_dir, "models", request, measure, figure)


def ablate_batch_size(
    embeddings: str | Path | None,
    cfg: EstimateConfig,
    out_dir: str | Path,
    *,
    batch_sizes: list[int] | None = None,
    model: str | Path | None = None,
    corpus: str | Path | None = None,
    device: str | None = None,
    weights: str | None = None,
    quiet: bool = False,
    figure: Draw = None,
) -> dict[str, Any]:
    """d against the number of points per MLE batch, on one saved set of embeddings; with
    `embeddings` None, `model` (and `corpus`) are embedded first into `out_dir/estimate`."""
    out_dir = Path(out_dir)
    if embeddings is None:
        if model is None:
            raise ConfigError("give --embeddings FILE, or --model (and --corpus) to embed first")
        sizes = sorted(set(batch_sizes or DEFAULT_BATCH_SIZES))
        embeddings = ablate.embed_for_batch_size(
            model, corpus, cfg, out_dir, sizes, device=device, weights=weights, quiet=quiet
        )
    request = ablate.batch_size_request(embeddings, cfg, batch_sizes)
    measure = partial(ablate.measure_batch_size, embeddings, cfg, request)
    return _resumable(out_dir, "batch_size", request, measure, figure)
