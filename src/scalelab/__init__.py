"""scalelab: scaling laws from intrinsic dimension, and depth separation on induction heads.

The main names are importable from here (`from scalelab import MLE, embed`); each is
imported on first use (PEP 562), so `import scalelab` stays cheap and does not import torch.
docs/python.md shows them at work.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> module that defines it ("module:name" where the module's name differs)
_EXPORTS: dict[str, str] = {
    # estimators (scikit-learn style) and the paper's batch protocol
    "MLE": "scalelab.intrinsic.mle",
    "TwoNN": "scalelab.intrinsic.mle",
    "CalibratedMLE": "scalelab.intrinsic.calibrated",
    "knn": "scalelab.intrinsic.neighbors",
    "estimate_in_batches": "scalelab.intrinsic.protocol",
    "make_estimator": "scalelab.intrinsic.protocol",
    "IdConfig": "scalelab.intrinsic.config",
    "BatchedEstimate": "scalelab.intrinsic.protocol",
    "curved_manifold": "scalelab.intrinsic.synthetic",
    "known_manifold": "scalelab.intrinsic.synthetic",
    # theory: exponents from d and back
    "predict_exponents": "scalelab.laws.theory",
    "alpha_D_from_alpha_N": "scalelab.laws.theory",
    "alpha_N_from_alpha_D": "scalelab.laws.theory",
    "d_from_alpha_D": "scalelab.laws.theory",
    "d_from_alpha_N": "scalelab.laws.theory",
    # fits
    "fit_power_law": "scalelab.laws.fit.power_law",
    "fit_chinchilla": "scalelab.laws.fit.chinchilla",
    "fit_table": "scalelab.laws.fit_table",
    "TableFit": "scalelab.laws.fit_table",
    "GroupFits": "scalelab.laws.fit_table",
    "read_table": "scalelab.laws.table",
    # forecasts
    "Exponent": "scalelab.laws.forecast.fits",
    "fit_forecast": "scalelab.laws.forecast.fits",
    "ForecastConfig": "scalelab.laws.forecast.config",
    "ForecastRequest": "scalelab.laws.forecast.config",
    "fit_joint": "scalelab.laws.forecast.fits",
    "score_corpora": "scalelab.laws.forecast.holdout",
    "ScoreResult": "scalelab.laws.forecast.holdout",
    "run_forecast": "scalelab.laws.forecast.run",
    "ForecastResult": "scalelab.laws.forecast.run",
    # language models: configs, presets, training, loading
    "GPTConfig": "scalelab.lm.config",
    "TrainConfig": "scalelab.lm.config",
    "MODEL_PRESETS": "scalelab.lm.config",
    "configs_for_preset": "scalelab.lm.config",
    "GPT": "scalelab.lm.model",
    "train": "scalelab.lm.train",
    "TrainResult": "scalelab.lm.result",
    "load_model_for_embedding": "scalelab.lm.load",
    # corpora
    "load_corpus": "scalelab.text.corpora",
    "prepare_corpus": "scalelab.text.store",
    "TokenStore": "scalelab.text.store",
    # the probe: a model and a corpus -> points -> d
    "EstimateConfig": "scalelab.probe.config",
    "embed": "scalelab.probe.estimate",
    "estimate_dimension": "scalelab.probe.estimate",
    "estimate": "scalelab.probe.estimate",
    "EstimateResult": "scalelab.probe.result",
    "dimension_and_exponents": "scalelab.probe.dimension",
    # sweeps: many training runs, one folder each, resumable
    "Schedule": "scalelab.sweeps.schedule",
    "StopRule": "scalelab.lm.stopping",
    "SizeGrid": "scalelab.sweeps.data",
    "DataSweepConfig": "scalelab.sweeps.data",
    "data_sweep_config": "scalelab.sweeps.data:make_config",
    "data_sweep": "scalelab.sweeps.data",
    "ModelSweepConfig": "scalelab.sweeps.model",
    "model_sweep_config": "scalelab.sweeps.model:make_config",
    "model_sweep": "scalelab.sweeps.model",
    # the whole validation: corpus -> d -> sweeps -> checks -> fits -> report
    "PipelineConfig": "scalelab.pipeline.config",
    "run_pipeline": "scalelab.pipeline.run",
    # ... whose steps, one by one, are scalelab.pipeline.steps (docs/python.md)
    "Pool": "scalelab.runs.sweep",
    "SweepResult": "scalelab.sweeps.result",
    # a sweep folder's report page (`scalelab report`): analysed here, drawn by report/
    "report_sweep": "scalelab.pipeline.report",
    # errors
    "ScalelabError": "scalelab.errors",
    "ConfigError": "scalelab.errors",
    "InputError": "scalelab.errors",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'scalelab' has no attribute {name!r}")
    module, _, attr = module.partition(":")
    value = getattr(importlib.import_module(module), attr or name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
