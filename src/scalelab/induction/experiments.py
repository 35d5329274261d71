"""The induction experiments' one registry (`EXPERIMENTS`) and the analysis that reads an
experiment's folder back for its report (`analyse_experiment`).

Each experiment lives in one module that holds its config, run, figure, tables, how its
result is read back and an `EXPERIMENT` record (`runs.experiment.Experiment`). Its line here
gives it a command (`cli.experiment` makes it; `cli.induction` lists it) and a report section
(`report.build.KINDS["experiment"]` names `analyse_experiment`, and `report.experiment` draws
what it returns). The table is data, read without importing torch, in a module both `cli/`
and `pipeline/` may import (bench/imports.py: report/ and pipeline/ may not import cli/)."""

from __future__ import annotations

import importlib
from pathlib import Path

from scalelab.errors import InputError
from scalelab.runs.experiment import ExperimentAnalysis, read_marker

# command -> (the module holding `EXPERIMENT`, its help's first line). A new experiment is its
# module and one line here; the help is listed from here without importing the module (torch).
EXPERIMENTS: dict[str, tuple[str, str]] = {
    "separation": (
        "scalelab.induction.separation",
        "Accuracy on hard instances vs h·m·p/n: 1 vs 2 layers, constructed and trained.",
    ),
    "size": (
        "scalelab.induction.size",
        "h·m·p against n: the constant-width two-layer construction (least exact p), the "
        "one-layer gather construction and the one-layer lower bound.",
    ),
    "formation": (
        "scalelab.induction.formation",
        "Attention-only 1- vs 2-layer models: head scores, hard accuracy and loss by step.",
    ),
    "bound": (
        "scalelab.induction.bound_trained",
        "Trained 1-layer models below the bound (p-bit training) vs 2 layers: hard accuracy.",
    ),
    "compare-depth": (
        "scalelab.induction.compare_depth",
        "Train a 1-layer and a 2-layer GPT (equal non-embedding parameters); track head scores.",
    ),
    "trained-separation": (
        "scalelab.induction.trained_separation",
        "2 vs 1 layers trained at one (h, m, p) where the bound forbids every 1-layer model.",
    ),
}


def analyse_experiment(folder: str | Path) -> ExperimentAnalysis:
    """What the report of an experiment's folder draws: the experiment its marker names, the
    config it saved, the result its `load` reads back and the tables its command prints."""
    folder = Path(folder)
    meta = read_marker(folder)
    name = meta.get("experiment")
    if name not in EXPERIMENTS:
        raise InputError(
            f"{folder} was written by experiment {name!r}, which this scalelab does not have; "
            f"it has {', '.join(EXPERIMENTS)}"
        )
    module, text = EXPERIMENTS[name]
    exp = importlib.import_module(module).EXPERIMENT
    cfg = exp.config.from_dict(meta.get("config", {}))
    if exp.load is None:
        return ExperimentAnalysis(name, text, folder, exp, cfg, None, [])
    try:
        result = exp.load(folder)
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise InputError(
            f"cannot read the result of `{name}` back from {folder} ({type(err).__name__}: "
            f"{err}); run `scalelab induction {name} --out {folder}` again to finish it"
        ) from None
    return ExperimentAnalysis(name, text, folder, exp, cfg, result, exp.tables(result, cfg, folder))
