"""Resume checks of output folders: configs compared key by key, and folders saved before a
field existed (runs.outdir.same_config, which reads the saved side through runs.migrate)."""

from __future__ import annotations

import pytest

from scalelab.errors import ConfigError
from scalelab.lm.config import TrainConfig
from scalelab.lm.stopping import StopRule
from scalelab.pipeline.config import PipelineConfig
from scalelab.probe.config import EstimateConfig
from scalelab.runs.outdir import same_config


def _older(config: dict, *names: str) -> dict:
    """`config` as an older scalelab saved it: without the top-level fields `names`."""
    return {k: v for k, v in config.items() if k not in names}


def test_missing_fields_read_as_the_value_that_reproduces_format_1() -> None:
    wanted = {
        "train": TrainConfig(stop=StopRule(4)).to_dict(),
        "estimate": EstimateConfig(dtype="auto").to_dict(),
    }
    saved = {
        "train": _older(wanted["train"], "patience_fraction", "min_delta_sd", "init_from"),
        "estimate": _older(wanted["estimate"], "dtype"),
    }
    same_config(saved, wanted, "old")  # patience alone, from scratch, auto: resumes
    stricter = {**wanted, "train": {**wanted["train"], "patience_fraction": 0.25}}
    with pytest.raises(ConfigError, match=r"train\.patience_fraction: saved=0\.0 now=0\.25"):
        same_config(saved, stricter, "old")


def test_nested_fields_are_compared_and_named_by_dotted_key() -> None:
    wanted = PipelineConfig().to_dict()
    schedule = {k: v for k, v in wanted["schedule"].items() if k != "patience_fraction"}
    # the saved schedule predates patience_fraction (= 0.0); the default asks for 0.25
    assert wanted["schedule"]["patience_fraction"] != 0.0
    with pytest.raises(ConfigError, match=r"schedule\.patience_fraction: saved=0\.0 now=0\.25"):
        same_config({**wanted, "schedule": schedule}, wanted, "old")
    lr = {**wanted, "train": {**wanted["train"], "lr": 1e-3}}
    with pytest.raises(ConfigError, match=r"config \(train\.lr: saved=0\.001 now=0\.002\)"):
        same_config(lr, wanted, "f")


def test_a_field_without_an_absent_value_names_the_older_version() -> None:
    wanted = PipelineConfig().to_dict()
    fix = r"check\.factor: saved=\(none\) now=3\); use a new --out folder \(.*older scalelab"
    with pytest.raises(ConfigError, match=fix):
        same_config({**wanted, "check": _older(wanted["check"], "factor")}, wanted, "old")
    # tuples and lists are the same; an empty section is a value, not nothing
    same_config({"shape": [1, 2], "params": {}}, {"shape": (1, 2), "params": {}}, "f")
    with pytest.raises(ConfigError, match=r"params: saved=\{\} now=None; params\.a: saved=\(none"):
        same_config({"params": {}}, {"params": {"a": 1}}, "f")
