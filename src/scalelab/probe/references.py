"""Sources of d side by side: each reference model's d on the same test split, with the
batch-to-batch SE and, beside it, how much d moves with the MLE batch size and K.

The SE over batches is not the uncertainty of d: the MLE estimate moves with the number of
points per batch (`scalelab ablate batch-size`) and with K. So every source also gets d at
batch sizes 2048 / 4096 / 8192 (or all its points, when fewer) with K = 20, and at K = 10 / 40
with the protocol's batch size; the report shows the protocol's d ± SE *and* that range.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from scalelab.errors import CheckpointError
from scalelab.io import atomic_write_json, read_json
from scalelab.laws.theory import alpha_D, alpha_N

if TYPE_CHECKING:
    from scalelab.probe.estimate import EstimateResult

SENSITIVITY_BATCHES = (2048, 4096, 8192)
SENSITIVITY_K = (10, 20, 40)


@dataclasses.dataclass(frozen=True)
class Reference:
    """A model that measures d: `path` (a folder) and `weights` (a .gguf file name for a
    GGUF model, else None); `label` names it in tables."""

    label: str
    path: str
    weights: str | None = None


def parse_reference(text: str) -> Reference:
    """A scalelab run folder, a local Hugging Face folder, or a .gguf file (read through the
    folder that holds it, which must also hold its tokenizer)."""
    from scalelab.lm.hf import is_hf_folder, model_label

    path = Path(text).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return Reference(path.stem, str(path.parent.resolve()), path.name)
    if path.is_dir() and (path / "config.json").is_file() and not is_hf_folder(path):
        return Reference(path.resolve().name, str(path.resolve()))  # a scalelab run
    if is_hf_folder(path):
        return Reference(model_label(path), str(path.resolve()))
    raise CheckpointError(
        f"--reference-model {text!r} is not a scalelab run folder, a Hugging Face model "
        "folder or a .gguf file; check the path"
    )


def unique_labels(references: list[Reference]) -> list[Reference]:
    """Labels made unique (`name`, `name-2`, ...) in order."""
    seen: dict[str, int] = {}
    out = []
    for s in references:
        n = seen.get(s.label, 0) + 1
        seen[s.label] = n
        out.append(dataclasses.replace(s, label=s.label if n == 1 else f"{s.label}-{n}"))
    return out


def sensitivity(x: np.ndarray, cfg: Any) -> list[dict[str, Any]]:
    """d at each batch size of SENSITIVITY_BATCHES (K fixed) and each K of SENSITIVITY_K
    (batch size fixed), on the saved points `x` of one estimate. Where a batch size exceeds
    the unique points, one batch of all of them is measured instead (batches are exact)."""
    from scalelab.probe.estimate import estimate_dimension

    n = len(np.unique(x, axis=0))
    batches = sorted({min(b, n) for b in SENSITIVITY_BATCHES if min(b, n) > max(SENSITIVITY_K)})
    settings = [(b, cfg.k) for b in batches]
    settings += [(min(cfg.batch_size, n), k) for k in SENSITIVITY_K if k != cfg.k]
    rows = []
    for b, k in settings:
        est = estimate_dimension(x, cfg.replace(k=k), batch_size=b)
        rows.append(
            {
                "batch_size": b,
                "k": k,
                "dimension": est.d,
                "dimension_se": est.d_se,
                "n_batches": est.n_batches,
            }
        )
    return rows


def summarize(label: str, doc: EstimateResult, rows: list[dict[str, Any]]) -> dict:
    """One source's line: the protocol's d ± SE, its exponents with the SE interval, and the
    range over the sensitivity settings (with the exponents that range gives)."""
    ds = [r["dimension"] for r in rows] + [doc.dimension]
    lo, hi = float(min(ds)), float(max(ds))
    from scalelab.intrinsic.protocol import describe_batches

    est, batch, k = doc.estimate, doc.settings["batch_size"], doc.settings["k"]
    return {
        "label": label,
        "kind": doc.model["kind"],
        "model": doc.model.get("path"),
        "gguf_file": doc.model.get("gguf_file"),
        "params_non_embedding": doc.model.get("params_non_embedding"),
        "dimension": doc.dimension,
        "dimension_se": doc.dimension_se,
        "batch_size": batch,
        "k": k,
        "n_points": est.n_points,
        "per_doc_taken": doc.per_doc_taken,
        "n_batches": doc.n_batches,
        "n_points_used": est.n_points_used,
        "n_points_left_out": est.n_points_left_out,
        # '2 batches of 4,096; 2,048 left out'
        "batches": describe_batches(doc.n_batches, est.batch_size, est.n_points_left_out),
        "alpha_D": doc.alpha_D,
        "alpha_D_ci95": None if doc.alpha_D_ci95 is None else list(doc.alpha_D_ci95),
        "alpha_N": doc.alpha_N,
        "alpha_N_ci95": None if doc.alpha_N_ci95 is None else list(doc.alpha_N_ci95),
        "dimension_range": [lo, hi],
        "alpha_D_range": [float(alpha_D(hi)), float(alpha_D(lo))],
        "alpha_N_range": [float(alpha_N(hi)), float(alpha_N(lo))],
        "sensitivity": rows,
        "shown": (
            f"d at batch {batch}, K {k} ± the SE over batches (interval: ±1.96 SE); range: "
            f"min-max of d over batch sizes {'/'.join(map(str, SENSITIVITY_BATCHES))} (K {k}) "
            f"and K {'/'.join(map(str, SENSITIVITY_K))} (batch {batch})"
        ),
    }


def measure(
    reference: Reference,
    corpus: str | Path | None,
    cfg: Any,
    out_dir: Path,
    *,
    quiet: bool = True,
) -> dict[str, Any]:
    """estimate.json of one reference model (resumable, `scalelab estimate`'s protocol) plus its
    sensitivity rows (`source.json`, written last)."""
    from scalelab.probe.estimate import EMBEDDINGS, estimate, load_embeddings

    path = out_dir / "source.json"
    if path.is_file():
        return read_json(path)
    doc = estimate(
        reference.path, corpus, cfg, out_dir, device="cpu", weights=reference.weights, quiet=quiet
    )
    x, _ = load_embeddings(out_dir / EMBEDDINGS)
    row = summarize(reference.label, doc, sensitivity(x, cfg))
    atomic_write_json(path, row)
    return row
