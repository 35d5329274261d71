"""A finished manifold sweep's folder, analysed for its report (`report.manifold` draws it):
the theorem checks of a `field` sweep (`theorem.summarise`), the data- and model-scaling
exponents observed beside predicted, the ID recovery and what the sweep cost
(`manifold.analysis`)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pandas as pd

from scalelab.errors import InputError
from scalelab.manifold import analysis, theorem
from scalelab.manifold.combine import read_sources
from scalelab.manifold.plan import config_from_json
from scalelab.runs.migrate import migrate_table
from scalelab.runs.outdir import read_meta


@dataclasses.dataclass(frozen=True, eq=False)
class ManifoldAnalysis:
    """What the report shows of one manifold sweep: its config (sweep.json) and runs table,
    the theorem summary (a `field` target only), the exponent rows (data, model), the ID
    estimates per d and the cost."""

    config: dict[str, Any]
    table: pd.DataFrame
    theorem: theorem.TheoremSummary | None
    data: list[dict[str, Any]]
    ids: dict[int, dict[str, Any]]
    model: list[dict[str, Any]]
    cost: dict[str, float]
    # a combined or selected table's curve sources (`manifold.combine`); None for a sweep
    sources: list[dict[str, Any]] | None = None


def _load(sweep_dir: Path) -> tuple[dict, pd.DataFrame]:
    try:
        meta = read_meta(sweep_dir / "sweep.json")
        table = migrate_table(pd.read_csv(sweep_dir / "runs.csv"))
    except (OSError, ValueError) as err:
        raise InputError(
            f"{sweep_dir} is not a finished-enough manifold sweep ({err}); "
            "run `scalelab manifold sweep --out DIR` first"
        ) from err
    return meta, table


def analyse_sweep(sweep_dir: str | Path) -> ManifoldAnalysis:
    """The analysis of the manifold sweep in `sweep_dir`."""
    sweep_dir = Path(sweep_dir)
    meta, table = _load(sweep_dir)
    cfg = meta["config"]
    summary = None
    if cfg.get("target") == "field":
        summary = theorem.summarise(table, config_from_json(cfg), sweep_dir)
    cost = analysis.timing(table)
    invocations = sweep_dir / "invocations.jsonl"
    if invocations.exists():
        lines = invocations.read_text().splitlines()
        cost["sweep_wall_s"] = sum(json.loads(x)["wall_time_s"] for x in lines if x.strip())
    return ManifoldAnalysis(
        config=cfg,
        table=table,
        theorem=summary,
        data=analysis.data_exponents(table),
        ids=analysis.id_estimates(table),
        model=analysis.model_exponents(table),
        cost=cost,
        sources=read_sources(sweep_dir),
    )
