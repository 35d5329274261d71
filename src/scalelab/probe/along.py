"""d along the sweep: the intrinsic dimension measured by every data-sweep model on the SAME
sampled test positions, so that differences come from the models alone.

The positions are drawn once (the protocol's windows, positions, shuffle and cap) with the
sweep's shared tokenizer, and every run's best weights embed exactly those positions. A
trend `d = a + b · log10(tokens)` is fitted and shown as such: it says whether d is still
moving with training data; it is never used as a prediction.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Any

import numpy as np

from scalelab.config import FLAT, Record
from scalelab.errors import InputError
from scalelab.io import atomic_write_json, provenance, read_json
from scalelab.probe.config import EstimateConfig

RESULT = "along.json"


@dataclasses.dataclass(frozen=True)
class Request(Record):
    """What along.json depends on: the runs' folders, then the config's keys. A finished
    along.json is reused only for the same request."""

    runs: tuple[str, ...]
    config: EstimateConfig = dataclasses.field(metadata=FLAT)


def positions_sha256(sample: Any) -> str:
    """Fingerprint of the sampled points (window document, start, length, offset)."""
    h = hashlib.sha256()
    w, p = sample.windows, sample.positions
    for arr in (w.doc[p.window], w.start[p.window], w.length[p.window], p.offset):
        h.update(np.ascontiguousarray(arr, dtype=np.int64).tobytes())
    return h.hexdigest()


def trend(tokens: list[float], dims: list[float]) -> dict[str, Any] | None:
    """Least-squares `d = a + b · log10(tokens)` with the slope's standard error."""
    if len(tokens) < 3:
        return None
    x = np.log10(np.asarray(tokens, float))
    y = np.asarray(dims, float)
    design = np.column_stack([np.ones_like(x), x])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ coef
    dof = len(x) - 2
    s2 = float(resid @ resid) / dof if dof > 0 else float("nan")
    cov = s2 * np.linalg.inv(design.T @ design)
    return {
        "form": "d = a + b * log10(train_tokens)",
        "a": float(coef[0]),
        "b_per_decade": float(coef[1]),
        "b_se": float(np.sqrt(cov[1, 1])),
        "used_for_prediction": False,
    }


def d_along_sweep(
    runs: list[dict[str, Any]], cfg: EstimateConfig, out_dir: Path, *, quiet: bool = True
) -> dict[str, Any]:
    """`runs`: one dict per data-sweep run (`run`, `run_dir`, `train_tokens`,
    `test_loss_nats`), smallest first. Writes `out_dir/along.json` and returns it as read
    back, as a finished one with the same request is returned: the config travels to the
    writer as an object."""
    from scalelab.lm.load import load_model_for_embedding, tokenizer_sha256
    from scalelab.probe.estimate import embed_sample, estimate_dimension, prepare, shuffle_cap
    from scalelab.probe.sample import resolve_layer
    from scalelab.runs.outdir import same_config

    path = out_dir / RESULT
    request = Request(tuple(str(Path(r["run_dir"]).resolve()) for r in runs), cfg)
    if path.is_file():
        done = read_json(path)
        same_config(done["request"], request, out_dir)
        return done
    first = load_model_for_embedding(runs[-1]["run_dir"])
    layer = resolve_layer(cfg.layer, first.n_states)
    prep = prepare(first, None, cfg)
    sample = prep.sample.subset(shuffle_cap(prep.sample.n_points, cfg.max_points, cfg.seed))
    tok = tokenizer_sha256(first.tokenizer)
    rows = []
    for r in runs:
        loaded = load_model_for_embedding(r["run_dir"])
        if tokenizer_sha256(loaded.tokenizer) != tok:
            raise InputError(f"{r['run_dir']} uses another tokenizer than the sweep's largest run")
        x, timing = embed_sample(
            loaded,
            sample,
            [layer],
            cfg,
            quiet=quiet,
        )
        est = estimate_dimension(x[0], cfg)
        rows.append(
            {
                "run": r["run"],
                "train_tokens": int(r["train_tokens"]),
                "test_loss_nats": float(r["test_loss_nats"]),
                "dimension": est.d,
                "dimension_se": est.d_se,
                "n_points": est.estimate.n_points,
                "n_duplicates_removed": est.estimate.n_duplicates_removed,
                "extract_cpu_s": round(timing["extract_cpu_s"], 2),
            }
        )
    doc = {
        "rows": rows,
        "trend": trend([r["train_tokens"] for r in rows], [r["dimension"] for r in rows]),
        "positions_sha256": positions_sha256(sample),
        "n_points_sampled": sample.n_points,
        "layer": layer,
        "settings": cfg,
        "request": request,
        "provenance": provenance(),
    }
    atomic_write_json(path, doc)
    return read_json(path)
