"""The composition layer: `scalelab validate` and `scalelab demo` (`run_pipeline`) chain the
corpus, the sweeps, the probes of d, the fits and the report as public steps
(`scalelab.pipeline.steps`); `scalelab report` analyses a sweep folder and hands the object
to report/ (`scalelab.pipeline.report`); nothing below imports it.

`run_pipeline` is imported on first use: the CLI reads `PipelineConfig` for its options' defaults
and help without torch, pandas and scipy, which the run brings."""

from typing import Any

from scalelab.pipeline.config import PipelineConfig

__all__ = ["PipelineConfig", "run_pipeline"]


def __getattr__(name: str) -> Any:
    if name == "run_pipeline":
        from scalelab.pipeline.run import run_pipeline

        return run_pipeline
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
