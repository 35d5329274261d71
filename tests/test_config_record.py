"""config.Record: the one rule by which configs and results become their JSON and are read
back. The truth is the JSON of format 2 (a data-sweep run's config.json, a validation's
pipeline.json, keys in order), which objects must write byte for byte; the check runs' names
hash it. Older formats are read through runs.migrate (tests/test_runs_migrate.py)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from scalelab.config import FLAT, OMIT_DEFAULT, Config, saved_as
from scalelab.errors import ConfigError
from scalelab.laws.regime.power import Option, Plan
from scalelab.lm.config import TrainConfig
from scalelab.lm.stopping import NEVER, StopRule
from scalelab.pipeline.config import PipelineConfig
from scalelab.sweeps.schedule import CONVERGE, Schedule

# A run of validate's quick preset (seed 0) as its config.json saved it, before Record.
RUN_TRAIN = (
    '{"seed": 0, "batch_size": 16, "grad_accum": 1, "lr": 0.002, "min_lr": 0.002, '
    '"warmup_steps": 40, "max_steps": 400, "token_budget": null, "train_tokens": 500, '
    '"weight_decay": 0.1, "beta1": 0.9, "beta2": 0.95, "grad_clip": 1.0, "eval_interval": 25, '
    '"eval_batches": 8, "test_tokens": 100000, "patience": 4, "patience_fraction": 0.25, '
    '"min_delta_sd": 0.0, "init_from": null, "decay_steps": 400, "dtype": "auto"}'
)
SCHEDULE = (
    '{"policy": "converge", "patience": 4, "patience_fraction": 0.25, "min_delta_sd": 0.0, '
    '"max_epochs": 40.0, "min_steps": 400, "step_cap": 4000, "decay_epochs": 3.0, '
    '"epochs": 1.0, "token_budget": null, "cooldown_fraction": null}'
)
# Its pipeline.json (less the references, which the request adds).
QUICK = (
    '{"corpus": "shakespeare", "split_on": "blank", "glob": "**/*.txt", "text_field": "text", '
    '"vocab_size": 512, "model": "2x48", "min_tokens": 500, "max_tokens": 5000, "points": 5, '
    '"seeds_per_size": 1, "train": {"block_size": 128, "batch_size": 16, "lr": 0.002, '
    '"min_lr": 0.002, "eval_interval": 25, "eval_batches": 8, "test_tokens": 100000}, '
    '"schedule": ' + SCHEDULE + ', "check": {"largest": 1, "factor": 3, "smallest": 0, '
    '"width_factor": 2}, "regime": {"tolerance": 0.5, "level": 0.9, "min_decades": 1.5, '
    '"unigram_margin": 0.1}, "id": {"per_doc": 32, "max_documents": null, '
    '"reference_documents": 272, "k": 20, "batch_size": 4096, "dtype": "auto"}, '
    '"model_sweep": {"models": [], "train_tokens": null}, "n_boot": 1000, "seed": 0}'
)


@pytest.mark.parametrize("kind,saved", [(TrainConfig, RUN_TRAIN), (Schedule, SCHEDULE)])
def test_a_saved_config_reads_back_and_writes_the_same_bytes(kind, saved):
    cfg = kind.from_dict(json.loads(saved))
    assert cfg.stop == StopRule(patience=4, patience_fraction=0.25)  # the flat keys, one rule
    assert json.dumps(cfg.to_dict()) == saved


def test_the_quick_preset_writes_the_pipeline_json_of_before():
    cfg = PipelineConfig.from_preset("quick")
    assert json.dumps(cfg.to_dict()) == QUICK
    assert PipelineConfig.from_dict(json.loads(QUICK)) == cfg  # nested parts, tuples


def test_missing_rule_keys_read_as_the_field_default():
    """A folder saved before a rule parameter existed: the owner's default rule fills in."""
    train = json.loads(RUN_TRAIN)
    for key in ("patience", "patience_fraction", "min_delta_sd"):
        del train[key]
    assert TrainConfig.from_dict(train).stop == NEVER
    schedule = {k: v for k, v in json.loads(SCHEDULE).items() if k != "patience_fraction"}
    assert Schedule.from_dict({**schedule, "patience": 9}).stop == CONVERGE.replace(patience=9)


@dataclasses.dataclass(frozen=True)
class _Part(Config):
    a: int = 1


@dataclasses.dataclass(frozen=True)
class _Whole(Config):
    parts: tuple[_Part, ...] = ()
    pair: tuple[int, float] = (0, 0.0)
    maybe: _Part | None = None
    rule: StopRule = dataclasses.field(default=NEVER, metadata=FLAT)
    seeds: int = dataclasses.field(default=1, metadata=OMIT_DEFAULT)
    dtype: str = dataclasses.field(default="auto", metadata=saved_as("precision"))


def test_nested_records_tuples_flat_and_omitted_fields():
    whole = _Whole((_Part(2), _Part(3)), (4, 0.5), _Part(5), StopRule(7), seeds=1)
    saved = json.loads(json.dumps(whole.to_dict()))
    assert saved == {
        "parts": [{"a": 2}, {"a": 3}],
        "pair": [4, 0.5],
        "maybe": {"a": 5},
        "patience": 7,
        "patience_fraction": 0.0,
        "min_delta_sd": 0.0,
        "precision": "auto",
    }
    assert _Whole.from_dict(saved) == whole
    assert _Whole.from_dict({**saved, "precision": "float32"}).dtype == "float32"
    assert _Whole.from_dict({**saved, "seeds": 3}).seeds == 3
    assert "seeds" in _Whole(seeds=3).to_dict()
    with pytest.raises(ConfigError, match=r"unknown _Whole field\(s\) \['b'\]"):
        _Whole.from_dict({"b": 1})


@dataclasses.dataclass(frozen=True)
class _Flat(Config):
    rule: StopRule = dataclasses.field(metadata=FLAT)  # no default: its keys are the record


def test_a_flat_field_without_a_default_reads_from_its_keys():
    saved = _Flat(StopRule(3, 0.5)).to_dict()
    assert saved == {"patience": 3, "patience_fraction": 0.5, "min_delta_sd": 0.0}
    assert _Flat.from_dict(saved) == _Flat(StopRule(3, 0.5))


def test_result_records_read_back():
    option = Option(
        seeds=2, sizes=(500.0, 5000.0), decades=1.0, power=0.8, added_cpu_s=None, added_runs=5
    )
    plan = Plan(target=0.8, options=(option,), chosen=option)
    saved = json.loads(json.dumps(plan.to_dict()))
    assert saved["options"][0]["sizes"] == [500.0, 5000.0]
    assert Plan.from_dict(saved) == plan
