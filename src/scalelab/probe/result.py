"""What `scalelab estimate` (`probe.estimate.estimate`) returns and saves as estimate.json,
read without torch (the report and validate-many read saved folders)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scalelab.config import Record
from scalelab.errors import ConfigError, InputError
from scalelab.intrinsic.protocol import BatchedEstimate
from scalelab.probe.dimension import Dimension
from scalelab.runs import outdir


@dataclass(frozen=True)
class EstimateResult(Record):
    """What `estimate()` returns and `estimate.json` holds: d ± se and both exponents first
    (what a reader wants), then the batched estimate, the layer, the settings used, and what
    was read (model, corpus, counts), its time and the request a rerun must match.

    The saved layout nests the estimate's time and k-NN device inside `estimate`, as
    `scalelab id` writes a `Dimension`."""

    dimension: float
    dimension_se: float | None
    alpha_D: float
    alpha_D_se: float | None
    alpha_D_ci95: tuple[float, float] | None
    alpha_N: float
    alpha_N_se: float | None
    alpha_N_ci95: tuple[float, float] | None
    beta: float
    estimate: BatchedEstimate
    wall_s: float | None
    knn_device: str | None
    layer: int
    layer_name: str
    settings: dict[str, Any]
    model: dict[str, Any]
    corpus: dict[str, Any]
    counts: dict[str, int]
    timing: dict[str, Any]
    files: dict[str, str]
    request: dict[str, Any]
    provenance: dict[str, Any]

    @property
    def n_batches(self) -> int:
        return len(self.estimate.batch_dimensions)

    @property
    def per_doc_taken(self) -> int:
        """Positions taken per window (more than `per_doc` where it gave under two batches)."""
        return self.settings.get("per_doc_taken", self.settings["per_doc"])

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        wall, knn = out.pop("wall_s"), out.pop("knn_device")
        out["estimate"] |= {"estimate_wall_s": wall} if wall is not None else {}
        out["estimate"] |= {"knn_device": knn} if knn is not None else {}
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EstimateResult:
        section = dict(data["estimate"])
        extra = {"wall_s": section.pop("estimate_wall_s", None)}
        extra["knn_device"] = section.pop("knn_device", None)
        section.pop("n_batches", None)
        if section.get("dimension_se") is None:
            section["dimension_se"] = float("nan")
        rest = {k: v for k, v in data.items() if k != "estimate"}
        return super().from_dict({**rest, **extra, "estimate": section})

    @classmethod
    def measured(cls, result: Dimension, **rest: Any) -> EstimateResult:
        """The headline from a `Dimension` (its exponents' keys), the rest as given."""
        e = result.exponents
        return cls(
            dimension=result.d,
            dimension_se=result.d_se,
            alpha_D=e.alpha_D,
            alpha_D_se=e.alpha_D_se,
            alpha_D_ci95=e.alpha_D_ci95,
            alpha_N=e.alpha_N,
            alpha_N_se=e.alpha_N_se,
            alpha_N_ci95=e.alpha_N_ci95,
            estimate=result.estimate,
            wall_s=result.wall_s,
            knn_device=result.knn_device,
            **rest,
        )


def read_estimate(path: Path) -> EstimateResult:
    """A saved estimate.json, or one line saying it is not one this version reads."""
    saved = outdir.read_meta(path)
    try:
        return EstimateResult.from_dict(saved)
    except (ConfigError, KeyError, TypeError) as err:
        raise InputError(
            f"{path} is not an estimate this scalelab reads ({type(err).__name__}: {err}); "
            f"rerun `scalelab estimate` into {path.parent}"
        ) from None
