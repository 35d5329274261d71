"""`scalelab estimate` (a model + a corpus → d and predicted exponents) and `scalelab ablate
layers|positions|models|batch-size` (the seed paper's Figure 4)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer

from scalelab.cli.common import (
    BACKEND,
    JSON,
    QUIET,
    RAY_ADDRESS,
    RUN_CPUS,
    RUN_GPUS,
    backend_from,
    parse_list,
    print_json,
    print_table,
    set_threads,
    threads_option,
)
from scalelab.cli.options import From, derive
from scalelab.fields import positive_int
from scalelab.io import format_interval
from scalelab.probe.config import DEFAULT_BATCH_SIZES, POSITION_GROUPS, EstimateConfig

MODEL = typer.Option(
    ..., "--model", help="A scalelab run folder, or a local Hugging Face model folder."
)
CORPUS = typer.Option(
    None,
    "--corpus",
    help="A built-in corpus name (python-stdlib, shakespeare), a text file/folder, or a "
    "prepared token store. Default for a scalelab run: the run's own token store.",
)
DEVICE = typer.Option("auto", "--device", help="auto (CUDA if present), cpu, cuda, cuda:1 ...")
THREADS = threads_option()
WEIGHTS = typer.Option(
    None,
    "--weights",
    "--gguf",
    help="Which weights: for a scalelab run 'best' (default; the weights its test loss was "
    "measured on), 'latest' (state.pt) or a .safetensors file in the run folder; for an HF "
    "folder a .gguf file name (default: its weights, or its only .gguf).",
)


def _interval(ci: tuple[float, float] | None) -> str:
    return format_interval(ci, ".4f", "(one batch: no interval)")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "x"


def _default_out(kind: str, model: str, corpus: str | None) -> Path:
    name = _slug(Path(model).resolve().name)
    if corpus is not None:
        name += "__" + _slug(Path(corpus).name)
    return Path(kind) / name


def estimate_command(
    model: str = MODEL,
    corpus: str | None = CORPUS,
    cfg: EstimateConfig = From(EstimateConfig),
    device: str = DEVICE,
    weights: str | None = WEIGHTS,
    threads: int | None = THREADS,
    out: Path | None = typer.Option(
        None, "--out", help="Output folder (default: estimates/<model>__<corpus>)."
    ),
    json_out: bool = JSON,
    quiet: bool = QUIET,
) -> None:
    """Estimate the intrinsic dimension of a corpus with a language model (the seed paper's
    protocol) and predict the data and model scaling exponents from it.

    Writes OUT/estimate.json and OUT/embeddings.safetensors (re-estimate those with
    `scalelab id`). Example: scalelab estimate --model runs/shk --corpus shakespeare
    """
    set_threads(threads)
    from scalelab.probe.estimate import EMBEDDINGS, estimate

    out = out or _default_out("estimates", model, corpus)
    doc = estimate(model, corpus, cfg, out, device=device, weights=weights, quiet=quiet)
    if json_out:
        print_json(doc)
        return
    from scalelab.intrinsic.protocol import describe_batches

    se, e = doc.dimension_se, doc.estimate
    batches = describe_batches(doc.n_batches, e.batch_size, e.n_points_left_out)
    typer.echo(
        f"d = {doc.dimension:.3f}"
        + (f" ± {se:.3f} (SE)" if se is not None else "")
        + f"  [{doc.layer_name}, {batches}, K = {e.k}, {e.metric}]"
    )
    typer.echo(f"alpha_D = 2β/(2β+d) = {doc.alpha_D:.4f}  95% {_interval(doc.alpha_D_ci95)}")
    typer.echo(f"alpha_N = 2β/d      = {doc.alpha_N:.4f}  95% {_interval(doc.alpha_N_ci95)}")
    if doc.per_doc_taken != doc.settings["per_doc"]:
        typer.echo(
            f"{doc.per_doc_taken} positions per window, not --per-doc {doc.settings['per_doc']}: "
            "the fewest that give two batches (or one) from these documents"
        )
    c = doc.counts
    typer.echo(
        f"{c['documents_used']} documents, {c['points_kept']} points "
        f"({e.n_duplicates_removed} duplicates removed); "
        f"wrote {out / 'estimate.json'} and {out / EMBEDDINGS}"
    )


ablate_app = typer.Typer(
    help="How the estimated dimension moves with layer, position, model and batch size "
    "(the seed paper's Figure 4). Each writes a CSV table, a PNG plot and a JSON record.",
    no_args_is_help=True,
)


def _print_rows(doc: dict[str, Any], json_out: bool, out: Path) -> None:
    if json_out:
        print_json(doc)
        return
    hidden = {"n_batches", "n_duplicates_removed", "model", "kind", "params", "n_points"}
    rows = [{k: v for k, v in r.items() if k not in hidden} for r in doc["rows"]]
    print_table(f"d vs {doc['ablation']}", rows)
    files = doc["files"]
    typer.echo(
        f"wrote {out / files['table']}, {out / files['plot']}, {out / (doc['ablation'] + '.json')}"
    )


def layers_command(
    model: str = MODEL,
    corpus: str | None = CORPUS,
    layers: str | None = typer.Option(
        None, "--layers", help="Comma-separated layers (indices or aliases) (default: all)."
    ),
    cfg: EstimateConfig = From(EstimateConfig, exclude=("layer",)),
    device: str = DEVICE,
    weights: str | None = WEIGHTS,
    threads: int | None = THREADS,
    out: Path | None = typer.Option(None, "--out", help="Output folder."),
    json_out: bool = JSON,
    quiet: bool = QUIET,
) -> None:
    """d at every hidden state of one model, on the same sampled positions."""
    set_threads(threads)
    wanted = parse_list(layers, str, "--layers") if layers else None
    out = out or _default_out("ablations/layers", model, corpus)
    from scalelab.probe.ablations import ablate_along
    from scalelab.report.ablations import layers_figure

    doc = ablate_along(
        "layers",
        model,
        corpus,
        cfg,
        out,
        layers=wanted,
        device=device,
        weights=weights,
        quiet=quiet,
        figure=layers_figure,
    )
    _print_rows(doc, json_out, out)


def positions_command(
    model: str = MODEL,
    corpus: str | None = CORPUS,
    groups: int = typer.Option(
        POSITION_GROUPS, "--groups", help="Equal position ranges of the window."
    ),
    cfg: EstimateConfig = From(
        EstimateConfig, helps={"per_doc": "Positions per document and range."}
    ),
    device: str = DEVICE,
    weights: str | None = WEIGHTS,
    threads: int | None = THREADS,
    out: Path | None = typer.Option(None, "--out", help="Output folder."),
    json_out: bool = JSON,
    quiet: bool = QUIET,
) -> None:
    """d per context-position range (the window cut into G equal ranges)."""
    set_threads(threads)
    positive_int(groups, "--groups")
    out = out or _default_out("ablations/positions", model, corpus)
    from scalelab.probe.ablations import ablate_along
    from scalelab.report.ablations import positions_figure

    doc = ablate_along(
        "positions",
        model,
        corpus,
        cfg,
        out,
        groups=groups,
        device=device,
        weights=weights,
        quiet=quiet,
        figure=positions_figure,
    )
    _print_rows(doc, json_out, out)


def models_command(
    model: list[str] = typer.Option(
        ..., "--model", help="A run or HF folder; repeat for each model of the comparison."
    ),
    corpus: str | None = CORPUS,
    cfg: EstimateConfig = From(EstimateConfig),
    device: str = DEVICE,
    weights: str | None = WEIGHTS,
    threads: int | None = THREADS,
    out: Path = typer.Option(Path("ablations/models"), "--out", help="Output (sweep) folder."),
    backend: str = BACKEND,
    ray_address: str | None = RAY_ADDRESS,
    run_cpus: int = RUN_CPUS,
    run_gpus: float = RUN_GPUS,
    json_out: bool = JSON,
    quiet: bool = QUIET,
) -> None:
    """d for a list of models on one corpus: against model size and against width.
    Resumable: each model's estimate lives in OUT/runs/<model>/."""
    set_threads(threads)
    where = backend_from(backend, ray_address, run_cpus, run_gpus)
    from scalelab.probe.ablations import ablate_models
    from scalelab.report.ablations import models_figure

    doc = ablate_models(
        model,
        corpus,
        cfg,
        out,
        device=device,
        weights=weights,
        backend=where,
        quiet=quiet,
        figure=models_figure,
    )
    _print_rows(doc, json_out, out)


