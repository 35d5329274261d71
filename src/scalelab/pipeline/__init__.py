"""The composition layer: `scalelab validate` and `scalelab demo` (`run_pipeline`) chain the
corpus, the sweeps, the probes of d, the fits and the report as public steps
(`scalelab.pipeline.steps`); `scalelab report` analyses a sweep folder and hands the object
to report/ (`scalelab.pipeline.report`); nothing below imports it."""

from scalelab.pipeline.config import PipelineConfig
from scalelab.pipeline.run import run_pipeline

__all__ = ["PipelineConfig", "run_pipeline"]