def _batch_size_out(embeddings: Path | None, model: str | None, corpus: str | None) -> Path:
    """The default folder: named after the embeddings' folder, or the model to embed."""
    if embeddings is not None:
        return Path("ablations/batch-size") / _slug(embeddings.resolve().parent.name)
    return _default_out("ablations/batch-size", model or ".", corpus)


def batch_size_command(
    embeddings: Path | None = typer.Option(
        None, "--embeddings", help="An embeddings.safetensors written by `scalelab estimate`."
    ),
    model: str | None = typer.Option(
        None, "--model", help="Or: a model to run `estimate` with first (then --corpus)."
    ),
    corpus: str | None = CORPUS,
    batch_sizes: str = typer.Option(
        ",".join(map(str, DEFAULT_BATCH_SIZES)),
        "--batch-sizes",
        help="Comma-separated batch sizes.",
    ),
    cfg: EstimateConfig = From(EstimateConfig, only=("k", "metric", "seed")),
    device: str = DEVICE,
    weights: str | None = WEIGHTS,
    threads: int | None = THREADS,
    out: Path | None = typer.Option(None, "--out", help="Output folder."),
    json_out: bool = JSON,
    quiet: bool = QUIET,
) -> None:
    """d against the number of points per MLE batch, on one set of embeddings."""
    from scalelab.probe.ablations import ablate_batch_size
    from scalelab.report.ablations import batch_size_figure

    sizes = parse_list(batch_sizes, int, "--batch-sizes")
    set_threads(threads)
    cfg = cfg.replace(batch_size=max(cfg.k + 1, min(sizes)))
    out = out or _batch_size_out(embeddings, model, corpus)
    doc = ablate_batch_size(
        embeddings,
        cfg,
        out,
        batch_sizes=sizes,
        model=model,
        corpus=corpus,
        device=device,
        weights=weights,
        quiet=quiet,
        figure=batch_size_figure,
    )
    _print_rows(doc, json_out, out)


for _name, _command in {
    "layers": layers_command,
    "positions": positions_command,
    "models": models_command,
    "batch-size": batch_size_command,
}.items():
    ablate_app.command(_name)(derive(_command))


def register(app: typer.Typer) -> None:
    """Add `estimate` and the `ablate` group to the top-level app."""
    app.command("estimate")(derive(estimate_command))
    app.add_typer(ablate_app, name="ablate")
